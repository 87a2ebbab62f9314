"""The flash sale on DynamoDB Local with real threads: 200 concurrent orders for 50 units over 8 shards."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import errors, wiring
from shop.repository import ProductRepository
from shop.services.actor import Actor
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = [pytest.mark.integration, pytest.mark.table_without_stream]

BUYERS = 200
STOCK = 50
SHARDS = 8
# A client answered 503 (Retry-After) tries again with the same Idempotency-Key: a 503 can follow a
# transaction that committed (its answer timed out), and the key makes the retry answer that order.
# DynamoDB Local answers 200 threads on 8 items with many of these: its transactions wait for item locks
# and give up with InternalServerError "timed out ... waiting for a lock. This request will succeed in
# actual DynamoDB API" (about 2 per buyer here), which the shop answers as 503.
CLIENT_RETRIES = 10


def test_flash_sale_sells_exactly_the_stock_and_no_shard_goes_negative(local_store):
    table = local_store.table
    pid = product(table, stock=STOCK)
    spread = wiring.catalog_service(table).set_stock_shards(ADMIN, pid, SHARDS)
    assert spread.shards == (7, 7, 6, 6, 6, 6, 6, 6)
    service = wiring.order_service(table)
    start = threading.Barrier(BUYERS)
    unavailable = Counter[int]()  # 503s per buyer

    def buy(index: int) -> tuple[str, dict[str, dict[str, int]]]:
        start.wait()
        for _ in range(CLIENT_RETRIES):
            try:
                order = service.place(
                    Actor(f"buyer-{index}"),
                    address=ADDRESS,
                    lines=[RequestedLine(pid, 1)],
                    idempotency_key=f"flash-{index}",
                )
            except errors.OutOfStock as refused:
                # A shard's shortfall (StockSourceShort) never reaches the customer: only the product's does.
                return ("out_of_stock" if type(refused) is errors.OutOfStock else type(refused).__name__), {}
            except errors.ServiceUnavailable:
                unavailable[index] += 1
                continue
            return "placed", order.stock_taken
        return "gave_up", {}

    with ThreadPoolExecutor(max_workers=BUYERS) as pool:
        outcomes = list(pool.map(buy, range(BUYERS)))

    results = Counter(outcome for outcome, _ in outcomes)
    assert results == {"placed": STOCK, "out_of_stock": BUYERS - STOCK}, (results, unavailable)
    after = ProductRepository(table).stock_layout(pid)
    assert after.shards == (0,) * SHARDS
    assert after.main == 0
    assert wiring.catalog_service(table).get(pid).stock == 0
    # Each shard sold exactly what it held: nothing taken twice, nothing taken from nowhere.
    sold_per_shard = Counter[str]()
    for _, taken in outcomes:
        for shard, quantity in taken.get(pid, {}).items():
            sold_per_shard[shard] += quantity
    assert {int(shard): sold for shard, sold in sold_per_shard.items()} == dict(enumerate(spread.shards))
