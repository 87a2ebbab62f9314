"""The line rules every cart shares (shop.services.cart_lines), whoever owns it: an anonymous session's cart and a
signed-in customer's, on the memory store. A line is set at the catalogue's current name and price (a listed
product only), a removal reads no product, every change slides the expiry by the owner's TTL, and a cart reads at
current prices with the changed and the unavailable lines marked. What is the session's own: test_sessions.py; the
customer cart's (the merge, who may do what): test_carts.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from shop import clock, errors
from shop.models.products import CataloguePrice
from shop.models.sessions import CartLine, StoredLine
from shop.services.cart_lines import cart_subtotal, priced_lines
from tests.support.factories import ADMIN, ALICE
from tests.support.memory_store import MemoryStore

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TTL = 900


@dataclass
class Owner:
    """One owner's cart seen through its service: set a line, read the cart, and the stored cart's expiry."""

    set: Callable[[str, int], list[CartLine]]
    read: Callable[[], list[CartLine]]
    expires_at: Callable[[], str | None]


def session_owner(memory: MemoryStore) -> Owner:
    sessions = memory.session_service(ttl_seconds=TTL)
    session_id = sessions.create().session_id
    return Owner(
        set=lambda pid, quantity: sessions.set_quantity(session_id, pid, quantity).cart,
        read=lambda: sessions.get(session_id).cart,
        expires_at=lambda: sessions.get(session_id).expires_at,
    )


def customer_owner(memory: MemoryStore) -> Owner:
    memory.customer_service().create(ALICE, email="alice@example.com", name="Alice")
    carts = memory.cart_service(ttl_seconds=TTL)
    return Owner(
        set=lambda pid, quantity: carts.set_quantity(ALICE, ALICE.sub, pid, quantity).cart,
        read=lambda: carts.get(ALICE, ALICE.sub).cart,
        expires_at=lambda: carts.get(ALICE, ALICE.sub).expires_at,
    )


@pytest.fixture(params=[session_owner, customer_owner], ids=["session", "customer"])
def owner(request: pytest.FixtureRequest, memory: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> Owner:
    monkeypatch.setattr(clock, "now", lambda: NOW)
    made: Callable[[MemoryStore], Owner] = request.param
    return made(memory)


def product(memory: MemoryStore, name: str = "Hammer", price_cents: int = 1500) -> str:
    created = memory.catalog_service().create(
        ADMIN, name=name, category="tools", price_cents=price_cents, description=None, stock=5
    )
    return created.product_id


def test_a_line_is_set_at_the_catalogues_name_and_price_and_removed_with_zero(owner, memory):
    hammer = product(memory)
    [line] = owner.set(hammer, 2)
    assert (line.name, line.unit_price_cents, line.added_unit_price_cents, line.quantity) == ("Hammer", 1500, 1500, 2)
    assert owner.set(hammer, 0) == []
    assert owner.read() == []


def test_an_archived_product_is_refused_and_its_removal_reads_no_product(owner, memory, monkeypatch):
    hammer = product(memory)
    owner.set(hammer, 1)
    memory.catalog_service().archive(ADMIN, hammer)
    with pytest.raises(errors.ProductUnavailable):
        owner.set(hammer, 2)
    monkeypatch.setattr(memory.products, "get", lambda pid: pytest.fail("a removal read the product"))
    assert owner.set(hammer, 0) == []


def test_every_change_slides_the_expiry_by_the_owners_ttl(owner, memory, monkeypatch):
    hammer = product(memory)
    owner.set(hammer, 1)
    assert owner.expires_at() == clock.iso(NOW + timedelta(seconds=TTL))
    later = datetime(2026, 3, 1, 12, 10, tzinfo=UTC)
    monkeypatch.setattr(clock, "now", lambda: later)
    owner.set(hammer, 3)
    assert owner.expires_at() == clock.iso(later + timedelta(seconds=TTL))


def test_a_cart_reads_at_current_prices_marking_what_changed_or_is_gone(owner, memory):
    hammer, nails = product(memory), product(memory, name="Nails", price_cents=250)
    owner.set(hammer, 1)
    owner.set(nails, 4)
    memory.catalog_service().update(ADMIN, hammer, {"price_cents": 1200})
    memory.catalog_service().archive(ADMIN, nails)
    lines = {line.product_id: line for line in owner.read()}
    assert (lines[hammer].unit_price_cents, lines[hammer].added_unit_price_cents) == (1200, 1500)
    assert (lines[hammer].price_changed, lines[hammer].unavailable) == (True, False)
    assert (lines[nails].unit_price_cents, lines[nails].price_changed, lines[nails].unavailable) == (250, False, True)


def test_priced_lines_take_the_catalogues_name_and_price_and_the_subtotal_skips_what_is_gone():
    stored = [StoredLine("p1", "Old name", 1000, 2), StoredLine("p2", "Nails", 250, 4), StoredLine("p3", "Saw", 900, 1)]
    catalogue = {"p1": CataloguePrice("p1", "Hammer", 1200), "p2": CataloguePrice("p2", "Nails", 250)}
    lines = priced_lines(stored, catalogue)
    assert [(line.name, line.unit_price_cents, line.price_changed, line.unavailable) for line in lines] == [
        ("Hammer", 1200, True, False),
        ("Nails", 250, False, False),
        ("Saw", 900, False, True),  # not in the catalogue any more: its stored name and price, unavailable
    ]
    assert cart_subtotal(lines) == 2 * 1200 + 4 * 250
    assert cart_subtotal([]) == 0
