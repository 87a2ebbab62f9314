"""The stream processor's rules (shop.services.order_events) on the memory store (tests/support/memory_stream.py):
its flows, the unpaid hold's release, the payment's changes published.

The hardest of them: a placement's INSERT is confirmed by the processor, whose own MODIFY (PENDING ->
CONFIRMED) then comes back to it and counts the sales, without writing the confirmation's effects twice.
Their DynamoDB semantics (conditions, real records) are proven in tests/stream on DynamoDB Local.
"""

from __future__ import annotations

import pytest

from shop.models import OrderStatus
from shop.models.events import DetailType
from shop.services.orders import RequestedLine
from shop.services.stream_outcome import Action
from tests.support.factories import ADDRESS, ADMIN, ALICE, percent_code
from tests.support.memory_store import MemoryStore
from tests.support.memory_stream import MemoryStream, order_events_service
from tests.unit.services.test_orders import hold, place_one, product, run_stream, settle
from tests.unit.services.test_payments import authorised, captured, event, placed


def new_product(memory: MemoryStore, stock: int = 10) -> str:
    return (
        memory.catalog_service()
        .create(ADMIN, name="Hammer", categories=["tools"], price_cents=1500, description=None, stock=stock)
        .product_id
    )


def place(memory: MemoryStore, pid: str, quantity: int = 2) -> str:
    lines = [RequestedLine(pid, quantity)]
    return memory.order_service().place(ALICE, address=ADDRESS, lines=lines).order_id


def test_the_processor_confirms_a_placement_then_counts_its_sales_from_its_own_modify(memory, memory_stream):
    pid = new_product(memory)
    order_id = place(memory, pid)
    processor = order_events_service(memory, memory_stream)

    [inserted] = [change for change in memory_stream.read() if change.entity == "ORDER"]
    assert (inserted.event_name, inserted.new_status) == ("INSERT", "PENDING")
    confirmed = processor.handle(inserted)
    assert (confirmed.action, confirmed.status, confirmed.history_written) == (Action.CONFIRMED, "CONFIRMED", False)
    assert memory.order_service().get(ALICE, order_id).status is OrderStatus.CONFIRMED
    assert memory.sales.days(pid, "2000-01-01", "2999-12-31") == []  # counted from the MODIFY, not before

    [modified] = [change for change in memory_stream.read() if change.entity == "ORDER"]
    assert (modified.event_name, modified.old_status, modified.new_status) == ("MODIFY", "PENDING", "CONFIRMED")
    counted = processor.handle(modified)
    # The MODIFY writes the history entry with the count (the entry is the count's once-only key).
    assert (counted.action, counted.sales_counted, counted.history_written) == (Action.STATUS_CHANGED, True, True)
    assert [event.detail_type for event in counted.events] == [DetailType.ORDER_CONFIRMED]
    [day] = memory.sales.days(pid, "2000-01-01", "2999-12-31")
    assert (day.units, day.revenue_cents) == (2, 3000)
    notes = memory.customer_service().notifications(ADMIN, "alice", limit=10, next_token=None).items
    assert [note.type for note in notes] == ["ORDER_CONFIRMED"]  # written once, by the confirmation


def test_replayed_records_write_and_count_nothing_more(memory, memory_stream):
    pid = new_product(memory)
    place(memory, pid)
    processor = order_events_service(memory, memory_stream)
    [inserted] = [change for change in memory_stream.read() if change.entity == "ORDER"]
    processor.handle(inserted)
    [modified] = [change for change in memory_stream.read() if change.entity == "ORDER"]
    processor.handle(modified)

    assert processor.handle(inserted).action is Action.NOT_CONFIRMED
    again = processor.handle(modified)
    assert (again.sales_counted, again.history_written) == (False, False)
    [day] = memory.sales.days(pid, "2000-01-01", "2999-12-31")
    assert day.units == 2
    assert len(memory.customer_service().notifications(ADMIN, "alice", limit=10, next_token=None).items) == 1


def test_a_cancellation_before_the_processor_leaves_the_order_cancelled_and_unsold(memory, memory_stream):
    pid = new_product(memory)
    order_id = place(memory, pid)
    processor = order_events_service(memory, memory_stream)
    [inserted] = [change for change in memory_stream.read() if change.entity == "ORDER"]
    memory.order_service().cancel(ALICE, order_id)  # the customer is faster than the stream

    assert processor.handle(inserted).action is Action.NOT_CONFIRMED
    assert memory.order_service().get(ALICE, order_id).status is OrderStatus.CANCELLED
    [cancelled] = [change for change in memory_stream.read() if change.entity == "ORDER"]
    outcome = processor.handle(cancelled)
    assert (outcome.action, outcome.status, outcome.sales_counted) == (Action.STATUS_CHANGED, "CANCELLED", False)
    assert memory.sales.days(pid, "2000-01-01", "2999-12-31") == []


def test_a_new_product_is_announced_from_its_insert(memory, memory_stream):
    pid = new_product(memory)
    processor = order_events_service(memory, memory_stream)
    [created] = memory_stream.read()
    outcome = processor.handle(created)
    assert outcome.action is Action.PRODUCT_CHANGED
    assert [(event.detail_type, event.detail["product_id"]) for event in outcome.events] == [
        (DetailType.PRODUCT_CREATED, pid)
    ]


def test_an_order_whose_ttl_passed_is_archived_from_its_ttl_remove(memory, memory_stream):
    pid = new_product(memory)
    order_id = place(memory, pid)
    memory.order_service().cancel(ALICE, order_id)
    processor = order_events_service(memory, memory_stream)
    memory_stream.read()
    memory.orders.expire(order_id)

    [removed] = [change for change in memory_stream.read() if change.entity == "ORDER"]
    assert (removed.event_name, removed.removed_by_ttl) == ("REMOVE", True)
    outcome = processor.handle(removed)
    assert (outcome.action, outcome.order_id) == (Action.ARCHIVED, order_id)
    assert memory.order_service().get(ALICE, order_id).archived is True


# The unpaid hold's release: the processor releases an order once it leaves PENDING_PAYMENT, whichever way, and a
# replayed record releases nothing (the hold itself: test_orders.py).


@pytest.mark.usefixtures("unpaid_limits")
@pytest.mark.parametrize(
    "exit_status", [OrderStatus.CONFIRMED, OrderStatus.PAYMENT_FAILED, OrderStatus.EXPIRED, OrderStatus.CANCELLED]
)
def test_every_way_out_of_pending_payment_releases_the_order_once(
    memory, paid_orders, fake_payments, memory_stream, exit_status
):
    hammer = product(memory, stock=30)
    kept = place_one(paid_orders, hammer, quantity=2).order_id
    leaving = place_one(paid_orders, hammer, quantity=3).order_id
    run_stream(
        memory, memory_stream
    )  # the INSERTs: nothing to release (an unpaid order is not confirmed by the stream)
    assert hold(memory) == (sorted([kept, leaving]), 5)

    if exit_status is OrderStatus.CANCELLED:
        paid_orders.cancel(ALICE, leaving)  # the customer's own cancel
    else:
        settle(memory, leaving, exit_status)
    [change] = [change for change in memory_stream.read() if change.entity == "ORDER"]
    assert (change.old_status, change.new_status) == ("PENDING_PAYMENT", exit_status.value)
    processor = order_events_service(memory, memory_stream)
    assert processor.handle(change).action is Action.STATUS_CHANGED
    assert hold(memory) == ([kept], 2)

    # The same record again (a replay, a retried batch), and after another placement: nothing released twice.
    third = place_one(paid_orders, hammer, quantity=1).order_id
    processor.handle(change)
    assert hold(memory) == (sorted([kept, third]), 3)


@pytest.mark.usefixtures("unpaid_limits")
def test_a_record_that_leaves_another_status_releases_nothing(memory, paid_orders, fake_payments, memory_stream):
    hammer = product(memory, stock=30)
    unpaid = place_one(paid_orders, hammer, quantity=2).order_id
    paid = place_one(paid_orders, hammer, quantity=1).order_id
    run_stream(memory, memory_stream)  # each write's record, as the table's stream keeps them (read after each)
    settle(memory, paid, OrderStatus.CONFIRMED)
    run_stream(memory, memory_stream)
    assert hold(memory) == ([unpaid], 2)
    settle(memory, paid, OrderStatus.SHIPPED)  # CONFIRMED -> SHIPPED: not the hold's business
    run_stream(memory, memory_stream)
    assert hold(memory) == ([unpaid], 2)


# The payment's changes published: a lapse, a dispute and a provider's refund, once each (the payment rules:
# test_payments.py).


def test_the_stream_publishes_a_lapse_a_dispute_and_a_provider_refund_once_each(memory, fake_payments, payment_rules):
    stream = MemoryStream(memory)
    processor = order_events_service(memory, stream)
    order_id, intent, _ = placed(memory, fake_payments)
    authorised(payment_rules, fake_payments, order_id, intent)
    stream.read()
    fake_payments.lapse(intent)
    payment_rules.apply_event(event("payment_intent.canceled", order_id, intent))
    [change] = [c for c in stream.read() if c.entity == "ORDER"]
    outcome = processor.handle(change)
    assert outcome.action is Action.PAYMENT_LAPSED
    assert [e.detail["id"] for e in outcome.events] == [f"{order_id}:lapsed"]
    assert processor.handle(change).events == outcome.events  # a redelivered record: the same event, same id

    order2, intent2 = captured(memory, fake_payments, payment_rules)
    stream.read()
    fake_payments.dashboard_refund(intent2, 700)
    payment_rules.apply_event(event("charge.refunded", order2, intent2, amount_refunded_cents=700))
    payment_rules.apply_event(
        event("charge.dispute.created", order2, intent2, dispute_id="dp_9", dispute_status="needs_response")
    )
    published = [e for c in stream.read() if c.entity == "ORDER" for e in processor.handle(c).events]
    assert {(e.detail_type, e.detail["id"]) for e in published} == {
        (DetailType.ORDER_REFUNDED, f"{order2}:refunded:700"),
        (DetailType.ORDER_DISPUTED, f"{order2}:dp_9:needs_response"),
    }
    [refund] = [e for e in published if e.detail_type is DetailType.ORDER_REFUNDED]
    assert (refund.detail["amount_cents"], refund.detail["origin"]) == (700, "provider")


def test_an_unlimited_codes_use_counts_with_the_confirmation_and_goes_back_with_a_cancel_after(memory, memory_stream):
    pid = new_product(memory)
    orders = memory.order_service()
    code = percent_code(orders.checkout, "OPEN")
    placed = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)], promo_code="open")
    assert placed.counted_promotions == [code.promotion_id]
    processor = order_events_service(memory, memory_stream)

    def used() -> int | None:
        return orders.checkout.promotion(ADMIN, code.promotion_id).used_count

    assert used() == 0  # nothing written for it at placement
    for _ in range(2):
        for change in memory_stream.read():
            processor.handle(change)
    assert used() == 1
    orders.cancel(ALICE, placed.order_id)
    for change in memory_stream.read():
        processor.handle(change)
        processor.handle(change)  # a replay
    assert used() == 0
