"""Shipping an order whose card authorisation lapsed, on DynamoDB Local (issue 39).

The webhook records a lapse on the order's payment (`payment.status` LAPSED) without moving the order's version, so
a status change conditional on the version alone would ship an order whose lapse landed between the admin's read and
the write. The SHIPPED write is also conditional on the payment not being LAPSED: refused, it answers
PAYMENT_NOT_HELD (from the item the failed condition returns); with ship_without_payment it ships, recorded on the
order item and, through the stream processor, on the version's history entry. The rules:
tests/unit/services/test_orders.py."""

from __future__ import annotations

from typing import Any

import pytest

from local_runtime.events import stream_event
from shop import clock, errors, keys, wiring
from shop.models import Order, OrderLine, OrderStatus, StatusEntry
from shop.models.orders import OrderPayment, PaymentStatus
from shop.repository import OrderRepository
from shop.repository.order_payments import OrderPaymentRepository
from shop.repository.store import from_item, to_item
from tests.stream.conftest import order_events_context
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel, product
from tests.support.streams import StreamReader, only


def confirmed(store: Any, payment: PaymentStatus, pid: str) -> Order:
    """A paid order as the webhook confirms it (CONFIRMED, version 2, payment `payment`), written as stored."""
    at = clock.iso_now()
    order = Order(
        order_id=f"01TESTSHIP{payment.value[:6]}{clock.epoch(clock.now())}",
        customer_id=ALICE.sub,
        status=OrderStatus.CONFIRMED,
        version=2,
        total_cents=1000,
        created_at=at,
        updated_at=at,
        lines=[OrderLine.priced(pid, "Widget", 1000, 1)],
        shipping_address=ADDRESS,
        history=[StatusEntry(status=OrderStatus.PENDING_PAYMENT, at=at)],
        payment=OrderPayment(status=payment, intent_id="pi_ship", amount_cents=1000, currency="usd"),
    )
    return OrderRepository(store.table).restore(order)


def stored(store: Any, order_id: str) -> dict[str, Any]:
    item = store.client.get_item(TableName=store.table_name, Key=to_item(keys.order_key(order_id)), ConsistentRead=True)
    return from_item(item["Item"])


def lapse(store: Any, order_id: str) -> None:
    """The webhook's record of payment_intent.canceled on a confirmed, uncaptured order (the version stays)."""
    assert OrderPaymentRepository(store.table).record_payment(
        order_id, expected=PaymentStatus.AUTHORISED, status=PaymentStatus.LAPSED
    )


class LapseAfterTheRead(OrderRepository):
    """The order store whose first read is followed by the lapse (the webhook's write lands before the change's)."""

    def __init__(self, store: Any) -> None:
        super().__init__(store.table)
        self.store = store
        self.reads = 0

    def get(self, order_id: str) -> Order:
        order = super().get(order_id)
        self.reads += 1
        if self.reads == 1:
            lapse(self.store, order_id)
        return order


def service_with(orders: OrderRepository, table: Any) -> Any:
    service = wiring.order_service(table)
    service.orders = orders
    return service


@pytest.mark.dynamodb_semantics
def test_the_change_is_conditional_on_the_payment_not_lapsed(store):
    order = confirmed(store, PaymentStatus.AUTHORISED, product(store.table))
    lapse(store, order.order_id)
    before = stored(store, order.order_id)
    with counting(store.client) as calls, pytest.raises(errors.PaymentNotHeld) as refused:
        OrderRepository(store.table).change_status(
            order, OrderStatus.SHIPPED, updated_at=clock.iso_now(), unless_payment=PaymentStatus.LAPSED
        )
    assert calls.operations == ["UpdateItem"]  # the failed condition's item tells why: no second read
    assert refused.value.details == {"order_id": order.order_id, "payment_status": "LAPSED"}
    assert stored(store, order.order_id) == before
    # without the guard the version alone would have let it through (the lapse did not move it)
    assert before["version"] == 2


@pytest.mark.dynamodb_semantics
def test_a_lapse_between_the_read_and_the_write_is_409_not_a_silent_ship(store):
    order = confirmed(store, PaymentStatus.AUTHORISED, product(store.table))
    racing = LapseAfterTheRead(store)
    with pytest.raises(errors.PaymentNotHeld):
        service_with(racing, store.table).change_status(
            ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel()
        )
    item = stored(store, order.order_id)
    assert (item["status"], item["version"], item["payment"]["status"]) == ("CONFIRMED", 2, "LAPSED")
    assert "shipment" not in item


@pytest.mark.dynamodb_semantics
def test_with_ship_without_payment_the_racing_lapse_is_shipped_and_recorded(store):
    order = confirmed(store, PaymentStatus.AUTHORISED, product(store.table))
    racing = LapseAfterTheRead(store)
    shipped = service_with(racing, store.table).change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel(), ship_without_payment=True
    )
    assert racing.reads == 2  # refused once, read again, shipped recorded
    assert (shipped.status, shipped.version, shipped.shipped_without_payment) == (OrderStatus.SHIPPED, 3, True)
    item = stored(store, order.order_id)
    assert (item["status"], item["version"], item["shipped_without_payment"]) == ("SHIPPED", 3, True)
    assert item["payment"]["status"] == "LAPSED"


@pytest.mark.dynamodb_semantics
def test_an_order_whose_payment_is_held_ships_with_the_guard_and_records_nothing(store):
    order = confirmed(store, PaymentStatus.AUTHORISED, product(store.table))
    shipped = wiring.order_service(store.table).change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel(), ship_without_payment=True
    )
    assert (shipped.status, shipped.shipped_without_payment) == (OrderStatus.SHIPPED, None)
    assert "shipped_without_payment" not in stored(store, order.order_id)


@pytest.mark.dynamodb_semantics
def test_a_retry_of_a_ship_without_payment_answers_the_order_as_stored(store):
    order = confirmed(store, PaymentStatus.LAPSED, product(store.table))
    service = wiring.order_service(store.table)
    first = service.change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel(), ship_without_payment=True
    )
    again = service.change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel(), ship_without_payment=True
    )
    assert (again.version, again.shipped_without_payment) == (first.version, True)
    assert again.history[-1].shipped_without_payment is True


@pytest.mark.dynamodb_semantics
def test_the_history_entry_the_stream_writes_records_it(store):
    order = confirmed(store, PaymentStatus.LAPSED, product(store.table))
    reader = StreamReader(store)
    reader.read()  # the restore's records
    wiring.order_service(store.table).change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel(), ship_without_payment=True
    )
    [shipped] = only(reader.read(), entity="ORDER", event_name="MODIFY")
    from functions.order_events.handler import handler

    assert handler(stream_event([shipped]), order_events_context()) == {"batchItemFailures": []}
    entry = store.client.get_item(
        TableName=store.table_name, Key=to_item(keys.order_history_key(order.order_id, 3)), ConsistentRead=True
    )
    assert from_item(entry["Item"])["shipped_without_payment"] is True
    read = wiring.order_service(store.table).get(ADMIN, order.order_id)
    assert (read.shipped_without_payment, read.history[-1].shipped_without_payment) == (True, True)
    assert (read.history[-1].carrier, read.history[-1].status) == ("DHL", OrderStatus.SHIPPED)
