"""The total stock that low-stock alerts follow, read on DynamoDB Local while gatherings commit (real threads):
every read sees each gathering whole, never its sources drained without its target filled."""

from __future__ import annotations

import threading

import pytest

from shop import ids, keys, wiring
from shop.models.stock import StockMove
from shop.repository import ProductRepository
from shop.repository.alerts import AlertRepository
from shop.repository.store import from_item, to_item
from tests.support.factories import ADMIN, product

pytestmark = pytest.mark.integration

READS = 40


def sharded(table, *, stock: int, shards: int) -> str:
    pid = product(table, stock=stock)
    wiring.catalog_service(table).set_stock_shards(ADMIN, pid, shards)
    return pid


def test_the_total_read_during_gatherings_is_always_the_whole_total(local_store):
    table = local_store.table
    pid = sharded(table, stock=12, shards=4)  # 3 a shard
    products = ProductRepository(table)
    stop = threading.Event()
    gathered: list[int] = []

    def gather_back_and_forth() -> None:
        while not stop.is_set():
            for source, target in ((3, 0), (0, 3)):
                products.gather_stock([StockMove(pid, source=source, target=target, quantity=3)], token=ids.new_id())
            gathered.append(1)

    mover = threading.Thread(target=gather_back_and_forth)
    mover.start()
    try:
        totals = [AlertRepository(table).stock_total(pid, shards_hint=4) for _ in range(READS)]
    finally:
        stop.set()
        mover.join()

    assert gathered  # the reads ran while gatherings committed
    assert {total.total for total in totals if total is not None} == {12}
    assert all(total is not None and total.shard_count == 4 for total in totals)


def test_gatherings_and_spreads_count_their_sideways_moves_on_the_shards(local_store):
    """The mark that lets the stream skip a shard record that moved no unit of the total."""
    table = local_store.table
    pid = sharded(table, stock=8, shards=2)
    ProductRepository(table).gather_stock([StockMove(pid, source=1, target=0, quantity=2)], token=ids.new_id())
    wiring.catalog_service(table).set_stock_shards(ADMIN, pid, 4)  # re-spread: shards 0 and 1 updated, 2 and 3 new

    def shard(n: int) -> dict:
        item = local_store.client.get_item(TableName=local_store.table_name, Key=to_item(keys.stock_shard_key(pid, n)))
        return from_item(item["Item"])

    assert [(shard(n)["stock"], shard(n).get("sideways_moves")) for n in range(4)] == [
        (2, 2),
        (2, 2),
        (2, None),
        (2, None),
    ]
