"""Real threads against DynamoDB Local: the transaction conditions hold under contention."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import errors, wiring
from shop.models import OrderStatus
from shop.services.actor import Actor
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, parcel, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = [pytest.mark.integration, pytest.mark.table_without_stream]


def test_no_overselling_under_concurrent_orders(local_store):
    pid = product(local_store.table, stock=10)
    service = wiring.order_service(local_store.table)

    def attempt(index: int) -> str:
        try:
            service.place(Actor(f"buyer-{index}"), address=ADDRESS, lines=[RequestedLine(pid, 1)])
        except errors.OutOfStock:
            return "out_of_stock"
        return "placed"

    with ThreadPoolExecutor(max_workers=30) as pool:
        outcomes = list(pool.map(attempt, range(30)))
    assert outcomes.count("placed") == 10
    assert outcomes.count("out_of_stock") == 20
    assert wiring.catalog_service(local_store.table).get(pid).stock == 0


def test_concurrent_status_changes_with_one_version_have_one_winner(local_store):
    pid = product(local_store.table, stock=5)
    service = wiring.order_service(local_store.table)
    order = service.place(Actor("buyer"), address=ADDRESS, lines=[RequestedLine(pid, 1)])

    def attempt(status: OrderStatus) -> str:
        try:
            service.change_status(ADMIN, order.order_id, status, expected_version=1)
        except errors.VersionMismatch:
            return "mismatch"
        return "won"

    targets = [OrderStatus.CONFIRMED, OrderStatus.CANCELLED] * 5
    with ThreadPoolExecutor(max_workers=10) as pool:
        outcomes = list(pool.map(attempt, targets))
    final = service.get(ADMIN, order.order_id)
    assert final.version == 2
    # One change wins; a request for the change that won is answered as done (it may be a re-send).
    assert outcomes == ["won" if target is final.status else "mismatch" for target in targets]
    expected_stock = 5 if final.status is OrderStatus.CANCELLED else 4
    assert wiring.catalog_service(local_store.table).get(pid).stock == expected_stock


def test_concurrent_shipments_with_different_details_have_one_answer_and_it_is_stored(local_store):
    """Four admins ship one order from one version, each with its own tracking number: one 200 whose shipment
    is the stored one; the others lost and are told so (412), not shown a shipment that was never stored."""
    from shop.services.orders import ShipmentIn

    service = wiring.order_service(local_store.table)
    order = service.place(Actor("buyer"), address=ADDRESS, lines=[RequestedLine(product(local_store.table), 1)])
    service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)

    barrier = threading.Barrier(4, timeout=30)

    def attempt(index: int) -> str | None:
        barrier.wait()
        shipment = ShipmentIn(f"carrier-{index}", f"TRACK-{index}")
        try:
            shipped = service.change_status(
                ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=shipment
            )
        except errors.VersionMismatch:
            return None
        assert shipped.shipment is not None
        return shipped.shipment.tracking_number

    for _ in range(2):  # the race, then the four sent again: only the winner's re-send is answered as done
        with ThreadPoolExecutor(max_workers=4) as pool:
            answered = list(pool.map(attempt, range(4)))
        won = [tracking for tracking in answered if tracking is not None]
        stored = service.get(ADMIN, order.order_id)
        assert stored.shipment is not None
        assert won == [stored.shipment.tracking_number]
        assert stored.version == 3


def test_concurrent_return_requests_with_different_reasons_have_one_answer_and_it_is_stored(local_store):
    """Four return requests with their own reasons, released together: the one answered 200 is the stored one;
    the others are 409 (re-read after losing: no longer DELIVERED). Several orders, so the race happens."""
    buyer = Actor("buyer")
    service = wiring.order_service(local_store.table)
    pid = product(local_store.table, stock=10)
    for _ in range(4):
        order = service.place(buyer, address=ADDRESS, lines=[RequestedLine(pid, 1)])
        service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
        service.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
        service.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=3)
        barrier = threading.Barrier(4, timeout=30)

        def attempt(index: int, order_id: str = order.order_id, barrier: threading.Barrier = barrier) -> str | None:
            barrier.wait()
            try:
                returned = service.request_return(buyer, order_id, f"reason {index}")
            except errors.InvalidTransition:
                return None
            return returned.history[-1].reason

        with ThreadPoolExecutor(max_workers=4) as pool:
            answered = list(pool.map(attempt, range(4)))
        stored = service.get(buyer, order.order_id)
        assert [reason for reason in answered if reason is not None] == [stored.history[-1].reason]
        assert (stored.status, stored.version) == (OrderStatus.RETURN_REQUESTED, 5)
