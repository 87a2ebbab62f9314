"""The hot-product cache's rules on the memory store: only flash-sale products are kept, for the TTL; an admin's
change on the same instance drops the entry; a stale cached price still places the order at the new price."""

from __future__ import annotations

import pytest

from shop import errors, wiring
from shop.config import ConfigurationError, payment_settings, settings
from shop.repository.store import Table
from shop.services.catalog import CatalogService
from shop.services.checkout_settings import CheckoutSettingsService
from shop.services.hot_products import HotProductCache
from shop.services.orders import OrderService, RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE

TTL = 2.0


@pytest.fixture
def cached_catalog(memory, ttl_clock) -> CatalogService:
    """One products-function instance: its own cache."""
    return CatalogService(
        products=memory.products, categories=memory.categories, hot=HotProductCache(TTL, now=ttl_clock)
    )


@pytest.fixture
def cached_orders(memory, ttl_clock) -> OrderService:
    """One orders-function instance: its own cache."""
    return OrderService(
        orders=memory.orders,
        products=memory.products,
        sessions=memory.sessions,
        carts=memory.carts,
        archive=memory.archive,
        hot=HotProductCache(TTL, now=ttl_clock),
        settings=settings,
        payment_settings=payment_settings,
        payments=lambda: None,  # PAYMENTS=none
        checkout=CheckoutSettingsService(memory.checkout_settings),
    )


def new_product(memory, *, shards: int = 1, stock: int = 100) -> str:
    created = memory.catalog_service().create(
        ADMIN, name="Headset", category="tools", price_cents=4900, description=None, stock=stock
    )
    if shards > 1:
        memory.catalog_service().set_stock_shards(ADMIN, created.product_id, shards)
    return created.product_id


def counted(memory, monkeypatch, name: str) -> list[dict]:
    """Every call of the memory store's products.<name>, with its keyword arguments."""
    calls: list[dict] = []
    real = getattr(memory.products, name)

    def call(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(memory.products, name, call)
    return calls


def buy(orders: OrderService, pid: str, quantity: int = 1):
    return orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, quantity)])


def test_a_hot_product_is_read_once_per_ttl(memory, cached_catalog, ttl_clock, monkeypatch):
    pid = new_product(memory, shards=4)
    reads = counted(memory, monkeypatch, "get")
    first = cached_catalog.get(pid)
    ttl_clock.at += TTL - 0.1
    assert cached_catalog.get(pid) == first
    assert len(reads) == 1
    ttl_clock.at += 0.1
    cached_catalog.get(pid)
    assert len(reads) == 2


def test_an_ordinary_product_is_read_every_time(memory, cached_catalog, monkeypatch):
    pid = new_product(memory)
    reads = counted(memory, monkeypatch, "get")
    cached_catalog.get(pid)
    cached_catalog.get(pid)
    assert len(reads) == 2


def test_a_zero_ttl_keeps_nothing(memory, monkeypatch):
    pid = new_product(memory, shards=4)
    catalog = CatalogService(products=memory.products, categories=memory.categories, hot=HotProductCache(0))
    reads = counted(memory, monkeypatch, "get")
    catalog.get(pid)
    catalog.get(pid)
    assert len(reads) == 2


def test_stock_shown_lags_by_at_most_the_ttl(memory, cached_catalog, cached_orders, ttl_clock):
    pid = new_product(memory, shards=4, stock=100)
    assert cached_catalog.get(pid).stock == 100
    buy(cached_orders, pid, 3)
    assert cached_catalog.get(pid).stock == 100  # within the TTL: as read
    ttl_clock.at += TTL
    assert cached_catalog.get(pid).stock == 97


@pytest.mark.parametrize("change", ["price", "archive", "stock"])
def test_an_admin_change_on_the_instance_drops_its_entry(memory, cached_catalog, change):
    pid = new_product(memory, shards=4)
    cached_catalog.get(pid)
    if change == "price":
        cached_catalog.update(ADMIN, pid, {"price_cents": 5900})
        assert cached_catalog.get(pid).price_cents == 5900
    elif change == "archive":
        cached_catalog.archive(ADMIN, pid)
        assert not cached_catalog.get(pid).listed
    else:
        cached_catalog.adjust_stock(ADMIN, pid, 5)
        assert cached_catalog.get(pid).stock == 105


def test_placement_reads_a_hot_price_once_per_ttl(memory, cached_orders, ttl_clock, monkeypatch):
    pid = new_product(memory, shards=4)
    reads = counted(memory, monkeypatch, "get_many")
    buy(cached_orders, pid)
    buy(cached_orders, pid)
    assert len(reads) == 1
    ttl_clock.at += TTL
    buy(cached_orders, pid)
    assert len(reads) == 2


def test_an_ordinary_price_is_read_for_every_placement(memory, cached_orders, monkeypatch):
    pid = new_product(memory)
    reads = counted(memory, monkeypatch, "get_many")
    buy(cached_orders, pid)
    buy(cached_orders, pid)
    assert len(reads) == 2


def test_a_stale_cached_price_places_the_order_at_the_current_price(memory, cached_catalog, cached_orders, monkeypatch):
    pid = new_product(memory, shards=4)
    buy(cached_orders, pid)  # the orders instance now holds 4900
    cached_catalog.update(ADMIN, pid, {"price_cents": 5900})  # another instance: the orders instance does not know
    reads = counted(memory, monkeypatch, "get_many")
    order = buy(cached_orders, pid)
    assert order.total_cents == 5900
    # The placement failed its price condition once, then read past the cache, consistently.
    assert reads == [{"consistent": True}]
    buy(cached_orders, pid)  # the fresh price is what the instance keeps now
    assert len(reads) == 1


def test_a_stale_cached_entry_never_sells_an_archived_product(memory, cached_catalog, cached_orders):
    pid = new_product(memory, shards=4)
    buy(cached_orders, pid)
    cached_catalog.archive(ADMIN, pid)
    with pytest.raises(errors.ProductUnavailable):
        buy(cached_orders, pid)


def test_two_stores_never_share_an_entry(memory, ttl_clock):
    from tests.support.memory_store import MemoryStore

    cache = HotProductCache(TTL, now=ttl_clock)
    other = MemoryStore()
    pid = new_product(memory, shards=4)
    CatalogService(products=memory.products, categories=memory.categories, hot=cache).get(pid)
    with pytest.raises(errors.ProductNotFound):
        CatalogService(products=other.products, categories=other.categories, hot=cache).get(pid)


def test_the_ttl_is_a_setting_of_a_few_seconds(monkeypatch):
    monkeypatch.setenv("TABLE_NAME", "shop-test")
    monkeypatch.setenv("HOT_PRODUCT_CACHE_SECONDS", "2.5")
    settings.cache_clear()
    cache = wiring.catalog_service(Table(client=object(), table_name="shop-test")).hot  # read at each use
    assert cache.seconds == 2.5
    for wrong in ("-1", "61", "soon", "nan"):
        monkeypatch.setenv("HOT_PRODUCT_CACHE_SECONDS", wrong)
        settings.cache_clear()
        with pytest.raises(ConfigurationError):
            _ = cache.seconds


def test_a_snapstart_restore_empties_every_cache(memory, ttl_clock, monkeypatch):
    import weakref

    from shop.services import hot_products

    hooks: list = []
    monkeypatch.setattr(hot_products, "_caches", weakref.WeakSet())
    monkeypatch.setattr(hot_products.snapstart, "after_restore", hooks.append)
    catalog = CatalogService(
        products=memory.products, categories=memory.categories, hot=HotProductCache(TTL, now=ttl_clock)
    )
    pid = new_product(memory, shards=4)
    catalog.get(pid)
    assert hooks == [hot_products.clear_all]  # registered once, with the process's first cache
    hooks[0]()
    reads = counted(memory, monkeypatch, "get")
    catalog.get(pid)
    assert len(reads) == 1
