"""Returns per line on DynamoDB Local with real threads (docs/decisions.md, 079): the owner asking at once from several
clients makes one request; two admins accepting one return at once append it once and restock its units once, whichever wins (the
other's answer is the change as made, or a version mismatch), and the order's returns still sum to its total."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from shop import errors, wiring
from shop.models import OrderStatus
from shop.models.orders import ReturnLine
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel, product

pytestmark = [pytest.mark.integration, pytest.mark.table_without_stream, pytest.mark.dynamodb_semantics]

RACERS = 6
CLIENT_RETRIES = 20  # a 503 (transactions on one item wait for DynamoDB Local's locks) is tried again


def race(action: Any) -> Counter[str]:
    start = threading.Barrier(RACERS)

    def run(_: int) -> str:
        start.wait()
        for _attempt in range(CLIENT_RETRIES):
            try:
                action()
            except errors.ServiceUnavailable:
                continue
            except errors.DomainError as refused:
                return refused.code
            return "done"
        return "gave_up"

    with ThreadPoolExecutor(max_workers=RACERS) as pool:
        return Counter(pool.map(run, range(RACERS)))


def test_a_return_asked_and_accepted_by_racing_callers_is_made_once(local_store):
    table = local_store.table
    shirt, socks = product(table, price_cents=1299, stock=10), product(table, price_cents=333, stock=10)
    orders = wiring.order_service(table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(shirt, 2), RequestedLine(socks, 3)])
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    orders.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=3)

    asked = race(
        lambda: orders.request_return(ALICE, order.order_id, "one", [ReturnLine(variant_id=shirt, quantity=1)])
    )
    # The same request racing itself (a double click) is one change: the losers find it made, with its reason, and
    # are answered with it, or find the order requested already.
    assert asked["done"] >= 1
    assert set(asked) <= {"done", "INVALID_TRANSITION"}
    requested = orders.get(ALICE, order.order_id)
    assert (requested.status, requested.version) == (OrderStatus.RETURN_REQUESTED, 5)

    accepted = race(lambda: orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=5))
    assert accepted["done"] >= 1  # the winner, and any that read the change as made
    assert set(accepted) <= {"done", "VERSION_MISMATCH"}
    stored = orders.get(ALICE, order.order_id)
    assert (stored.status, stored.version, len(stored.returns)) == (OrderStatus.PARTIALLY_RETURNED, 6, 1)
    catalog = wiring.catalog_service(table)
    assert (catalog.get(shirt).stock, catalog.get(socks).stock) == (9, 7)  # one unit back, once

    orders.request_return(ALICE, order.order_id, "the rest")
    done = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=7)
    assert (done.status, sum(r.refund_cents for r in done.returns)) == (OrderStatus.RETURNED, done.total_cents)
    assert (catalog.get(shirt).stock, catalog.get(socks).stock) == (10, 10)
