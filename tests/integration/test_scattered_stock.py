"""Orders over many sharded products on DynamoDB Local (its 100-item transaction limit is DynamoDB's): any
order the stock can satisfy within the contract's limits is placed, however thinly its stock is spread."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import errors, wiring
from shop.limits import MAX_ORDER_LINES, MAX_QUANTITY, MAX_STOCK_SHARDS, MAX_TRANSACTION_ITEMS
from shop.models import OrderStatus
from shop.models.stock import StockMove, StockTake
from shop.repository import OrderRepository, ProductRepository
from shop.services.actor import Actor
from shop.services.orders import RequestedLine
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, product
from tests.support.faults import first_answer_lost

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = [pytest.mark.integration, pytest.mark.table_without_stream]


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
    # + the catalogue's BatchGetItem, the checkout's settings checked (GetItem) and one of each product's layout
    assert len(calls.operations) == 9
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
    # the catalogue, the checkout's settings checked, the layouts, the transactions
    assert len(calls.operations) == 2 + MAX_ORDER_LINES + len(sent)
    assert len(sent) == 10  # 575 items gathered (23 lines) in 8 transactions between the two attempts
    assert len(order.lines) == MAX_ORDER_LINES
    assert all(total(table, pid) == 0 for pid in pids)
    # A random shard each (fails), transactions gathering lines into one shard each, then the placement.
    assert sent[0] == MAX_ORDER_LINES + 3  # the lines, the order, its customer entry, the settings' check
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


# A client answered 503 (Retry-After) tries again with the same Idempotency-Key (a 503 can follow a transaction
# that committed; the key makes the retry answer that order, never a second one). DynamoDB Local answers
# concurrent transactions on the same items with "timed out ... waiting for a lock" now and then, more under
# load, which the shop answers as 503 by design (tests/integration/test_flash_sale.py).
CLIENT_RETRIES = 10


def _as_a_client(key: str, place):
    """`place(idempotency_key)` until it answers something else than ServiceUnavailable, as a client would."""
    for _ in range(CLIENT_RETRIES - 1):
        try:
            return place(key)
        except errors.ServiceUnavailable:
            continue
    return place(key)


def test_orders_gathering_the_same_products_at_once_are_all_placed_when_the_stock_suffices(local_store):
    """Real threads: three orders of 8 x 48 over products of 96 on 32 shards (3 a shard: 128 places as the
    stock lies, more than one transaction holds) gather into the same shards at once. The third also holds the last unit of a plain product, which another customer buys once
    its gathering is made: it fails, leaving what it gathered in place. The other two are placed, every unit
    sold once, none lost or made."""
    table = local_store.table
    pids = [sharded(table, stock=96, name=f"Hot {i}") for i in range(8)]
    last_unit = product(table, name="Last one", stock=1)
    lines = [RequestedLine(pid, 48) for pid in pids]
    barrier = threading.Barrier(3)
    gathered: list[object] = []

    def outbid(service):
        gather = service.products.gather_stock
        sold = []

        def gather_then_lose_the_last_unit(moves, token):
            # Whether or not its gathering succeeds, the order can no longer be placed afterwards.
            try:
                gather(moves, token)
            finally:
                if not sold:
                    rival = wiring.order_service(table)
                    gathered.append(moves)
                    sold.append(
                        _as_a_client(
                            "rival",
                            lambda key: rival.place(
                                Actor("rival"),
                                address=ADDRESS,
                                lines=[RequestedLine(last_unit, 1)],
                                idempotency_key=key,
                            ),
                        )
                    )

        service.products.gather_stock = gather_then_lose_the_last_unit
        return service

    def place(job):
        index, service, order_lines = job
        barrier.wait()
        try:
            return _as_a_client(
                f"gather-{index}",
                lambda key: service.place(Actor("buyer"), address=ADDRESS, lines=order_lines, idempotency_key=key),
            )
        except errors.DomainError as error:
            return error

    jobs = [(0, wiring.order_service(table), lines), (1, wiring.order_service(table), lines)]
    jobs.append((2, outbid(wiring.order_service(table)), [*lines, RequestedLine(last_unit, 1)]))
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        first, second, third = pool.map(place, jobs)
    assert gathered, "the third order gathered before it lost the last unit"

    assert first.status is OrderStatus.PENDING, first
    assert second.status is OrderStatus.PENDING, second
    assert isinstance(third, errors.OutOfStock), third
    assert [total(table, pid) for pid in pids] == [0] * 8
    for placed in (first, second):
        assert {pid: sum(placed.stock_taken[pid].values()) for pid in pids} == dict.fromkeys(pids, 48)


def test_a_gathering_whose_answer_was_lost_moves_the_stock_once(local_store):
    """botocore sends the gathering again after a lost answer: its ClientRequestToken (the placement's own,
    not one botocore would draw unseen) makes DynamoDB recognise it, instead of moving the stock twice or
    failing on the sources the first send emptied."""
    table = local_store.table
    pid = sharded(table, stock=12, shards=4)  # 3 a shard
    moves = [StockMove(pid, 1, 0, 3), StockMove(pid, 2, 0, 2)]
    with first_answer_lost(local_store.client, "TransactWriteItems") as sent:
        ProductRepository(table).gather_stock(moves, "01JDGATHERTOKEN0000000000-g1")
    assert [params["ClientRequestToken"] for params in sent] == ["01JDGATHERTOKEN0000000000-g1"]
    layout = ProductRepository(table).stock_layout(pid, shards_hint=4)
    assert layout.shards == (8, 0, 1, 3)


def test_a_snapshot_reads_the_product_and_every_shard_in_one_transaction(local_store):
    table = local_store.table
    pid = sharded(table, stock=12, shards=4)
    repository = ProductRepository(table)
    with counting(local_store.client) as calls:
        snapshot = repository.stock_snapshot(pid, shards_hint=4)
    assert calls.operations == ["TransactGetItems"]
    assert snapshot == repository.stock_layout(pid, shards_hint=4)
    wiring.catalog_service(table).set_stock_shards(ADMIN, pid, 2)  # a stale hint: read again with the stored count
    assert repository.stock_snapshot(pid, shards_hint=4).shards == (6, 6)
    with pytest.raises(errors.ProductNotFound):
        repository.stock_snapshot("01JDNOSUCHPRODUCT000000000", shards_hint=4)
