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
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel, product
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


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


def test_the_inserts_effects_each_carry_the_archived_check_in_their_own_transaction(store, invoke):
    """The confirm, then each effect as a 2-item transaction with the ARCHIVED marker's check: no read first, so
    no interleaving with archival can pass the check (docs/decisions.md, "the check per write kept")."""
    wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    placed = only(stream.read(), entity="ORDER", event_name="INSERT")
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(placed)) == {"batchItemFailures": []}
    assert calls.operations == ["UpdateItem"] + ["TransactWriteItems"] * 3  # confirm; index, note, history


def test_a_status_change_writes_each_effect_once_with_its_archived_check(store, invoke):
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    stream = StreamReader(store)
    invoke(lambda_event(stream.read()))
    invoke(lambda_event(stream.read()))
    orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    shipped = only(stream.read(), entity="ORDER", event_name="MODIFY")
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(shipped)) == {"batchItemFailures": []}
    assert calls.operations == ["TransactWriteItems"] * 3
    with counting(dynamodb_client()) as replayed:  # a replay: the same three transactions, each refused
        assert invoke(lambda_event(shipped)) == {"batchItemFailures": []}
    assert replayed.operations == ["TransactWriteItems"] * 3
    assert [h.status for h in orders.get(ALICE, order.order_id).history] == [
        OrderStatus.PENDING,
        OrderStatus.CONFIRMED,
        OrderStatus.SHIPPED,
    ]
