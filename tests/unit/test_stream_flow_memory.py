"""The stream processor's flows on the memory store (tests/support/memory_stream.py), in the fast lane.

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
from tests.support.factories import ADDRESS, ADMIN, ALICE
from tests.support.memory_store import MemoryStore
from tests.support.memory_stream import MemoryStream, order_events_service


@pytest.fixture
def stream(memory: MemoryStore) -> MemoryStream:
    return MemoryStream(memory)


def new_product(memory: MemoryStore, stock: int = 10) -> str:
    return (
        memory.catalog_service()
        .create(ADMIN, name="Hammer", categories=["tools"], price_cents=1500, description=None, stock=stock)
        .product_id
    )


def place(memory: MemoryStore, pid: str, quantity: int = 2) -> str:
    lines = [RequestedLine(pid, quantity)]
    return memory.order_service().place(ALICE, address=ADDRESS, lines=lines).order_id


def test_the_processor_confirms_a_placement_then_counts_its_sales_from_its_own_modify(memory, stream):
    pid = new_product(memory)
    order_id = place(memory, pid)
    processor = order_events_service(memory, stream)

    [inserted] = [change for change in stream.read() if change.entity == "ORDER"]
    assert (inserted.event_name, inserted.new_status) == ("INSERT", "PENDING")
    confirmed = processor.handle(inserted)
    assert (confirmed.action, confirmed.status, confirmed.history_written) == (Action.CONFIRMED, "CONFIRMED", False)
    assert memory.order_service().get(ALICE, order_id).status is OrderStatus.CONFIRMED
    assert memory.sales.days(pid, "2000-01-01", "2999-12-31") == []  # counted from the MODIFY, not before

    [modified] = [change for change in stream.read() if change.entity == "ORDER"]
    assert (modified.event_name, modified.old_status, modified.new_status) == ("MODIFY", "PENDING", "CONFIRMED")
    counted = processor.handle(modified)
    # The MODIFY writes the history entry with the count (the entry is the count's once-only key).
    assert (counted.action, counted.sales_counted, counted.history_written) == (Action.STATUS_CHANGED, True, True)
    assert [event.detail_type for event in counted.events] == [DetailType.ORDER_CONFIRMED]
    [day] = memory.sales.days(pid, "2000-01-01", "2999-12-31")
    assert (day.units, day.revenue_cents) == (2, 3000)
    notes = memory.customer_service().notifications(ADMIN, "alice", limit=10, next_token=None).items
    assert [note.type for note in notes] == ["ORDER_CONFIRMED"]  # written once, by the confirmation


def test_replayed_records_write_and_count_nothing_more(memory, stream):
    pid = new_product(memory)
    place(memory, pid)
    processor = order_events_service(memory, stream)
    [inserted] = [change for change in stream.read() if change.entity == "ORDER"]
    processor.handle(inserted)
    [modified] = [change for change in stream.read() if change.entity == "ORDER"]
    processor.handle(modified)

    assert processor.handle(inserted).action is Action.NOT_CONFIRMED
    again = processor.handle(modified)
    assert (again.sales_counted, again.history_written) == (False, False)
    [day] = memory.sales.days(pid, "2000-01-01", "2999-12-31")
    assert day.units == 2
    assert len(memory.customer_service().notifications(ADMIN, "alice", limit=10, next_token=None).items) == 1


def test_a_cancellation_before_the_processor_leaves_the_order_cancelled_and_unsold(memory, stream):
    pid = new_product(memory)
    order_id = place(memory, pid)
    processor = order_events_service(memory, stream)
    [inserted] = [change for change in stream.read() if change.entity == "ORDER"]
    memory.order_service().cancel(ALICE, order_id)  # the customer is faster than the stream

    assert processor.handle(inserted).action is Action.NOT_CONFIRMED
    assert memory.order_service().get(ALICE, order_id).status is OrderStatus.CANCELLED
    [cancelled] = [change for change in stream.read() if change.entity == "ORDER"]
    outcome = processor.handle(cancelled)
    assert (outcome.action, outcome.status, outcome.sales_counted) == (Action.STATUS_CHANGED, "CANCELLED", False)
    assert memory.sales.days(pid, "2000-01-01", "2999-12-31") == []


def test_a_new_product_is_announced_from_its_insert(memory, stream):
    pid = new_product(memory)
    processor = order_events_service(memory, stream)
    [created] = stream.read()
    outcome = processor.handle(created)
    assert outcome.action is Action.PRODUCT_CHANGED
    assert [(event.detail_type, event.detail["product_id"]) for event in outcome.events] == [
        (DetailType.PRODUCT_CREATED, pid)
    ]


def test_an_order_whose_ttl_passed_is_archived_from_its_ttl_remove(memory, stream):
    pid = new_product(memory)
    order_id = place(memory, pid)
    memory.order_service().cancel(ALICE, order_id)
    processor = order_events_service(memory, stream)
    stream.read()
    memory.orders.expire(order_id)

    [removed] = [change for change in stream.read() if change.entity == "ORDER"]
    assert (removed.event_name, removed.removed_by_ttl) == ("REMOVE", True)
    outcome = processor.handle(removed)
    assert (outcome.action, outcome.order_id) == (Action.ARCHIVED, order_id)
    assert memory.order_service().get(ALICE, order_id).archived is True
