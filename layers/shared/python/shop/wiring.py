"""The composition root: every service built with its adapters. The only module that imports both.

Services take ports (shop.services.ports) and never load an SDK; the adapters are the DynamoDB repositories
on `table` (default: the function's table, TABLE_NAME), the S3 archive and the stream records. Each factory
imports only the modules of the service it builds, so a function loads what it uses and no more.

The one seam: under `built_on(store)`, every factory on a table (each marked `@_injectable`) called without
arguments, as the handlers call them, answers the `InjectedStore`'s method of its own name instead (the fast lane's
in-memory store, tests/support/memory_wiring.py), so the handlers run unchanged on it. Nothing in the deployed code
calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache, wraps
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, cast

from shop import clock

if TYPE_CHECKING:
    from datetime import datetime

    from shop.config import StatusShardSwitch
    from shop.publishing import EventPublisher
    from shop.repository.idempotency_records import IdempotencyRecords
    from shop.repository.migrations import MigrationRepository
    from shop.repository.order_archive import ArchiveBucket
    from shop.repository.store import Table
    from shop.services.alerts import AlertService
    from shop.services.archival import ArchivalService
    from shop.services.carts import CartService
    from shop.services.catalog import CatalogService
    from shop.services.categories import CategoryService
    from shop.services.category_moves import CategoryMoves
    from shop.services.customers import CustomerService
    from shop.services.hot_products import HotProductCache
    from shop.services.order_events import OrderEventsService
    from shop.services.orders import OrderService
    from shop.services.payments import PaymentService
    from shop.services.ports import Payments, PaymentWebhooks
    from shop.services.product_events import ProductEventsService
    from shop.services.sales import SalesService
    from shop.services.sessions import SessionService


class InjectedStore(Protocol):
    """What the factories build on under `built_on`: each service on one store other than the table."""

    def catalog_service(self) -> CatalogService: ...
    def category_service(self) -> CategoryService: ...
    def alert_service(self) -> AlertService: ...
    def customer_service(self) -> CustomerService: ...
    def order_service(self) -> OrderService: ...
    def sales_service(self) -> SalesService: ...
    def session_service(self) -> SessionService: ...
    def cart_service(self) -> CartService: ...
    def idempotency_records(self) -> Any:  # shop.http_api.idempotency.Records (HTTP support: not imported here)
        ...

    def order_events_service(self) -> OrderEventsService: ...
    def product_events_service(self) -> ProductEventsService: ...
    def category_moves(self) -> CategoryMoves: ...
    def archival_service(self) -> ArchivalService: ...
    def payment_service(self) -> PaymentService: ...
    def migration_store(self) -> Any:  # shop.migrations.runner.MigrationStore
        ...


_injected: InjectedStore | None = None
_Args = ParamSpec("_Args")
_Built = TypeVar("_Built")


def _injectable(factory: Callable[_Args, _Built]) -> Callable[_Args, _Built]:
    """The factory, or under `built_on` and called without arguments the injected store's method of its name."""
    name = factory.__name__
    if not hasattr(InjectedStore, name):
        raise TypeError(f"InjectedStore has no {name}(): declare it there first")

    @wraps(factory)
    def build(*args: _Args.args, **kwargs: _Args.kwargs) -> _Built:
        if _injected is not None and not args and not kwargs:
            return cast(_Built, getattr(_injected, name)())
        return factory(*args, **kwargs)

    return build


@contextmanager
def built_on(store: InjectedStore) -> Iterator[InjectedStore]:
    """Every factory called meanwhile without a table (as the handlers call them) builds on `store`."""
    global _injected
    before, _injected = _injected, store
    try:
        yield store
    finally:
        _injected = before


def function_table() -> Table:
    """The function's table (TABLE_NAME) on the process-wide client."""
    from shop.repository.store import Table

    return Table()


def _table(table: Table | None) -> Table:
    return table if table is not None else function_table()


def _hot(hot: HotProductCache | None) -> HotProductCache:
    """`hot`, or an instance's own cache of flash-sale products for HOT_PRODUCT_CACHE_SECONDS, read at each use."""
    if hot is not None:
        return hot
    from shop.config import settings
    from shop.services.hot_products import HotProductCache

    return HotProductCache(lambda: settings().hot_product_cache_seconds)


# -- the API functions' services ------------------------------------------------------------------


@_injectable
def catalog_service(table: Table | None = None, *, hot: HotProductCache | None = None) -> CatalogService:
    from shop.repository.categories import CategoryRepository
    from shop.repository.products import ProductRepository
    from shop.services.catalog import CatalogService

    table = _table(table)
    return CatalogService(products=ProductRepository(table), categories=CategoryRepository(table), hot=_hot(hot))


@_injectable
def category_service(table: Table | None = None) -> CategoryService:
    from shop.repository.categories import CategoryRepository
    from shop.services.categories import CategoryService

    return CategoryService(categories=CategoryRepository(_table(table)))


@_injectable
def alert_service(table: Table | None = None) -> AlertService:
    from shop.repository.alerts import AlertRepository
    from shop.services.alerts import AlertService

    return AlertService(alerts=AlertRepository(_table(table)))


@_injectable
def customer_service(table: Table | None = None) -> CustomerService:
    from shop.repository.customers import CustomerRepository
    from shop.services.customers import CustomerService

    return CustomerService(customers=CustomerRepository(_table(table)))


@_injectable
def order_service(
    table: Table | None = None,
    shards: int | None = None,
    *,
    hot: HotProductCache | None = None,
    archive: ArchiveBucket | None = None,
    switch: StatusShardSwitch | None = None,
) -> OrderService:
    """The status index in `shards` shards, or under a shard-count `switch` (default: the settings); the S3
    archive of ARCHIVE_BUCKET."""
    from shop.config import payment_settings, settings
    from shop.repository.carts import CustomerCartRepository
    from shop.repository.checkout_settings import CheckoutSettingsRepository
    from shop.repository.order_archive import ArchiveBucket
    from shop.repository.orders import OrderRepository
    from shop.repository.products import ProductRepository
    from shop.repository.sessions import SessionRepository
    from shop.services.checkout_settings import CheckoutSettingsService
    from shop.services.orders import OrderService

    table = _table(table)
    return OrderService(
        orders=OrderRepository(table, shards, switch=switch),
        products=ProductRepository(table),
        sessions=SessionRepository(table),
        carts=CustomerCartRepository(table),
        archive=archive if archive is not None else ArchiveBucket(),
        hot=_hot(hot),
        settings=settings,
        payment_settings=payment_settings,
        payments=_current_payments,  # at each checkout that takes a payment (PAYMENTS=none never does)
        checkout=CheckoutSettingsService(CheckoutSettingsRepository(table)),
    )


@_injectable
def idempotency_records(table: Table | None = None) -> IdempotencyRecords:
    """Where the HTTP API's idempotent operations (shop.http_api.idempotency) keep their records."""
    from shop.repository.idempotency_records import IdempotencyRecords

    return IdempotencyRecords(_table(table))


@_injectable
def sales_service(table: Table | None = None) -> SalesService:
    from shop.repository.sales import SalesRepository
    from shop.services.sales import SalesService

    return SalesService(SalesRepository(_table(table)))


@_injectable
def session_service(table: Table | None = None, ttl_seconds: int | None = None) -> SessionService:
    from shop.config import settings
    from shop.repository.products import ProductRepository
    from shop.repository.sessions import SessionRepository
    from shop.services.sessions import SessionService

    table = _table(table)
    return SessionService(
        sessions=SessionRepository(table), products=ProductRepository(table), settings=settings, ttl_seconds=ttl_seconds
    )


@_injectable
def cart_service(table: Table | None = None, ttl_seconds: int | None = None) -> CartService:
    from shop.config import settings
    from shop.repository.carts import CustomerCartRepository
    from shop.repository.products import ProductRepository
    from shop.services.carts import CartService

    table = _table(table)
    return CartService(
        carts=CustomerCartRepository(table),
        products=ProductRepository(table),
        settings=settings,
        ttl_seconds=ttl_seconds,
    )


# -- the stream processor's services --------------------------------------------------------------


@_injectable
def order_events_service(
    table: Table | None = None, shards: int | None = None, now: Callable[[], str] = clock.iso_now
) -> OrderEventsService:
    """The rules of rarer records (products, category moves, archival) are built on their first record."""
    from shop.config import sales_legacy_markers, settings
    from shop.repository.order_effects import OrderEffectsRepository
    from shop.repository.sales import SalesRepository
    from shop.services.order_events import OrderEventsService
    from shop.services.sales import LegacyMarkerCheck

    table = _table(table)
    sales = SalesRepository(table)
    return OrderEventsService(
        OrderEffectsRepository(table, shards, sales=sales),
        products=lambda: product_events_service(table),
        moves=lambda: category_moves(table),
        archival=lambda: archival_service(table, now=now),
        settings=settings,
        now=now,
        # SALES_LEGACY_MARKERS read at each count, as every setting
        legacy_markers=lambda written: LegacyMarkerCheck(sales_legacy_markers(), sales, now).needed(written),
    )


@_injectable
def product_events_service(table: Table | None = None) -> ProductEventsService:
    from shop.repository.alerts import AlertRepository
    from shop.services.product_events import ProductEventsService

    return ProductEventsService(AlertRepository(_table(table)))


@_injectable
def category_moves(table: Table | None = None) -> CategoryMoves:
    from shop.config import move_step_products
    from shop.repository.categories import CategoryRepository
    from shop.repository.products import ProductRepository
    from shop.services.category_moves import CategoryMoves

    table = _table(table)
    return CategoryMoves(CategoryRepository(table), ProductRepository(table), step_products=move_step_products)


@_injectable
def archival_service(
    table: Table | None = None, bucket: ArchiveBucket | None = None, now: Callable[[], str] = clock.iso_now
) -> ArchivalService:
    from shop.repository.order_archive import ArchiveBucket, OrderArchivalRepository
    from shop.services.archival import ArchivalService

    return ArchivalService(
        OrderArchivalRepository(_table(table)), bucket if bucket is not None else ArchiveBucket(), now=now
    )


def event_publisher() -> EventPublisher:
    """EventBridge on the bus EVENT_BUS_NAME names, read at each batch (not here: handlers build this at import);
    unset, nothing is published. Not on a table, so not injected: tests replace shop.publishing.events_client."""
    from shop.config import settings
    from shop.publishing import EventPublisher

    return EventPublisher(lambda: settings().event_bus_name)


# -- payments: built only where PAYMENTS=stripe; nothing here loads stripe otherwise -----------


def payments() -> Payments | None:
    """The provider PAYMENTS names; None for "none" (version 2's flow: no payment is taken).

    The secret key comes from shop.payment_secrets (Secrets Manager deployed, cached there); one client per key,
    so a rotated key gets its own client and the old one is dropped."""
    from shop.config import payment_settings

    settings = payment_settings()
    if settings.provider == "none":
        return None
    from shop.payment_secrets import secret_key

    return _stripe_payments(secret_key(), settings.stripe_api_base)


@lru_cache(maxsize=1)
def _stripe_payments(secret_key: str, api_base: str | None) -> Payments:
    from shop.payments.stripe_adapter import StripePayments

    return StripePayments(secret_key, api_base=api_base)


def _current_payments() -> Payments | None:
    """payments(), looked up when called: the services are handed this, never a provider, so the provider (and
    `stripe`) is built only by a call that needs it (the webhook's rule calls Stripe only to cancel a dead order's
    intent: its first delivery never imports stripe), and tests can put a fake in `payments`' place."""
    return payments()


def payment_webhooks() -> PaymentWebhooks | None:
    """The provider's webhook verification (the standard library's HMAC: `stripe` is not imported); None for
    PAYMENTS=none. Build it per delivery: the signing secret is cached by shop.payment_secrets, so a rotated one
    is picked up."""
    from shop.config import payment_settings

    settings = payment_settings()
    if settings.provider == "none":
        return None
    from shop.payment_secrets import webhook_secret
    from shop.payments.stripe_webhooks import StripeWebhooks

    return StripeWebhooks(webhook_secret())


@_injectable
def payment_service(
    table: Table | None = None,
    shards: int | None = None,
    *,
    provider: Payments | None = None,
    now: Callable[[], datetime] = clock.now,
) -> PaymentService:
    """The payment rules (the webhook's, the payment steps') on the table and the provider PAYMENTS names
    (`provider` replaces it: the tests' fake), built at the rules' first call to it (`_current_payments`)."""
    from shop.config import payment_settings, settings
    from shop.repository.order_payments import OrderPaymentRepository
    from shop.services.payments import PaymentService

    return PaymentService(
        OrderPaymentRepository(_table(table), shards),
        payments=_current_payments if provider is None else lambda: provider,
        settings=settings,
        payment_settings=payment_settings,
        now=now,
    )


# -- the migration worker ---------------------------------------------------------------------------


@_injectable
def migration_store(table: Table | None = None) -> MigrationRepository:
    """The migrations' Scan segments, writes and checkpoints on the function's table."""
    from shop.repository.migrations import MigrationRepository

    return MigrationRepository(_table(table))
