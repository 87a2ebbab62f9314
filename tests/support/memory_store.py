"""The services' ports (shop.services.ports) in memory: the fast lane's stand-in for the table.

It keeps the semantics the rules rely on, as the DynamoDB repositories do: conditional writes that
fail with the same domain errors, versions, stock that never goes negative nor past MAX_STOCK,
all-or-nothing placement and status changes, session expiry, the cart's line limit and order.
Pages are simplified: the next token is the position of the next item. tests/repository/
test_memory_store.py runs the same scenarios on this and on the repositories (moto, DynamoDB Local).

    store = MemoryStore()
    orders = OrderService(orders=store.orders, products=store.products, sessions=store.sessions)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from shop import clock, errors, keys
from shop.limits import MAX_CART_LINES, MAX_STOCK
from shop.models import Customer, Notification, Order, OrderLine, OrderStatus, OrderSummary, Page, Product, Review
from shop.models.orders import Placement, SessionClaim, StatusEntry
from shop.models.products import CataloguePrice
from shop.models.sessions import StoredLine, StoredSession
from shop.services.catalog import CatalogService
from shop.services.customers import CustomerService
from shop.services.orders import OrderService
from shop.services.sessions import SessionService

T = TypeVar("T")


def page_of(items: list[T], *, limit: int, next_token: str | None) -> Page[T]:
    """`limit` items from the position `next_token` names; the token of the next page if there is one."""
    start = 0
    if next_token:
        if not next_token.isdigit() or int(next_token) > len(items):
            raise errors.InvalidNextToken("next_token is not a token this list issued")
        start = int(next_token)
    end = start + limit
    return Page[T](items=items[start:end], next_token=str(end) if end < len(items) else None)


@dataclass
class _StoredProduct:
    product: Product
    rating_sum: int = 0


@dataclass
class _Cart:
    session_id: str
    expires_at: int
    lines: dict[str, StoredLine] = field(default_factory=dict)
    added: dict[str, str] = field(default_factory=dict)
    version: int = 0

    def stored(self) -> StoredSession:
        ordered = sorted(self.lines.values(), key=lambda line: (self.added[line.product_id], line.product_id))
        return StoredSession(self.session_id, ordered, clock.iso_from_epoch(self.expires_at), self.version)


@dataclass
class MemoryState:
    """Every entity, as the table would hold it."""

    products: dict[str, _StoredProduct] = field(default_factory=dict)
    reviews: dict[tuple[str, str], Review] = field(default_factory=dict)  # (product, customer)
    customers: dict[str, Customer] = field(default_factory=dict)
    emails: dict[str, str] = field(default_factory=dict)  # normalised email -> customer id
    notifications: dict[str, list[Notification]] = field(default_factory=dict)
    orders: dict[str, Order] = field(default_factory=dict)
    placements: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)  # -> (order id, expiry)
    sessions: dict[str, _Cart] = field(default_factory=dict)
    order_ttls: dict[str, int] = field(default_factory=dict)  # order id -> expires_at (epoch s), when set
    archive: dict[str, Order] = field(default_factory=dict)  # archive key -> the archived order
    archived: dict[str, tuple[str, str]] = field(default_factory=dict)  # order id -> (customer id, archive key)


class MemoryProducts:
    """ProductStore and ProductPrices."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def _stored(self, product_id: str) -> _StoredProduct:
        stored = self.state.products.get(product_id)
        if stored is None:
            raise errors.ProductNotFound([product_id])
        return stored

    def _rated(self, stored: _StoredProduct) -> Product:
        count = stored.product.rating_count
        return stored.product.model_copy(
            update={"rating_average": round(stored.rating_sum / count, 2) if count else None}
        )

    def create(self, product: Product) -> Product:
        if product.product_id in self.state.products:
            raise errors.ProductExists(f"product {product.product_id} exists")
        self.state.products[product.product_id] = _StoredProduct(product)
        return product

    def get(self, product_id: str) -> Product:
        return self._rated(self._stored(product_id))

    def get_many(self, product_ids: list[str]) -> dict[str, Product]:
        return {pid: self.get(pid) for pid in dict.fromkeys(product_ids) if pid in self.state.products}

    def current_prices(self, product_ids: list[str]) -> dict[str, CataloguePrice]:
        return {
            pid: CataloguePrice(pid, product.name, product.price_cents)
            for pid, product in self.get_many(product_ids).items()
        }

    def list_by_category(self, category: str, *, limit: int, next_token: str | None) -> Page[Product]:
        listed = sorted(
            (self._rated(s) for s in self.state.products.values() if s.product.category == category),
            key=lambda p: (keys.name_sort_key(p.name), p.product_id),
        )
        return page_of(listed, limit=limit, next_token=next_token)

    def update(self, current: Product, changes: dict[str, Any], updated_at: str) -> Product:
        stored = self.state.products.get(current.product_id)
        if stored is None or stored.product.updated_at != current.updated_at:
            raise errors.Conflict("the product changed meanwhile, retry")
        stored.product = stored.product.model_copy(update={**changes, "updated_at": updated_at})
        return self._rated(stored)

    def adjust_stock(self, product_id: str, delta: int) -> int:
        stored = self._stored(product_id)
        stock = stored.product.stock
        if stock + delta < 0:
            raise errors.InsufficientStock("stock cannot go below zero", {"stock": stock})
        if stock + delta > MAX_STOCK:
            raise errors.StockLimitExceeded(
                f"stock cannot go above {MAX_STOCK}", {"delta": f"stock is {stock}, at most {MAX_STOCK} allowed"}
            )
        self._set_stock(stored, stock + delta)
        return stock + delta

    @staticmethod
    def _set_stock(stored: _StoredProduct, stock: int) -> None:
        stored.product = stored.product.model_copy(update={"stock": stock})

    def add_review(self, review: Review) -> Review:
        stored = self._stored(review.product_id)
        if (review.product_id, review.customer_id) in self.state.reviews:
            raise errors.AlreadyReviewed("you have already reviewed this product")
        self.state.reviews[(review.product_id, review.customer_id)] = review
        stored.product = stored.product.model_copy(update={"rating_count": stored.product.rating_count + 1})
        stored.rating_sum += review.rating
        return review

    def reviews_of_product(self, product_id: str, *, limit: int, next_token: str | None) -> Page[Review]:
        if not next_token:
            self._stored(product_id)
        listed = sorted(
            (r for r in self.state.reviews.values() if r.product_id == product_id),
            key=lambda r: (r.rating, r.created_at, r.customer_id),
            reverse=True,
        )
        return page_of(listed, limit=limit, next_token=next_token)

    def reviews_of_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Review]:
        listed = sorted(
            (r for r in self.state.reviews.values() if r.customer_id == customer_id),
            key=lambda r: (r.created_at, r.product_id),
            reverse=True,
        )
        return page_of(listed, limit=limit, next_token=next_token)


class MemoryCustomers:
    """CustomerStore."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def create(self, customer: Customer) -> Customer:
        if customer.customer_id in self.state.customers:
            raise errors.CustomerExists("this customer already has a profile")
        email = keys.normalise_email(customer.email)
        if email in self.state.emails:
            raise errors.EmailTaken("this email belongs to another customer")
        self.state.customers[customer.customer_id] = customer
        self.state.emails[email] = customer.customer_id
        return customer

    def get(self, customer_id: str) -> Customer:
        customer = self.state.customers.get(customer_id)
        if customer is None:
            raise errors.CustomerNotFound("customer not found")
        return customer

    def find_by_email(self, email: str) -> Customer:
        customer_id = self.state.emails.get(keys.normalise_email(email))
        if customer_id is None:
            raise errors.CustomerNotFound("no customer has this email")
        return self.state.customers[customer_id]

    def update(self, current: Customer, *, name: str | None, email: str | None, updated_at: str) -> Customer:
        stored = self.state.customers.get(current.customer_id)
        if stored is None or stored.version != current.version:
            raise errors.VersionMismatch("the profile changed since it was read")
        changes: dict[str, Any] = {"updated_at": updated_at, "version": current.version + 1}
        if name is not None:
            changes["name"] = name
        if email is not None:
            changes["email"] = email
            old, new = keys.normalise_email(current.email), keys.normalise_email(email)
            if new != old:
                if new in self.state.emails:
                    raise errors.EmailTaken("this email belongs to another customer")
                del self.state.emails[old]
                self.state.emails[new] = current.customer_id
        self.state.customers[current.customer_id] = stored.model_copy(update=changes)
        return current.model_copy(update=changes)

    def notifications(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Notification]:
        listed = sorted(
            self.state.notifications.get(customer_id, []),
            key=lambda n: (n.created_at, n.notification_id),
            reverse=True,
        )
        return page_of(listed, limit=limit, next_token=next_token)

    def notify(self, customer_id: str, notification: Notification) -> None:
        """What the stream processor writes (not a port: the services only read notifications)."""
        self.state.notifications.setdefault(customer_id, []).append(notification)


class MemoryOrders:
    """OrderStore, taking stock from and returning it to MemoryProducts' state, emptying MemorySessions' carts."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def place(self, order: Order, session: SessionClaim | None = None, *, placement: Placement | None = None) -> Order:
        if placement is not None:
            claimed = self.state.placements.get((order.customer_id, placement.key))
            if claimed is not None:
                return self.get(claimed[0])
        if order.order_id in self.state.orders:
            raise errors.Conflict("the data changed meanwhile, retry")
        products = self.state.products
        missing = [line.product_id for line in order.lines if line.product_id not in products]
        if missing:
            raise errors.ProductNotFound(missing)
        short = [line.product_id for line in order.lines if products[line.product_id].product.stock < line.quantity]
        if short:
            raise errors.OutOfStock(short)
        repriced = [
            line.product_id
            for line in order.lines
            if products[line.product_id].product.price_cents != line.unit_price_cents
        ]
        if repriced:
            raise errors.PriceChanged(repriced)
        cart = self.state.sessions.get(session.session_id) if session is not None else None
        if session is not None and (
            cart is None or cart.version != session.cart_version or cart.expires_at <= session.now
        ):
            raise errors.SessionNotFound("the session expired or its cart changed during checkout")
        for line in order.lines:
            stored = products[line.product_id]
            MemoryProducts._set_stock(stored, stored.product.stock - line.quantity)
        if cart is not None:
            cart.lines.clear()
            cart.added.clear()
            cart.version += 1
        if placement is not None:
            self.state.placements[(order.customer_id, placement.key)] = (order.order_id, placement.expires_at)
        self.state.orders[order.order_id] = order
        return order

    def get(self, order_id: str) -> Order:
        order = self.state.orders.get(order_id)
        if order is None:
            if order_id in self.state.archived:
                customer_id, key = self.state.archived[order_id]
                raise errors.OrderArchived(order_id, customer_id=customer_id, archive_key=key)
            raise errors.OrderNotFound("order not found")
        return order

    def expire(self, order_id: str) -> Order:
        """What TTL and the stream processor do to an order whose TTL passed: archive it (tests call it)."""
        order = self.state.orders.pop(order_id)
        self.state.order_ttls.pop(order_id, None)
        key = f"orders/{order_id}.json"
        self.state.archive[key] = order
        self.state.archived[order_id] = (order.customer_id, key)
        return order

    def _summaries(self, keep: Callable[[Order], bool], *, archived: bool = False) -> list[OrderSummary]:
        kept = [*self.state.orders.values(), *(self.state.archive.values() if archived else ())]
        chosen = sorted((o for o in kept if keep(o)), key=lambda o: (o.created_at, o.order_id), reverse=True)
        return [OrderSummary.model_validate(o.model_dump(include=set(OrderSummary.model_fields))) for o in chosen]

    def list_for_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[OrderSummary]:
        listed = self._summaries(lambda o: o.customer_id == customer_id, archived=True)  # the list keeps them
        return page_of(listed, limit=limit, next_token=next_token)

    def list_by_status(self, status: OrderStatus, *, limit: int, next_token: str | None) -> Page[OrderSummary]:
        return page_of(self._summaries(lambda o: o.status is status), limit=limit, next_token=next_token)

    def change_status(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        updated_at: str,
        restock: Sequence[OrderLine] = (),
        expires_at: int | None = None,
    ) -> Order:
        current = self.state.orders.get(order.order_id)
        if current is None:
            raise errors.OrderNotFound("order not found")
        if current.status is not order.status or current.version != order.version:
            if current.status is new_status and current.version == order.version + 1:
                return self._advanced(order, new_status, current.version, current.updated_at)
            raise errors.VersionMismatch("the order changed meanwhile", {"current_version": current.version})
        if any(line.product_id not in self.state.products for line in restock):
            raise errors.Conflict("the data changed meanwhile, retry")
        for line in restock:
            stored = self.state.products[line.product_id]
            MemoryProducts._set_stock(stored, stored.product.stock + line.quantity)
        changed = self._advanced(current, new_status, order.version + 1, updated_at)
        self.state.orders[order.order_id] = changed
        if expires_at is None:
            self.state.order_ttls.pop(order.order_id, None)
        else:
            self.state.order_ttls[order.order_id] = expires_at
        return self._advanced(order, new_status, order.version + 1, updated_at)

    @staticmethod
    def _advanced(order: Order, status: OrderStatus, version: int, updated_at: str) -> Order:
        history = [*order.history, StatusEntry(status=status, at=updated_at)]
        return order.model_copy(
            update={"status": status, "version": version, "updated_at": updated_at, "history": history}
        )


class MemorySessions:
    """SessionStore."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def create(self, session_id: str, *, created_at: str, expires_at: int) -> StoredSession:
        if session_id in self.state.sessions:
            raise errors.Conflict("a session with this id exists")
        cart = _Cart(session_id, expires_at)
        self.state.sessions[session_id] = cart
        return cart.stored()

    def _live(self, session_id: str, now: int) -> _Cart:
        cart = self.state.sessions.get(session_id)
        if cart is None or cart.expires_at <= now:
            raise errors.SessionNotFound("session not found or expired")
        return cart

    def get(self, session_id: str, *, now: int) -> StoredSession:
        return self._live(session_id, now).stored()

    def set_line(
        self,
        session_id: str,
        *,
        product_id: str,
        name: str,
        unit_price_cents: int,
        quantity: int,
        added_at: str,
        now: int,
        expires_at: int,
    ) -> StoredSession:
        cart = self._live(session_id, now)
        if quantity == 0:
            cart.lines.pop(product_id, None)
            cart.added.pop(product_id, None)
        else:
            if product_id not in cart.lines and len(cart.lines) >= MAX_CART_LINES:
                raise errors.CartFull(f"a cart holds at most {MAX_CART_LINES} lines")
            cart.lines[product_id] = StoredLine(product_id, name, unit_price_cents, quantity)
            cart.added.setdefault(product_id, added_at)
        cart.expires_at = expires_at
        cart.version += 1
        return cart.stored()

    def delete(self, session_id: str) -> None:
        self.state.sessions.pop(session_id, None)


class MemoryArchive:
    """OrderArchive: the archived orders MemoryOrders.expire put there."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def get(self, key: str) -> Order:
        return self.state.archive[key].model_copy(update={"archived": True})


class MemoryStore:
    """One in-memory table: the four stores over one state, as the repositories share one table."""

    def __init__(self) -> None:
        self.state = MemoryState()
        self.products = MemoryProducts(self.state)
        self.customers = MemoryCustomers(self.state)
        self.orders = MemoryOrders(self.state)
        self.sessions = MemorySessions(self.state)
        self.archive = MemoryArchive(self.state)

    def catalog_service(self) -> CatalogService:
        return CatalogService(products=self.products)

    def customer_service(self) -> CustomerService:
        return CustomerService(customers=self.customers)

    def order_service(self) -> OrderService:
        return OrderService(orders=self.orders, products=self.products, sessions=self.sessions, archive=self.archive)

    def session_service(self, ttl_seconds: int = 600) -> SessionService:
        return SessionService(ttl_seconds=ttl_seconds, sessions=self.sessions, products=self.products)
