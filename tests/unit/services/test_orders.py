"""Every rule of shop.services.orders on the memory store: the status machine and line merging as properties,
then placement (pricing, limits, stock, carts, idempotency), visibility, status changes and cancels; shipments
and returns; the TTL and archived orders; shipping without payment; the expiring authorisations' list; the paid checkout;
the unpaid hold. Fixtures shared with the other services' files: tests/unit/services/conftest.py."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop import clock, config, errors
from shop.limits import (
    MAX_ORDER_LINES,
    MAX_QUANTITY,
    RETURN_WINDOW_DAYS,
)
from shop.models import ORDER_TRANSITIONS, Order, OrderLine, OrderStatus, StatusDetails, StatusEntry
from shop.models.orders import OrderPayment, PaymentStatus
from shop.models.payments import IntentStatus
from shop.services.archive_timing import DAY_SECONDS
from shop.services.orders import (
    CANCEL_ATTEMPTS,
    REPRICE_ATTEMPTS,
    RequestedLine,
    ShipmentIn,
    lines_over_the_limit,
    merge_lines,
)
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB, parcel
from tests.support.fake_payments import FakePayments
from tests.support.memory_store import MemoryStore
from tests.support.memory_stream import MemoryStream, order_events_service


def reachable(start: OrderStatus) -> set[OrderStatus]:
    seen, frontier = set(), [start]
    while frontier:
        status = frontier.pop()
        for nxt in ORDER_TRANSITIONS[status]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return seen


PAYMENT_STATUSES = {OrderStatus.PENDING_PAYMENT, OrderStatus.PAYMENT_FAILED, OrderStatus.EXPIRED}


def test_machine_matches_the_contract():
    assert reachable(OrderStatus.PENDING) == set(OrderStatus) - {OrderStatus.PENDING} - PAYMENT_STATUSES
    assert reachable(OrderStatus.PENDING_PAYMENT) == set(OrderStatus) - {
        OrderStatus.PENDING,
        OrderStatus.PENDING_PAYMENT,
    }
    assert ORDER_TRANSITIONS[OrderStatus.PAYMENT_FAILED] == ORDER_TRANSITIONS[OrderStatus.EXPIRED] == frozenset()
    assert ORDER_TRANSITIONS[OrderStatus.DELIVERED] == frozenset({OrderStatus.RETURN_REQUESTED})
    assert ORDER_TRANSITIONS[OrderStatus.RETURN_REQUESTED] == {
        OrderStatus.RETURNED,
        OrderStatus.PARTIALLY_RETURNED,
        OrderStatus.DELIVERED,
    }
    assert ORDER_TRANSITIONS[OrderStatus.PARTIALLY_RETURNED] == {OrderStatus.RETURN_REQUESTED}
    assert ORDER_TRANSITIONS[OrderStatus.CANCELLED] == frozenset()
    assert ORDER_TRANSITIONS[OrderStatus.RETURNED] == frozenset()
    cancellable = {s for s in OrderStatus if OrderStatus.CANCELLED in ORDER_TRANSITIONS[s]}
    assert cancellable == {OrderStatus.PENDING, OrderStatus.PENDING_PAYMENT, OrderStatus.CONFIRMED}


def test_no_status_returns_to_itself_but_an_order_whose_returns_go_on():
    for status in OrderStatus:
        if status in (OrderStatus.DELIVERED, OrderStatus.RETURN_REQUESTED, OrderStatus.PARTIALLY_RETURNED):
            # DELIVERED -> RETURN_REQUESTED -> DELIVERED (rejected); a partial return -> RETURN_REQUESTED again
            assert status in reachable(status)
        else:
            assert status not in reachable(status)


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 99)), max_size=20))
def test_merging_lines_keeps_every_unit(lines):
    merged = merge_lines([RequestedLine(pid, qty) for pid, qty in lines])
    assert sum(merged.values()) == sum(qty for _, qty in lines)
    assert set(merged) == {pid for pid, _ in lines}


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(1, MAX_QUANTITY)), max_size=8))
def test_the_quantity_limit_names_the_line_that_crosses_it(lines):
    over = lines_over_the_limit([RequestedLine(pid, qty) for pid, qty in lines])
    totals: dict[str, int] = {}
    crossing = set()
    for index, (pid, qty) in enumerate(lines):
        if totals.get(pid, 0) <= MAX_QUANTITY < totals.get(pid, 0) + qty:
            crossing.add(f"lines.{index}.quantity")
        totals[pid] = totals.get(pid, 0) + qty
    assert set(over) == crossing


# -- the order service on the memory store ----------------------------------------------------------

PARCEL = ShipmentIn("DHL", "JD014600006281234567")


def product(memory, *, name="Hammer", price_cents=1500, stock=10):
    return (
        memory.catalog_service()
        .create(ADMIN, name=name, category="tools", price_cents=price_cents, description=None, stock=stock)
        .product_id
    )


def stock(memory, product_id):
    return memory.products.get(product_id).stock


def place(orders, actor=ALICE, **lines):
    return orders.place(actor, address=ADDRESS, lines=[RequestedLine(pid, qty) for pid, qty in lines.items()])


def test_an_order_is_priced_from_the_catalogue_with_duplicate_lines_merged(memory, orders):
    hammer = product(memory, price_cents=1500, stock=5)
    nails = product(memory, name="Nails", price_cents=250, stock=100)
    order = orders.place(
        ALICE, address=ADDRESS, lines=[RequestedLine(hammer, 2), RequestedLine(nails, 10), RequestedLine(hammer, 1)]
    )
    assert [
        (line.product_id, line.name, line.unit_price_cents, line.quantity, line.line_total_cents)
        for line in order.lines
    ] == [
        (hammer, "Hammer", 1500, 3, 4500),
        (nails, "Nails", 250, 10, 2500),
    ]
    assert (order.total_cents, order.status, order.version, order.customer_id) == (
        7000,
        OrderStatus.PENDING,
        1,
        "alice",
    )
    assert [entry.status for entry in order.history] == [OrderStatus.PENDING]
    assert (stock(memory, hammer), stock(memory, nails)) == (2, 90)
    assert orders.get(ALICE, order.order_id) == order


def test_an_order_has_at_least_one_line_and_at_most_the_limit_of_products(memory, orders):
    with pytest.raises(errors.InvalidRequest):
        orders.place(ALICE, address=ADDRESS, lines=[])
    pids = [product(memory, name=f"p{n}") for n in range(MAX_ORDER_LINES + 1)]
    with pytest.raises(errors.InvalidRequest):
        place(orders, **dict.fromkeys(pids, 1))
    assert place(orders, **dict.fromkeys(pids[:MAX_ORDER_LINES], 1)).lines[-1].product_id == pids[MAX_ORDER_LINES - 1]


def test_an_unknown_product_is_not_found_before_any_quantity_rule(memory, orders):
    hammer = product(memory)
    with pytest.raises(errors.ProductNotFound) as missing:
        orders.place(ALICE, address=ADDRESS, lines=[RequestedLine("ghost", MAX_QUANTITY), RequestedLine("ghost", 1)])
    assert missing.value.product_ids == ["ghost"]
    with pytest.raises(errors.InvalidRequest) as over:
        orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer, MAX_QUANTITY), RequestedLine(hammer, 1)])
    assert over.value.details == {"lines.1.quantity": f"{hammer} adds up to more than {MAX_QUANTITY}"}
    assert stock(memory, hammer) == 10


def test_out_of_stock_names_the_products_and_takes_nothing(memory, orders):
    hammer, nails = product(memory, stock=1), product(memory, name="Nails", stock=100)
    with pytest.raises(errors.OutOfStock) as short:
        place(orders, **{hammer: 2, nails: 1})
    assert short.value.product_ids == [hammer]
    assert (stock(memory, hammer), stock(memory, nails)) == (1, 100)
    assert orders.list_for_customer(ALICE, "alice", limit=10, next_token=None).items == []


def repriced_after_each_read(memory, product_id, times):
    """A catalogue whose price of `product_id` rises by 100 just after each of the first `times` reads."""
    read = memory.products.get_many
    left = {"n": times}

    def read_then_reprice(product_ids, **options):
        found = read(product_ids, **options)
        if left["n"]:
            left["n"] -= 1
            current = memory.products.get(product_id)
            memory.products.update(
                current, {"price_cents": current.price_cents + 100}, current.updated_at + "x", current._listed_in
            )
        return found

    return read_then_reprice


def test_a_price_that_moves_during_placement_is_read_again(memory, orders, monkeypatch):
    hammer = product(memory, price_cents=1000, stock=5)
    monkeypatch.setattr(
        memory.products, "get_many", repriced_after_each_read(memory, hammer, times=REPRICE_ATTEMPTS - 1)
    )
    order = place(orders, **{hammer: 1})
    assert order.total_cents == 1000 + 100 * (REPRICE_ATTEMPTS - 1)
    assert stock(memory, hammer) == 4


def test_a_price_that_keeps_moving_is_a_price_changed_conflict(memory, orders, monkeypatch):
    hammer = product(memory, price_cents=1000, stock=5)
    monkeypatch.setattr(memory.products, "get_many", repriced_after_each_read(memory, hammer, times=REPRICE_ATTEMPTS))
    with pytest.raises(errors.PriceChanged) as changed:
        place(orders, **{hammer: 1})
    assert changed.value.product_ids == [hammer]
    assert stock(memory, hammer) == 5


def test_checking_out_a_cart_orders_its_lines_at_its_prices_and_empties_it(memory, orders):
    hammer, nails = product(memory, price_cents=1500, stock=5), product(memory, name="Nails", price_cents=250)
    sessions = memory.session_service()
    session = sessions.create()
    sessions.set_quantity(session.session_id, hammer, 2)
    sessions.set_quantity(session.session_id, nails, 4)
    order = orders.place(ALICE, address=ADDRESS, session_id=session.session_id)
    assert [(line.product_id, line.quantity, line.line_total_cents) for line in order.lines] == [
        (hammer, 2, 3000),
        (nails, 4, 1000),
    ]
    assert order.total_cents == 4000
    assert stock(memory, hammer) == 3
    assert sessions.get(session.session_id).cart == []
    with pytest.raises(errors.CartEmpty):
        orders.place(ALICE, address=ADDRESS, session_id=session.session_id)
    with pytest.raises(errors.SessionNotFound):
        orders.place(ALICE, address=ADDRESS, session_id="missing")


def test_a_cart_that_changes_during_checkout_is_not_ordered(memory, orders, monkeypatch):
    hammer = product(memory)
    sessions = memory.session_service()
    session = sessions.create()
    sessions.set_quantity(session.session_id, hammer, 1)
    read = memory.sessions.get

    def read_then_cart_changes(session_id, *, now):
        stored = read(session_id, now=now)
        sessions.set_quantity(session_id, hammer, 3)
        return stored

    monkeypatch.setattr(memory.sessions, "get", read_then_cart_changes)
    with pytest.raises(errors.SessionNotFound):
        orders.place(ALICE, address=ADDRESS, session_id=session.session_id)
    assert stock(memory, hammer) == 10


def test_a_placement_repeated_under_its_idempotency_key_is_the_first_order(memory, orders):
    hammer = product(memory, stock=5)
    first = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer, 2)], idempotency_key="k1")
    again = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer, 2)], idempotency_key="k1")
    assert again.order_id == first.order_id
    assert stock(memory, hammer) == 3
    other = orders.place(BOB, address=ADDRESS, lines=[RequestedLine(hammer, 1)], idempotency_key="k1")
    assert other.order_id != first.order_id


def test_an_order_is_seen_by_its_owner_and_admins_only(memory, orders):
    order = place(orders, **{product(memory): 1})
    assert orders.get(ADMIN, order.order_id) == orders.get(ALICE, order.order_id)
    with pytest.raises(errors.OrderNotFound):
        orders.get(BOB, order.order_id)
    with pytest.raises(errors.OrderNotFound):
        orders.get(ADMIN, "missing")


def test_order_lists_are_for_their_customer_or_an_admin_and_by_status_for_admins(memory, orders):
    pid = product(memory)
    mine = [place(orders, **{pid: 1}).order_id for _ in range(3)]
    place(orders, BOB, **{pid: 1})
    listed = orders.list_for_customer(ALICE, "alice", limit=10, next_token=None).items
    assert {summary.order_id for summary in listed} == set(mine)
    assert orders.list_for_customer(ADMIN, "alice", limit=10, next_token=None).items == listed
    with pytest.raises(errors.Forbidden):
        orders.list_for_customer(BOB, "alice", limit=10, next_token=None)
    pending = orders.list_by_status(ADMIN, OrderStatus.PENDING, limit=10, next_token=None).items
    assert len(pending) == 4
    with pytest.raises(errors.Forbidden):
        orders.list_by_status(ALICE, OrderStatus.PENDING, limit=10, next_token=None)


def test_an_admin_moves_an_order_along_the_machine_at_the_version_read(memory, orders):
    order = place(orders, **{product(memory): 1})
    with pytest.raises(errors.Forbidden):
        orders.change_status(ALICE, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    confirmed = orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    assert (confirmed.status, confirmed.version) == (OrderStatus.CONFIRMED, 2)
    assert confirmed.history[-1].status is OrderStatus.CONFIRMED
    with pytest.raises(errors.VersionMismatch) as mismatch:
        orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=1, shipment=PARCEL)
    assert mismatch.value.details == {"current_version": 2}
    with pytest.raises(errors.InvalidTransition) as invalid:
        orders.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=2)
    assert invalid.value.details == {"from": "CONFIRMED", "to": "DELIVERED"}


def test_a_status_change_repeated_after_a_lost_answer_is_answered_as_done(memory, orders):
    order = place(orders, **{product(memory): 1})
    confirmed = orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    again = orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    assert (again.version, again.updated_at) == (2, confirmed.updated_at)
    with pytest.raises(errors.VersionMismatch):  # version 0 was never the order's: not a lost answer
        orders.change_status(
            ADMIN, place(orders, **{product(memory): 1}).order_id, OrderStatus.PENDING, expected_version=0
        )


def test_a_concurrent_change_to_the_same_status_with_other_details_is_a_mismatch(memory, orders):
    """Only the request whose shipment (or reason) is stored is answered as done; another one to the same
    status from the same version lost, and is told so rather than shown details that were never stored."""
    order = place(orders, **{product(memory): 1})
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    shipped = orders.change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=ShipmentIn("DHL", "A-1")
    )
    again = orders.change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=ShipmentIn("DHL", "A-1")
    )
    assert (again.version, again.shipment) == (3, shipped.shipment)
    with pytest.raises(errors.VersionMismatch):
        orders.change_status(
            ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=ShipmentIn("UPS", "B-2")
        )
    delivered = orders.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=3)
    orders.request_return(ALICE, order.order_id, "too small")
    with pytest.raises(errors.VersionMismatch):  # the store's own recognition, from the order as read
        memory.orders.change_status(
            delivered,
            OrderStatus.RETURN_REQUESTED,
            updated_at="2099-01-01T00:00:00Z",
            details=StatusDetails(reason="x"),
        )
    resent = memory.orders.change_status(
        delivered,
        OrderStatus.RETURN_REQUESTED,
        updated_at="2099-01-01T00:00:00Z",
        details=StatusDetails(reason="too small"),
    )
    assert (resent.version, resent.history[-1].reason) == (5, "too small")
    assert resent.updated_at != "2099-01-01T00:00:00Z"


def test_a_stale_status_change_that_already_happened_is_answered_as_done_by_the_store(memory, orders):
    order = place(orders, **{product(memory): 1})
    confirmed = orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    replayed = memory.orders.change_status(order, OrderStatus.CONFIRMED, updated_at="2099-01-01T00:00:00.000000Z")
    assert (replayed.version, replayed.updated_at) == (2, confirmed.updated_at)


def test_cancelling_puts_every_line_back_in_stock(memory, orders):
    hammer, nails = product(memory, stock=5), product(memory, name="Nails", stock=50)
    order = place(orders, **{hammer: 2, nails: 20})
    cancelled = orders.cancel(ALICE, order.order_id)
    assert (cancelled.status, cancelled.version) == (OrderStatus.CANCELLED, 2)
    assert (stock(memory, hammer), stock(memory, nails)) == (5, 50)
    with pytest.raises(errors.InvalidTransition):
        orders.cancel(ALICE, order.order_id)
    assert stock(memory, hammer) == 5


def test_an_admin_cancelling_through_the_status_machine_restocks_too(memory, orders):
    hammer = product(memory, stock=5)
    order = place(orders, **{hammer: 2})
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    orders.change_status(ADMIN, order.order_id, OrderStatus.CANCELLED, expected_version=2)
    assert stock(memory, hammer) == 5


def test_other_status_changes_leave_stock_alone(memory, orders):
    hammer = product(memory, stock=5)
    order = place(orders, **{hammer: 2})
    for version, status in enumerate((OrderStatus.CONFIRMED, OrderStatus.SHIPPED, OrderStatus.DELIVERED), start=1):
        orders.change_status(ADMIN, order.order_id, status, expected_version=version, shipment=PARCEL)
    assert stock(memory, hammer) == 3


def test_only_the_owner_or_an_admin_cancels_and_only_before_shipping(memory, orders):
    pid = product(memory)
    order = place(orders, **{pid: 1})
    with pytest.raises(errors.OrderNotFound):
        orders.cancel(BOB, order.order_id)
    assert orders.cancel(ADMIN, order.order_id).status is OrderStatus.CANCELLED
    shipped = place(orders, **{pid: 1})
    orders.change_status(ADMIN, shipped.order_id, OrderStatus.CONFIRMED, expected_version=1)
    orders.change_status(ADMIN, shipped.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=PARCEL)
    with pytest.raises(errors.InvalidTransition):
        orders.cancel(ALICE, shipped.order_id)


def confirmed_by_someone_else(memory, times):
    """An order store where the order is confirmed by a concurrent writer just before each of `times` changes."""
    change = memory.orders.change_status
    left = {"n": times}

    def racing_change(order, new_status, **kwargs):
        if left["n"]:
            left["n"] -= 1
            current = memory.orders.get(order.order_id)
            change(
                current,
                OrderStatus.CONFIRMED if current.status is OrderStatus.PENDING else current.status,
                updated_at="x",
            )
        return change(order, new_status, **kwargs)

    return racing_change


def test_a_cancel_meeting_a_concurrent_change_reads_the_order_again(memory, orders, monkeypatch):
    hammer = product(memory, stock=5)
    order = place(orders, **{hammer: 2})
    monkeypatch.setattr(memory.orders, "change_status", confirmed_by_someone_else(memory, times=1))
    cancelled = orders.cancel(ALICE, order.order_id)
    assert (cancelled.status, cancelled.version) == (OrderStatus.CANCELLED, 3)
    assert stock(memory, hammer) == 5


def test_a_cancel_that_keeps_meeting_changes_gives_up_as_unavailable(memory, orders, monkeypatch):
    hammer = product(memory, stock=5)
    order = place(orders, **{hammer: 2})
    monkeypatch.setattr(memory.orders, "change_status", confirmed_by_someone_else(memory, times=CANCEL_ATTEMPTS))
    with pytest.raises(errors.ServiceUnavailable):
        orders.cancel(ALICE, order.order_id)
    assert stock(memory, hammer) == 3


# Shipments and returns on the memory store: what SHIPPED records, who may return what and when, how an admin settles
# a return, and what each step leaves in stock and in the history.


DELIVERY = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


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


# The TTL and archived orders: a status change to a final status sets the order's TTL in the same change, never
# sooner than the grace (the TTL's rule: test_archive_timing.py); an order whose TTL passed reads from the archive,
# for its owner and admins only, and changes no more.


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


@pytest.mark.parametrize("grace", [0, 7200])
def test_a_cancel_sets_the_ttl_in_the_same_change_archivable_only_after_the_grace(memory, orders, monkeypatch, grace):
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    monkeypatch.setenv("ARCHIVE_GRACE_SECONDS", str(grace))
    order = placed(memory, orders)
    before = clock.epoch(clock.now())
    orders.cancel(ALICE, order.order_id)
    assert before + grace <= memory.state.order_ttls[order.order_id] <= clock.epoch(clock.now()) + grace


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


# Shipping an order whose payment lapsed: the rules on the memory store.
#
# Stripe cancels a card authorisation that was not captured (after about 7 days); the webhook records the order's
# payment LAPSED without moving its version. SHIPPED is then 409 PAYMENT_NOT_HELD, unless the admin sends
# ship_without_payment, which is recorded on the order and its SHIPPED history entry. The status change's write is
# conditional on the payment not being LAPSED, so a lapse recorded between the read and the write is refused too (on
# DynamoDB Local: tests/repository/test_ship_without_payment.py).


LAPSED_PARCEL = ShipmentIn("DHL", "JD0146000062")


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
        ADMIN, order_id, OrderStatus.SHIPPED, expected_version=2, shipment=LAPSED_PARCEL, **kwargs
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


# The confirmed orders whose card authorisation will soon lapse (GET /orders?payment=expiring): the rules on the
# memory store. CONFIRMED and placed more than AUTHORISATION_WARN_DAYS ago (placement stands for confirmation: a paid
# order is confirmed within its payment window), oldest first, each with its payment's status; admins only. The
# index's key condition and read amplification: tests/repository/test_expiring_authorisations.py (DynamoDB Local).


def order(
    memory: MemoryStore,
    order_id: str,
    days_ago: float,
    *,
    status: OrderStatus = OrderStatus.CONFIRMED,
    payment: PaymentStatus | None = PaymentStatus.AUTHORISED,
) -> Order:
    at = clock.iso(clock.now() - timedelta(days=days_ago))
    placed = Order(
        order_id=order_id,
        customer_id=ALICE.sub,
        status=status,
        version=2,
        total_cents=1000,
        created_at=at,
        updated_at=at,
        lines=[OrderLine.priced("p-1", "Widget", 1000, 1)],
        shipping_address=ADDRESS,
        history=[StatusEntry(status=status, at=at)],
        payment=None if payment is None else OrderPayment(status=payment, amount_cents=1000, currency="usd"),
    )
    memory.state.orders[order_id] = placed
    return placed


@pytest.fixture
def warn_days(monkeypatch: pytest.MonkeyPatch):
    def set_days(days: int) -> None:
        monkeypatch.setenv("AUTHORISATION_WARN_DAYS", str(days))
        config.payment_settings.cache_clear()

    yield set_days
    config.payment_settings.cache_clear()


def listed(memory: MemoryStore, limit: int = 50) -> list[tuple[str, PaymentStatus | None]]:
    seen, token = [], None
    while True:
        page = memory.order_service().list_expiring_authorisations(ADMIN, limit=limit, next_token=token)
        seen += [(o.order_id, o.payment_status) for o in page.items]
        token = page.next_token
        if token is None:
            return seen


def test_confirmed_orders_placed_before_the_warning_oldest_first_with_their_payment(memory, warn_days):
    warn_days(6)
    order(memory, "recent", 5.9)
    order(memory, "old", 6.5)
    order(memory, "older", 8, payment=PaymentStatus.LAPSED)
    order(memory, "oldest", 30, payment=PaymentStatus.CAPTURED)
    order(memory, "no-payment", 7, payment=None)
    order(memory, "shipped", 9, status=OrderStatus.SHIPPED)
    order(memory, "pending", 10, status=OrderStatus.PENDING_PAYMENT, payment=PaymentStatus.REQUIRES_PAYMENT)
    assert listed(memory) == [
        ("oldest", PaymentStatus.CAPTURED),
        ("older", PaymentStatus.LAPSED),
        ("no-payment", None),
        ("old", PaymentStatus.AUTHORISED),
    ]
    assert listed(memory, limit=1) == listed(memory)  # paged alike


def test_the_setting_moves_the_cutoff(memory, warn_days):
    order(memory, "two-days", 2)
    order(memory, "four-days", 4)
    warn_days(3)
    assert [oid for oid, _ in listed(memory)] == ["four-days"]
    warn_days(1)
    assert [oid for oid, _ in listed(memory)] == ["four-days", "two-days"]


def test_a_walk_keeps_its_first_pages_cutoff(memory, warn_days, monkeypatch):
    warn_days(6)
    order(memory, "a", 9)
    order(memory, "b", 8)
    order(memory, "c", 5)  # not yet: two days later it would be
    service = memory.order_service()
    first = service.list_expiring_authorisations(ADMIN, limit=1, next_token=None)
    later = clock.now() + timedelta(days=2)
    monkeypatch.setattr(clock, "now", lambda: later)
    rest = service.list_expiring_authorisations(ADMIN, limit=5, next_token=first.next_token)
    assert [o.order_id for o in [*first.items, *rest.items]] == ["a", "b"]  # the walk's cutoff: its first page's
    assert [oid for oid, _ in listed(memory)] == ["a", "b", "c"]  # a new walk, two days later


def test_only_an_administrator_lists_them(memory):
    order(memory, "old", 10)
    with pytest.raises(errors.Forbidden):
        memory.order_service().list_expiring_authorisations(ALICE, limit=5, next_token=None)


# The paid checkout's order of calls (PAYMENTS=stripe; docs/payments.md, "Checkout") on the memory store and the fake
# provider: the read, then the intent for the order id the placement chose, then the one transaction holding the order
# with its intent. What the read shows refused never reaches the provider; what the transaction refuses after the
# intent exists cancels that intent; a provider outage writes nothing.


def place_lines(paid_orders, lines: dict[str, int], key: str | None = "k"):
    return paid_orders.place(
        ALICE,
        address=ADDRESS,
        lines=[RequestedLine(pid, qty) for pid, qty in lines.items()],
        idempotency_key=key,
    )


def statuses(fake_payments: FakePayments) -> dict[str, IntentStatus]:
    return {intent_id: record.intent.status for intent_id, record in fake_payments.intents.items()}


def placed_orders(paid_orders) -> list[str]:
    return [o.order_id for o in paid_orders.list_for_customer(ALICE, "alice", limit=10, next_token=None).items]


def test_the_order_is_written_once_with_the_intent_created_for_its_id(memory, paid_orders, fake_payments):
    hammer = product(memory, price_cents=1500, stock=5)
    order = place_lines(paid_orders, {hammer: 2})
    assert order.status is OrderStatus.PENDING_PAYMENT
    (intent,) = (record.intent for record in fake_payments.intents.values())
    assert fake_payments.calls == [("create_intent", f"shop-order-{order.order_id}-authorise")]
    assert (intent.order_id, intent.amount_cents, intent.currency) == (order.order_id, 3000, "usd")
    assert order.payment is not None
    assert (order.payment.intent_id, order.payment.client_secret) == (intent.intent_id, intent.client_secret)
    assert memory.orders.get(order.order_id).payment == order.payment  # stored with it, in the one write
    assert memory.orders.get(order.order_id).payment_expires_at == order.payment_expires_at


@pytest.mark.parametrize(
    "refused",
    ["unknown product", "archived product", "over the quantity limit", "visibly out of stock", "no lines"],
)
def test_what_the_read_shows_refused_never_reaches_the_provider(memory, paid_orders, fake_payments, refused):
    hammer = product(memory, stock=3)
    lines = {
        "unknown product": [RequestedLine("ghost", 1)],
        "archived product": [RequestedLine(hammer, 1)],
        "over the quantity limit": [RequestedLine(hammer, MAX_QUANTITY), RequestedLine(hammer, 1)],
        "visibly out of stock": [RequestedLine(hammer, 4)],
        "no lines": [],
    }[refused]
    if refused == "archived product":
        memory.catalog_service().archive(ADMIN, hammer)
    with pytest.raises(errors.DomainError) as raised:
        paid_orders.place(ALICE, address=ADDRESS, lines=lines, idempotency_key="k")
    assert (
        raised.value.code
        == {
            "unknown product": "PRODUCT_NOT_FOUND",
            "archived product": "PRODUCT_UNAVAILABLE",
            "over the quantity limit": "VALIDATION_ERROR",
            "visibly out of stock": "OUT_OF_STOCK",
            "no lines": "VALIDATION_ERROR",
        }[refused]
    )
    assert fake_payments.calls == []
    assert placed_orders(paid_orders) == []


def test_an_empty_cart_never_reaches_the_provider(memory, paid_orders, fake_payments):
    session = memory.session_service().create()
    with pytest.raises(errors.CartEmpty):
        paid_orders.place(ALICE, address=ADDRESS, session_id=session.session_id, idempotency_key="k")
    with pytest.raises(errors.CartEmpty):
        paid_orders.place(ALICE, address=ADDRESS, customer_cart=True, idempotency_key="k2")
    assert fake_payments.calls == []


def test_a_provider_outage_writes_nothing_and_the_repeat_places_normally(memory, paid_orders, fake_payments):
    hammer = product(memory, stock=5)
    fake_payments.fail_next()
    with pytest.raises(errors.PaymentProviderUnavailable):
        place_lines(paid_orders, {hammer: 2}, key="k-down")
    assert (placed_orders(paid_orders), stock(memory, hammer), memory.state.unpaid) == ([], 5, {})
    assert memory.state.placements == {}
    order = place_lines(paid_orders, {hammer: 2}, key="k-down")
    assert placed_orders(paid_orders) == [order.order_id]
    assert stock(memory, hammer) == 3
    assert list(statuses(fake_payments).values()) == [IntentStatus.REQUIRES_PAYMENT_METHOD]


def test_a_cart_changed_after_the_intent_is_refused_and_the_intent_cancelled(
    memory, paid_orders, fake_payments, monkeypatch
):
    hammer = product(memory)
    sessions = memory.session_service()
    session = sessions.create()
    sessions.set_quantity(session.session_id, hammer, 1)
    created = fake_payments.create_intent

    def create_while_the_cart_changes(*args, **kwargs):
        intent = created(*args, **kwargs)
        sessions.set_quantity(session.session_id, hammer, 3)
        return intent

    monkeypatch.setattr(fake_payments, "create_intent", create_while_the_cart_changes)
    with pytest.raises(errors.SessionNotFound):
        paid_orders.place(ALICE, address=ADDRESS, session_id=session.session_id, idempotency_key="k")
    ((intent_id, status),) = statuses(fake_payments).items()
    assert status is IntentStatus.CANCELED
    (order_id,) = {fake_payments.intents[intent_id].intent.order_id}
    assert ("cancel", f"shop-order-{order_id}-cancel-{intent_id}") in fake_payments.calls
    assert (placed_orders(paid_orders), stock(memory, hammer)) == ([], 10)


def test_out_of_stock_found_by_the_transaction_cancels_the_intent(memory, paid_orders, fake_payments, monkeypatch):
    hammer = product(memory, stock=2)
    created = fake_payments.create_intent

    def create_while_another_buys(*args, **kwargs):
        intent = created(*args, **kwargs)
        memory.state.products[hammer].move(None, -2)  # another customer took the last two meanwhile
        return intent

    monkeypatch.setattr(fake_payments, "create_intent", create_while_another_buys)
    with pytest.raises(errors.OutOfStock):
        place_lines(paid_orders, {hammer: 2})
    assert list(statuses(fake_payments).values()) == [IntentStatus.CANCELED]
    assert placed_orders(paid_orders) == []


def test_a_reprice_that_moves_the_total_gives_the_order_an_intent_for_the_new_total(
    memory, paid_orders, fake_payments, monkeypatch
):
    hammer = product(memory, price_cents=1000, stock=5)
    monkeypatch.setattr(memory.products, "get_many", repriced_after_each_read(memory, hammer, times=1))
    order = place_lines(paid_orders, {hammer: 1})
    assert order.total_cents == 1100
    first, second = (record.intent for record in fake_payments.intents.values())
    assert (first.amount_cents, first.status) == (1000, IntentStatus.CANCELED)
    assert (second.amount_cents, second.status) == (1100, IntentStatus.REQUIRES_PAYMENT_METHOD)
    assert order.payment is not None
    assert order.payment.intent_id == second.intent_id
    assert [key for op, key in fake_payments.calls if op == "create_intent"] == [
        f"shop-order-{order.order_id}-authorise",
        f"shop-order-{order.order_id}-authorise-reprice-1",
    ]


def test_a_price_that_keeps_moving_leaves_every_intent_cancelled(memory, paid_orders, fake_payments, monkeypatch):
    hammer = product(memory, price_cents=1000, stock=5)
    monkeypatch.setattr(memory.products, "get_many", repriced_after_each_read(memory, hammer, times=REPRICE_ATTEMPTS))
    with pytest.raises(errors.PriceChanged):
        place_lines(paid_orders, {hammer: 1})
    assert len(fake_payments.intents) == REPRICE_ATTEMPTS
    assert set(statuses(fake_payments).values()) == {IntentStatus.CANCELED}
    assert (placed_orders(paid_orders), stock(memory, hammer)) == ([], 5)


def test_a_placement_claim_taken_meanwhile_answers_that_order_and_cancels_this_runs_intent(
    memory, paid_orders, fake_payments, monkeypatch
):
    hammer = product(memory, stock=5)
    first = place_lines(paid_orders, {hammer: 1}, key="k-twice")
    # The same Idempotency-Key again (its record lost): the read passes, an intent is made for a new order id,
    # the transaction finds the claim taken and answers the first order.
    again = place_lines(paid_orders, {hammer: 1}, key="k-twice")
    assert again == first
    assert stock(memory, hammer) == 4
    assert list(statuses(fake_payments).values()) == [IntentStatus.REQUIRES_PAYMENT_METHOD, IntentStatus.CANCELED]
    assert first.payment is not None
    assert fake_payments.intents[first.payment.intent_id].intent.status is IntentStatus.REQUIRES_PAYMENT_METHOD


def test_a_failed_cancel_is_logged_and_the_client_gets_the_same_refusal(
    memory, paid_orders, fake_payments, monkeypatch, caplog
):
    hammer = product(memory, stock=2)
    created = fake_payments.create_intent

    def create_then_sold_out_and_the_provider_down(*args, **kwargs):
        intent = created(*args, **kwargs)
        memory.state.products[hammer].move(None, -2)
        fake_payments.fail_next()
        return intent

    monkeypatch.setattr(fake_payments, "create_intent", create_then_sold_out_and_the_provider_down)
    with caplog.at_level(logging.WARNING, logger="shop.services.orders"), pytest.raises(errors.OutOfStock):
        place_lines(paid_orders, {hammer: 2})
    assert list(statuses(fake_payments).values()) == [IntentStatus.REQUIRES_PAYMENT_METHOD]  # never given out
    assert [r.getMessage() for r in caplog.records] == ["checkout_intent_cancel_failed"]


def test_a_store_outage_at_the_transaction_keeps_the_intent_and_the_repeat_places_a_new_order(
    memory, paid_orders, fake_payments, monkeypatch, caplog
):
    hammer = product(memory, stock=5)
    write = memory.orders.place
    down = {"n": 1}

    def store_down_once(*args, **kwargs):
        if down["n"]:
            down["n"] -= 1
            raise errors.ServiceUnavailable("the store did not answer")
        return write(*args, **kwargs)

    monkeypatch.setattr(memory.orders, "place", store_down_once)
    with caplog.at_level(logging.WARNING, logger="shop.services.orders"), pytest.raises(errors.ServiceUnavailable):
        place_lines(paid_orders, {hammer: 1}, key="k-store")
    # The outcome is unknown to the service: the intent is not cancelled (it may be the order's), only logged.
    assert [r.getMessage() for r in caplog.records] == ["checkout_intent_left_unconfirmed"]
    order = place_lines(paid_orders, {hammer: 1}, key="k-store")
    orphan, held = (record.intent for record in fake_payments.intents.values())
    assert order.payment is not None
    assert (held.intent_id, held.order_id) == (order.payment.intent_id, order.order_id)
    assert orphan.order_id != order.order_id  # an intent whose client secret no one ever got
    assert (placed_orders(paid_orders), stock(memory, hammer)) == ([order.order_id], 4)


def test_a_transaction_the_store_cancelled_cancels_the_intent(memory, paid_orders, fake_payments, monkeypatch):
    """A colliding transaction or a throttled item: the store says nothing was written (WriteCancelled), so the
    intent is cancelled as for any refusal; the client's retry (503) places under a new order id."""
    hammer = product(memory, stock=5)
    write = memory.orders.place
    busy = {"n": 1}

    def cancelled_once(*args, **kwargs):
        if busy["n"]:
            busy["n"] -= 1
            raise errors.WriteCancelled("the store is busy with these items, retry later")
        return write(*args, **kwargs)

    monkeypatch.setattr(memory.orders, "place", cancelled_once)
    with pytest.raises(errors.WriteCancelled):
        place_lines(paid_orders, {hammer: 1}, key="k-busy")
    assert list(statuses(fake_payments).values()) == [IntentStatus.CANCELED]
    order = place_lines(paid_orders, {hammer: 1}, key="k-busy")
    assert list(statuses(fake_payments).values()) == [IntentStatus.CANCELED, IntentStatus.REQUIRES_PAYMENT_METHOD]
    assert order.payment is not None
    assert fake_payments.intents[order.payment.intent_id].intent.order_id == order.order_id


def test_a_total_of_zero_is_refused_before_the_provider_and_nothing_is_written(memory, paid_orders, fake_payments):
    """Found by the fuzz test on a payments=stripe stack: a free product ordered alone reached Stripe, which
    refuses an intent of 0 cents, and the client got an undocumented PAYMENT_REJECTED without a provider code."""
    sample = product(memory, name="Free sample", price_cents=0, stock=5)
    hammer = product(memory, price_cents=1500, stock=5)
    with pytest.raises(errors.NothingToPay) as raised:
        place_lines(paid_orders, {sample: 2})
    assert (raised.value.code, raised.value.details) == ("NOTHING_TO_PAY", {"product_ids": [sample]})
    session = memory.session_service()
    cart = session.create()
    session.set_quantity(cart.session_id, sample, 1)
    with pytest.raises(errors.NothingToPay):
        paid_orders.place(ALICE, address=ADDRESS, session_id=cart.session_id, idempotency_key="k-cart")
    assert fake_payments.calls == []
    assert (placed_orders(paid_orders), stock(memory, sample), memory.state.unpaid) == ([], 5, {})
    # a free product beside a paid one is an ordinary paid order
    order = place_lines(paid_orders, {sample: 1, hammer: 1}, key="k-both")
    assert (order.status, order.total_cents) == (OrderStatus.PENDING_PAYMENT, 1500)


def test_a_reprice_to_zero_cancels_the_intent_made_for_the_old_total(memory, paid_orders, fake_payments, monkeypatch):
    sample = product(memory, name="Sample", price_cents=300, stock=5)
    read = memory.products.get_many

    def read_then_make_it_free(product_ids, **options):
        found = read(product_ids, **options)
        current = memory.products.get(sample)
        if current.price_cents:
            memory.products.update(current, {"price_cents": 0}, current.updated_at + "x", current._listed_in)
        return found

    monkeypatch.setattr(memory.products, "get_many", read_then_make_it_free)
    with pytest.raises(errors.NothingToPay):
        place_lines(paid_orders, {sample: 1})
    assert list(statuses(fake_payments).values()) == [IntentStatus.CANCELED]
    assert (placed_orders(paid_orders), stock(memory, sample)) == ([], 5)


# What one customer may hold unpaid (PAYMENTS=stripe; docs/payments.md, "Hoarding"), on the memory store and the fake
# provider: the placement's transaction holds each PENDING_PAYMENT order on the customer's unpaid hold within
# MAX_UNPAID_ORDERS and MAX_UNPAID_UNITS, refusing beyond either (409 UNPAID_ORDER_LIMIT, nothing written, the intent
# cancelled); the stream processor releases an order once it leaves PENDING_PAYMENT, whichever way, and a replayed
# record releases nothing; a placement that meets the limit releases held orders whose release was lost.
#
# The release by the stream processor: test_order_events.py. The DynamoDB semantics (the transaction's condition, the
# release's, threads): tests/repository/test_unpaid_holds.py, tests/integration/test_unpaid_limit_concurrency.py,
# tests/stream/test_unpaid_release.py.


def place_one(paid_orders: Any, pid: str, quantity: int = 1, actor: Any = ALICE, key: str | None = None) -> Any:
    return paid_orders.place(actor, address=ADDRESS, lines=[RequestedLine(pid, quantity)], idempotency_key=key)


def hold(memory: MemoryStore, customer_id: str = ALICE.sub) -> tuple[list[str], int]:
    held = memory.state.unpaid.get(customer_id)
    return (sorted(held.order_ids), held.units) if held is not None else ([], 0)


def settle(memory: MemoryStore, order_id: str, status: OrderStatus) -> None:
    """The order moved out of PENDING_PAYMENT as a settling write moves it (the webhook, the window's step)."""
    order = memory.orders.get(order_id)
    memory.orders.change_status(order, status, updated_at=clock.iso_now())


def run_stream(memory: MemoryStore, memory_stream: MemoryStream) -> list[Any]:
    processor = order_events_service(memory, memory_stream)
    return [processor.handle(change) for change in memory_stream.read()]


@pytest.mark.usefixtures("unpaid_limits")
def test_a_customer_holds_at_most_max_unpaid_orders_and_the_refusal_writes_nothing(memory, paid_orders, fake_payments):
    hammer = product(memory, stock=30)
    placed = [place_one(paid_orders, hammer, key=f"k{i}").order_id for i in range(3)]
    assert hold(memory) == (sorted(placed), 3)
    intents = len(fake_payments.intents)

    with pytest.raises(errors.UnpaidOrderLimit) as refused:
        place_one(paid_orders, hammer, key="k-fourth")
    assert refused.value.code == "UNPAID_ORDER_LIMIT"
    assert refused.value.details == {
        "max_unpaid_orders": 3,
        "max_unpaid_units": 10,
        "order_units": 1,
        "unpaid_order_ids": sorted(placed),
        "unpaid_units": 3,
    }
    # Nothing written: no order, no stock taken, the hold as it was; the intent made for it cancelled.
    assert sorted(memory.state.orders) == sorted(placed)
    assert (stock(memory, hammer), hold(memory)) == (27, (sorted(placed), 3))
    (cancelled,) = [r.intent for r in fake_payments.intents.values() if r.intent.order_id not in placed]
    assert len(fake_payments.intents) == intents + 1
    assert cancelled.status is IntentStatus.CANCELED
    # Another customer is not held back by Alice's orders.
    assert place_one(paid_orders, hammer, actor=BOB).status is OrderStatus.PENDING_PAYMENT
    assert hold(memory, BOB.sub)[1] == 1


@pytest.mark.usefixtures("unpaid_limits")
def test_the_units_held_unpaid_stay_within_max_unpaid_units(memory, paid_orders, fake_payments):
    hammer = product(memory, stock=30)
    first = place_one(paid_orders, hammer, quantity=6)
    with pytest.raises(errors.UnpaidOrderLimit) as refused:
        place_one(paid_orders, hammer, quantity=5)  # 6 + 5 > 10
    assert (refused.value.details["unpaid_units"], refused.value.details["order_units"]) == (6, 5)
    second = place_one(paid_orders, hammer, quantity=4)  # 6 + 4 = 10: exactly the limit
    assert hold(memory) == (sorted([first.order_id, second.order_id]), 10)
    assert stock(memory, hammer) == 20


@pytest.mark.usefixtures("unpaid_limits")
def test_an_order_alone_over_the_units_limit_never_reaches_the_provider(memory, paid_orders, fake_payments):
    hammer = product(memory, stock=30)
    with pytest.raises(errors.UnpaidOrderLimit) as refused:
        place_one(paid_orders, hammer, quantity=11)
    assert refused.value.details == {"max_unpaid_orders": 3, "max_unpaid_units": 10, "order_units": 11}
    assert (fake_payments.calls, memory.state.orders, hold(memory)) == ([], {}, ([], 0))


@pytest.mark.usefixtures("unpaid_limits")
def test_a_placement_that_meets_the_limit_releases_held_orders_whose_release_was_lost(
    memory, paid_orders, fake_payments, memory_stream, monkeypatch
):
    hammer = product(memory, stock=30)
    placed = [place_one(paid_orders, hammer, quantity=1 + i).order_id for i in range(3)]
    run_stream(memory, memory_stream)
    settle(memory, placed[1], OrderStatus.CONFIRMED)  # paid; its record has not reached the processor (yet)
    reads: list[list[str]] = []
    held_unpaid = memory.orders.held_unpaid

    def counted(order_ids: list[str]) -> dict[str, tuple[OrderStatus, int]]:
        reads.append(sorted(order_ids))
        return held_unpaid(order_ids)

    monkeypatch.setattr(memory.orders, "held_unpaid", counted)

    fourth = place_one(paid_orders, hammer, quantity=1)
    assert fourth.status is OrderStatus.PENDING_PAYMENT
    assert reads == [sorted(placed)]  # one read of the held orders, only because the hold refused
    assert hold(memory) == (sorted([placed[0], placed[2], fourth.order_id]), 1 + 3 + 1)
    # The stream's own release comes late: the id is no longer held, nothing is taken twice.
    [late] = [outcome for outcome in run_stream(memory, memory_stream) if outcome.order_id == placed[1]]
    assert late.status == "CONFIRMED"
    assert hold(memory) == (sorted([placed[0], placed[2], fourth.order_id]), 5)
    # While every held order is unpaid the refusal stands, after that one read.
    with pytest.raises(errors.UnpaidOrderLimit):
        place_one(paid_orders, hammer)
    assert len(reads) == 2


@pytest.mark.usefixtures("unpaid_limits")
def test_a_held_order_archived_before_its_release_leaves_with_the_units_the_hold_counted(
    memory, paid_orders, fake_payments
):
    hammer = product(memory, stock=30)
    placed = [place_one(paid_orders, hammer, quantity=2 + i).order_id for i in range(3)]
    settle(memory, placed[0], OrderStatus.EXPIRED)
    memory.orders.expire(placed[0])  # archived: its order item (and its lines) left the table
    fourth = place_one(paid_orders, hammer, quantity=1)
    assert hold(memory) == (sorted([placed[1], placed[2], fourth.order_id]), 3 + 4 + 1)


@pytest.mark.usefixtures("unpaid_limits")
def test_a_placement_below_the_limit_reads_nothing_more(memory, paid_orders, fake_payments, monkeypatch):
    hammer = product(memory, stock=30)
    monkeypatch.setattr(memory.orders, "held_unpaid", lambda ids: pytest.fail("read on the success path"))
    place_one(paid_orders, hammer)
    place_one(paid_orders, hammer)


def test_payments_off_hold_nothing(memory, monkeypatch):
    monkeypatch.setenv("PAYMENTS", "none")
    monkeypatch.setenv("MAX_UNPAID_ORDERS", "1")
    config.payment_settings.cache_clear()
    try:
        hammer = product(memory, stock=30)
        service = memory.order_service()
        placed = [place_one(service, hammer).status for _ in range(5)]
    finally:
        config.payment_settings.cache_clear()
    assert placed == [OrderStatus.PENDING] * 5
    assert memory.state.unpaid == {}
