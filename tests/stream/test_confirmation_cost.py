"""The confirmation's own MODIFY record costs one read, not three refused writes (plus counting its sales:
one transaction, one read of the lines' daily counters and top-list entries, a write per entry behind)."""

from __future__ import annotations

import pytest

from local_runtime.events import stream_event as lambda_event
from shop import wiring
from shop.models import OrderStatus
from shop.repository.store import dynamodb_client
from shop.services.orders import RequestedLine
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.streams import StreamReader, only


@pytest.mark.dynamodb_semantics
def test_the_confirmations_modify_reads_once_and_writes_nothing(store, invoke):
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    invoke(lambda_event(stream.read()))  # the INSERT: confirm, index, notification, history
    confirm_modify = only(stream.read(), entity="ORDER", event_name="MODIFY")
    assert len(confirm_modify) == 1
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(confirm_modify)) == {"batchItemFailures": []}
    assert calls.operations == ["TransactWriteItems", "BatchGetItem", "PutItem", "GetItem"]
    assert orders.get(ALICE, order.order_id).status is OrderStatus.CONFIRMED


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
        "TransactWriteItems",  # its sales
        "BatchGetItem",
        "PutItem",
        "GetItem",  # no history entry yet
        "TransactWriteItems",  # customer index, notification, history: each checks that the order is not archived
        "TransactWriteItems",
        "TransactWriteItems",
    ]
    recorded = orders.get(ALICE, order.order_id)
    assert [h.status for h in recorded.history] == [OrderStatus.PENDING, OrderStatus.CONFIRMED]
