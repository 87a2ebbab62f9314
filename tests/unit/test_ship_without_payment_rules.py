"""Shipping an order whose payment lapsed (issue 39): the rules on the memory store.

Stripe cancels a card authorisation that was not captured (after about 7 days); the webhook records the order's
payment LAPSED without moving its version. SHIPPED is then 409 PAYMENT_NOT_HELD, unless the admin sends
ship_without_payment, which is recorded on the order and its SHIPPED history entry. The status change's write is
conditional on the payment not being LAPSED, so a lapse recorded between the read and the write is refused too (on
DynamoDB Local: tests/repository/test_ship_without_payment.py)."""

from __future__ import annotations

from typing import Any

import pytest

from shop import clock, errors
from shop.models import Order, OrderLine, OrderStatus, StatusEntry
from shop.models.orders import OrderPayment, PaymentStatus
from shop.services.orders import ShipmentIn
from tests.support.factories import ADDRESS, ADMIN, ALICE
from tests.support.memory_store import MemoryStore

PARCEL = ShipmentIn("DHL", "JD0146000062")


def confirmed(memory: MemoryStore, payment: PaymentStatus | None, order_id: str = "o-1") -> Order:
    """A CONFIRMED order (version 2) as the webhook leaves it, its payment in `payment` (None: taken without)."""
    at = clock.iso_now()
    order = Order(
        order_id=order_id,
        customer_id=ALICE.sub,
        status=OrderStatus.CONFIRMED,
        version=2,
        total_cents=1000,
        created_at=at,
        updated_at=at,
        lines=[OrderLine.priced("p-1", "Widget", 1000, 1)],
        shipping_address=ADDRESS,
        history=[
            StatusEntry(status=OrderStatus.PENDING_PAYMENT, at=at),
            StatusEntry(status=OrderStatus.CONFIRMED, at=at),
        ],
        payment=None
        if payment is None
        else OrderPayment(status=payment, intent_id="pi_1", amount_cents=1000, currency="usd"),
    )
    memory.state.orders[order_id] = order
    return order


def lapse(memory: MemoryStore, order_id: str) -> None:
    """What the webhook records for payment_intent.canceled on a confirmed, uncaptured order: the version stays."""
    order = memory.state.orders[order_id]
    assert order.payment is not None
    lapsed = order.payment.model_copy(update={"status": PaymentStatus.LAPSED})
    memory.state.orders[order_id] = order.model_copy(update={"payment": lapsed})


def lapsing_after_the_read(memory: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lapse lands after the service's first read of the order and before its write."""
    reads: list[str] = []
    read = memory.orders.get

    def get(order_id: str) -> Order:
        order = read(order_id)
        reads.append(order_id)
        if len(reads) == 1:
            lapse(memory, order_id)
        return order

    monkeypatch.setattr(memory.orders, "get", get)
    return reads


def ship(memory: MemoryStore, order_id: str = "o-1", **kwargs: Any) -> Order:
    return memory.order_service().change_status(
        ADMIN, order_id, OrderStatus.SHIPPED, expected_version=2, shipment=PARCEL, **kwargs
    )


def test_an_order_whose_payment_lapsed_is_not_shipped(memory):
    confirmed(memory, PaymentStatus.LAPSED)
    with pytest.raises(errors.PaymentNotHeld) as refused:
        ship(memory)
    assert refused.value.details == {"order_id": "o-1", "payment_status": "LAPSED"}
    stored = memory.state.orders["o-1"]
    assert (stored.status, stored.version, stored.shipped_without_payment) == (OrderStatus.CONFIRMED, 2, None)


def test_the_admin_ships_it_without_payment_and_it_is_recorded(memory):
    confirmed(memory, PaymentStatus.LAPSED)
    shipped = ship(memory, ship_without_payment=True)
    assert (shipped.status, shipped.version, shipped.shipped_without_payment) == (OrderStatus.SHIPPED, 3, True)
    assert shipped.history[-1].shipped_without_payment is True
    assert (shipped.history[-1].carrier, shipped.history[-1].tracking_number) == ("DHL", "JD0146000062")
    stored = memory.state.orders["o-1"]
    assert (stored.status, stored.shipped_without_payment, stored.history[-1].shipped_without_payment) == (
        OrderStatus.SHIPPED,
        True,
        True,
    )
    assert stored.payment is not None
    assert stored.payment.status is PaymentStatus.LAPSED  # no money is invented
    # the same request again (its answer lost): answered with the order as stored, not 412
    assert ship(memory, ship_without_payment=True) == stored


@pytest.mark.parametrize("payment", [PaymentStatus.AUTHORISED, PaymentStatus.CAPTURED, None])
@pytest.mark.parametrize("flag", [False, True])
def test_an_order_whose_payment_is_held_ships_and_the_flag_changes_nothing(memory, payment, flag):
    confirmed(memory, payment)
    shipped = ship(memory, ship_without_payment=flag)
    assert (shipped.status, shipped.version, shipped.shipped_without_payment) == (OrderStatus.SHIPPED, 3, None)
    assert shipped.history[-1].shipped_without_payment is None
    assert memory.state.orders["o-1"].shipped_without_payment is None


def test_a_lapse_between_the_read_and_the_write_is_refused_not_shipped(memory, monkeypatch):
    confirmed(memory, PaymentStatus.AUTHORISED)
    lapsing_after_the_read(memory, monkeypatch)
    with pytest.raises(errors.PaymentNotHeld):
        ship(memory)
    stored = memory.state.orders["o-1"]
    assert (stored.status, stored.version) == (OrderStatus.CONFIRMED, 2)


def test_with_the_flag_a_lapse_between_the_read_and_the_write_ships_it_recorded(memory, monkeypatch):
    confirmed(memory, PaymentStatus.AUTHORISED)
    reads = lapsing_after_the_read(memory, monkeypatch)
    shipped = ship(memory, ship_without_payment=True)
    assert reads == ["o-1", "o-1"]  # read again after the write was refused
    assert (shipped.status, shipped.version, shipped.shipped_without_payment) == (OrderStatus.SHIPPED, 3, True)
    assert memory.state.orders["o-1"].history[-1].shipped_without_payment is True


def test_with_the_flag_a_lapse_and_another_change_meanwhile_is_a_version_mismatch(memory, monkeypatch):
    confirmed(memory, PaymentStatus.AUTHORISED)
    reads = lapsing_after_the_read(memory, monkeypatch)
    write = memory.orders.change_status

    def change_status(order: Order, new_status: OrderStatus, **kwargs: Any) -> Order:
        try:
            return write(order, new_status, **kwargs)
        finally:  # after the refused write, before the second read: another admin's change
            stored = memory.state.orders[order.order_id]
            memory.state.orders[order.order_id] = stored.model_copy(update={"version": stored.version + 1})

    monkeypatch.setattr(memory.orders, "change_status", change_status)
    with pytest.raises(errors.VersionMismatch):
        ship(memory, ship_without_payment=True)
    assert reads == ["o-1", "o-1"]
    assert memory.state.orders["o-1"].status is OrderStatus.CONFIRMED


@pytest.mark.parametrize("status", [OrderStatus.CANCELLED, OrderStatus.CONFIRMED, OrderStatus.DELIVERED])
def test_the_flag_goes_only_with_shipped(memory, status):
    confirmed(memory, PaymentStatus.LAPSED)
    with pytest.raises(errors.InvalidRequest) as refused:
        memory.order_service().change_status(ADMIN, "o-1", status, expected_version=2, ship_without_payment=True)
    assert refused.value.details == {"ship_without_payment": "only with SHIPPED"}
    assert memory.state.orders["o-1"].version == 2


def test_a_lapsed_order_can_still_be_cancelled(memory):
    order = confirmed(memory, PaymentStatus.LAPSED)
    memory.state.orders["o-1"] = order.model_copy(update={"lines": []})  # its product is not in this catalogue
    cancelled = memory.order_service().change_status(ADMIN, "o-1", OrderStatus.CANCELLED, expected_version=2)
    assert cancelled.status is OrderStatus.CANCELLED
