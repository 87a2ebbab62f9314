"""Orders over many sharded products on DynamoDB Local (its 100-item transaction limit is DynamoDB's): any
order the stock can satisfy within the contract's limits is placed, however thinly its stock is spread."""

from __future__ import annotations

import pytest

from shop import errors, wiring
from shop.limits import MAX_ORDER_LINES, MAX_QUANTITY, MAX_STOCK_SHARDS, MAX_TRANSACTION_ITEMS
from shop.models import OrderStatus
from shop.models.stock import StockTake
from shop.repository import OrderRepository, ProductRepository
from shop.services.actor import Actor
from shop.services.orders import RequestedLine
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, product

pytestmark = pytest.mark.integration


def sharded(table, *, stock: int, shards: int = MAX_STOCK_SHARDS, name: str = "Hot") -> str:
    pid = product(table, name=name, stock=stock)
    wiring.catalog_service(table).set_stock_shards(ADMIN, pid, shards)
    return pid


def total(table, pid: str) -> int:
    return ProductRepository(table).stock_layout(pid, shards_hint=MAX_STOCK_SHARDS).total


def transactions(operations: list[str]) -> int:
    return operations.count("TransactWriteItems")


def test_four_lines_over_32_shards_each_are_one_order(local_store):
    """The issue's scenario: 4 products, 96 each over 32 shards (3 a shard), one order of 4 x 96: 131
    transaction items taken as they lie; placed, every unit sold once, nothing else moved."""
    table = local_store.table
    pids = [sharded(table, stock=96, name=f"Hot {i}") for i in range(4)]
    with counting(local_store.client) as calls:
        order = wiring.order_service(table).place(
            Actor("buyer"), address=ADDRESS, lines=[RequestedLine(pid, 96) for pid in pids]
        )
    assert order.status is OrderStatus.PENDING
    assert [total(table, pid) for pid in pids] == [0, 0, 0, 0]
    assert {pid: sum(order.stock_taken[pid].values()) for pid in pids} == dict.fromkeys(pids, 96)
    # The first attempt (a random shard each) fails and reads the four layouts; one transaction gathers two
    # of the lines into one shard each; the placement then fits.
    assert transactions(calls.operations) == 3
    assert len(calls.operations) == 8  # + the catalogue's BatchGetItem and one of each product's layout
    cancelled = wiring.order_service(table).cancel(Actor("buyer"), order.order_id)
    assert cancelled.status is OrderStatus.CANCELLED
    assert [total(table, pid) for pid in pids] == [96, 96, 96, 96]


def test_the_worst_case_25_lines_of_99_over_32_shards_each_is_one_order(local_store, monkeypatch):
    """Every product spread as thinly as the contract allows: 99 units over 32 shards (3 or 4 a shard), 25
    lines of 99: 800 places as they lie. The order takes every unit, and each transaction stays in bounds."""
    table = local_store.table
    pids = [sharded(table, stock=MAX_QUANTITY, name=f"Scattered {i}") for i in range(MAX_ORDER_LINES)]
    sent: list[int] = []
    client = local_store.client
    original = client.transact_write_items

    def measured(**params):
        sent.append(len(params["TransactItems"]))
        return original(**params)

    monkeypatch.setattr(client, "transact_write_items", measured)
    with counting(client) as calls:
        order = wiring.order_service(table).place(
            Actor("buyer"), address=ADDRESS, lines=[RequestedLine(pid, MAX_QUANTITY) for pid in pids]
        )
    assert len(calls.operations) == 1 + MAX_ORDER_LINES + len(sent)  # the catalogue, the layouts, the transactions
    assert len(sent) == 10  # 575 items gathered (23 lines) in 8 transactions between the two attempts
    assert len(order.lines) == MAX_ORDER_LINES
    assert all(total(table, pid) == 0 for pid in pids)
    # A random shard each (fails), transactions gathering lines into one shard each, then the placement.
    assert sent[0] == MAX_ORDER_LINES + 2
    assert len(sent) > 2
    assert max(sent) <= MAX_TRANSACTION_ITEMS


def test_stock_too_scattered_for_one_write_is_a_409_to_retry_and_writes_nothing(local_store):
    """The store's guard behind the plan: takes that would not fit one transaction are refused as 409
    STOCK_TOO_SCATTERED before DynamoDB sees them (it would answer ValidationException: 422, never retry)."""
    table = local_store.table
    pids = [sharded(table, stock=96, name=f"Hot {i}") for i in range(4)]
    service = wiring.order_service(table)
    lines, _ = service._price(dict.fromkeys(pids, 96))
    order = service._new_order(Actor("buyer"), lines, ADDRESS)
    takes = {pid: [StockTake(shard, 3) for shard in range(MAX_STOCK_SHARDS)] for pid in pids}
    with pytest.raises(errors.StockTooScattered) as refused:
        OrderRepository(table).place(order, takes=takes)
    assert refused.value.code == "STOCK_TOO_SCATTERED"
    assert refused.value.details == {"transaction_items": 2 + 4 * MAX_STOCK_SHARDS, "limit": MAX_TRANSACTION_ITEMS}
    assert [total(table, pid) for pid in pids] == [96] * 4
    assert wiring.order_service(table).list_for_customer(Actor("buyer"), "buyer", limit=5, next_token=None).items == []
