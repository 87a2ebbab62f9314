"""Customer carts on the memory store: the merge rule (sum, caps, what did not fit), repeats, expiry,
who may do what, and checkout that empties the cart only when the order is placed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shop import clock, errors
from shop.limits import MAX_CART_LINES, MAX_QUANTITY
from shop.models.carts import NotMergedReason
from shop.models.sessions import StoredLine
from shop.services.actor import Actor
from shop.services.carts import merge_lines
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB

DAY = 24 * 3600


def line(pid: str, quantity: int, price: int = 100, added_at: str = "") -> StoredLine:
    return StoredLine(pid, pid.title(), price, quantity, added_at)


@pytest.fixture
def carts(memory):
    memory.customer_service().create(ALICE, email="alice@example.com", name="Alice")
    return memory.cart_service()


def product(memory, *, name="Hammer", price_cents=1500, stock=5):
    catalog = memory.catalog_service()
    return catalog.create(
        ADMIN, name=name, category="tools", price_cents=price_cents, description=None, stock=stock
    ).product_id


def session_with(memory, *lines):
    sessions = memory.session_service()
    session_id = sessions.create().session_id
    for pid, quantity in lines:
        sessions.set_quantity(session_id, pid, quantity)
    return session_id


# -- the merge rule -------------------------------------------------------------------------------


def test_same_products_add_up_and_new_ones_follow_in_session_order():
    merged, not_merged = merge_lines([line("a", 1), line("b", 2)], [line("c", 3), line("a", 4)])
    assert [(m.product_id, m.quantity) for m in merged] == [("a", 5), ("b", 2), ("c", 3)]
    assert not_merged == []


def test_a_line_keeps_its_price_as_added_and_a_new_one_brings_the_sessions():
    merged, _ = merge_lines([line("a", 1, price=100)], [line("a", 1, price=200), line("b", 1, price=300)])
    assert [m.unit_price_cents for m in merged] == [100, 300]


def test_quantities_stop_at_the_line_cap_and_the_rest_is_reported():
    merged, not_merged = merge_lines([line("a", 90)], [line("a", 20)])
    assert merged[0].quantity == MAX_QUANTITY
    assert [(n.product_id, n.quantity, n.reason) for n in not_merged] == [("a", 11, NotMergedReason.QUANTITY_LIMIT)]


def test_a_line_already_at_the_cap_takes_nothing():
    merged, not_merged = merge_lines([line("a", MAX_QUANTITY)], [line("a", 5)])
    assert merged[0].quantity == MAX_QUANTITY
    assert [(n.quantity, n.reason) for n in not_merged] == [(5, NotMergedReason.QUANTITY_LIMIT)]


def test_new_products_stop_at_the_cart_cap_but_existing_lines_still_add_up():
    cart = [line(f"p{i:02d}", 1) for i in range(MAX_CART_LINES)]
    merged, not_merged = merge_lines(cart, [line("new", 2), line("p00", 3)])
    assert len(merged) == MAX_CART_LINES
    assert merged[0].quantity == 4
    assert [(n.product_id, n.quantity, n.reason) for n in not_merged] == [("new", 2, NotMergedReason.CART_FULL)]


# -- the service ----------------------------------------------------------------------------------


def test_merge_answers_what_did_not_fit_and_a_repeat_answers_the_same(memory, carts):
    pid = product(memory)
    carts.set_quantity(ALICE, "alice", pid, 95)
    session_id = session_with(memory, (pid, 10))
    first = carts.merge(ALICE, "alice", session_id)
    assert [entry.quantity for entry in first.cart] == [MAX_QUANTITY]
    assert [(n.quantity, n.reason) for n in first.not_merged] == [(6, NotMergedReason.QUANTITY_LIMIT)]
    assert session_id not in memory.state.sessions
    assert carts.merge(ALICE, "alice", session_id) == first
    assert memory.state.carts["alice"].version == 2, "the repeat wrote nothing"


def test_only_self_writes_self_or_admin_reads_and_a_profile_is_needed(memory, carts):
    pid = product(memory)
    for write in (
        lambda actor: carts.set_quantity(actor, "alice", pid, 1),
        lambda actor: carts.merge(actor, "alice", "s"),
        lambda actor: carts.delete(actor, "alice"),
    ):
        for other in (ADMIN, BOB):
            with pytest.raises(errors.Forbidden):
                write(other)
    with pytest.raises(errors.Forbidden):
        carts.get(BOB, "alice")
    assert carts.get(ADMIN, "alice").cart == []
    with pytest.raises(errors.CustomerNotFound):
        carts.get(ADMIN, "nobody")
    with pytest.raises(errors.CustomerNotFound):
        carts.set_quantity(Actor("nobody"), "nobody", pid, 1)


def test_an_archived_product_cannot_be_added(memory, carts):
    pid = product(memory)
    memory.catalog_service().archive(ADMIN, pid)
    with pytest.raises(errors.ProductUnavailable):
        carts.set_quantity(ALICE, "alice", pid, 1)


def test_a_cart_expires_30_days_after_its_last_change(memory, carts, monkeypatch):
    pid = product(memory)
    start = clock.now()
    carts.set_quantity(ALICE, "alice", pid, 1)
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(days=29))
    assert len(carts.set_quantity(ALICE, "alice", pid, 2).cart) == 1, "a change 29 days later slides it"
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(days=29 + 30, seconds=-5))
    assert len(carts.get(ALICE, "alice").cart) == 1
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(days=29 + 30, seconds=5))
    assert carts.get(ALICE, "alice").cart == []


def test_checkout_empties_the_cart_only_when_the_order_is_placed(memory, carts):
    orders = memory.order_service()
    pid = product(memory, stock=1)
    carts.set_quantity(ALICE, "alice", pid, 2)
    with pytest.raises(errors.OutOfStock):
        orders.place(ALICE, address=ADDRESS, customer_cart=True)
    assert len(carts.get(ALICE, "alice").cart) == 1
    carts.set_quantity(ALICE, "alice", pid, 1)
    order = orders.place(ALICE, address=ADDRESS, customer_cart=True)
    assert [(entry.product_id, entry.quantity) for entry in order.lines] == [(pid, 1)]
    assert carts.get(ALICE, "alice").cart == []
    with pytest.raises(errors.CartEmpty):
        orders.place(ALICE, address=ADDRESS, customer_cart=True)
