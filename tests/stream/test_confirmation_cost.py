"""The confirmation's own MODIFY record costs one read, not three refused writes (plus counting its sales: the
order's ARCHIVED marker read once, one transaction, one read of the lines' daily counters and top-list entries,
a write per entry behind)."""

from __future__ import annotations

import pytest

from local_runtime.events import stream_event as lambda_event
from shop import wiring
from shop.models import OrderStatus
from shop.repository.store import dynamodb_client
from shop.services.orders import RequestedLine
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel, product
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def test_the_confirmations_modify_reads_once_and_writes_nothing(store, invoke):
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    invoke(lambda_event(stream.read()))  # the INSERT: confirm, index, notification, history
    confirm_modify = only(stream.read(), entity="ORDER", event_name="MODIFY")
    assert len(confirm_modify) == 1
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(confirm_modify)) == {"batchItemFailures": []}
    assert calls.operations == ["GetItem", "GetItem", "TransactWriteItems", "BatchGetItem", "PutItem"]
    assert orders.get(ALICE, order.order_id).status is OrderStatus.CONFIRMED


def test_a_confirmation_by_hand_is_recorded_by_its_modify(store, invoke):
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    stream.read()  # the INSERT never reaches the processor (say it went to the failure queue)
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    with counting(dynamodb_client()) as calls:
        invoke(lambda_event(only(stream.read(), entity="ORDER", event_name="MODIFY")))
    assert calls.operations == [
        "GetItem",  # no history entry yet
        "GetItem",  # the order is not archived (one read for all its writes)
        "TransactWriteItems",  # its sales
        "BatchGetItem",
        "PutItem",
        "UpdateItem",  # customer index, notification, history: plain conditional writes
        "PutItem",
        "PutItem",
    ]
    recorded = orders.get(ALICE, order.order_id)
    assert [h.status for h in recorded.history] == [OrderStatus.PENDING, OrderStatus.CONFIRMED]


def test_the_inserts_effects_read_no_archived_marker(store, invoke):
    """The confirm just won on the order item itself: its effects are plain conditional writes, no read."""
    wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    placed = only(stream.read(), entity="ORDER", event_name="INSERT")
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(placed)) == {"batchItemFailures": []}
    assert calls.operations == ["UpdateItem", "UpdateItem", "PutItem", "PutItem"]  # confirm, index, note, history


def test_a_status_change_reads_the_marker_once_and_writes_each_effect_once(store, invoke):
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    invoke(lambda_event(stream.read()))
    invoke(lambda_event(stream.read()))
    orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    shipped = only(stream.read(), entity="ORDER", event_name="MODIFY")
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(shipped)) == {"batchItemFailures": []}
    assert calls.operations == ["GetItem", "UpdateItem", "PutItem", "PutItem"]
    with counting(dynamodb_client()) as replayed:  # a replay: the same read, three refused writes
        assert invoke(lambda_event(shipped)) == {"batchItemFailures": []}
    assert replayed.operations == ["GetItem", "UpdateItem", "PutItem", "PutItem"]
    assert [h.status for h in orders.get(ALICE, order.order_id).history] == [
        OrderStatus.PENDING,
        OrderStatus.CONFIRMED,
        OrderStatus.SHIPPED,
    ]
