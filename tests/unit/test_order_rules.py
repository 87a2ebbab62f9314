"""Orders: the status machine and line merging as properties, then every rule of the order service on
the memory store (pricing, limits, stock, carts, idempotency, visibility, status changes, cancels)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop import errors
from shop.limits import MAX_ORDER_LINES, MAX_QUANTITY
from shop.models import ORDER_TRANSITIONS, OrderStatus, StatusDetails
from shop.services.orders import (
    CANCEL_ATTEMPTS,
    REPRICE_ATTEMPTS,
    RequestedLine,
    ShipmentIn,
    lines_over_the_limit,
    merge_lines,
)
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB


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
    assert ORDER_TRANSITIONS[OrderStatus.RETURN_REQUESTED] == {OrderStatus.RETURNED, OrderStatus.DELIVERED}
    assert ORDER_TRANSITIONS[OrderStatus.CANCELLED] == frozenset()
    assert ORDER_TRANSITIONS[OrderStatus.RETURNED] == frozenset()
    cancellable = {s for s in OrderStatus if OrderStatus.CANCELLED in ORDER_TRANSITIONS[s]}
    assert cancellable == {OrderStatus.PENDING, OrderStatus.PENDING_PAYMENT, OrderStatus.CONFIRMED}


def test_no_status_returns_to_itself_but_a_delivered_order_whose_return_was_rejected():
    for status in OrderStatus:
        if status in (OrderStatus.DELIVERED, OrderStatus.RETURN_REQUESTED):
            assert status in reachable(status)  # DELIVERED -> RETURN_REQUESTED -> DELIVERED (rejected)
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


@pytest.fixture
def orders(memory):
    return memory.order_service()


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
