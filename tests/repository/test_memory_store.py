"""The memory store keeps the repositories' contract: the same scenarios on it, moto and DynamoDB Local.

tests/unit proves the rules on tests/support/memory_store.py; this proves that store answers as the
DynamoDB repositories do wherever a rule depends on the answer (conditions, errors, versions, stock).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from shop import clock, errors, ids
from shop.limits import MAX_CART_LINES, MAX_STOCK
from shop.models import Customer, Order, OrderStatus, Product, Review, StatusEntry
from shop.models.carts import CartClaim, CartOwner
from shop.models.orders import OrderLine, Placement, UnpaidLimits
from shop.models.stock import StockLayout, StockTake
from shop.repository import CustomerRepository, OrderRepository, ProductRepository, SessionRepository
from shop.services.ports import CategoryStore, CustomerStore, OrderStore, ProductPrices, ProductStore, SessionStore
from tests.support.factories import ADDRESS
from tests.support.memory_store import MemoryStore

NOW = 2_000_000_000


@dataclass
class Stores:
    products: Any  # ProductStore and ProductPrices
    customers: CustomerStore
    orders: OrderStore
    sessions: SessionStore


@pytest.fixture(params=["memory", "moto", pytest.param("local", marks=pytest.mark.integration)])
def checkout_stores(request: pytest.FixtureRequest) -> Stores:
    if request.param == "memory":
        memory = MemoryStore()
        return Stores(memory.products, memory.customers, memory.orders, memory.sessions)
    table = request.getfixturevalue(f"{request.param}_store").table
    return Stores(ProductRepository(table), CustomerRepository(table), OrderRepository(table), SessionRepository(table))


def new_product(stores: Stores, *, price_cents: int = 1000, stock: int = 5, name: str = "Hammer") -> Product:
    now = clock.iso_now()
    product = Product(
        product_id=ids.new_id(),
        name=name,
        category="tools",
        price_cents=price_cents,
        stock=stock,
        created_at=now,
        updated_at=now,
    )
    return stores.products.create(product, ["tools"])


def new_order(customer_id: str, *lines: tuple[Product, int]) -> Order:
    now = clock.iso_now()
    priced = [OrderLine.priced(p.product_id, p.name, p.price_cents, qty) for p, qty in lines]
    return Order(
        order_id=ids.new_id(),
        customer_id=customer_id,
        status=OrderStatus.PENDING,
        version=1,
        lines=priced,
        total_cents=sum(line.line_total_cents for line in priced),
        shipping_address=ADDRESS,
        created_at=now,
        updated_at=now,
        history=[StatusEntry(status=OrderStatus.PENDING, at=now)],
    )


def test_both_stores_implement_the_ports():
    memory = MemoryStore()
    ports: list[tuple[Any, type]] = [
        (memory.products, ProductStore),
        (memory.products, ProductPrices),
        (memory.customers, CustomerStore),
        (memory.orders, OrderStore),
        (memory.sessions, SessionStore),
        (memory.categories, CategoryStore),
    ]
    for implementation, port in ports:
        wanted = {name for cls in port.__mro__ if cls is not object for name in vars(cls) if not name.startswith("_")}
        assert wanted <= set(dir(implementation)), (port, wanted - set(dir(implementation)))


def test_products_conditions_and_stock_bounds(checkout_stores):
    products = checkout_stores.products
    product = new_product(checkout_stores, stock=5)
    assert products.create(product, ["tools"]).name == product.name  # the same create again: its answer was lost
    with pytest.raises(errors.ProductExists):
        products.create(product.model_copy(update={"created_at": "2026-01-01T00:00:00Z"}), ["tools"])
    with pytest.raises(errors.ProductNotFound):
        products.get("ghost")
    updated = products.update(
        product, {"price_cents": 1200, "description": "steel"}, clock.iso_now(), product._listed_in
    )
    assert (updated.price_cents, updated.description, updated.stock) == (1200, "steel", 5)
    assert products.update(updated, {"description": None}, clock.iso_now(), updated._listed_in).description is None
    with pytest.raises(errors.Conflict):
        products.update(product, {"name": "stale"}, clock.iso_now(), product._listed_in)
    assert products.adjust_stock(product.product_id, -5) == 0
    with pytest.raises(errors.InsufficientStock):
        products.adjust_stock(product.product_id, -1)
    assert products.adjust_stock(product.product_id, MAX_STOCK) == MAX_STOCK
    with pytest.raises(errors.StockLimitExceeded):
        products.adjust_stock(product.product_id, 1)
    with pytest.raises(errors.ProductNotFound):
        products.adjust_stock("ghost", 1)
    assert products.get_many([product.product_id, "ghost"]).keys() == {product.product_id}
    (price,) = products.current_prices([product.product_id, "ghost"]).values()
    assert (price.product_id, price.price_cents) == (product.product_id, 1200)


def test_reviews_one_per_customer_best_first(checkout_stores):
    products = checkout_stores.products
    pid = new_product(checkout_stores).product_id

    def review(customer: str, rating: int) -> Review:
        return Review(
            product_id=pid, customer_id=customer, rating=rating, title="t", body="b", created_at=clock.iso_now()
        )

    products.add_review(review("alice", 3))
    products.add_review(review("bob", 5))
    with pytest.raises(errors.AlreadyReviewed):
        products.add_review(review("alice", 1))
    with pytest.raises(errors.ProductNotFound):
        products.add_review(review("alice", 1).model_copy(update={"product_id": "ghost"}))
    listed = products.reviews_of_product(pid, limit=10, next_token=None).items
    assert [r.customer_id for r in listed] == ["bob", "alice"]
    assert (products.get(pid).rating_count, products.get(pid).rating_average) == (2, 4.0)
    with pytest.raises(errors.ProductNotFound):
        products.reviews_of_product("ghost", limit=10, next_token=None)


def test_customers_unique_ids_and_emails_and_versions(checkout_stores):
    customers = checkout_stores.customers
    now = clock.iso_now()
    alice = Customer(
        customer_id="alice", email="alice@example.com", name="A", version=1, created_at=now, updated_at=now
    )
    customers.create(alice)
    with pytest.raises(errors.CustomerExists):
        customers.create(alice.model_copy(update={"email": "other@example.com"}))
    with pytest.raises(errors.EmailTaken):
        customers.create(alice.model_copy(update={"customer_id": "bob", "email": "ALICE@example.com"}))
    moved = customers.update(alice, name=None, email="new@example.com", updated_at=clock.iso_now())
    assert (moved.version, moved.email, moved.name) == (2, "new@example.com", "A")
    assert customers.get("alice") == moved
    assert customers.find_by_email("New@Example.com").customer_id == "alice"
    with pytest.raises(errors.VersionMismatch):
        customers.update(alice, name="stale", email=None, updated_at=clock.iso_now())
    with pytest.raises(errors.CustomerNotFound):
        customers.find_by_email("alice@example.com")
    customers.create(alice.model_copy(update={"customer_id": "bob"}))  # the old email is free
    with pytest.raises(errors.EmailTaken):
        customers.update(moved, name=None, email="alice@example.com", updated_at=clock.iso_now())


def test_placement_is_all_or_nothing_with_the_reasons_in_order(checkout_stores):
    hammer, nails = new_product(checkout_stores, stock=1), new_product(checkout_stores, stock=10, name="Nails")
    repriced = hammer.model_copy(update={"price_cents": 999})
    with pytest.raises(errors.ProductNotFound):
        checkout_stores.orders.place(
            new_order("alice", (hammer, 5), (hammer.model_copy(update={"product_id": "ghost"}), 1))
        )
    with pytest.raises(errors.OutOfStock) as short:
        checkout_stores.orders.place(new_order("alice", (repriced, 2), (nails, 1)))
    assert short.value.product_ids == [hammer.product_id]
    with pytest.raises(errors.PriceChanged):
        checkout_stores.orders.place(new_order("alice", (repriced, 1), (nails, 1)))
    assert checkout_stores.products.get(nails.product_id).stock == 10
    order = checkout_stores.orders.place(new_order("alice", (hammer, 1), (nails, 2)))
    assert (
        checkout_stores.products.get(hammer.product_id).stock,
        checkout_stores.products.get(nails.product_id).stock,
    ) == (0, 8)
    assert checkout_stores.orders.get(order.order_id).lines == order.lines
    assert [s.order_id for s in checkout_stores.orders.list_for_customer("alice", limit=5, next_token=None).items] == [
        order.order_id
    ]


def test_placement_claims_the_cart_and_the_idempotency_key(checkout_stores):
    hammer = new_product(checkout_stores, stock=10)
    checkout_stores.sessions.create("s1", created_at=clock.iso_now(), expires_at=NOW + 600)
    cart = checkout_stores.sessions.set_line(
        "s1",
        product_id=hammer.product_id,
        name="Hammer",
        unit_price_cents=1000,
        quantity=2,
        added_at="a",
        now=NOW,
        expires_at=NOW + 600,
    )
    stale = CartClaim(CartOwner.session("s1"), cart.cart_version - 1, NOW)
    with pytest.raises(errors.SessionNotFound):
        checkout_stores.orders.place(new_order("alice", (hammer, 2)), stale)
    claim = CartClaim(CartOwner.session("s1"), cart.cart_version, NOW)
    placement = Placement("key-1", NOW + 3600)
    first = checkout_stores.orders.place(new_order("alice", (hammer, 2)), claim, placement=placement)
    assert checkout_stores.sessions.get("s1", now=NOW).lines == []
    again = checkout_stores.orders.place(new_order("alice", (hammer, 2)), None, placement=placement)
    assert again.order_id == first.order_id
    assert checkout_stores.products.get(hammer.product_id).stock == 8


def test_the_unpaid_hold_takes_within_its_limits_refuses_with_what_it_held_and_releases_once(checkout_stores):
    hammer = new_product(checkout_stores, stock=20)

    def unpaid(quantity: int) -> Order:
        order = new_order("alice", (hammer, quantity))
        return order.model_copy(update={"status": OrderStatus.PENDING_PAYMENT, "payment_expires_at": NOW + 1800})

    limits = UnpaidLimits(orders=2, units=5)
    first = checkout_stores.orders.place(unpaid(2), unpaid=limits)
    with pytest.raises(errors.UnpaidOrderLimit) as refused:
        checkout_stores.orders.place(unpaid(4), unpaid=limits)  # 2 + 4 units > 5
    assert refused.value.details["unpaid_order_ids"] == [first.order_id]
    assert refused.value.details["unpaid_units"] == 2
    second = checkout_stores.orders.place(unpaid(3), unpaid=limits)
    with pytest.raises(errors.UnpaidOrderLimit):
        checkout_stores.orders.place(unpaid(1), unpaid=UnpaidLimits(orders=2, units=100))  # two held already
    assert checkout_stores.products.get(hammer.product_id).stock == 15
    assert checkout_stores.orders.held_unpaid([first.order_id, second.order_id, "ghost"]) == {
        first.order_id: (OrderStatus.PENDING_PAYMENT, 2),
        second.order_id: (OrderStatus.PENDING_PAYMENT, 3),
    }
    assert checkout_stores.orders.release_unpaid("alice", [first.order_id], 2) is True
    assert checkout_stores.orders.release_unpaid("alice", [first.order_id], 2) is False  # a replay
    # all or nothing
    assert checkout_stores.orders.release_unpaid("alice", [first.order_id, second.order_id], 5) is False
    third = checkout_stores.orders.place(unpaid(2), unpaid=limits)  # 3 + 2 = 5 units, two orders
    assert checkout_stores.orders.release_unpaid("alice", [second.order_id, third.order_id], 5) is True
    assert checkout_stores.orders.release_unpaid("bob", [third.order_id], 2) is False  # nothing held, nothing written


def test_status_changes_are_conditional_answered_when_done_and_restock_what_they_are_given(checkout_stores):
    hammer = new_product(checkout_stores, stock=5)
    order = checkout_stores.orders.place(new_order("alice", (hammer, 2)))
    confirmed = checkout_stores.orders.change_status(order, OrderStatus.CONFIRMED, updated_at=clock.iso_now())
    assert (confirmed.status, confirmed.version) == (OrderStatus.CONFIRMED, 2)
    replayed = checkout_stores.orders.change_status(order, OrderStatus.CONFIRMED, updated_at=clock.iso_now())
    assert (replayed.version, replayed.updated_at) == (2, confirmed.updated_at)
    with pytest.raises(errors.VersionMismatch) as mismatch:
        checkout_stores.orders.change_status(
            order, OrderStatus.CANCELLED, updated_at=clock.iso_now(), restock=order.lines
        )
    assert mismatch.value.details == {"current_version": 2}
    assert checkout_stores.products.get(hammer.product_id).stock == 3
    cancelled = checkout_stores.orders.change_status(
        confirmed, OrderStatus.CANCELLED, updated_at=clock.iso_now(), restock=order.lines
    )
    assert (cancelled.status, cancelled.version) == (OrderStatus.CANCELLED, 3)
    assert checkout_stores.products.get(hammer.product_id).stock == 5
    assert checkout_stores.orders.get(order.order_id).status is OrderStatus.CANCELLED
    with pytest.raises(errors.OrderNotFound):
        checkout_stores.orders.change_status(
            order.model_copy(update={"order_id": "ghost"}), OrderStatus.CONFIRMED, updated_at=clock.iso_now()
        )
    assert [
        s.order_id for s in checkout_stores.orders.list_by_status(OrderStatus.CANCELLED, limit=5, next_token=None).items
    ] == [order.order_id]


def test_sessions_expire_keep_their_line_order_and_hold_a_limited_cart(checkout_stores):
    sessions = checkout_stores.sessions
    ticks = itertools.count()

    def put(pid: str, quantity: int, now: int = NOW):
        added_at = f"t{next(ticks):03d}"
        return sessions.set_line(
            "s1",
            product_id=pid,
            name=pid,
            unit_price_cents=100,
            quantity=quantity,
            added_at=added_at,
            now=now,
            expires_at=now + 600,
        )

    sessions.create("s1", created_at=clock.iso_now(), expires_at=NOW + 600)
    first = put("p01", 1)
    put("p00", 1)
    changed = put("p01", 3)
    assert [(line.product_id, line.quantity) for line in changed.lines] == [("p01", 3), ("p00", 1)]
    assert changed.cart_version > first.cart_version
    for n in range(2, MAX_CART_LINES):
        put(f"p{n:02d}", 1)
    with pytest.raises(errors.CartFull):
        put("p99", 1)
    assert len(put("p00", 0).lines) == MAX_CART_LINES - 1
    with pytest.raises(errors.SessionNotFound):
        sessions.get("s1", now=NOW + 601)
    with pytest.raises(errors.SessionNotFound):
        put("p00", 1, now=NOW + 601)
    sessions.delete("s1")
    with pytest.raises(errors.SessionNotFound):
        sessions.get("s1", now=NOW)


def test_stock_shards_spread_take_fall_short_and_restock(checkout_stores):
    products, orders = checkout_stores.products, checkout_stores.orders
    product = new_product(checkout_stores, stock=7)
    pid = product.product_id
    spread = products.spread_stock(products.stock_layout(pid), 3)
    assert spread == StockLayout(pid, 0, (3, 2, 2), 1000)
    assert products.spread_stock(products.stock_layout(pid), 3) == spread  # a repeat changes nothing
    with pytest.raises(errors.Conflict):
        products.spread_stock(StockLayout(pid, 0, (3, 2, 1), 1000), 2)  # not what is there
    assert (products.get(pid).stock, products.get(pid).stock_shards) == (7, 3)
    assert products.get_many([pid])[pid].stock == 0  # the product item's own

    order = orders.place(new_order("alice", (product, 3)), takes={pid: [StockTake(0, 2), StockTake(2, 1)]})
    assert order.stock_taken == {pid: {"00": 2, "02": 1}}
    with pytest.raises(errors.StockSourceShort) as short:
        orders.place(new_order("bob", (product, 2)), takes={pid: [StockTake(0, 2)]})
    assert short.value.seen == {pid: {0: 1}}
    with pytest.raises(errors.StockSourceShort) as short:
        orders.place(new_order("bob", (product, 1)))  # the product item of a sharded product
    assert (short.value.seen, short.value.shards) == ({pid: {None: 0}}, {pid: 3})
    assert products.stock_layout(pid).shards == (1, 2, 1)

    placed = orders.get(order.order_id)
    assert placed.stock_taken == order.stock_taken
    orders.change_status(placed, OrderStatus.CANCELLED, updated_at=clock.iso_now(), restock=placed.lines)
    assert products.stock_layout(pid).shards == (3, 2, 2)
    assert products.spread_stock(products.stock_layout(pid), 1) == StockLayout(pid, 7, (), 1000)
