"""The memory store's customer carts keep the repository's contract: the same scenarios on memory, moto
and DynamoDB Local (conditions, errors, versions, expiry, merge markers, checkout claims)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from shop import clock, errors, ids
from shop.limits import MAX_CART_LINES
from shop.models import Customer, Order, OrderStatus, Product, StatusEntry
from shop.models.carts import CartClaim, CartOwner, NotMerged, NotMergedReason
from shop.models.orders import OrderLine
from shop.models.sessions import StoredLine
from shop.repository import (
    CustomerCartRepository,
    CustomerRepository,
    OrderRepository,
    ProductRepository,
    SessionRepository,
)
from shop.services.ports import CustomerCartStore
from tests.support.factories import ADDRESS
from tests.support.memory_store import MemoryStore

NOW = 2_000_000_000
LATER = NOW + 1000


@dataclass
class Stores:
    products: Any
    customers: Any
    orders: Any
    sessions: Any
    carts: CustomerCartStore


@pytest.fixture(params=["memory", "moto", pytest.param("local", marks=pytest.mark.integration)])
def cart_stores(request: pytest.FixtureRequest) -> Stores:
    if request.param == "memory":
        memory = MemoryStore()
        return Stores(memory.products, memory.customers, memory.orders, memory.sessions, memory.carts)
    table = request.getfixturevalue(f"{request.param}_store").table
    return Stores(
        ProductRepository(table),
        CustomerRepository(table),
        OrderRepository(table),
        SessionRepository(table),
        CustomerCartRepository(table),
    )


def customer(stores: Stores, customer_id: str = "alice") -> None:
    now = clock.iso_now()
    stores.customers.create(
        Customer(
            customer_id=customer_id,
            email=f"{customer_id}@example.com",
            name=customer_id,
            version=1,
            created_at=now,
            updated_at=now,
        )
    )


def product(stores: Stores, name: str = "Hammer") -> Product:
    now = clock.iso_now()
    return stores.products.create(
        Product(
            product_id=ids.new_id(),
            name=name,
            category="tools",
            price_cents=1000,
            stock=5,
            created_at=now,
            updated_at=now,
        ),
        ["tools"],
    )


def put(stores: Stores, pid: str, quantity: int, *, now: int = NOW, customer_id: str = "alice") -> Any:
    return stores.carts.set_line(
        customer_id,
        product_id=pid,
        name="n",
        unit_price_cents=1000,
        quantity=quantity,
        added_at=clock.iso_now(),
        now=now,
        expires_at=now + 100,
    )


def test_memory_store_implements_the_cart_port():
    wanted = {name for name in vars(CustomerCartStore) if not name.startswith("_")}
    assert wanted <= set(dir(MemoryStore().carts))


def test_lines_profile_cap_and_expiry(cart_stores):
    with pytest.raises(errors.CustomerNotFound):
        cart_stores.carts.get("alice", now=NOW)
    assert cart_stores.carts.get("alice", now=NOW, require_profile=False).cart_version == 0
    customer(cart_stores)
    with pytest.raises(errors.ProductNotFound):
        cart_stores.carts.product_for("alice", "ghost")
    ids_ = [product(cart_stores, f"p{i:02d}").product_id for i in range(MAX_CART_LINES + 1)]
    assert cart_stores.carts.product_for("alice", ids_[0]).product_id == ids_[0]
    for pid in ids_[:MAX_CART_LINES]:
        put(cart_stores, pid, 1)
    with pytest.raises(errors.CartFull):
        put(cart_stores, ids_[-1], 1)
    cart = cart_stores.carts.get("alice", now=NOW)
    assert [line.product_id for line in cart.lines] == ids_[:MAX_CART_LINES]
    assert cart.cart_version == MAX_CART_LINES
    expired = cart_stores.carts.get("alice", now=NOW + 100)
    assert (expired.lines, expired.expires_at, expired.cart_version) == ([], None, MAX_CART_LINES)
    assert put(cart_stores, ids_[0], 0, now=LATER).lines == [], "removing from an expired cart writes nothing"
    fresh = put(cart_stores, ids_[-1], 2, now=LATER)
    assert [(line.product_id, line.quantity) for line in fresh.lines] == [(ids_[-1], 2)]
    assert fresh.cart_version == MAX_CART_LINES + 1
    cart_stores.carts.empty("alice", updated_at=clock.iso_now())
    assert cart_stores.carts.get("alice", now=LATER).lines == []
    cart_stores.carts.empty("bob", updated_at=clock.iso_now())  # no cart: nothing to do


def test_merge_conditions(cart_stores):
    customer(cart_stores)
    pid = product(cart_stores).product_id
    session_id = ids.new_session_id()
    cart_stores.sessions.create(session_id, created_at=clock.iso_now(), expires_at=NOW + 500)
    cart_stores.sessions.set_line(
        session_id,
        product_id=pid,
        name="n",
        unit_price_cents=1000,
        quantity=3,
        added_at=clock.iso_now(),
        now=NOW,
        expires_at=NOW + 500,
    )
    view = cart_stores.carts.read_for_merge("alice", session_id, now=NOW)
    assert view.merged is None
    assert view.session is not None
    assert view.cart.cart_version == 0
    lines = [StoredLine(pid, "n", 1000, 3, clock.iso_now())]
    stale_session = CartClaim(CartOwner.session(session_id), view.session.cart_version - 1, NOW)
    with pytest.raises(errors.SessionNotFound):
        cart_stores.carts.merge(
            view.cart,
            lines,
            session=stale_session,
            not_merged=[],
            updated_at="t",
            expires_at=NOW + 100,
            marker_expires_at=NOW + 100,
        )
    put(cart_stores, pid, 1)  # the cart moves past the version read
    claim = CartClaim(CartOwner.session(session_id), view.session.cart_version, NOW)
    with pytest.raises(errors.CartChanged):
        cart_stores.carts.merge(
            view.cart,
            lines,
            session=claim,
            not_merged=[],
            updated_at="t",
            expires_at=NOW + 100,
            marker_expires_at=NOW + 100,
        )
    view = cart_stores.carts.read_for_merge("alice", session_id, now=NOW)
    left = [NotMerged(product_id=pid, quantity=1, reason=NotMergedReason.QUANTITY_LIMIT)]
    merged = cart_stores.carts.merge(
        view.cart,
        lines,
        session=claim,
        not_merged=left,
        updated_at="t",
        expires_at=NOW + 100,
        marker_expires_at=NOW + 100,
    )
    assert [(line.product_id, line.quantity) for line in merged.lines] == [(pid, 3)]
    assert merged.cart_version == 2
    again = cart_stores.carts.read_for_merge("alice", session_id, now=NOW)
    assert (again.session, again.merged) == (None, left)
    with pytest.raises(errors.CustomerNotFound):
        cart_stores.carts.read_for_merge("bob", session_id, now=NOW)
    customer(cart_stores, "bob")
    assert cart_stores.carts.read_for_merge("bob", session_id, now=NOW).merged is None


def test_checkout_claims_the_cart_version(cart_stores):
    customer(cart_stores)
    item = product(cart_stores)
    put(cart_stores, item.product_id, 2, now=clock.epoch(clock.now()))
    now = clock.epoch(clock.now())
    cart = cart_stores.carts.get("alice", now=now)

    def order() -> Order:
        at = clock.iso_now()
        line = OrderLine.priced(item.product_id, item.name, item.price_cents, 2)
        return Order(
            order_id=ids.new_id(),
            customer_id="alice",
            status=OrderStatus.PENDING,
            version=1,
            lines=[line],
            total_cents=line.line_total_cents,
            shipping_address=ADDRESS,
            created_at=at,
            updated_at=at,
            history=[StatusEntry(status=OrderStatus.PENDING, at=at)],
        )

    with pytest.raises(errors.CartChanged):
        cart_stores.orders.place(order(), cart=CartClaim(CartOwner.customer("alice"), cart.cart_version - 1, now))
    assert cart_stores.products.get(item.product_id).stock == 5, "nothing taken"
    cart_stores.orders.place(order(), cart=CartClaim(CartOwner.customer("alice"), cart.cart_version, now))
    assert cart_stores.carts.get("alice", now=now).lines == []
    assert cart_stores.products.get(item.product_id).stock == 3
