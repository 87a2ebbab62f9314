"""The sales counters on the table (moto and DynamoDB Local): once per order version, never losing a
concurrent count, the top list in GSI1 sharded, sparse and never moved back by a late refresh."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import keys
from shop.models.sales import SalesChange, SalesLine
from shop.repository.sales import SalesRepository, forget_instance_memo
from shop.repository.store import from_item, to_item
from tests.support.calls import counting

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream

DAY = "2026-03-02"


@pytest.fixture(autouse=True)
def _fresh_instance():
    forget_instance_memo()  # each test's table is new: so is the instance's memo of markers and refreshes


def change(order_id: str, *lines: tuple[str, int, int], version: int = 2, day: str = DAY) -> SalesChange:
    return SalesChange(order_id, version, day, tuple(SalesLine(*line) for line in lines))


def read(store, key: dict[str, str]) -> dict:
    item = store.client.get_item(TableName=store.table_name, Key=to_item(key), ConsistentRead=True).get("Item")
    return from_item(item) if item else {}


def counter(store, product_id: str, day: str = DAY) -> dict:
    return read(store, keys.sales_day_key(product_id, day))


def rank(store, product_id: str, day: str = DAY) -> dict:
    return read(store, keys.sales_rank_key(product_id, day))


@pytest.mark.dynamodb_semantics
def test_a_version_counts_once_in_one_transaction_then_moves_its_products_in_the_top_list(store):
    sales = SalesRepository(store.table)
    with counting(store.client) as calls:
        assert sales.apply(change("o-1", ("hammer", 2, 3000), ("nails", 10, 2500)))
    assert calls.operations == ["TransactWriteItems", "BatchGetItem", "PutItem", "PutItem"]
    with counting(store.client) as calls:
        assert not sales.apply(change("o-1", ("hammer", 2, 3000), ("nails", 10, 2500)))
    assert calls.operations == ["TransactWriteItems", "BatchGetItem"]  # a replay: refused, the top list is current
    assert sales.days("hammer", DAY, DAY)[0].model_dump() == {"date": DAY, "units": 2, "revenue_cents": 3000}
    assert sales.apply(change("o-1", ("hammer", -2, -3000), ("nails", -10, -2500), version=3))
    assert sales.days("hammer", DAY, DAY)[0].units == 0


def test_concurrent_counts_of_one_product_and_day_are_all_kept(local_store):
    """Real threads against DynamoDB Local (moto does not serialise concurrent transactions and conditions)."""
    store = local_store
    sales = SalesRepository(store.table)
    with ThreadPoolExecutor(max_workers=8) as pool:
        done = list(pool.map(lambda n: sales.apply(change(f"o-{n}", ("hammer", 1, 1500))), range(16)))
    assert all(done)
    assert (counter(store, "hammer")["units"], counter(store, "hammer")["revenue_cents"]) == (16, 16 * 1500)
    assert (rank(store, "hammer")["units"], rank(store, "hammer")["changes"]) == (16, 16)


@pytest.mark.dynamodb_semantics
def test_the_top_list_is_sharded_by_product_and_sparse(store):
    sales = SalesRepository(store.table)
    sales.apply(change("o-1", ("hammer", 2, 3000), ("nails", 10, 2500), ("saw", 10, 9000)))
    assert keys.GSI1PK not in counter(store, "hammer")  # counts write no index entry; the rank entry is indexed
    assert rank(store, "hammer")[keys.GSI1PK] == keys.sales_top_pk(DAY, keys.sales_top_shard("hammer", sales.shards))
    assert [(t.product_id, t.units) for t in sales.top(DAY, 2)] == [("nails", 10), ("saw", 10)]
    sales.apply(change("o-1", ("nails", -10, -2500), version=3))  # the order cancelled: nails leave the list
    assert keys.GSI1PK not in rank(store, "nails")
    assert [(t.product_id, t.units) for t in sales.top(DAY, 5)] == [("saw", 10), ("hammer", 2)]


@pytest.mark.dynamodb_semantics
def test_days_reads_one_range_of_one_product(store):
    sales = SalesRepository(store.table)
    for n, day in enumerate(("2026-02-28", "2026-03-01", "2026-03-02", "2026-03-03")):
        sales.apply(change(f"o-{n}", ("hammer", n + 1, 100), day=day))
    sales.apply(change("o-x", ("hammerhead", 5, 100)))
    with counting(store.client) as calls:
        days = sales.days("hammer", "2026-03-01", "2026-03-02")
    assert calls.operations == ["Query"]
    assert [(d.date, d.units) for d in days] == [("2026-03-01", 2), ("2026-03-02", 3)]


@pytest.mark.dynamodb_semantics
def test_a_late_refresh_never_moves_a_product_back(store):
    sales = SalesRepository(store.table)
    sales.apply(change("o-1", ("hammer", 2, 3000)))
    stale = counter(store, "hammer")
    sales.apply(change("o-2", ("hammer", 5, 7500)))
    sales._put_rank("hammer", DAY, stale)  # a refresh that read before o-2 was counted lands last
    assert (rank(store, "hammer")["units"], rank(store, "hammer")["changes"]) == (7, 2)


def hot(order_id: str, units: int, shard: int, version: int = 2, day: str = DAY) -> SalesChange:
    """A flash-sale product's line: it took its stock from stock shard `shard`."""
    return SalesChange(order_id, version, day, (SalesLine("flash", units, units * 100, shard),))


@pytest.mark.dynamodb_semantics
def test_a_flash_sale_products_lines_land_on_the_counter_shards_of_their_stock_shards(store):
    sales = SalesRepository(store.table)
    assert sales.apply(hot("o-1", 2, 7))
    assert sales.apply(hot("o-2", 3, 21))
    assert not sales.apply(hot("o-2", 3, 21))  # a replay counts nothing
    assert counter(store, "flash") == {}
    assert read(store, keys.sales_shard_day_key("flash", 7, DAY))["units"] == 2
    assert read(store, keys.sales_shard_day_key("flash", 21, DAY))["units"] == 3
    assert sorted(read(store, keys.sales_sharded_key("flash", DAY))["shards"]) == [7, 21]


@pytest.mark.dynamodb_semantics
def test_a_flash_sale_products_days_sum_the_base_counter_and_the_shards_named_by_the_markers(store):
    sales = SalesRepository(store.table)
    sales.apply(change("o-0", ("flash", 4, 400)))  # before it had stock shards: the base counter
    sales.apply(hot("o-1", 2, 7))
    sales.apply(hot("o-2", 3, 21))
    sales.apply(hot("o-3", 1, 7, day="2026-03-03"))
    with counting(store.client) as calls:
        days = sales.days("flash", "2026-03-01", "2026-03-03")
    assert sorted(calls.operations) == ["Query", "Query", "Query"]  # the base, then shards 07 and 21
    assert [(d.date, d.units, d.revenue_cents) for d in days] == [("2026-03-02", 9, 900), ("2026-03-03", 1, 100)]


@pytest.mark.dynamodb_semantics
def test_a_flash_sale_products_rank_is_refreshed_at_most_once_a_second_and_sums_every_counter(store, monkeypatch):
    from shop.repository import sales as module

    sales = SalesRepository(store.table)
    sales.apply(change("o-0", ("flash", 4, 400)))
    sales.apply(hot("o-1", 2, 7))
    assert (rank(store, "flash")["units"], rank(store, "flash")["changes"]) == (6, 2)
    with counting(store.client) as calls:
        sales.apply(hot("o-2", 3, 21))  # within the second: counted, the rank left as it was
    assert calls.operations == ["UpdateItem", "TransactWriteItems"]  # the marker names shard 21, the count
    assert rank(store, "flash")["units"] == 6
    monkeypatch.setattr(module, "RANK_REFRESH_SECONDS", 0.0)
    sales.apply(hot("o-3", 1, 21))
    assert (rank(store, "flash")["units"], rank(store, "flash")["changes"]) == (10, 4)
    assert [(t.product_id, t.units) for t in sales.top(DAY, 1)] == [("flash", 10)]


@pytest.mark.dynamodb_semantics
def test_an_order_of_several_flash_sale_products_refreshes_each_rank_from_every_counter(store):
    # Three hot products: each rank refresh reads its entry, its base counter and 32 counter shards (102 keys).
    sales = SalesRepository(store.table)
    lines = tuple(SalesLine(f"flash-{n}", n + 1, (n + 1) * 100, 3 * n) for n in range(3))
    assert sales.apply(SalesChange("o-1", 2, DAY, lines))
    for n in range(3):
        assert (rank(store, f"flash-{n}")["units"], rank(store, f"flash-{n}")["changes"]) == (n + 1, 1)
    assert [(t.product_id, t.units) for t in sales.top(DAY, 3)] == [("flash-2", 3), ("flash-1", 2), ("flash-0", 1)]
