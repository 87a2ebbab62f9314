"""The hot-product cache on moto and DynamoDB Local: which reads reach the table, and a stale price's reprice."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from shop import errors, wiring
from shop.services.hot_products import HotProductCache
from shop.services.orders import RequestedLine
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream

TTL = 2.0


def hot_product(table, *, shards: int = 4, price_cents: int = 1000) -> str:
    pid = product(table, stock=100, price_cents=price_cents)
    wiring.catalog_service(table).set_stock_shards(ADMIN, pid, shards)
    return pid


@contextmanager
def batch_gets(client: Any) -> Iterator[list[dict[str, Any]]]:
    """The RequestItems of every BatchGetItem the client sends inside the block."""
    seen: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params["RequestItems"])

    client.meta.events.register("provide-client-params.dynamodb.BatchGetItem", record)
    try:
        yield seen
    finally:
        client.meta.events.unregister("provide-client-params.dynamodb.BatchGetItem", record)


@pytest.mark.dynamodb_semantics
def test_a_hot_product_read_again_within_the_ttl_makes_no_call(store, ttl_clock):
    pid = hot_product(store.table)
    catalog = wiring.catalog_service(store.table, hot=HotProductCache(TTL, now=ttl_clock))
    with counting(store.client) as calls:
        first = catalog.get(pid)
    assert calls.operations == ["GetItem", "BatchGetItem"]  # the product, then its shards
    ttl_clock.at += TTL - 0.1
    with counting(store.client) as calls:
        assert catalog.get(pid) == first
    assert calls.operations == []
    ttl_clock.at += 0.1
    with counting(store.client) as calls:
        assert catalog.get(pid).stock == 100
    assert calls.operations == ["GetItem", "BatchGetItem"]


@pytest.mark.dynamodb_semantics
def test_an_ordinary_product_is_read_every_time(store, ttl_clock):
    pid = product(store.table, stock=5)
    catalog = wiring.catalog_service(store.table, hot=HotProductCache(TTL, now=ttl_clock))
    with counting(store.client) as calls:
        catalog.get(pid)
        catalog.get(pid)
    assert calls.operations == ["GetItem", "GetItem"]


@pytest.mark.dynamodb_semantics
def test_two_tables_never_share_an_entry(store, ttl_clock):
    from local_runtime.dynamodb_local import create_table
    from shop.repository import Table

    cache = HotProductCache(TTL, now=ttl_clock)
    pid = hot_product(store.table)
    wiring.catalog_service(store.table, hot=cache).get(pid)
    other = Table(store.client, f"{store.table_name}-other")
    create_table(store.client, other.name)
    try:
        with counting(store.client) as calls, pytest.raises(errors.ProductNotFound):
            wiring.catalog_service(other, hot=cache).get(pid)
        assert calls.operations == ["GetItem"]
    finally:
        store.client.delete_table(TableName=other.name)


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("change", ["price", "archive"])
def test_an_admin_change_on_the_instance_drops_its_entry(store, ttl_clock, change):
    pid = hot_product(store.table)
    catalog = wiring.catalog_service(store.table, hot=HotProductCache(TTL, now=ttl_clock))
    catalog.get(pid)
    if change == "price":
        catalog.update(ADMIN, pid, {"price_cents": 1500})
    else:
        catalog.archive(ADMIN, pid)
    with counting(store.client) as calls:
        read = catalog.get(pid)
    assert calls.operations  # read from the table, not the cache
    assert (read.price_cents, read.listed) == ((1500, True) if change == "price" else (1000, False))


@pytest.mark.dynamodb_semantics
def test_placement_reads_a_hot_price_once_per_ttl(store, ttl_clock):
    pid = hot_product(store.table)
    orders = wiring.order_service(store.table, hot=HotProductCache(TTL, now=ttl_clock))
    line = [RequestedLine(pid, 1)]
    orders.place(ALICE, address=ADDRESS, lines=line)
    with counting(store.client) as calls:
        orders.place(ALICE, address=ADDRESS, lines=line)
    assert calls.operations == ["TransactWriteItems"]  # no catalogue read (the checkout's settings: in it)
    ttl_clock.at += TTL
    with counting(store.client) as calls:
        orders.place(ALICE, address=ADDRESS, lines=line)
    assert calls.operations == ["BatchGetItem", "TransactWriteItems"]


@pytest.mark.dynamodb_semantics
def test_a_stale_cached_price_places_the_order_at_the_current_price(store, ttl_clock):
    pid = hot_product(store.table, price_cents=1000)
    orders = wiring.order_service(store.table, hot=HotProductCache(TTL, now=ttl_clock))
    line = [RequestedLine(pid, 1)]
    orders.place(ALICE, address=ADDRESS, lines=line)  # this instance keeps 1000
    wiring.catalog_service(store.table).update(ADMIN, pid, {"price_cents": 1200})  # another instance changes it
    with counting(store.client) as calls, batch_gets(store.client) as reads:
        order = orders.place(ALICE, address=ADDRESS, lines=line)
    assert order.total_cents == 1200
    # The stale price failed the shard's condition; the reprice read past the cache, consistently.
    assert calls.operations == ["TransactWriteItems", "BatchGetItem", "TransactWriteItems"]
    assert [spec[store.table_name].get("ConsistentRead") for spec in reads] == [True]
