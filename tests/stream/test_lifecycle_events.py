"""Shipments and returns through the stream processor (issue 13), on moto and DynamoDB Local: the
shipment reaches the history, the notification and the event; an accepted return publishes
OrderRefundDue once; a rejection's reason reaches the customer."""

from __future__ import annotations

from typing import Any

import pytest

from local_runtime.events import stream_event as lambda_event
from shop import wiring
from shop.models import OrderStatus
from shop.services.orders import OrderService, RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel, product
from tests.support.streams import StreamReader

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def deliver(store: Any, invoke: Any, reader: StreamReader) -> tuple[str, OrderService]:
    orders = wiring.order_service(store.table)
    order_id = orders.place(
        ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table, price_cents=1250, stock=9), 2)]
    ).order_id
    pump(invoke, reader)
    orders.change_status(ADMIN, order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    orders.change_status(ADMIN, order_id, OrderStatus.DELIVERED, expected_version=3)
    pump(invoke, reader)
    return order_id, orders


def pump(invoke: Any, reader: StreamReader) -> None:
    for _ in range(4):
        records = reader.read()
        if not records:
            return
        assert invoke(lambda_event(records)) == {"batchItemFailures": []}


@pytest.mark.dynamodb_semantics
def test_the_shipment_reaches_history_notification_and_event(store, invoke, recorded_bus):
    reader = StreamReader(store)
    order_id, orders = deliver(store, invoke, reader)
    shipped = next(h for h in orders.get(ALICE, order_id).history if h.status is OrderStatus.SHIPPED)
    assert (shipped.carrier, shipped.tracking_number) == ("DHL", "JD014600006281234567")
    notes = wiring.customer_service(store.table).notifications(ADMIN, "alice", limit=10, next_token=None).items
    note = next(n for n in notes if "shipped" in n.message)
    assert "DHL" in note.message
    assert "JD014600006281234567" in note.message
    assert note.shipment is not None
    assert note.shipment.carrier == "DHL"
    [event] = [e for e in recorded_bus.events if e.get("status") == "SHIPPED"]
    assert event["shipment"]["tracking_number"] == "JD014600006281234567"


@pytest.mark.dynamodb_semantics
def test_an_accepted_return_publishes_the_refund_once(store, invoke, recorded_bus):
    reader = StreamReader(store)
    order_id, orders = deliver(store, invoke, reader)
    orders.request_return(ALICE, order_id, "Too small.")
    orders.change_status(ADMIN, order_id, OrderStatus.RETURNED, expected_version=5)
    records = reader.read()
    assert invoke(lambda_event(records)) == {"batchItemFailures": []}
    assert invoke(lambda_event(records)) == {"batchItemFailures": []}  # redelivered: same dedupe ids
    refunds = [e for e in recorded_bus.events if e["type"] == "OrderRefundDue"]
    assert {e["id"] for e in refunds} == {f"{order_id}:6"}
    assert (refunds[0]["amount_cents"], refunds[0]["customer_id"]) == (2500, "alice")
    requested = next(h for h in orders.get(ALICE, order_id).history if h.status is OrderStatus.RETURN_REQUESTED)
    assert requested.reason == "Too small."


@pytest.mark.dynamodb_semantics
def test_a_rejected_return_tells_the_customer_why(store, invoke, recorded_bus):
    reader = StreamReader(store)
    order_id, orders = deliver(store, invoke, reader)
    orders.request_return(ALICE, order_id, "Too small.")
    orders.change_status(ADMIN, order_id, OrderStatus.DELIVERED, expected_version=5, reason="Worn.")
    pump(invoke, reader)
    history = orders.get(ALICE, order_id).history
    assert [(h.status.value, h.reason) for h in history[-2:]] == [
        ("RETURN_REQUESTED", "Too small."),
        ("DELIVERED", "Worn."),
    ]
    notes = wiring.customer_service(store.table).notifications(ADMIN, "alice", limit=10, next_token=None).items
    assert any("not accepted: Worn." in n.message for n in notes)
    assert not [e for e in recorded_bus.events if e["type"] == "OrderRefundDue"]
