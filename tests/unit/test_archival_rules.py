"""Archival rules on the memory store: which status changes set the order's TTL, and how an archived order reads."""

from __future__ import annotations

import pytest

from shop import clock, errors
from shop.limits import RETURN_WINDOW_DAYS
from shop.models import OrderStatus
from shop.services.archival import DAY_SECONDS, archive_at
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB, parcel


def test_final_statuses_expire_after_the_setting_delivered_after_its_return_window_too():
    at = 1_800_000_000
    assert archive_at(OrderStatus.CANCELLED, at, 365) == at + 365 * DAY_SECONDS
    assert archive_at(OrderStatus.DELIVERED, at, 365) == at + (RETURN_WINDOW_DAYS + 365) * DAY_SECONDS
    assert archive_at(OrderStatus.CANCELLED, at, 0) == at
    for status in (OrderStatus.PENDING, OrderStatus.CONFIRMED, OrderStatus.SHIPPED):
        assert archive_at(status, at, 365) is None
    for name in ("RETURNED",):  # the returns' final status, when the status machine has it
        if name in OrderStatus.__members__:
            assert archive_at(OrderStatus(name), at, 7) == at + 7 * DAY_SECONDS


@pytest.fixture
def orders(memory):
    return memory.order_service()


def placed(memory, orders):
    hammer = memory.catalog_service().create(
        ADMIN, name="Hammer", category="tools", price_cents=1500, description=None, stock=10
    )
    return orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer.product_id, 1)])


def test_the_ttl_is_set_with_the_final_status_and_only_then(memory, orders, monkeypatch):
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "10")
    order = placed(memory, orders)
    before = clock.epoch(clock.now())
    confirmed = orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    assert order.order_id not in memory.state.order_ttls
    shipped = orders.change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=confirmed.version, shipment=parcel()
    )
    assert order.order_id not in memory.state.order_ttls
    orders.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=shipped.version)
    after = clock.epoch(clock.now())
    window = (RETURN_WINDOW_DAYS + 10) * DAY_SECONDS
    assert before + window <= memory.state.order_ttls[order.order_id] <= after + window


def test_a_cancel_sets_the_ttl_in_the_same_change(memory, orders, monkeypatch):
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    order = placed(memory, orders)
    before = clock.epoch(clock.now())
    orders.cancel(ALICE, order.order_id)
    assert before <= memory.state.order_ttls[order.order_id] <= clock.epoch(clock.now())


def test_an_archived_order_reads_from_the_archive_for_its_owner_and_admins_only(memory, orders):
    order = placed(memory, orders)
    cancelled = orders.cancel(ALICE, order.order_id)
    memory.orders.expire(order.order_id)
    archived = orders.get(ALICE, order.order_id)
    assert archived.archived is True
    assert archived.model_dump(exclude={"archived"}) == cancelled.model_dump(exclude={"archived"})
    assert orders.get(ADMIN, order.order_id).archived is True
    with pytest.raises(errors.OrderNotFound):
        orders.get(BOB, order.order_id)
    listed = orders.list_for_customer(ALICE, "alice", limit=10, next_token=None).items
    assert [(o.order_id, o.status) for o in listed] == [(order.order_id, OrderStatus.CANCELLED)]


def test_an_archived_order_cannot_change(memory, orders):
    order = placed(memory, orders)
    cancelled = orders.cancel(ALICE, order.order_id)
    memory.orders.expire(order.order_id)
    with pytest.raises(errors.OrderArchived):
        orders.change_status(
            ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=cancelled.version, shipment=parcel()
        )
    with pytest.raises(errors.OrderArchived):
        orders.cancel(ALICE, order.order_id)
    with pytest.raises(errors.OrderNotFound):
        orders.cancel(BOB, order.order_id)
