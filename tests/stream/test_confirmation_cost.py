"""The confirmation's own MODIFY record reads the customer's order entry instead of refusing two writes, and
writes the version's history entry with its sales in one transaction (the entry is the count's once-only key),
then reads the lines' daily counters and puts each top-list entry (issue 26). The records here are fresh (seconds
old, under the default archival grace): their effects are plain conditional writes and their count's transaction
has no ARCHIVED check (tests/stream/test_fresh_records.py has the old records' path). A processor instance reads
the release's sales cut-over at its first count, and only there (the INSERT and a status change count nothing)."""

from __future__ import annotations

import pytest

from local_runtime.events import stream_event as lambda_event
from shop import clock, wiring
from shop.models import OrderStatus
from shop.repository.store import dynamodb_client
from shop.services.orders import RequestedLine
from tests.stream.conftest import shipped_order
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel, product
from tests.support.streams import StreamReader, forget_instance_memo, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


@pytest.mark.dynamodb_semantics
def test_the_confirmations_modify_reads_once_and_writes_its_history_with_its_sales(store, invoke):
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    invoke(lambda_event(stream.read()))  # the INSERT: confirm, notification, customer index
    confirm_modify = only(stream.read(), entity="ORDER", event_name="MODIFY")
    assert len(confirm_modify) == 1
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(confirm_modify)) == {"batchItemFailures": []}
    assert calls.operations == [
        "GetItem",  # the order's DISCOUNTS (consistent): its promotions without a usage limit, counted with it
        "GetItem",  # the customer's order entry: current, so the notification is there too
        "GetItem",  # the first count on the table: the release's cut-over, consistent (none yet) ...
        "PutItem",  # ... so recorded (attribute_not_exists); the instance keeps it
        "TransactWriteItems",  # the history entry and the sales counters (no archived check: a fresh record)
        "BatchGetItem",  # the counters (not the top-list entries)
        "PutItem",  # the top-list entry
    ]
    assert [h.status for h in orders.get(ALICE, order.order_id).history] == [
        OrderStatus.PENDING,
        OrderStatus.CONFIRMED,
    ]
    with counting(dynamodb_client()) as replayed:  # a replay: the transaction and the put refused
        assert invoke(lambda_event(confirm_modify)) == {"batchItemFailures": []}
    assert replayed.operations == [
        "GetItem",
        "GetItem",
        "TransactWriteItems",
        "BatchGetItem",
        "PutItem",
    ]  # cut-over known
    forget_instance_memo()  # a new processor instance reads the cut-over once, at its first count
    with counting(dynamodb_client()) as restarted:
        assert invoke(lambda_event(confirm_modify)) == {"batchItemFailures": []}
    assert restarted.operations == ["GetItem", "GetItem", "GetItem", "TransactWriteItems", "BatchGetItem", "PutItem"]


@pytest.mark.dynamodb_semantics
def test_a_confirmation_by_hand_is_recorded_by_its_modify(store, invoke):
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    stream.read()  # the INSERT never reaches the processor (say it went to the failure queue)
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    with counting(dynamodb_client()) as calls:
        invoke(lambda_event(only(stream.read(), entity="ORDER", event_name="MODIFY")))
    assert calls.operations == [
        "GetItem",  # the order's DISCOUNTS (its promotions without a usage limit)
        "GetItem",  # the customer's order entry is behind
        "PutItem",  # the notification, attribute_not_exists
        "UpdateItem",  # the customer's order entry, newer versions only
        "GetItem",  # the table's first count: the cut-over (none yet) ...
        "PutItem",  # ... recorded
        "TransactWriteItems",  # the history entry with its sales
        "BatchGetItem",
        "PutItem",
    ]
    recorded = orders.get(ALICE, order.order_id)
    assert [h.status for h in recorded.history] == [OrderStatus.PENDING, OrderStatus.CONFIRMED]


def test_the_inserts_effects_are_plain_conditional_writes(store, invoke):
    """The confirm, then each effect as one conditional write: a fresh record's order cannot be archived before
    they are written (docs/decisions.md, "An archival grace"), so no ARCHIVED check (1 WRU each, not 4)."""
    wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    placed = only(stream.read(), entity="ORDER", event_name="INSERT")
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(placed)) == {"batchItemFailures": []}
    assert calls.operations == ["UpdateItem", "PutItem", "UpdateItem"]  # confirm; notification, index


def test_a_status_change_writes_each_effect_once_as_a_plain_conditional_write(store, invoke):
    order_id, shipped = shipped_order(store, invoke)
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event([shipped])) == {"batchItemFailures": []}
    assert calls.operations == ["PutItem", "UpdateItem", "PutItem"]  # notification, index, history entry
    with counting(dynamodb_client()) as replayed:  # a replay: the same three writes, each refused
        assert invoke(lambda_event([shipped])) == {"batchItemFailures": []}
    assert replayed.operations == ["PutItem", "UpdateItem", "PutItem"]
    assert [h.status for h in wiring.order_service(store.table).get(ALICE, order_id).history] == [
        OrderStatus.PENDING,
        OrderStatus.CONFIRMED,
        OrderStatus.SHIPPED,
    ]


@pytest.mark.dynamodb_semantics
def test_a_confirmation_replayed_after_a_later_change_still_tells_the_customer(store, invoke):
    """The confirmation's MODIFY arrives last (replayed from the failure bucket after the order moved on): the
    customer's entry shows a later version, which says nothing about this version's notification."""
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    stream.read()  # the INSERT never reaches the processor
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    confirmed = only(stream.read(), entity="ORDER", event_name="MODIFY")
    orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    assert invoke(lambda_event(only(stream.read(), entity="ORDER", event_name="MODIFY"))) == {"batchItemFailures": []}
    assert invoke(lambda_event(confirmed)) == {"batchItemFailures": []}  # the confirmation, late
    notes = wiring.customer_service(store.table).notifications(ADMIN, "alice", limit=10, next_token=None).items
    assert sorted(note.type for note in notes) == ["ORDER_CONFIRMED", "ORDER_STATUS_CHANGED"]
    recorded = orders.get(ALICE, order.order_id)
    assert [h.status for h in recorded.history] == [OrderStatus.PENDING, OrderStatus.CONFIRMED, OrderStatus.SHIPPED]
    today = clock.iso_now()[:10]
    [day] = wiring.sales_service(store.table).product_sales(ADMIN, order.lines[0].product_id, today, today).days
    assert day.units == 1  # counted once, by the late confirmation
