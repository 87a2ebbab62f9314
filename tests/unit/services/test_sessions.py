"""Anonymous sessions on the memory store: expiry that slides, the cart's limit and order, current prices."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shop import clock, errors
from shop.limits import MAX_CART_LINES
from shop.models.carts import StoredCart
from shop.models.products import CataloguePrice
from shop.models.sessions import StoredLine
from shop.services.sessions import priced_session
from tests.support.factories import ADMIN

TTL = 600


@pytest.fixture
def sessions(memory):
    return memory.session_service(ttl_seconds=TTL)


@pytest.fixture
def later(monkeypatch):
    """Move the clock the services read forward by some seconds."""
    start = clock.now()

    def move_to(seconds: int) -> None:
        monkeypatch.setattr(clock, "now", lambda: start + timedelta(seconds=seconds))

    move_to(0)
    return move_to


def product(memory, *, name="Hammer", price_cents=1500):
    catalog = memory.catalog_service()
    return catalog.create(ADMIN, name=name, category="tools", price_cents=price_cents, description=None, stock=5)


def test_a_new_session_has_an_empty_cart_and_expires_after_the_ttl(sessions, later):
    session = sessions.create()
    assert (session.cart, session.subtotal_cents) == ([], 0)
    assert session.expires_at == clock.iso_from_epoch(clock.epoch(clock.now()) + TTL)
    assert len(session.session_id) >= 32
    assert sessions.get(session.session_id) == session


def test_a_session_is_gone_once_expired_and_every_cart_change_slides_the_expiry(memory, sessions, later):
    pid = product(memory).product_id
    session = sessions.create()
    later(TTL - 1)
    changed = sessions.set_quantity(session.session_id, pid, 1)
    assert changed.expires_at > session.expires_at
    later(TTL + 1)  # past the first expiry, not the slid one
    assert sessions.get(session.session_id).cart[0].quantity == 1
    later(2 * TTL)
    with pytest.raises(errors.SessionNotFound):
        sessions.get(session.session_id)
    with pytest.raises(errors.SessionNotFound):
        sessions.set_quantity(session.session_id, pid, 2)
    with pytest.raises(errors.SessionNotFound):
        sessions.get("missing")


def test_a_line_is_set_at_the_catalogue_price_changed_in_place_and_removed_with_zero(memory, sessions):
    hammer, nails = product(memory), product(memory, name="Nails", price_cents=250)
    session = sessions.create().session_id
    sessions.set_quantity(session, hammer.product_id, 1)
    sessions.set_quantity(session, nails.product_id, 4)
    cart = sessions.set_quantity(session, hammer.product_id, 3).cart
    assert [(line.product_id, line.name, line.unit_price_cents, line.quantity) for line in cart] == [
        (hammer.product_id, "Hammer", 1500, 3),
        (nails.product_id, "Nails", 250, 4),
    ]
    after = sessions.set_quantity(session, hammer.product_id, 0)
    assert [line.product_id for line in after.cart] == [nails.product_id]
    assert after.subtotal_cents == 1000


def test_a_line_of_an_unknown_product_is_refused_but_removing_one_needs_no_product(sessions):
    session = sessions.create().session_id
    with pytest.raises(errors.ProductNotFound):
        sessions.set_quantity(session, "ghost", 1)
    assert sessions.set_quantity(session, "ghost", 0).cart == []


def test_a_cart_holds_at_most_its_limit_of_products(memory, sessions):
    session = sessions.create().session_id
    pids = [product(memory, name=f"p{n}").product_id for n in range(MAX_CART_LINES + 1)]
    for pid in pids[:MAX_CART_LINES]:
        sessions.set_quantity(session, pid, 1)
    with pytest.raises(errors.CartFull):
        sessions.set_quantity(session, pids[-1], 1)
    full = sessions.set_quantity(session, pids[0], 2)  # a line already there can still change
    assert len(full.cart) == MAX_CART_LINES
    sessions.set_quantity(session, pids[1], 0)
    assert len(sessions.set_quantity(session, pids[-1], 1).cart) == MAX_CART_LINES


def test_a_cart_shows_current_prices_and_marks_what_changed_or_is_gone(memory, sessions):
    hammer, nails = product(memory), product(memory, name="Nails", price_cents=250)
    session = sessions.create().session_id
    sessions.set_quantity(session, hammer.product_id, 2)
    sessions.set_quantity(session, nails.product_id, 4)
    memory.catalog_service().update(ADMIN, hammer.product_id, {"price_cents": 1800, "name": "Claw hammer"})
    del memory.state.products[nails.product_id]  # no route deletes a product yet; archival will
    cart = sessions.get(session)
    first, second = cart.cart
    assert (first.name, first.unit_price_cents, first.added_unit_price_cents) == ("Claw hammer", 1800, 1500)
    assert (first.price_changed, first.unavailable) == (True, False)
    assert (second.unit_price_cents, second.price_changed, second.unavailable) == (250, False, True)
    assert cart.subtotal_cents == 2 * 1800


def test_pricing_a_stored_session_uses_the_catalogue_when_it_has_the_product():
    stored = StoredCart("s", [StoredLine("a", "A", 100, 2), StoredLine("b", "B", 300, 1)], "2026-01-01", 3)
    session = priced_session(stored, {"a": CataloguePrice("a", "A+", 120)})
    assert [(line.name, line.unit_price_cents, line.price_changed, line.unavailable) for line in session.cart] == [
        ("A+", 120, True, False),
        ("B", 300, False, True),
    ]
    assert session.subtotal_cents == 240


def test_a_deleted_session_is_gone(sessions):
    session = sessions.create().session_id
    sessions.delete(session)
    with pytest.raises(errors.SessionNotFound):
        sessions.get(session)
    sessions.delete(session)  # deleting again is fine
