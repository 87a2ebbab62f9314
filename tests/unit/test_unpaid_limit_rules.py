"""What one customer may hold unpaid (PAYMENTS=stripe; docs/payments.md, "Hoarding"), on the memory store and the fake
provider: the placement's transaction holds each PENDING_PAYMENT order on the customer's unpaid hold within
MAX_UNPAID_ORDERS and MAX_UNPAID_UNITS, refusing beyond either (409 UNPAID_ORDER_LIMIT, nothing written, the intent
cancelled); the stream processor releases an order once it leaves PENDING_PAYMENT, whichever way, and a replayed
record releases nothing; a placement that meets the limit releases held orders whose release was lost.
The DynamoDB semantics (the transaction's condition, the release's, threads): tests/repository/test_unpaid_holds.py,
tests/integration/test_unpaid_limit_concurrency.py, tests/stream/test_unpaid_release.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shop import clock, config, errors
from shop.models import OrderStatus
from shop.models.payments import IntentStatus
from shop.services.orders import RequestedLine
from shop.services.stream_outcome import Action
from tests.support.factories import ADDRESS, ALICE, BOB
from tests.support.fake_payments import FakePayments
from tests.support.memory_store import MemoryStore
from tests.support.memory_stream import MemoryStream, order_events_service
from tests.unit.test_order_rules import product, stock


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "30")
    monkeypatch.setenv("MAX_UNPAID_ORDERS", "3")
    monkeypatch.setenv("MAX_UNPAID_UNITS", "10")
    config.payment_settings.cache_clear()
    yield
    config.payment_settings.cache_clear()


@pytest.fixture
def fake(limits: None) -> FakePayments:
    return FakePayments()


@pytest.fixture
def orders(memory: MemoryStore, fake: FakePayments) -> Any:
    return memory.order_service(payments=lambda: fake)


@pytest.fixture
def stream(memory: MemoryStore) -> MemoryStream:
    stream = MemoryStream(memory)
    stream.read()  # the catalogue's set-up is not this test's
    return stream


def place(orders: Any, pid: str, quantity: int = 1, actor: Any = ALICE, key: str | None = None) -> Any:
    return orders.place(actor, address=ADDRESS, lines=[RequestedLine(pid, quantity)], idempotency_key=key)


def hold(memory: MemoryStore, customer_id: str = ALICE.sub) -> tuple[list[str], int]:
    held = memory.state.unpaid.get(customer_id)
    return (sorted(held.order_ids), held.units) if held is not None else ([], 0)


def settle(memory: MemoryStore, order_id: str, status: OrderStatus) -> None:
    """The order moved out of PENDING_PAYMENT as a settling write moves it (the webhook, the window's step)."""
    order = memory.orders.get(order_id)
    memory.orders.change_status(order, status, updated_at=clock.iso_now())


def run_stream(memory: MemoryStore, stream: MemoryStream) -> list[Any]:
    processor = order_events_service(memory, stream)
    return [processor.handle(change) for change in stream.read()]


def test_a_customer_holds_at_most_max_unpaid_orders_and_the_refusal_writes_nothing(memory, orders, fake):
    hammer = product(memory, stock=30)
    placed = [place(orders, hammer, key=f"k{i}").order_id for i in range(3)]
    assert hold(memory) == (sorted(placed), 3)
    due, intents = dict(memory.state.payment_due), len(fake.intents)

    with pytest.raises(errors.UnpaidOrderLimit) as refused:
        place(orders, hammer, key="k-fourth")
    assert refused.value.code == "UNPAID_ORDER_LIMIT"
    assert refused.value.details == {
        "max_unpaid_orders": 3,
        "max_unpaid_units": 10,
        "order_units": 1,
        "unpaid_order_ids": sorted(placed),
        "unpaid_units": 3,
    }
    # Nothing written: no order, no stock taken, no window, the hold as it was; the intent made for it cancelled.
    assert sorted(memory.state.orders) == sorted(placed)
    assert (stock(memory, hammer), memory.state.payment_due, hold(memory)) == (27, due, (sorted(placed), 3))
    (cancelled,) = [r.intent for r in fake.intents.values() if r.intent.order_id not in placed]
    assert len(fake.intents) == intents + 1
    assert cancelled.status is IntentStatus.CANCELED
    # Another customer is not held back by Alice's orders.
    assert place(orders, hammer, actor=BOB).status is OrderStatus.PENDING_PAYMENT
    assert hold(memory, BOB.sub)[1] == 1


def test_the_units_held_unpaid_stay_within_max_unpaid_units(memory, orders, fake):
    hammer = product(memory, stock=30)
    first = place(orders, hammer, quantity=6)
    with pytest.raises(errors.UnpaidOrderLimit) as refused:
        place(orders, hammer, quantity=5)  # 6 + 5 > 10
    assert (refused.value.details["unpaid_units"], refused.value.details["order_units"]) == (6, 5)
    second = place(orders, hammer, quantity=4)  # 6 + 4 = 10: exactly the limit
    assert hold(memory) == (sorted([first.order_id, second.order_id]), 10)
    assert stock(memory, hammer) == 20


def test_an_order_alone_over_the_units_limit_never_reaches_the_provider(memory, orders, fake):
    hammer = product(memory, stock=30)
    with pytest.raises(errors.UnpaidOrderLimit) as refused:
        place(orders, hammer, quantity=11)
    assert refused.value.details == {"max_unpaid_orders": 3, "max_unpaid_units": 10, "order_units": 11}
    assert (fake.calls, memory.state.orders, hold(memory)) == ([], {}, ([], 0))


@pytest.mark.parametrize(
    "exit_status", [OrderStatus.CONFIRMED, OrderStatus.PAYMENT_FAILED, OrderStatus.EXPIRED, OrderStatus.CANCELLED]
)
def test_every_way_out_of_pending_payment_releases_the_order_once(memory, orders, fake, stream, exit_status):
    hammer = product(memory, stock=30)
    kept = place(orders, hammer, quantity=2).order_id
    leaving = place(orders, hammer, quantity=3).order_id
    run_stream(memory, stream)  # the INSERTs: nothing to release (an unpaid order is not confirmed by the stream)
    assert hold(memory) == (sorted([kept, leaving]), 5)

    if exit_status is OrderStatus.CANCELLED:
        orders.cancel(ALICE, leaving)  # the customer's own cancel
    else:
        settle(memory, leaving, exit_status)
    [change] = [change for change in stream.read() if change.entity == "ORDER"]
    assert (change.old_status, change.new_status) == ("PENDING_PAYMENT", exit_status.value)
    processor = order_events_service(memory, stream)
    assert processor.handle(change).action is Action.STATUS_CHANGED
    assert hold(memory) == ([kept], 2)

    # The same record again (a replay, a retried batch), and after another placement: nothing released twice.
    third = place(orders, hammer, quantity=1).order_id
    processor.handle(change)
    assert hold(memory) == (sorted([kept, third]), 3)


def test_a_record_that_leaves_another_status_releases_nothing(memory, orders, fake, stream):
    hammer = product(memory, stock=30)
    unpaid = place(orders, hammer, quantity=2).order_id
    paid = place(orders, hammer, quantity=1).order_id
    run_stream(memory, stream)  # each write's record, as the table's stream keeps them (read after each)
    settle(memory, paid, OrderStatus.CONFIRMED)
    run_stream(memory, stream)
    assert hold(memory) == ([unpaid], 2)
    settle(memory, paid, OrderStatus.SHIPPED)  # CONFIRMED -> SHIPPED: not the hold's business
    run_stream(memory, stream)
    assert hold(memory) == ([unpaid], 2)


def test_a_placement_that_meets_the_limit_releases_held_orders_whose_release_was_lost(
    memory, orders, fake, stream, monkeypatch
):
    hammer = product(memory, stock=30)
    placed = [place(orders, hammer, quantity=1 + i).order_id for i in range(3)]
    run_stream(memory, stream)
    settle(memory, placed[1], OrderStatus.CONFIRMED)  # paid; its record has not reached the processor (yet)
    reads: list[list[str]] = []
    held_unpaid = memory.orders.held_unpaid

    def counted(order_ids: list[str]) -> dict[str, tuple[OrderStatus, int]]:
        reads.append(sorted(order_ids))
        return held_unpaid(order_ids)

    monkeypatch.setattr(memory.orders, "held_unpaid", counted)

    fourth = place(orders, hammer, quantity=1)
    assert fourth.status is OrderStatus.PENDING_PAYMENT
    assert reads == [sorted(placed)]  # one read of the held orders, only because the hold refused
    assert hold(memory) == (sorted([placed[0], placed[2], fourth.order_id]), 1 + 3 + 1)
    # The stream's own release comes late: the id is no longer held, nothing is taken twice.
    [late] = [outcome for outcome in run_stream(memory, stream) if outcome.order_id == placed[1]]
    assert late.status == "CONFIRMED"
    assert hold(memory) == (sorted([placed[0], placed[2], fourth.order_id]), 5)
    # While every held order is unpaid the refusal stands, after that one read.
    with pytest.raises(errors.UnpaidOrderLimit):
        place(orders, hammer)
    assert len(reads) == 2


def test_a_held_order_archived_before_its_release_leaves_with_the_units_the_hold_counted(memory, orders, fake):
    hammer = product(memory, stock=30)
    placed = [place(orders, hammer, quantity=2 + i).order_id for i in range(3)]
    settle(memory, placed[0], OrderStatus.EXPIRED)
    memory.orders.expire(placed[0])  # archived: its order item (and its lines) left the table
    fourth = place(orders, hammer, quantity=1)
    assert hold(memory) == (sorted([placed[1], placed[2], fourth.order_id]), 3 + 4 + 1)


def test_a_placement_below_the_limit_reads_nothing_more(memory, orders, fake, monkeypatch):
    hammer = product(memory, stock=30)
    monkeypatch.setattr(memory.orders, "held_unpaid", lambda ids: pytest.fail("read on the success path"))
    place(orders, hammer)
    place(orders, hammer)


def test_payments_off_hold_nothing(memory, monkeypatch):
    monkeypatch.setenv("PAYMENTS", "none")
    monkeypatch.setenv("MAX_UNPAID_ORDERS", "1")
    config.payment_settings.cache_clear()
    try:
        hammer = product(memory, stock=30)
        service = memory.order_service()
        placed = [place(service, hammer).status for _ in range(5)]
    finally:
        config.payment_settings.cache_clear()
    assert placed == [OrderStatus.PENDING] * 5
    assert memory.state.unpaid == {}
