"""Partition heat: the hottest partition key of the table and of GSI1 under the issue's traffic mixes.

A small sample of each request type runs through the functions on DynamoDB Local while the recorder
(bench/hooks.py) sees every call: the partition key each read names (GetItem/BatchGetItem keys, a
Query's key condition, on the table or GSI1) with the capacity DynamoDB Local reports, and, from the
stream's old/new images (bench/model.py), every item each write changed with its table write units
and every GSI1 key it wrote or removed with theirs, and every key a transaction's ConditionCheck named
with the units DynamoDB bills for it (DynamoDB Local reports none). An order's stream effects
(order_events) count with the order.

Each key is classified into a family by replacing the parts the bench chose (product ids, category
names, customer, session and order ids) with placeholders, pure digits with ``<n>`` (a shard) and
any other long id or hash with ``<unique>`` (made per request). A mix gives each request type a
rate and each placeholder a population; a family's traffic is spread uniformly over its keys, so
its hottest key takes (sum over request types of rate x units per request) / keys. Per-request keys
(``<unique>``, ``<order>``) take one request's units per second.

The flash-sale product is marked hot (stock shards), so its reads go through each instance's cache
(shop/services/hot_products.py). Its requests are sampled as hits (cache warmed first) and misses (every
cache emptied first); the mix splits each rate into misses, at most one per instance per TTL (INSTANCES /
HOT_PRODUCT_CACHE_SECONDS a second, a stated assumption), and hits, the rest.

The model is checked against DynamoDB Local: a fresh small run of every request type, predicted from
the sample's per-request figures, must match DynamoDB Local's ConsumedCapacity totals (INDEXES:
table and GSI1 apart) within 10%.
"""

from __future__ import annotations

import contextlib
import random
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from bench.hooks import Call, Measurement, Recorder
from bench.store import quiet_stdout
from infra.settings import HOT_PRODUCT_CACHE_SECONDS

WCU_LIMIT = 1_000.0
RCU_LIMIT = 3_000.0
CHECK_TOLERANCE = 0.10
TRANSIENT_RETRIES = 4  # a busy machine: 503s and failed stream records are retried, as clients and Lambda do
TABLE, GSI1 = "table", "GSI1"
NOT_ATTRIBUTED = "(not attributed to a key)"

ADMIN = ("heat-admin", ["admin"])
ADDRESS = {"name": "Heat", "line1": "1 Main St", "city": "Springfield", "postal_code": "12345", "country": "US"}
STEADY_LINES = 3  # a steady-mix order: 3 lines (the bench's order), products uniform over the catalogue
BACK_OFFICE_ORDERS_PER_SHARD = 6  # orders seeded per status shard: every shard a page queries holds some
CART_LINES = 3  # a cart write changes the quantity of a line of a 3-line cart

FLASH_SHARDS = 32  # the flash-sale product's stock shards: 20,000 WCU/s of orders over 32 keys, 625 each
FLASH_ORDERS, FLASH_READS = 10_000, 20_000
# Assumption: concurrent instances of each function during the flash sale (rate x mean duration: 20,000 GETs/s
# x 50 ms; also the default regional concurrency quota). Each reads a hot product at most once per TTL.
INSTANCES = 1_000
CACHE_SECONDS = float(HOT_PRODUCT_CACHE_SECONDS)  # the deployed TTL (infra/settings.py)
# Assumption: concurrent instances of the stream function during the flash sale (one per stream shard,
# ParallelizationFactor 1). Each refreshes the hot product's top-list entry at most once per second.
STREAM_INSTANCES = 100
SAMPLE_CACHE_SECONDS = "60"  # during the sample: a hit stays a hit on a slow machine (misses are forced)

# Populations the mixes spread their traffic over (placeholders of the key families).
PRODUCTS = 100_000
CATEGORIES = 200
CUSTOMERS = 1_000_000  # assumption: the customers placing orders at a time
SESSIONS = 500_000  # assumption: live carts, one line written every 10 s each at 50,000 writes/s
CODE = "HEAT10"  # the flash_code mix's one code: 10 % off, limited (its uses spread over its counters)
CODE_COUNTERS = 32  # min(usage limit, shop.limits' counters): decision 078


def behind_cache(rate: int, hit: str, miss: str) -> dict[str, float]:
    """A rate of a cached request split into misses (at most one per instance per TTL) and hits."""
    misses = min(float(rate), INSTANCES / CACHE_SECONDS)
    return {hit: rate - misses, miss: misses}


MIXES: dict[str, dict[str, Any]] = {
    "steady": {
        "load": "10,000 orders/s over 100,000 products in 200 categories; 50,000 cart writes/s; 2,000 product reads/s",
        "rates": {"order": 10_000, "cart_write": 50_000, "product_read": 2_000},
        "population": {"product": PRODUCTS, "category": CATEGORIES, "customer": CUSTOMERS, "session": SESSIONS},
    },
    "flash_sale": {
        "load": f"10,000 orders/s for ONE product (hot: {FLASH_SHARDS} stock shards); 20,000 reads/s of that product",
        "rates": {
            **behind_cache(FLASH_ORDERS, "flash_order", "flash_order_miss"),
            **behind_cache(FLASH_READS, "flash_read", "flash_read_miss"),
            "flash_rank_refresh": float(STREAM_INSTANCES),
        },
        "population": {"product": 1, "category": 1, "customer": CUSTOMERS, "session": SESSIONS},
    },
    "flash_code": {
        "load": "10,000 orders/s over 100,000 products, every one with ONE code (usage limit 1,000,000 on "
        f"{CODE_COUNTERS} counters, a per-customer limit); 50,000 cart writes/s; 2,000 product reads/s",
        "rates": {"code_order": 10_000, "cart_write": 50_000, "product_read": 2_000},
        "population": {
            "product": PRODUCTS,
            "category": CATEGORIES,
            "customer": CUSTOMERS,
            "session": SESSIONS,
            "promotion": 1,
        },
    },
    "back_office": {
        "load": "100 status-listing pages/s per status while the steady mix runs",
        "rates": {"order": 10_000, "cart_write": 50_000, "product_read": 2_000, "status_pages": 100},
        "population": {"product": PRODUCTS, "category": CATEGORIES, "customer": CUSTOMERS, "session": SESSIONS},
    },
}
REQUESTS = {
    "order": f"POST /orders, {STEADY_LINES} lines of random products, with its stream effects (confirmation)",
    "code_order": f"POST /orders as 'order', with the code {CODE} (a use taken on one of its counters and on the "
    "customer's count, its DISCOUNTS item), with its stream effects",
    "flash_order": "POST /orders, 1 line of the flash-sale product, its price in the instance's cache, with its stream effects",
    "flash_order_miss": "POST /orders, 1 line of the flash-sale product, the cache empty (reads the price), with its stream effects",
    "flash_rank_refresh": "the stream function's refresh of the flash-sale product's top-list entry (base + counter "
    "shards, one BatchGetItem; the rank write), at most once a second per instance; its orders never refresh it",
    "cart_write": "PUT /sessions/{session_id}/cart/{product_id}, a random product",
    "product_read": "GET /products/{product_id}, a random product",
    "flash_read": "GET /products/{product_id}, the flash-sale product, in the instance's cache",
    "flash_read_miss": "GET /products/{product_id}, the flash-sale product, the cache empty",
    "status_pages": "GET /orders?status=<s> (first page, default limit), one page of every status",
}


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Touch:
    """Capacity one call put on one partition key: ``units`` as DynamoDB bills it (writes priced from the
    stream images, bench/model.py), ``local`` as DynamoDB Local reported it (the call's figure shared
    over its keys in proportion to ``units``)."""

    space: str
    pk: str
    kind: str  # "write" | "read"
    units: float
    local: float
    check: bool = False  # a transaction's ConditionCheck: billed as a write of the checked key, not reported by Local


@dataclass
class Sample:
    """The calls of one request (and its stream effects) and the parameters the bench chose for it."""

    request: str
    calls: list[Call] = field(default_factory=list)
    binding: dict[str, str] = field(default_factory=dict)  # value the bench chose -> placeholder name


def _s(value: Any) -> str | None:
    return str(value["S"]) if isinstance(value, dict) and "S" in value else None


def _query_pk(params: dict[str, Any]) -> str | None:
    """The partition key value a Query's key condition names (``<name> = :value`` on PK or GSI1PK)."""
    import re

    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    for name, placeholder in re.findall(r"([#\w]+)\s*=\s*(:\w+)", params.get("KeyConditionExpression", "")):
        if names.get(name, name) in ("PK", "GSI1PK"):
            return _s(values.get(placeholder))
    return None


def _share(total: float, weights: list[float]) -> list[float]:
    whole = sum(weights)
    if not weights:
        return []
    if whole <= 0:
        return [total / len(weights)] * len(weights)
    return [total * w / whole for w in weights]


def touches(call: Call) -> list[Touch]:
    """Every partition key one call read or wrote, with the capacity it took there."""
    params, op = call.params, call.operation
    space = GSI1 if params.get("IndexName") else TABLE
    # DynamoDB bills a GetItem or Query at least one read unit (half of one, eventually consistent) even
    # when it finds nothing; DynamoDB Local reports 0 then.
    billed = max(call.capacity, 1.0 if params.get("ConsistentRead") else 0.5)
    if op == "GetItem":
        pk = _s((params.get("Key") or {}).get("PK")) or NOT_ATTRIBUTED
        return [Touch(TABLE, pk, "read", billed, call.capacity)]
    if op == "Query":
        pk = _query_pk(params) or NOT_ATTRIBUTED
        return [Touch(space, pk, "read", billed, call.capacity)]
    if op in ("BatchGetItem", "TransactGetItems"):
        if op == "BatchGetItem":
            keys = [k for spec in (params.get("RequestItems") or {}).values() for k in spec.get("Keys", [])]
        else:
            keys = [item["Get"]["Key"] for item in params.get("TransactItems", []) if "Get" in item]
        pks = [pk for pk in (_s(k.get("PK")) for k in keys) if pk]
        each = call.capacity / len(pks) if pks else 0.0
        return [Touch(TABLE, pk, "read", each, each) for pk in pks]
    if not call.is_write:
        return []
    table_local, gsi_local = local_split(call)
    if call.error:  # a failed conditional write: 1 WRU on the key it named (bench/model.py)
        pks = [key.split("|", 1)[0] for key in dict.fromkeys(call.write_keys)] or [NOT_ATTRIBUTED]
        return [Touch(TABLE, pk, "write", call.modelled_wru / len(pks), table_local / len(pks)) for pk in pks]
    table = [(item["pk"], float(item["table_wru"])) for item in call.written_items]
    index = [(pk, float(units)) for item in call.written_items for pk, units in item["gsi1"]]
    if not table:  # no stream record came back for it (an update that changed nothing): DynamoDB Local's figure
        table = [(key.split("|", 1)[0], 0.0) for key in dict.fromkeys(call.write_keys)]
    found = [
        Touch(TABLE, pk, "write", units, local)
        for (pk, units), local in zip(table, _share(table_local, [u for _, u in table]), strict=True)
    ]
    found += [
        Touch(GSI1, pk, "write", units, local)
        for (pk, units), local in zip(index, _share(gsi_local, [u for _, u in index]), strict=True)
    ]
    if gsi_local and not index:
        found.append(Touch(GSI1, NOT_ATTRIBUTED, "write", 0.0, gsi_local))
    # A ConditionCheck is billed as a transactional write of the checked item, on its key's partition; DynamoDB
    # Local does not report it (docs/performance.md), so none of its figure is shared onto the checked key.
    found += [Touch(TABLE, item["pk"], "write", float(item["wru"]), 0.0, check=True) for item in call.checked_items]
    return found


def local_split(call: Call) -> tuple[float, float]:
    """(table, GSI1) capacity DynamoDB Local reported for a call (all on the table when it gave no split)."""
    if call.table_capacity or call.gsi_capacity:
        return call.table_capacity, call.gsi_capacity
    return call.capacity, 0.0


def family(pk: str, binding: dict[str, str]) -> str:
    """The key's family: the parts the bench chose become ``<placeholder>``, digits ``<n>``, ids ``<unique>``."""
    parts = []
    for part in pk.split("#"):
        if part in binding:
            parts.append(f"<{binding[part]}>")
        elif part.isdigit():
            parts.append("<n>")
        elif len(part) >= 16 and part.isalnum():
            parts.append("<unique>")
        else:
            parts.append(part)
    return "#".join(parts)


@dataclass
class Profile:
    """Per request type: the mean units one request puts on each (space, family); the values seen per ``<n>``."""

    requests: dict[str, int] = field(default_factory=dict)
    units: dict[str, dict[tuple[str, str, str], float]] = field(default_factory=dict)
    local: dict[str, dict[tuple[str, str, str], float]] = field(default_factory=dict)
    shard_values: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    unattributed: dict[str, float] = field(default_factory=dict)
    checks: dict[str, float] = field(default_factory=dict)  # per request type: mean ConditionCheck WRU

    @classmethod
    def of(cls, samples: list[Sample]) -> Profile:
        profile = cls()
        for sample in samples:
            name = sample.request
            profile.requests[name] = profile.requests.get(name, 0) + 1
            units = profile.units.setdefault(name, defaultdict(float))
            local = profile.local.setdefault(name, defaultdict(float))
            for call in sample.calls:
                found = touches(call)
                for touch in found:
                    if touch.check:
                        profile.checks[name] = profile.checks.get(name, 0.0) + touch.units
                    fam = family(touch.pk, sample.binding)
                    key = (touch.space, fam, touch.kind)
                    units[key] += touch.units
                    local[key] += touch.local
                    if "<n>" in fam:
                        digits = [p for p in touch.pk.split("#") if p.isdigit()]
                        profile.shard_values[(touch.space, fam)].update(digits)
                reported = sum(t.local for t in found)
                if abs(reported - call.capacity) > 1e-9:
                    profile.unattributed[name] = profile.unattributed.get(name, 0.0) + call.capacity - reported
        for name, count in profile.requests.items():
            for table in (profile.units[name], profile.local[name]):
                for key in table:
                    table[key] /= count
            profile.checks[name] = profile.checks.get(name, 0.0) / count
        return profile

    def predict(self, counts: dict[str, int]) -> dict[str, float]:
        """Totals a run of ``counts`` requests should consume: billed and as DynamoDB Local reports them, and the
        billed writes' part that is ConditionChecks."""
        out = {
            "table_wcu": 0.0,
            "gsi1_wcu": 0.0,
            "rcu": 0.0,
            "billed_wcu": 0.0,
            "billed_rcu": 0.0,
            "billed_condition_check_wcu": 0.0,
        }
        for name, n in counts.items():
            out["billed_condition_check_wcu"] += n * self.checks.get(name, 0.0)
            for (space, _fam, kind), local in self.local.get(name, {}).items():
                if kind == "read":
                    out["rcu"] += n * local
                else:
                    out["table_wcu" if space == TABLE else "gsi1_wcu"] += n * local
            for (_space, _fam, kind), units in self.units.get(name, {}).items():
                out["billed_wcu" if kind == "write" else "billed_rcu"] += n * units
        return {k: round(v, 2) for k, v in out.items()}


def keys_in(fam: str, population: dict[str, int], shards: int) -> int | None:
    """How many partition keys a family spreads over in a mix; None: one key per request (made per request)."""
    count = 1
    for part in fam.split("#"):
        if part in ("<unique>", "<order>"):
            return None
        if part == "<n>":
            count *= shards
        elif part.startswith("<") and part.endswith(">"):
            count *= population.get(part[1:-1], 1)
    return count


def heat(profile: Profile, mix: dict[str, Any], shard_counts: dict[str, int]) -> list[dict[str, Any]]:
    """Per (space, family): WCU/s and RCU/s of its hottest key under the mix, and the family's totals."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for request, rate in mix["rates"].items():
        for (space, fam, kind), units in profile.units.get(request, {}).items():
            row = rows.setdefault(
                (space, fam),
                {"space": space, "family": fam, "wcu_s": 0.0, "rcu_s": 0.0, "total_wcu_s": 0.0, "total_rcu_s": 0.0},
            )
            shards = shard_counts.get(fam) or len(profile.shard_values.get((space, fam), ())) or 1
            keys = keys_in(fam, mix["population"], shards)
            total = rate * units
            column = "wcu_s" if kind == "write" else "rcu_s"
            row["total_" + column] += total
            if keys is None:  # a key made per request takes one request's units within its second
                row[column] = max(row[column], units)
            else:
                row[column] += total / keys
            row["keys"] = "one per request" if keys is None else keys
            row.setdefault("requests", set()).add(request)
    out = []
    for row in rows.values():
        row["requests"] = sorted(row["requests"])
        for column in ("wcu_s", "rcu_s", "total_wcu_s", "total_rcu_s"):
            row[column] = round(row[column], 2)
        row["load"] = round(max(row["wcu_s"] / WCU_LIMIT, row["rcu_s"] / RCU_LIMIT), 3)
        row["within_limits"] = row["wcu_s"] <= WCU_LIMIT and row["rcu_s"] <= RCU_LIMIT
        out.append(row)
    return sorted(out, key=lambda r: (-r["load"], r["space"], r["family"]))


class Driver:
    """Seeds a small catalogue, then runs requests of each type and keeps what each did."""

    def __init__(self, functions: Any, recorder: Recorder, dynamodb: Any, streams: Any, table: str) -> None:
        from bench.lambdas import order_events_reader
        from bench.model import Accountant

        self.functions = functions
        self.recorder = recorder
        self.client, self.table = dynamodb, table
        self.reader = order_events_reader(dynamodb, streams, table)
        self.accountant = Accountant(dynamodb, streams, table)
        self.rng = random.Random(11)
        self.products: dict[str, str] = {}  # product id -> category
        self.flash: str = ""
        self.promotion: str = ""  # the flash_code mix's promotion
        self.customers: list[str] = []
        self.sessions: list[str] = []
        self.carts: dict[str, list[str]] = {}
        self.problems: list[str] = []
        self.serial = 0

    def seed(self, products: int, categories: int, customers: int, sessions: int, per_shard: int) -> None:
        """Products written with ids chosen here, so that an SDK retry of a write that landed (a busy
        machine) is harmless; customers need no profile to order."""
        from shop import clock, errors, ids
        from shop.models import Product
        from shop.repository import ProductRepository, Table

        repository = ProductRepository(Table())
        now = clock.iso_now()
        for i in range(products + 1):
            category = f"heat-category-{i % categories}" if i < products else "heat-flash-sale"
            product = Product(
                product_id=ids.new_id(),
                name=f"Heat item {i:03d}",
                category=category,
                price_cents=500 + 10 * i,
                description="A product of the partition-heat sample.",
                stock=1_000_000,
                created_at=now,
                updated_at=now,
            )
            with contextlib.suppress(errors.ProductExists):
                repository.create(product, [category])
            self.products[product.product_id] = category
        self.flash = next(pid for pid, cat in self.products.items() if cat == "heat-flash-sale")
        for attempt in range(TRANSIENT_RETRIES):  # a 503 is retried, as any client would
            marked = self.functions.request(
                "POST",
                f"/products/{self.flash}/stock-shards",
                sub=ADMIN[0],
                groups=ADMIN[1],
                body={"shards": FLASH_SHARDS},
            )
            if marked.status != 503:
                break
            time.sleep(0.2 * (attempt + 1))
        if marked.status != 200:
            self.problems.append(f"marking the flash-sale product hot answered {marked.status}: {marked.body}")
        self.customers = [f"heat-customer-{i:03d}" for i in range(customers)]
        code = {"code": CODE, "kind": "percent", "value": 10, "usage_limit": 1_000_000, "per_customer_limit": 1_000}
        created = self.functions.request("POST", "/promotions", sub=ADMIN[0], groups=ADMIN[1], body=code)
        if created.status == 201:
            self.promotion = created.body["promotion_id"]
        else:
            self.problems.append(f"creating the code answered {created.status}: {created.body}")
        self.fill_status_index(per_shard)
        catalogue = self.catalogue()
        for _ in range(sessions):  # carts of CART_LINES lines: a cart write changes a quantity (a steady cost)
            created = self.functions.request("POST", "/sessions")
            if created.status == 201:
                session = created.body["session_id"]
                lines = self.rng.sample(catalogue, CART_LINES)
                for pid in lines:
                    self.functions.request("PUT", f"/sessions/{session}/cart/{pid}", body={"quantity": 1})
                self.sessions.append(session)
                self.carts[session] = lines
        self.drain(None)

    def fill_status_index(self, per_shard: int) -> None:
        """Orders in every status, about ``per_shard`` per shard, so that a status page's Queries
        read what they would on a busy table (DynamoDB Local reports 0 RCU for a Query that finds nothing)."""
        from bench.scale import ItemFactory, bulk_load
        from shop.config import settings
        from shop.models import OrderStatus

        shards = settings().status_shards
        factory = ItemFactory(shards=shards)
        items = [
            factory.order("heat-back-office", status)[0] for status in OrderStatus for _ in range(shards * per_shard)
        ]
        bulk_load(self.client, self.table, items)

    def catalogue(self) -> list[str]:
        return [pid for pid in self.products if pid != self.flash]

    def sample(self, request: str) -> Sample:
        """Every product id and category of the catalogue is a ``<product>`` and a ``<category>``."""
        binding = dict.fromkeys(self.products, "product")
        binding.update(dict.fromkeys(self.products.values(), "category"))
        return Sample(request, binding=binding)

    def drain(self, into: Sample | None) -> None:
        """Deliver the new stream records to order_events until the stream is quiet; keep its calls."""
        self.accountant.skip()
        total = Measurement()
        for _ in range(6):
            records = self.reader.read()
            if not records:
                break
            for event in self.reader.events_for(records):
                self._deliver(event, total)
        self.accountant.attribute(total)
        if into is not None:
            into.calls += total.calls

    def _deliver(self, event: dict[str, Any], total: Measurement) -> None:
        """As the event source mapping does: a batch whose records failed is sent again from the first failure."""
        for attempt in range(TRANSIENT_RETRIES):
            with self.recorder.measure() as measurement:
                result = self.functions.invoke("order_events", event)
            total.calls += measurement.calls
            failed = {f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])}
            if not failed:
                return
            records = event["Records"]
            first = next(i for i, r in enumerate(records) if r["dynamodb"]["SequenceNumber"] in failed)
            event = {"Records": records[first:]}
            time.sleep(0.2 * (attempt + 1))
        self.problems.append(f"order_events still failed after {TRANSIENT_RETRIES} deliveries: {sorted(failed)}")

    def _request(self, sample: Sample, expect: int, method: str, path: str, **kwargs: Any) -> Any:
        self.accountant.skip()
        with self.recorder.measure() as measurement:
            reply = self.functions.request(method, path, **kwargs)
        self.accountant.attribute(measurement)
        sample.calls += measurement.calls
        if reply.status != expect:
            self.problems.append(f"{sample.request}: {method} {path} answered {reply.status}: {str(reply.body)[:200]}")
        return reply

    def order(self, request: str, ids: list[str], code: str | None = None) -> Sample:
        sample = self.sample(request)
        customer = self.customers[self.serial % len(self.customers)]
        self.serial += 1
        sample.binding[customer] = "customer"
        body: dict[str, Any] = {
            "lines": [{"product_id": pid, "quantity": 1} for pid in ids],
            "shipping_address": ADDRESS,
        }
        if code is not None:
            body["promo_code"] = code
            sample.binding[self.promotion] = "promotion"
        reply = self._request(
            sample,
            201,
            "POST",
            "/orders",
            sub=customer,
            body=body,
            headers={"Idempotency-Key": f"heat-{uuid.uuid4()}"},
        )
        if reply.status == 201:
            sample.binding[reply.body["order_id"]] = "order"
        self.drain(sample)
        return sample

    def cache_for(self, request: str) -> None:
        """The instance caches as the request type assumes them: emptied for a miss, warmed for a hit
        (unmeasured: a GET, or an order whose stream effects are delivered before the measured one)."""
        from shop.services import hot_products

        if request.startswith("flash_order") or request == "flash_rank_refresh":
            self.warm_sales_markers()
        if request.endswith("_miss"):
            hot_products.clear_all()
        elif request == "flash_read":
            self.functions.request("GET", f"/products/{self.flash}")
        elif request in ("flash_order", "flash_rank_refresh"):
            body = {"lines": [{"product_id": self.flash, "quantity": 1}], "shipping_address": ADDRESS}
            key = {"Idempotency-Key": f"heat-warm-{uuid.uuid4()}"}
            self.functions.request("POST", "/orders", sub=self.customers[0], body=body, headers=key)
            self.drain(None)

    def warm_sales_markers(self) -> None:
        """The stream instance has named every counter shard in the day's marker (it does so once per shard
        per day): a sample of a few orders would otherwise show the first day's marker writes as steady."""
        from shop import clock
        from shop.repository import Table
        from shop.repository.sales import SalesRepository

        sales = SalesRepository(Table())
        for shard in range(FLASH_SHARDS):
            sales._mark_sharded(self.flash, clock.iso_now()[:10], shard)

    def run(self, request: str) -> Sample:
        catalogue = self.catalogue()
        self.cache_for(request)
        if request == "order":
            return self.order(request, self.rng.sample(catalogue, STEADY_LINES))
        if request == "code_order":
            return self.order(request, self.rng.sample(catalogue, STEADY_LINES), CODE)
        if request in ("flash_order", "flash_order_miss"):
            return self.order(request, [self.flash])
        sample = self.sample(request)
        if request == "flash_rank_refresh":
            from shop import clock
            from shop.repository import Table
            from shop.repository.sales import SalesRepository

            self.accountant.skip()
            with self.recorder.measure() as measurement:
                SalesRepository(Table())._refresh_ranks([self.flash], clock.iso_now()[:10])
            self.accountant.attribute(measurement)
            sample.calls += measurement.calls
            return sample
        if request in ("product_read", "flash_read", "flash_read_miss"):
            pid = self.flash if request.startswith("flash_read") else self.rng.choice(catalogue)
            self._request(sample, 200, "GET", f"/products/{pid}")
        elif request == "cart_write":
            session = self.rng.choice(self.sessions)
            pid = self.rng.choice(self.carts[session])
            sample.binding[session] = "session"
            body = {"quantity": self.rng.randint(1, 5)}
            self._request(sample, 200, "PUT", f"/sessions/{session}/cart/{pid}", body=body)
        elif request == "status_pages":
            from shop.models import OrderStatus

            for status in OrderStatus:
                self._request(sample, 200, "GET", "/orders", sub=ADMIN[0], groups=ADMIN[1], query={"status": status})
        else:
            raise ValueError(request)
        return sample


CACHE_MODEL = {
    "ttl_seconds": CACHE_SECONDS,
    "instances_per_function": INSTANCES,
    "misses_per_s": min(FLASH_READS, INSTANCES / CACHE_SECONDS),
    "assumption": "each instance of a function reads the hot product at most once per TTL: misses/s = "
    "min(rate, instances / TTL) for GETs (products function) and placements (orders function) apart; "
    "1,000 instances each (rate x mean duration, e.g. 20,000 GETs/s x 50 ms; the default regional "
    "concurrency quota). A hit makes no call.",
}


def _within(predicted: float, measured: float) -> bool:
    if measured == 0:
        return predicted == 0
    return abs(predicted - measured) / measured <= CHECK_TOLERANCE


def model_check(profile: Profile, driver: Driver, counts: dict[str, int]) -> dict[str, Any]:
    """A fresh small run (new products, customers, orders): the model's prediction vs DynamoDB Local's report."""
    calls: list[Call] = []
    for request, n in counts.items():
        for _ in range(n):
            calls += driver.run(request).calls
    writes = [local_split(c) for c in calls if c.is_write]
    measured = {
        "table_wcu": round(sum(table for table, _ in writes), 2),
        "gsi1_wcu": round(sum(gsi for _, gsi in writes), 2),
        "rcu": round(sum(c.capacity for c in calls if not c.is_write), 2),
        "billed_wcu": round(sum(c.modelled_wru for c in calls if c.is_write), 2),
        "billed_rcu": round(sum(t.units for c in calls if not c.is_write for t in touches(c)), 2),
        "billed_condition_check_wcu": round(sum(c.condition_check_wru() for c in calls if c.is_write), 2),
    }
    predicted = profile.predict(counts)
    rows = {}
    for key, figure in measured.items():
        error = (predicted[key] - figure) / figure if figure else 0.0
        rows[key] = {
            "predicted": predicted[key],
            "measured": figure,
            "error": round(error, 4),
            "within_10_percent": _within(predicted[key], figure),
        }
    return {
        "run": counts,
        "calls": len(calls),
        "totals": rows,
        "measured_by": "table_wcu, gsi1_wcu, rcu: DynamoDB Local's ConsumedCapacity (ReturnConsumedCapacity=INDEXES) "
        "summed over every call of the run, against the sample's figures in the same terms (neither side holds "
        "the transactions' ConditionChecks: DynamoDB Local does not report them); billed_wcu: the same writes "
        "priced from their stream images, each ConditionCheck at 2 WRU per started KB of the checked item "
        "(bench/model.py: DynamoDB Local reports a multi-item transaction as one item per operation type), "
        "billed_condition_check_wcu the ConditionChecks' part of it",
        "met": all(r["within_10_percent"] for r in rows.values()),
    }


def _hottest(rows: list[dict[str, Any]], space: str) -> dict[str, Any] | None:
    found = [r for r in rows if r["space"] == space]
    if not found:
        return None
    top = found[0]
    return {"key": top["family"], "wcu_s": top["wcu_s"], "rcu_s": top["rcu_s"], "keys": top["keys"]}


def partition_heat(config: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    import os

    from infra.settings import DEFAULT_STATUS_SHARDS
    from shop import clock, keys
    from shop.config import settings
    from shop.limits import CHECKOUT_VERSION_SHARDS, SALES_TOP_SHARDS

    store = ctx["store"]
    table = store.create_table("bench-heat")
    store.use(table)
    # the deployed default, not the routes phase's 4; the smoke run's 4 (its figures are not results: 48 shards'
    # back-office orders were most of its CPU, through the stream)
    shards = 4 if config.smoke else DEFAULT_STATUS_SHARDS
    previous = {name: os.environ.get(name, "") for name in ("STATUS_SHARDS", "HOT_PRODUCT_CACHE_SECONDS")}
    os.environ["STATUS_SHARDS"] = str(shards)
    os.environ["HOT_PRODUCT_CACHE_SECONDS"] = SAMPLE_CACHE_SECONDS
    settings.cache_clear()
    from shop.repository import sales as sales_repository

    refresh_seconds = sales_repository.RANK_REFRESH_SECONDS
    sales_repository.RANK_REFRESH_SECONDS = 3600.0  # an order's count never refreshes; flash_rank_refresh does
    functions = ctx.get("functions")
    if functions is None:
        from bench.lambdas import Functions

        with quiet_stdout(ctx["log"]):
            functions = ctx["functions"] = Functions()
    per_type = 1 if config.smoke else 8
    with Recorder() as recorder, quiet_stdout(ctx["log"]):
        driver = Driver(functions, recorder, store.client(), store.client("dynamodbstreams"), table)
        log("partition heat: seeding the catalogue, customers and carts")
        if config.smoke:
            driver.seed(products=8, categories=2, customers=4, sessions=2, per_shard=1)
        else:
            driver.seed(products=40, categories=8, customers=16, sessions=8, per_shard=BACK_OFFICE_ORDERS_PER_SHARD)
        log(f"partition heat: {per_type} request(s) of each type")
        samples = [driver.run(request) for request in REQUESTS for _ in range(per_type)]
        profile = Profile.of(samples)
        check_counts = dict.fromkeys(REQUESTS, 1 if config.smoke else 4)
        log("partition heat: the model's check run")
        check = model_check(profile, driver, check_counts)
    sales_repository.RANK_REFRESH_SECONDS = refresh_seconds
    os.environ.update(previous)  # the later phases' settings (bench/store.py)
    settings.cache_clear()
    status_family = family(keys.order_status_pk("S", 0), {"S": "s"}).replace("<s>", "{status}")
    shard_counts = {
        status_family.replace("{status}", status): shards
        for status in ("PENDING", "CONFIRMED", "SHIPPED", "DELIVERED", "CANCELLED")
    }
    shard_counts[family(keys.stock_shard_key("P", 0)[keys.PK], {"P": "product"})] = FLASH_SHARDS
    day = clock.iso_now()[:10]  # the sample's top-list entries are under today's date
    shard_counts[family(keys.sales_top_pk(day, 0), {})] = SALES_TOP_SHARDS
    # every checkout reads one random copy of the checkout settings' version (decision 076)
    shard_counts[family(keys.checkout_version_shard_key(0)[keys.PK], {})] = CHECKOUT_VERSION_SHARDS
    # the flash_code mix's code: its uses spread over its counters (decision 078)
    counter = keys.promotion_uses_key("C", 0)[keys.PK]
    shard_counts[family(counter, {"C": "promotion"})] = CODE_COUNTERS
    mixes: dict[str, Any] = {}
    misses: list[str] = []
    for name, mix in MIXES.items():
        rows = heat(profile, mix, shard_counts)
        over = [r for r in rows if not r["within_limits"]]
        misses += [f"{name}: {r['space']} {r['family']} {r['wcu_s']} WCU/s {r['rcu_s']} RCU/s" for r in over]
        mixes[name] = {
            "load": mix["load"],
            "rates_per_s": mix["rates"],
            "keys_per_placeholder": mix["population"],
            **({"cache": CACHE_MODEL} if name == "flash_sale" else {}),
            "hottest_table_key": _hottest(rows, TABLE),
            "hottest_gsi1_key": _hottest(rows, GSI1),
            "within_limits": not over,
            "families": rows,
        }
    per_request = {
        name: {
            "sampled": profile.requests.get(name, 0),
            "what": REQUESTS[name],
            "per_request": [
                {"space": space, "family": fam, "kind": kind, "units": round(units, 3)}
                for (space, fam, kind), units in sorted(profile.units.get(name, {}).items())
            ],
            "condition_check_wru": round(profile.checks.get(name, 0.0), 3),  # included in per_request's writes
        }
        for name in REQUESTS
    }
    why = None
    if misses or not check["met"] or driver.problems:
        why = misses + ([] if check["met"] else [f"model check: {check['totals']}"])
        if driver.problems:
            why.append(f"the sample is not valid: {len(driver.problems)} problem(s), see problems")
    return {
        "limits": {"wcu_per_s_per_key": WCU_LIMIT, "rcu_per_s_per_key": RCU_LIMIT},
        "status_shards": shards,
        "mixes": mixes,
        "requests": per_request,
        "model_check": check,
        "problems": driver.problems,
        "method": "keys and capacity captured per call on DynamoDB Local (bench/heat.py), families spread "
        "uniformly over the mix's key populations; writes priced per item from the stream images",
        "target": "no key above 1,000 WCU/s or 3,000 RCU/s in any mix; model within 10% of DynamoDB Local",
        "met": not misses and check["met"] and not driver.problems,
        "misses": misses,
        "why": why,
    }
