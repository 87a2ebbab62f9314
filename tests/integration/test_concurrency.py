"""Real threads against DynamoDB Local: the transaction conditions hold under contention."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import errors, wiring
from shop.models import OrderStatus
from shop.services.actor import Actor
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, product

pytestmark = pytest.mark.integration


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
