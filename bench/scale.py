"""Scale: p50 of three list routes with the table holding 1,000 and then 100,000 items.

Items are shaped as the repository writes them (its own builders: `product_item`, `order_item`, the
customer's order entry from `SUMMARY_FIELDS`) and bulk-loaded with BatchWriteItem from several
threads. The three measured lists hold the same 100 items at both sizes; everything added between
the two measurements goes to other categories, customers and statuses, so the ratio shows what
table size alone does to a request (the design's claim: nothing).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import time
from collections.abc import Iterator
from typing import Any

from bench.stats import median, ms, percentile
from bench.store import quiet_stdout

TARGET = 1.2
MEASURED_PER_LIST = 100
PAGE = 20
CATEGORY = "scale-measured"
CUSTOMER = "scale-customer"
STATUS = "SHIPPED"
FILL_STATUSES = ("PENDING", "CONFIRMED", "DELIVERED", "CANCELLED")
ADDRESS = {"name": "Scale", "line1": "1 Main St", "city": "Springfield", "postal_code": "12345", "country": "US"}


def _iso(n: int) -> str:
    return f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:{(n // 60) % 60:02d}.{n % 1_000_000:06d}Z"


class ItemFactory:
    def __init__(self, shards: int = 4) -> None:
        from shop import ids

        self.shards = shards
        self.new_id = ids.new_id
        self.serial = itertools.count()

    def product(self, category: str) -> dict[str, Any]:
        from shop.models import Product
        from shop.repository.products import product_item

        n = next(self.serial)
        now = _iso(n)
        product = Product(
            product_id=self.new_id(),
            name=f"Item {n:07d}",
            category=category,
            price_cents=100 + n % 10_000,
            description="A product used to fill the table for the scale benchmark.",
            stock=n % 500,
            created_at=now,
            updated_at=now,
        )
        return product_item(product)

    def order(self, customer_id: str, status: str) -> list[dict[str, Any]]:
        """The order item and the customer's order entry, as the placement transaction writes them."""
        from shop import keys
        from shop.models import Order, OrderLine, OrderStatus, ShippingAddress
        from shop.repository.orders import SUMMARY_FIELDS, order_item

        n = next(self.serial)
        now = _iso(n)
        lines = [
            OrderLine(
                product_id=self.new_id(), name=f"Item {n + i}", unit_price_cents=500, quantity=1, line_total_cents=500
            )
            for i in range(3)
        ]
        order = Order(
            order_id=self.new_id(),
            customer_id=customer_id,
            status=OrderStatus(status),
            version=1 if status == "PENDING" else 2,
            lines=lines,
            total_cents=1500,
            shipping_address=ShippingAddress.model_validate(ADDRESS),
            created_at=now,
            updated_at=now,
            history=[],
        )
        summary = {field: getattr(order, field) for field in SUMMARY_FIELDS}
        entry = {
            **keys.customer_order_key(customer_id, order.order_id),
            "entity": "CUSTOMER_ORDER",
            **{k: (v.value if hasattr(v, "value") else v) for k, v in summary.items()},
        }
        return [order_item(order, self.shards), entry]

    def measured(self) -> Iterator[dict[str, Any]]:
        """The three measured lists: MEASURED_PER_LIST items each, identical at both sizes."""
        for _ in range(MEASURED_PER_LIST):
            yield self.product(CATEGORY)
        for _ in range(MEASURED_PER_LIST):
            order, entry = self.order(CUSTOMER, STATUS)
            yield order  # in the SHIPPED status index
            yield entry  # in the measured customer's order list
        # The measured customer's order entries above belong to SHIPPED orders; nothing else goes there.

    def fill(self, count: int) -> Iterator[dict[str, Any]]:
        """Everything else: products in 200 categories, orders and entries of 5,000 customers."""
        made = 0
        while made < count:
            n = next(self.serial)
            if n % 5 < 2:
                yield self.product(f"category-{n % 200:03d}")
                made += 1
            else:
                for item in self.order(f"customer-{n % 5000:05d}", FILL_STATUSES[n % len(FILL_STATUSES)]):
                    if made < count:
                        yield item
                        made += 1


def bulk_load(client: Any, table: str, items: list[dict[str, Any]], threads: int = 8) -> float:
    """BatchWriteItem in 25s from several threads, unprocessed items retried; returns seconds."""
    from shop.repository.store import to_item

    batches = [items[i : i + 25] for i in range(0, len(items), 25)]

    def write(batch: list[dict[str, Any]]) -> None:
        request = {table: [{"PutRequest": {"Item": to_item(item)}} for item in batch]}
        for attempt in range(10):
            unprocessed = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
            if not unprocessed:
                return
            request = unprocessed
            time.sleep(0.05 * (attempt + 1))
        raise RuntimeError("BatchWriteItem left items unprocessed after 10 attempts")

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(write, batches))
    return time.perf_counter() - started


def _measure(functions: Any, samples: int) -> dict[str, dict[str, float]]:
    calls = {
        "GET /products?category=": lambda: functions.request(
            "GET", "/products", query={"category": CATEGORY, "limit": str(PAGE)}
        ),
        "GET /customers/{customer_id}/orders": lambda: functions.request(
            "GET", f"/customers/{CUSTOMER}/orders", query={"limit": str(PAGE)}, sub=CUSTOMER
        ),
        "GET /orders?status=": lambda: functions.request(
            "GET", "/orders", query={"status": STATUS, "limit": str(PAGE)}, sub="scale-admin", groups=["admin"]
        ),
    }
    out: dict[str, dict[str, float]] = {}
    times: dict[str, list[float]] = {name: [] for name in calls}
    statuses: dict[str, int] = {}
    for name, call in calls.items():
        for _ in range(max(3, samples // 4)):  # warm-up
            statuses[name] = call().status
    for _ in range(samples):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - started)
    for name, samples_s in times.items():
        out[name] = {"p50": median(samples_s), "p90": percentile(samples_s, 90), "status": statuses[name]}
    return out


def scale(config: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    functions = ctx.get("functions")
    if functions is None or not all(functions.has(f) for f in ("products", "orders")):
        return {"met": False, "why": "needs the products and orders handlers (routes phase)"}
    store = ctx["store"]
    table = store.create_table("bench-scale")
    store.use(table)
    from shop.repository.store import CLIENT_CONFIG

    client = store.client(
        config=CLIENT_CONFIG.merge(__import__("botocore.config").config.Config(max_pool_connections=16))
    )
    factory = ItemFactory()
    small_items = list(factory.measured())
    small_items += list(factory.fill(config.scale_small - len(small_items)))
    load_small = bulk_load(client, table, small_items)
    with quiet_stdout(ctx["log"]):
        small = _measure(functions, config.scale_samples)
    started = time.perf_counter()
    large_items = list(factory.fill(config.scale_large - len(small_items)))
    build_s = time.perf_counter() - started
    load_large = bulk_load(client, table, large_items)
    count = client.describe_table(TableName=table)["Table"].get("ItemCount")
    with quiet_stdout(ctx["log"]):
        large = _measure(functions, config.scale_samples)
    routes: dict[str, Any] = {}
    misses = []
    for name in small:
        ratio = round(large[name]["p50"] / small[name]["p50"], 3)
        routes[name] = {
            "p50_ms_small": ms(small[name]["p50"]),
            "p50_ms_large": ms(large[name]["p50"]),
            "p90_ms_small": ms(small[name]["p90"]),
            "p90_ms_large": ms(large[name]["p90"]),
            "status": large[name]["status"],
            "ratio": ratio,
        }
        if ratio > TARGET or large[name]["status"] != 200:
            misses.append(f"{name}: {ratio} (status {large[name]['status']})")
    store.delete_table(table)
    return {
        "value": max(r["ratio"] for r in routes.values()),
        "sizes": [config.scale_small, config.scale_large],
        "item_count_reported": count,
        "routes": routes,
        "samples_per_route": config.scale_samples,
        "page_limit": PAGE,
        "measured_list_items": MEASURED_PER_LIST,
        "load_seconds": round(load_small + load_large, 1),
        "load_items_per_s": round(len(large_items) / load_large) if load_large else None,
        "item_build_seconds": round(build_s, 1),
        "target": TARGET,
        "met": not misses,
        "misses": misses,
        "method": "in-process handler invocations against DynamoDB Local; the measured lists hold the same items at "
        "both sizes, the rest of the table grows (products in 200 categories, orders of 5,000 customers in other "
        "statuses); p50 of interleaved samples after a warm-up",
    }
