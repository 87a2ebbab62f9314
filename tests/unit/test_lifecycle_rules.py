"""Shipments and returns (issue 13) on the memory store: what SHIPPED records, who may return what and when,
how an admin settles a return, and what each step leaves in stock and in the history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shop import clock, errors
from shop.limits import RETURN_WINDOW_DAYS
from shop.models import OrderStatus
from shop.services.orders import RequestedLine, ShipmentIn
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB

PARCEL = ShipmentIn("DHL", "JD014600006281234567")
DELIVERY = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def orders(memory):
    return memory.order_service()


@pytest.fixture
def at(monkeypatch):
    """Set the service's clock: at(moment)."""

    def set_clock(moment: datetime) -> None:
        monkeypatch.setattr(clock, "now", lambda: moment)

    return set_clock


def product(memory, *, stock=10):
    created = memory.catalog_service().create(
        ADMIN, name="Hammer", category="tools", price_cents=1500, description=None, stock=stock
    )
    return created.product_id


def delivered(memory, orders, at, *, quantity=2):
    """A delivered order of `quantity` hammers (of 10 in stock), delivered at DELIVERY."""
    pid = product(memory)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, quantity)])
    at(DELIVERY - timedelta(days=2))
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=PARCEL)
    at(DELIVERY)
    orders.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=3)
    return order.order_id, pid


def test_shipping_needs_carrier_and_tracking_number_and_records_them(memory, orders):
    pid = product(memory)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    with pytest.raises(errors.InvalidRequest) as missing:
        orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2)
    assert set(missing.value.details) == {"carrier", "tracking_number"}

    shipped = orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=PARCEL)
    assert shipped.shipment is not None
    assert (shipped.shipment.carrier, shipped.shipment.tracking_number) == ("DHL", "JD014600006281234567")
    assert shipped.shipment.shipped_at == shipped.updated_at
    entry = shipped.history[-1]
    assert (entry.status, entry.carrier, entry.tracking_number) == (OrderStatus.SHIPPED, "DHL", "JD014600006281234567")
    assert orders.get(ALICE, order.order_id).shipment == shipped.shipment


def test_delivery_is_remembered_and_starts_the_return_window(memory, orders, at):
    order_id, _ = delivered(memory, orders, at)
    assert orders.get(ALICE, order_id).delivered_at == clock.iso(DELIVERY)


def test_the_owner_returns_within_the_window_with_a_reason(memory, orders, at):
    order_id, pid = delivered(memory, orders, at)
    at(DELIVERY + timedelta(days=RETURN_WINDOW_DAYS) - timedelta(seconds=1))
    requested = orders.request_return(ALICE, order_id, "too heavy")
    assert (requested.status, requested.version) == (OrderStatus.RETURN_REQUESTED, 5)
    assert (requested.history[-1].status, requested.history[-1].reason) == (OrderStatus.RETURN_REQUESTED, "too heavy")
    assert memory.products.get(pid).stock == 8  # nothing back in stock before an admin accepts it


def test_the_window_closes_after_thirty_days(memory, orders, at):
    order_id, _ = delivered(memory, orders, at)
    at(DELIVERY + timedelta(days=RETURN_WINDOW_DAYS, seconds=1))
    with pytest.raises(errors.ReturnWindowClosed) as closed:
        orders.request_return(ALICE, order_id, "too late")
    assert closed.value.details["return_window_days"] == RETURN_WINDOW_DAYS
    assert orders.get(ALICE, order_id).status is OrderStatus.DELIVERED


def test_only_a_delivered_order_is_returned(memory, orders):
    pid = product(memory)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    with pytest.raises(errors.InvalidTransition) as invalid:
        orders.request_return(ALICE, order.order_id, "changed my mind")
    assert invalid.value.details == {"from": "PENDING", "to": "RETURN_REQUESTED"}


def test_only_the_owner_requests_a_return(memory, orders, at):
    order_id, _ = delivered(memory, orders, at)
    with pytest.raises(errors.OrderNotFound):
        orders.request_return(BOB, order_id, "not mine")
    with pytest.raises(errors.Forbidden):
        orders.request_return(ADMIN, order_id, "on behalf")
    with pytest.raises(errors.InvalidTransition):  # nor does an admin's PATCH
        orders.change_status(ADMIN, order_id, OrderStatus.RETURN_REQUESTED, expected_version=4)


def test_an_accepted_return_restocks_every_line(memory, orders, at):
    order_id, pid = delivered(memory, orders, at, quantity=3)
    orders.request_return(ALICE, order_id, "broken")
    assert memory.products.get(pid).stock == 7
    returned = orders.change_status(ADMIN, order_id, OrderStatus.RETURNED, expected_version=5)
    assert (returned.status, returned.version) == (OrderStatus.RETURNED, 6)
    assert memory.products.get(pid).stock == 10
    with pytest.raises(errors.InvalidTransition):  # final
        orders.change_status(ADMIN, order_id, OrderStatus.DELIVERED, expected_version=6, reason="oops")
    assert memory.products.get(pid).stock == 10


def test_a_rejected_return_needs_a_reason_and_keeps_the_delivery_date(memory, orders, at):
    order_id, pid = delivered(memory, orders, at)
    at(DELIVERY + timedelta(days=10))
    orders.request_return(ALICE, order_id, "broken")
    with pytest.raises(errors.InvalidRequest) as missing:
        orders.change_status(ADMIN, order_id, OrderStatus.DELIVERED, expected_version=5)
    assert set(missing.value.details) == {"reason"}
    rejected = orders.change_status(ADMIN, order_id, OrderStatus.DELIVERED, expected_version=5, reason="used")
    assert (rejected.status, rejected.history[-1].reason) == (OrderStatus.DELIVERED, "used")
    assert rejected.delivered_at == clock.iso(DELIVERY)  # the window does not start again
    assert memory.products.get(pid).stock == 8
    at(DELIVERY + timedelta(days=RETURN_WINDOW_DAYS + 1))
    with pytest.raises(errors.ReturnWindowClosed):
        orders.request_return(ALICE, order_id, "again")


def test_a_return_request_meeting_a_concurrent_change_reads_the_order_again(memory, orders, at, monkeypatch):
    order_id, _ = delivered(memory, orders, at)
    change = memory.orders.change_status
    raced = {"done": False}

    def racing(order, new_status, **kwargs):
        if not raced["done"]:  # someone else's change lands first: the order is no longer at the version read
            raced["done"] = True
            current = memory.orders.get(order.order_id)
            memory.state.orders[order.order_id] = current.model_copy(update={"version": current.version + 1})
        return change(order, new_status, **kwargs)

    monkeypatch.setattr(memory.orders, "change_status", racing)
    requested = orders.request_return(ALICE, order_id, "broken")
    assert (requested.status, requested.version) == (OrderStatus.RETURN_REQUESTED, 6)
