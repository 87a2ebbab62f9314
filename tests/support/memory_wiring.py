"""The functions' handlers on the in-memory store: shop.wiring built on it (`wiring.built_on`), for the fast lane.

`MemoryWiring` is what every factory of shop.wiring builds on under `built_on`: the services on one
MemoryStore, the stream processor on its MemoryStream, Powertools' idempotency records and the migrations'
store in memory. `Handlers` imports each function once under it (as a warm Lambda keeps its module) and
calls it with API Gateway HTTP API events (payload 2.0, tests/functions/apigw.py) or stream events
(`memory_stream.lambda_event`); `reset()` empties every store between tests, keeping the objects the
handlers built their services on at import.

    handlers = Handlers(MemoryWiring())
    handlers.wiring.seed()                       # events/seed.json, through the memory stores
    reply = handlers.call("GET", "/products/prod-mouse")
    handlers.stream()                            # the stream's new records through order_events
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS, DataRecord

from local_runtime import worker
from local_runtime.in_process import InProcessFunctions, Reply
from local_runtime.sample_data import _PATH_TO_STATUS, _seed_details, read_seed, seed_order
from local_runtime.template import REPO_ROOT
from shop import clock, errors, wiring
from shop.migrations.changes import Change, Put
from shop.migrations.runner import AlreadyApplied, Checkpoint, Progress, ScanPage
from shop.models import Customer, OrderStatus, Product, Review, ShippingAddress
from shop.models.categories import Category, category_path, listing_scopes, path_slugs
from shop.models.checkout import Promotion
from shop.services import hot_products, product_events
from shop.services.alerts import AlertService
from shop.services.archival import ArchivalService
from shop.services.carts import CartService
from shop.services.catalog import CatalogService
from shop.services.categories import CategoryService
from shop.services.category_moves import CategoryMoves
from shop.services.customers import CustomerService
from shop.services.order_events import OrderEventsService
from shop.services.orders import OrderService
from shop.services.payments import PaymentService
from shop.services.product_events import ProductEventsService
from shop.services.sales import SalesService
from shop.services.sessions import SessionService
from tests.functions.apigw import event
from tests.support.fake_payments import FakePayments
from tests.support.memory_store import MemoryStore
from tests.support.memory_stream import MemoryChange, MemoryStream, lambda_event, order_events_service

FUNCTIONS = REPO_ROOT / "functions"


class _RecordsInMemory(BasePersistenceLayer):
    """Powertools' persistence layer on a dict, with the DynamoDB layer's put condition: a key is taken
    unless its record expired, or is in progress past its in-progress expiry."""

    def __init__(self, records: dict[str, DataRecord]) -> None:
        super().__init__()
        self.records = records

    def _get_record(self, idempotency_key: str) -> DataRecord:
        record = self.records.get(idempotency_key)
        if record is None:
            raise IdempotencyItemNotFoundError
        return record

    def _put_record(self, data_record: DataRecord) -> None:
        now = time.time()
        held = self.records.get(data_record.idempotency_key)
        if held is not None:
            expired = held.expiry_timestamp is not None and held.expiry_timestamp < int(now)
            lock_expired = (
                held.status == STATUS_CONSTANTS["INPROGRESS"]
                and held.in_progress_expiry_timestamp is not None
                and held.in_progress_expiry_timestamp < int(now * 1000)
            )
            if not (expired or lock_expired):
                raise IdempotencyItemAlreadyExistsError
        self.records[data_record.idempotency_key] = data_record

    def _update_record(self, data_record: DataRecord) -> None:
        self.records[data_record.idempotency_key] = data_record

    def _delete_record(self, data_record: DataRecord) -> None:
        self.records.pop(data_record.idempotency_key, None)


class MemoryIdempotencyRecords:
    """shop.http_api.idempotency.Records in memory: the placements' idempotency records."""

    def __init__(self) -> None:
        self.records: dict[str, DataRecord] = {}
        self._layer = _RecordsInMemory(self.records)

    def identity(self) -> tuple[Any, str]:
        return self, "memory"

    def persistence_layer(self) -> BasePersistenceLayer:
        return self._layer

    @staticmethod
    def unavailable(cause: BaseException | None) -> errors.ServiceUnavailable | None:
        return None  # a dict is never unavailable

    def reset(self) -> None:
        self.records.clear()


class MemoryMigrations:
    """shop.migrations.runner.MigrationStore over raw items (as a Scan returns them, plain values).

    Segments split the items by a hash of their partition key, each segment in key order; a change's
    conditions are the table's to prove (tests/repository/test_migrations.py): here a change applied
    once fails as already applied when asked again, which is what its conditions guarantee. A Put adds
    its item; updates and deletes are recorded in `applied`.
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.items: list[dict[str, Any]] = []
        self.applied: list[Change] = []
        self.checkpoints: dict[tuple[str, int, int], Checkpoint] = {}
        self.records: dict[str, dict[str, Any]] = {}

    def reset(self) -> None:
        self.items.clear()
        self.applied.clear()
        self.checkpoints.clear()
        self.records.clear()

    def category_paths(self, slugs: list[str]) -> dict[str, str]:
        return {slug: category.path for slug, category in self.store.categories.get_many(slugs).items()}

    def scan_page(self, *, segment: int, segments: int, start_key: dict[str, Any] | None, limit: int) -> ScanPage:
        mine = sorted(
            (item for item in self.items if zlib.crc32(str(item["PK"]).encode()) % segments == segment),
            key=lambda item: (str(item["PK"]), str(item["SK"])),
        )
        if start_key is not None:
            mine = [item for item in mine if (str(item["PK"]), str(item["SK"])) > (start_key["PK"], start_key["SK"])]
        page = mine[:limit]
        last = {"PK": page[-1]["PK"], "SK": page[-1]["SK"]} if len(mine) > limit else None
        return ScanPage(items=[dict(item) for item in page], last_key=last)

    def apply(self, change: Change) -> float:
        if change in self.applied:
            raise AlreadyApplied
        self.applied.append(change)
        self.items += [dict(operation.item) for operation in change.operations if isinstance(operation, Put)]
        return float(change.estimated_units)

    def checkpoint(self, name: str, segments: int, segment: int) -> Checkpoint:
        saved = self.checkpoints.get((name, segments, segment))
        if saved is None:
            return Checkpoint()
        return Checkpoint(last_key=saved.last_key, done=saved.done, progress=Progress(**saved.progress.as_dict()))

    def save_checkpoint(self, name: str, segments: int, segment: int, checkpoint: Checkpoint) -> None:
        self.checkpoints[(name, segments, segment)] = Checkpoint(
            last_key=checkpoint.last_key, done=checkpoint.done, progress=Progress(**checkpoint.progress.as_dict())
        )

    def record(self, name: str) -> dict[str, Any] | None:
        return self.records.get(name)

    def save_record(self, name: str, segments: int, progress: Progress) -> None:
        self.records.setdefault(
            name, {"migration": name, "segments": segments, "applied_at": clock.iso_now(), **progress.as_dict()}
        )


class MemoryWiring:
    """shop.wiring.InjectedStore: every service the handlers build, on one in-memory store."""

    def __init__(self) -> None:
        self.store = MemoryStore(streamed_moves=True)  # a category move steps through order_events, as deployed
        self.stream = MemoryStream(self.store)
        self.idempotency = MemoryIdempotencyRecords()
        self.migrations = MemoryMigrations(self.store)
        # The payment provider under PAYMENTS=stripe (checkout's intents, the steps' captures, cancels, refunds).
        self.payments = FakePayments()

    def reset(self) -> None:
        """Every store empty, and the instance-wide memos of the rules forgotten (a fresh Lambda instance's)."""
        self.store.reset()
        self.stream.reset()
        self.idempotency.reset()
        self.migrations.reset()
        self.payments.__dict__.update(vars(FakePayments()))  # emptied in place: the payments handler keeps its service
        hot_products.clear_all()
        product_events._thresholds.clear()  # per instance: a product's threshold and shard count as last read
        product_events._shard_counts.clear()

    def catalog_service(self) -> CatalogService:
        return self.store.catalog_service()

    def category_service(self) -> CategoryService:
        return self.store.category_service()

    def alert_service(self) -> AlertService:
        return self.store.alert_service()

    def customer_service(self) -> CustomerService:
        return self.store.customer_service()

    def order_service(self) -> OrderService:
        return self.store.order_service(payments=lambda: self.payments)

    def payment_service(self) -> PaymentService:
        return self.store.payment_service(payments=lambda: self.payments)

    def sales_service(self) -> SalesService:
        return self.store.sales_service()

    def session_service(self) -> SessionService:
        return self.store.session_service()

    def cart_service(self) -> CartService:
        return self.store.cart_service()

    def idempotency_records(self) -> MemoryIdempotencyRecords:
        return self.idempotency

    def order_events_service(self) -> OrderEventsService:
        return order_events_service(self.store, self.stream)

    def product_events_service(self) -> ProductEventsService:
        return self.order_events_service().products

    def category_moves(self) -> CategoryMoves:
        return self.order_events_service().moves

    def archival_service(self) -> ArchivalService:
        return self.order_events_service().archival

    def migration_store(self) -> MemoryMigrations:
        return self.migrations

    def seed(self) -> dict[str, Any]:
        """events/seed.json through the memory stores, as local_runtime.sample_data.load_seed writes it to a
        table (the matrix's data: alice, bob, their orders in each status, the demo sessions and carts);
        then the stream is read past the seed's changes."""
        seed = read_seed()
        store, now = self.store, clock.iso_now()
        for entry in seed["customers"]:
            store.customers.create(Customer(**entry, version=1, created_at=now, updated_at=now))
        paths: dict[str, str] = {}
        for entry in seed["categories"]:
            parent = store.categories.get(entry["parent"]) if entry.get("parent") else None
            path = category_path([*path_slugs(parent.path), entry["slug"]] if parent else [entry["slug"]])
            paths[entry["slug"]] = path
            store.categories.create(Category(**entry, path=path, depth=len(path_slugs(path)), created_at=now), parent)
        catalogue: dict[str, Product] = {}
        for entry in seed["products"]:
            shards = entry.get("stock_shards", 1)
            product = Product(**{**entry, "stock_shards": 1}, created_at=now, updated_at=now)
            catalogue[product.product_id] = store.products.create(
                product, listing_scopes([paths[slug] for slug in product.categories])
            )
            if shards > 1:
                store.products.spread_stock(store.products.stock_layout(product.product_id), shards)
        for entry in seed["reviews"]:
            store.products.add_review(Review(**entry, created_at=now))
        for entry in seed["promotions"]:
            settings = store.checkout_settings.snapshot()
            promotion = Promotion(**entry, created_at=now, updated_at=now)
            store.checkout_settings.put_promotion(promotion, read_version=settings.version)
        address = ShippingAddress(**seed["shipping_address"])
        for entry in seed["orders"]:
            order = seed_order(entry, catalogue, address, now)
            store.state.orders[order.order_id] = order  # restored as written: no stock taken
            for status in _PATH_TO_STATUS[OrderStatus(entry.get("status", "PENDING"))]:
                at = clock.iso_now()
                order = store.orders.change_status(order, status, updated_at=at, details=_seed_details(status, at))
        moment = clock.epoch(clock.now())
        for entry in seed["sessions"]:
            store.sessions.create(entry["session_id"], created_at=now, expires_at=moment + 7 * 24 * 3600)
            for line in entry["cart"]:
                product = catalogue[line["product_id"]]
                store.sessions.set_line(
                    entry["session_id"],
                    product_id=product.product_id,
                    name=product.name,
                    unit_price_cents=product.price_cents,
                    quantity=line["quantity"],
                    added_at=clock.iso_now(),
                    now=moment,
                    expires_at=moment + 7 * 24 * 3600,
                )
        for entry in seed["customer_carts"]:
            for line in entry["cart"]:
                product = catalogue[line["product_id"]]
                store.carts.set_line(
                    entry["customer_id"],
                    product_id=product.product_id,
                    name=product.name,
                    unit_price_cents=product.price_cents,
                    quantity=line["quantity"],
                    added_at=clock.iso_now(),
                    now=moment,
                    expires_at=moment + 30 * 24 * 3600,
                )
        self.stream.read()  # the seed is history: the stream starts after it
        return seed


class _MemoryFunctions(InProcessFunctions):
    """local_runtime's in-process functions, each module under its own name: the same handlers loaded on the
    table by tests/functions (in the same interpreter under `make test`) stay apart from these."""

    def handler(self, name: str) -> Callable[..., Any]:
        if name not in self._handlers:
            fn = self.functions[name]
            self._handlers[name] = worker.load_handler(
                str(fn.code_dir), fn.handler, f"_memory_{name}_handler", isolated=True
            )
        return self._handlers[name]


class Handlers:
    """Every function (the declared ones and the migration worker), imported once on `memory` and called on it."""

    def __init__(self, memory: MemoryWiring) -> None:
        self.wiring = memory
        self.functions = _MemoryFunctions(
            headers={"accept": "application/json", "host": "api.example.com", "user-agent": "pytest"},
            source_ip="203.0.113.7",
        )
        self.functions.functions["migrations"] = replace(
            self.functions.functions["orders"],
            logical_id="migrations",
            name="migrations",
            code_dir=FUNCTIONS / "migrations",
            timeout_s=900,  # as deployed (infra/stacks/operations.py)
        )
        self.functions.functions.setdefault(  # the stream's second consumer under PAYMENTS=stripe (issue 25)
            "payment_steps",
            replace(
                self.functions.functions["order_events"],
                logical_id="payment_steps",
                name="payment_steps",
                code_dir=FUNCTIONS / "payment_steps",
                timeout_s=60,
            ),
        )

    def load(self) -> None:
        with wiring.built_on(self.wiring):
            failed = self.functions.load()
        if failed:
            raise ImportError(failed)

    def invoke(self, function: str, evt: Any) -> Any:
        with wiring.built_on(self.wiring):
            return self.functions.invoke(function, evt)

    def call_event(self, function: str, evt: dict[str, Any]) -> Reply:
        """One API Gateway event (payload 2.0) through `function`."""
        return Reply.of(self.invoke(function, evt))

    def call(self, method: str, path: str, **kwargs: Any) -> Reply:
        """The request through the function its route names (tests/functions/apigw.py's event)."""
        match = self.functions.route(method, path)
        if match is None:
            raise LookupError(f"no route for {method} {path}")
        return Reply.of(self.invoke(match.route.function, event(method, path, **kwargs)))

    def stream(self, keep: Callable[[MemoryChange], bool] = lambda change: True) -> tuple[list[MemoryChange], Any]:
        """The stream's changes since the last read (those `keep` keeps) through order_events, as one batch (none
        when nothing changed: Lambda sends no empty batch)."""
        changes = [change for change in self.wiring.stream.read() if keep(change)]
        return changes, self.invoke("order_events", lambda_event(changes)) if changes else None

    def replay(self, changes: list[MemoryChange]) -> Any:
        """The same records delivered again (a retried batch)."""
        return self.invoke("order_events", lambda_event(changes))
