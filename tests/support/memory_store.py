"""The services' ports (shop.services.ports) in memory: the fast lane's stand-in for the table.

It keeps the semantics the rules rely on, as the DynamoDB repositories do: conditional writes that
fail with the same domain errors, versions, stock that never goes negative nor past MAX_STOCK,
all-or-nothing placement and status changes, session and customer cart expiry, the carts' line limit
and order, merges conditional on the cart's and the session's versions.
Pages are simplified: the next token is the position of the next item. tests/repository/
test_memory_store.py runs the same scenarios on this and on the repositories (moto, DynamoDB Local).

    store = MemoryStore()
    orders = store.order_service()  # OrderService(orders=store.orders, products=store.products, ...)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from shop import clock, errors, keys
from shop.config import payment_settings, settings
from shop.limits import MAX_CART_LINES, MAX_CHILDREN, MAX_STOCK, MAX_TRANSACTION_ITEMS
from shop.models import Customer, Notification, Order, OrderLine, OrderStatus, OrderSummary, Page, Product, Review
from shop.models.alerts import Alert, Claim, StockLowState, StockTotal
from shop.models.carts import CartClaim, CartOwnerKind, MergeView, NotMerged, StoredCart
from shop.models.categories import Category, path_slugs
from shop.models.checkout import CheckoutSettings, Promotion, PromotionUse, SettingsCheck, ShippingZone, TaxRate
from shop.models.orders import (
    CLOSED_DISPUTE_STATUSES,
    NO_DETAILS,
    OrderPayment,
    OrderPaymentSummary,
    PaymentDispute,
    PaymentFailure,
    PaymentStatus,
    Placement,
    StatusDetails,
    UnpaidLimits,
    units_of,
)
from shop.models.payments import Settled
from shop.models.products import CataloguePrice, ProductListing, ProductStatus
from shop.models.sales import DaySales, SalesChange, TopSeller
from shop.models.sessions import StoredLine
from shop.models.stock import StockLayout, StockMove, StockSource, StockTake
from shop.services.alerts import AlertService
from shop.services.carts import CartService
from shop.services.catalog import CatalogService
from shop.services.categories import CategoryService
from shop.services.checkout_settings import CheckoutSettingsService
from shop.services.customers import CustomerService
from shop.services.orders import OrderService
from shop.services.payments import PaymentService
from shop.services.sales import SalesService
from shop.services.sessions import SessionService

if TYPE_CHECKING:
    from shop.services.ports import Payments

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
    product: Product  # its stock is the product item's; the flash-sale shards' is in `shards`
    rating_sum: int = 0
    shards: list[int] = field(default_factory=list)
    sideways: int = 0  # spreads and gatherings: stock moved between places, the total unchanged (sideways_moves)

    def stock_of(self, source: StockSource) -> int | None:
        """What a place holds; None for a shard that does not exist."""
        if source is None:
            return self.product.stock
        return self.shards[source] if source < len(self.shards) else None

    def move(self, source: StockSource, delta: int) -> None:
        if source is None:
            MemoryProducts._set_stock(self, self.product.stock + delta)
        else:
            self.shards[source] += delta


@dataclass
class _Cart:
    session_id: str
    expires_at: int
    lines: dict[str, StoredLine] = field(default_factory=dict)
    added: dict[str, str] = field(default_factory=dict)
    version: int = 0

    def stored(self) -> StoredCart:
        ordered = sorted(self.lines.values(), key=lambda line: (self.added[line.product_id], line.product_id))
        return StoredCart(self.session_id, ordered, clock.iso_from_epoch(self.expires_at), self.version)


@dataclass
class _CustomerCart:
    customer_id: str
    expires_at: int
    lines: dict[str, StoredLine] = field(default_factory=dict)
    version: int = 0

    def stored(self, now: int) -> StoredCart:
        if self.expires_at <= now:
            return StoredCart(self.customer_id, [], None, self.version)
        ordered = sorted(self.lines.values(), key=lambda line: (line.added_at, line.product_id))
        return StoredCart(self.customer_id, ordered, clock.iso_from_epoch(self.expires_at), self.version)


@dataclass
class _UnpaidHold:
    """A customer's unpaid hold (shop.repository.unpaid_holds): their PENDING_PAYMENT orders' ids and units."""

    order_ids: set[str] = field(default_factory=set)
    units: int = 0


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
    alerts: dict[tuple[str, str], Alert] = field(default_factory=dict)  # (created_at, alert id), as keyed
    # product id -> (low-stock state, the sequence number of the last product-item record that moved it)
    stock_low: dict[str, tuple[StockLowState, str]] = field(default_factory=dict)
    carts: dict[str, _CustomerCart] = field(default_factory=dict)
    merges: dict[tuple[str, str], list[NotMerged]] = field(default_factory=dict)  # (customer, session)
    categories: dict[str, tuple[Category, int]] = field(default_factory=dict)  # slug -> (category, version)
    listed_in: dict[str, list[str]] = field(default_factory=dict)  # product id -> its listing scopes
    sales: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (product, day) -> units, cents
    sales_counted: set[tuple[str, int]] = field(default_factory=set)  # (order, version)
    # (product, day, counter shard) a flash-sale product's lines counted on (the totals above include them)
    sales_shards: set[tuple[str, str, int]] = field(default_factory=set)
    order_ttls: dict[str, int] = field(default_factory=dict)  # order id -> expires_at (epoch s), when set
    unpaid: dict[str, _UnpaidHold] = field(default_factory=dict)  # customer id -> their unpaid hold
    archive: dict[str, Order] = field(default_factory=dict)  # archive key -> the archived order
    archived: dict[str, tuple[str, str]] = field(default_factory=dict)  # order id -> (customer id, archive key)
    move: dict[str, Any] | None = None  # the category move under way, as its item (MemoryStore(streamed_moves=True))
    # the checkout's settings: the latest edit (version, its unique id), every zone by id and rate by country
    checkout: CheckoutSettings = field(default_factory=CheckoutSettings)
    promotion_uses: dict[tuple[str, int], int] = field(default_factory=dict)  # (promotion, counter) -> uses
    promotion_counts: dict[str, int] = field(default_factory=dict)  # without a limit: confirmed orders counted
    customer_uses: dict[tuple[str, str], int] = field(default_factory=dict)  # (customer, promotion) -> uses


class MemoryCheckoutSettings:
    """shop.services.ports.CheckoutSettingsStore: every copy of the version is the VERSION item itself."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def edit_id(self, shard: int) -> str | None:
        return self.state.checkout.edit_id

    def snapshot(self) -> CheckoutSettings:
        return self.state.checkout

    def put_zone(self, zone: ShippingZone, *, read_version: int) -> int:
        kept = self.state.checkout
        zones = tuple(z for z in kept.zones if z.zone_id != zone.zone_id)
        return self._edit(read_version, replace(kept, zones=(*zones, zone)))

    def put_rate(self, rate: TaxRate, *, read_version: int) -> int:
        kept = self.state.checkout
        return self._edit(read_version, replace(kept, rates={**kept.rates, rate.country: rate}))

    def put_promotion(self, promotion: Promotion, *, read_version: int) -> int:
        kept = self.state.checkout
        others = [p for p in kept.promotions if p.promotion_id != promotion.promotion_id]
        ordered = sorted([*others, promotion], key=lambda p: p.promotion_id)
        return self._edit(read_version, replace(kept, promotions=tuple(ordered)))

    def uses(self, promotion: Promotion) -> list[int]:
        counted = self.state.promotion_uses
        return [counted.get((promotion.promotion_id, shard), 0) for shard in range(promotion.use_shards)]

    def counts(self, promotion: Promotion) -> list[int]:
        return [self.state.promotion_counts.get(promotion.promotion_id, 0)]

    def promotions_page(self, *, limit: int, next_token: str | None) -> Page[Promotion]:
        return page_of(list(reversed(self.state.checkout.promotions)), limit=limit, next_token=next_token)

    def _edit(self, read_version: int, edited: CheckoutSettings) -> int:
        if self.state.checkout.version != read_version:
            raise errors.VersionMismatch("the checkout's settings changed meanwhile")
        self.state.checkout = replace(edited, version=read_version + 1, edit_id=uuid.uuid4().hex)
        return read_version + 1


class MemoryProducts:
    """ProductStore and ProductPrices."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state
        self._scope = f"memory-{uuid.uuid4().hex}"

    def cache_scope(self) -> str:
        return self._scope

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

    def _check_paths(self, filed_paths: dict[str, str] | None) -> None:
        for slug, path in (filed_paths or {}).items():
            found = self.state.categories.get(slug)
            if found is None or found[0].path != path:
                raise errors.CategoriesMoved("a category of the product moved meanwhile, retry")

    def create(self, product: Product, scopes: list[str], filed_paths: dict[str, str] | None = None) -> Product:
        self._check_paths(filed_paths)
        existing = self.state.products.get(product.product_id)
        if existing is not None and existing.product.created_at == product.created_at:
            return self._read(product.product_id)  # the same create sent again (its first answer lost)
        if existing is not None:
            raise errors.ProductExists(f"product {product.product_id} exists")
        self.state.products[product.product_id] = _StoredProduct(product)
        self.state.listed_in[product.product_id] = scopes if product.listed else []
        return self._read(product.product_id)

    def get(self, product_id: str) -> Product:
        stored = self._stored(product_id)
        product = self._read(product_id)
        return product.model_copy(update={"stock": product.stock + sum(stored.shards)})

    def _read(self, product_id: str) -> Product:
        product = self._rated(self._stored(product_id))
        product._listed_in = list(self.state.listed_in.get(product_id, []))
        return product

    def relist(self, products: list[tuple[Product, list[str]]]) -> list[str]:
        """ProductRelisting: each product filed under `scopes` (none changes meanwhile here)."""
        for product, scopes in products:
            if self.state.products[product.product_id].product.listed:
                self.state.listed_in[product.product_id] = scopes
        return []

    def get_many(self, product_ids: list[str], *, consistent: bool = False) -> dict[str, Product]:
        return {
            pid: self._rated(self.state.products[pid])
            for pid in dict.fromkeys(product_ids)
            if pid in self.state.products
        }

    def stock_layout(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        stored = self._stored(product_id)
        return StockLayout(
            product_id,
            stored.product.stock,
            tuple(stored.shards),
            stored.product.price_cents,
            archived=not stored.product.listed,
        )

    def spread_stock(self, seen: StockLayout, shards: int) -> StockLayout:
        if self.stock_layout(seen.product_id) != seen:
            raise errors.Conflict("the stock moved meanwhile, retry")
        stored = self._stored(seen.product_id)
        base, extra = divmod(seen.total, shards)
        stored.shards = [base + (1 if shard < extra else 0) for shard in range(shards)] if shards > 1 else []
        stored.sideways += 1
        stored.product = stored.product.model_copy(
            update={"stock": 0 if shards > 1 else seen.total, "stock_shards": shards}
        )
        return self.stock_layout(seen.product_id)

    def stock_snapshot(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        return self.stock_layout(product_id, shards_hint=shards_hint)

    def gather_stock(self, moves: Sequence[StockMove], token: str) -> None:
        taken: dict[tuple[str, int], int] = {}
        for move in moves:
            taken[(move.product_id, move.source)] = taken.get((move.product_id, move.source), 0) + move.quantity
        seen: dict[str, dict[int | None, int]] = {}
        for (pid, shard), quantity in taken.items():
            held = self._stored(pid).stock_of(shard)
            if held is None or held < quantity:
                seen.setdefault(pid, {})[shard] = held or 0
        for move in moves:
            if self._stored(move.product_id).stock_of(move.target) is None:
                seen.setdefault(move.product_id, {})[move.target] = 0
        if seen:
            raise errors.StockSourceShort(seen, {})
        for move in moves:
            self._stored(move.product_id).move(move.source, -move.quantity)
            self._stored(move.product_id).move(move.target, move.quantity)
            self._stored(move.product_id).sideways += 1

    def current_prices(self, product_ids: list[str]) -> dict[str, CataloguePrice]:
        return {
            pid: CataloguePrice(pid, product.name, product.price_cents)
            for pid, product in self.get_many(product_ids).items()
            if product.listed
        }

    def _listings(self, scope: str | None) -> list[ProductListing]:
        return [
            ProductListing.model_validate(stored.product.model_dump())
            for pid, stored in self.state.products.items()
            if stored.product.listed and (scope is None or scope in self.state.listed_in.get(pid, []))
        ]

    def list_all(self, *, limit: int, next_token: str | None) -> Page[ProductListing]:
        listed = sorted(self._listings(None), key=lambda p: (p.created_at, p.product_id), reverse=True)
        return page_of(listed, limit=limit, next_token=next_token)

    def list_by_category(
        self, category: str, order: str, *, descending: bool, limit: int, next_token: str | None
    ) -> Page[ProductListing]:
        def sort_key(p: ProductListing) -> tuple[str, str]:
            value = keys.name_sort_key(p.name) if order == keys.BY_NAME else keys.price_sort_key(p.price_cents)
            return value, p.product_id

        listed = sorted(self._listings(category), key=sort_key, reverse=descending)
        return page_of(listed, limit=limit, next_token=next_token)

    def update(
        self,
        current: Product,
        changes: dict[str, Any],
        updated_at: str,
        scopes: list[str],
        filed_paths: dict[str, str] | None = None,
    ) -> Product:
        stored = self.state.products.get(current.product_id)
        if stored is None or stored.product.updated_at != current.updated_at:
            raise errors.Conflict("the product changed meanwhile, retry")
        self._check_paths(filed_paths)
        stored.product = stored.product.model_copy(update={**changes, "updated_at": updated_at})
        self.state.listed_in[current.product_id] = scopes if stored.product.listed else []
        return self._read(current.product_id)

    def archive(self, current: Product, updated_at: str) -> Product:
        return self.update(current, {"status": ProductStatus.ARCHIVED}, updated_at, [])

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

    def place(
        self,
        order: Order,
        cart: CartClaim | None = None,
        *,
        placement: Placement | None = None,
        takes: Mapping[str, Sequence[StockTake]] | None = None,
        attempt: int = 0,
        unpaid: UnpaidLimits | None = None,
        uses: Sequence[PromotionUse] = (),
        settings: SettingsCheck | None = None,
    ) -> Order:
        if settings is not None and settings.edit_id != self.state.checkout.edit_id:
            raise errors.CheckoutSettingsChanged()
        takes = takes or {}
        taken: dict[str, dict[str, int]] = {}
        for pid, product_takes in takes.items():
            for take in product_takes:
                if take.source is not None:
                    label = f"{take.source:02d}"
                    taken.setdefault(pid, {})[label] = taken.get(pid, {}).get(label, 0) + take.quantity
        order = order.model_copy(update={"stock_taken": taken})
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
        archived = [line.product_id for line in order.lines if not products[line.product_id].product.listed]
        if archived:
            raise errors.ProductUnavailable(archived)
        places = [
            (line.product_id, take)
            for line in order.lines
            for take in takes.get(line.product_id) or [StockTake(None, line.quantity)]
        ]
        items = 2 + len(places) + sum(part is not None for part in (cart, placement, unpaid))
        if items > MAX_TRANSACTION_ITEMS:  # as DynamoDB's limit makes the table's store refuse it
            raise errors.StockTooScattered(items, MAX_TRANSACTION_ITEMS)
        if unpaid is not None:  # as the table's hold item: fewer ids than allowed, and the units within the limit
            hold = self.state.unpaid.get(order.customer_id, _UnpaidHold())
            if len(hold.order_ids) >= unpaid.orders or hold.units + units_of(order.lines) > unpaid.units:
                raise errors.UnpaidOrderLimit(
                    max_orders=unpaid.orders,
                    max_units=unpaid.units,
                    order_units=units_of(order.lines),
                    held_order_ids=sorted(hold.order_ids),
                    held_units=hold.units,
                )
        short: list[str] = []
        seen: dict[str, dict[int | None, int]] = {}
        for pid, take in places:
            stored = products[pid]
            held = stored.stock_of(take.source)
            if held is not None and held >= take.quantity:
                continue
            if take.source is None and stored.product.stock_shards <= 1:
                short.append(pid)
            else:
                seen.setdefault(pid, {})[take.source] = held or 0
        if short:
            raise errors.OutOfStock(short)
        if seen:
            raise errors.StockSourceShort(seen, {pid: products[pid].product.stock_shards for pid in seen})
        repriced = [
            line.product_id
            for line in order.lines
            if products[line.product_id].product.price_cents != line.unit_price_cents
        ]
        if repriced:
            raise errors.PriceChanged(repriced)
        for use in uses:
            if (
                use.shard is not None
                and self.state.promotion_uses.get((use.promotion_id, use.shard), 0) >= use.allotment
            ):
                raise errors.PromotionUseRefused(use.promotion_id, use.shard)
            counted = self.state.customer_uses.get((order.customer_id, use.promotion_id), 0)
            if use.customer_limit is not None and counted >= use.customer_limit:
                raise errors.PromotionUseRefused(use.promotion_id, None)
        emptied: _Cart | _CustomerCart | None = None
        if cart is not None:
            session = cart.owner.kind is CartOwnerKind.SESSION
            emptied = (self.state.sessions if session else self.state.carts).get(cart.owner.id)
            if emptied is None or emptied.version != cart.cart_version or emptied.expires_at <= cart.now:
                if session:
                    raise errors.SessionNotFound("the session expired or its cart changed during checkout")
                raise errors.CartChanged("your cart changed or expired during checkout, retry")
        for pid, take in places:
            products[pid].move(take.source, -take.quantity)
        if emptied is not None:
            emptied.lines.clear()
            if isinstance(emptied, _Cart):
                emptied.added.clear()
            emptied.version += 1
        if placement is not None:
            self.state.placements[(order.customer_id, placement.key)] = (order.order_id, placement.expires_at)
        for use in uses:
            if use.shard is not None:
                key = (use.promotion_id, use.shard)
                self.state.promotion_uses[key] = self.state.promotion_uses.get(key, 0) + 1
            if use.customer_limit is not None:
                mine = (order.customer_id, use.promotion_id)
                self.state.customer_uses[mine] = self.state.customer_uses.get(mine, 0) + 1
        if unpaid is not None:  # PAYMENTS=stripe: the customer's unpaid hold takes the order
            hold = self.state.unpaid.setdefault(order.customer_id, _UnpaidHold())
            hold.order_ids.add(order.order_id)
            hold.units += units_of(order.lines)
        self.state.orders[order.order_id] = order
        return order

    def held_unpaid(self, order_ids: Sequence[str]) -> dict[str, tuple[OrderStatus, int]]:
        held = (self.state.orders.get(order_id) for order_id in order_ids)
        return {order.order_id: (order.status, units_of(order.lines)) for order in held if order is not None}

    def release_unpaid(self, customer_id: str, order_ids: Sequence[str], units: int) -> bool:
        hold = self.state.unpaid.get(customer_id)
        if not order_ids or hold is None or not set(order_ids) <= hold.order_ids:
            return False
        hold.order_ids -= set(order_ids)
        hold.units -= units
        return True

    def placed_under(self, customer_id: str, placement_key: str) -> Order | None:
        claimed = self.state.placements.get((customer_id, placement_key))
        return self.get(claimed[0]) if claimed is not None else None

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

    def list_confirmed_before(self, cutoff: str, *, limit: int, next_token: str | None) -> Page[OrderPaymentSummary]:
        """Oldest first; the token is `<position>@<cutoff>`: a walk keeps its first page's cutoff, as the table's."""
        position: str | None = None
        if next_token:
            position, _, cutoff = next_token.partition("@")
            if not cutoff:
                raise errors.InvalidNextToken("next_token is not a token this list issued")
        chosen = sorted(
            (o for o in self.state.orders.values() if o.status is OrderStatus.CONFIRMED and o.created_at < cutoff),
            key=lambda o: (o.created_at, o.order_id),
        )
        listed = [
            OrderPaymentSummary.model_validate(
                {
                    **o.model_dump(include=set(OrderSummary.model_fields)),
                    "payment_status": o.payment and o.payment.status,
                }
            )
            for o in chosen
        ]
        page = page_of(listed, limit=limit, next_token=position)
        return Page[OrderPaymentSummary](
            items=page.items, next_token=f"{page.next_token}@{cutoff}" if page.next_token else None
        )

    def change_status(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        updated_at: str,
        restock: Sequence[OrderLine] = (),
        details: StatusDetails = NO_DETAILS,
        expires_at: int | None = None,
        unless_payment: PaymentStatus | None = None,
    ) -> Order:
        current = self.state.orders.get(order.order_id)
        if current is None:
            raise errors.OrderNotFound("order not found")
        if current.status is not order.status or current.version != order.version:
            if (
                current.status is new_status
                and current.version == order.version + 1
                and details.recorded_in(current.history[-1])
            ):
                return current  # this change, made (its answer was lost): the order as stored
            raise errors.VersionMismatch("the order changed meanwhile", {"current_version": current.version})
        if unless_payment is not None and current.payment is not None and current.payment.status is unless_payment:
            raise errors.PaymentNotHeld(order.order_id, unless_payment.value)  # recorded since the read
        if any(line.product_id not in self.state.products for line in restock):
            raise errors.Conflict("the data changed meanwhile, retry")
        self.restock(order, restock)
        if restock and new_status is OrderStatus.CANCELLED:
            self.give_back(current)
        changed = self._advanced(current, new_status, order.version + 1, updated_at, details)
        self.state.orders[order.order_id] = changed
        if expires_at is None:
            self.state.order_ttls.pop(order.order_id, None)
        else:
            self.state.order_ttls[order.order_id] = expires_at
        return self._advanced(order, new_status, order.version + 1, updated_at, details)

    def give_back(self, order: Order) -> None:
        """The promotion uses the order took, given back (shop.repository.order_items.promotion_give_backs)."""
        for promotion_id, shard in order.promotion_uses.items():
            self.state.promotion_uses[(promotion_id, shard)] -= 1
        for promotion_id in order.customer_uses:
            self.state.customer_uses[(order.customer_id, promotion_id)] -= 1

    def restock(self, order: Order, lines: Sequence[OrderLine]) -> None:
        """`lines`' quantities back where the order took them (a shard gone: the product item)."""
        for line in lines:
            stored = self.state.products[line.product_id]
            left = line.quantity
            for label, quantity in sorted(order.stock_taken.get(line.product_id, {}).items()):
                back = min(quantity, left)
                # Back to the shard it came from; to the product item when that shard is gone.
                stored.move(int(label) if int(label) < len(stored.shards) else None, back)
                left -= back
            stored.move(None, left)

    @staticmethod
    def _advanced(order: Order, status: OrderStatus, version: int, updated_at: str, details: StatusDetails) -> Order:
        return details.advance(order, status, version, updated_at)


class MemoryOrderPayments:
    """OrderPayments (shop.repository.order_payments) on MemoryOrders' state: `settle` all or nothing (the order and
    the restock), `record_payment` conditional on the payment as read."""

    def __init__(self, state: MemoryState, orders: MemoryOrders) -> None:
        self.state = state
        self.orders = orders

    def current(self, order_id: str, *, consistent: bool = True) -> Order | None:
        return self.state.orders.get(order_id)

    def overdue(self, placed_before: str, *, per_shard: int) -> list[tuple[str, int | None]]:
        waiting = sorted(
            (o.created_at, o.order_id, o.payment_expires_at)
            for o in self.state.orders.values()
            if o.status is OrderStatus.PENDING_PAYMENT and o.created_at < placed_before
        )
        return [(order_id, expires) for _, order_id, expires in waiting]

    def settle(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        payment_status: PaymentStatus,
        updated_at: str,
        archive_at: int | None,
        release_stock: bool,
        intent_id: str | None = None,
    ) -> Settled:
        current = self.state.orders.get(order.order_id)
        if (
            current is None
            or current.status is not order.status
            or current.version != order.version
            or (order.payment is not None and current.payment is None)
            or (
                intent_id is not None
                and current.payment is not None
                and current.payment.intent_id not in (None, intent_id)
            )
        ):
            return Settled.STALE
        if release_stock:
            if any(line.product_id not in self.state.products for line in order.lines):
                raise errors.Conflict("the data changed meanwhile, retry")
            self.orders.restock(current, current.lines)
            if new_status is not OrderStatus.CONFIRMED:
                self.orders.give_back(current)
        confirmed = StatusDetails(confirmed_at=updated_at) if new_status is OrderStatus.CONFIRMED else NO_DETAILS
        changed = MemoryOrders._advanced(current, new_status, order.version + 1, updated_at, confirmed)
        update: dict[str, Any] = {"payment_expires_at": None}
        if new_status is OrderStatus.CONFIRMED:
            update["confirmed_at"] = updated_at
        if current.payment is not None:  # the client secret leaves the order with its window
            left: dict[str, Any] = {"status": payment_status, "client_secret": None}
            if new_status is OrderStatus.CONFIRMED:  # paid: its last failed attempt too (OrderPaymentRepository.settle)
                left["last_failure"] = None
            update["payment"] = current.payment.model_copy(update=left)
        self.state.orders[order.order_id] = changed.model_copy(update=update)
        if archive_at is not None:
            self.state.order_ttls[order.order_id] = archive_at
        return Settled.DONE

    def record_payment(
        self,
        order_id: str,
        *,
        expected: PaymentStatus | None,
        status: PaymentStatus | None = None,
        captured_cents: int | None = None,
        refunded_cents: int | None = None,
        at_most_refunded_cents: int | None = None,
        return_refunded_cents: int | None = None,
        return_index: int | None = None,
    ) -> bool:
        current = self.state.orders.get(order_id)
        payment = current.payment if current is not None else None
        if current is None or payment is None:
            return False
        if expected is not None and payment.status is not expected:
            return False
        if at_most_refunded_cents is not None and payment.refunded_cents > at_most_refunded_cents:
            return False
        if return_index is not None and return_refunded_cents is not None:
            accepted = current.returns[return_index]
            if accepted.refunded_cents is not None:
                return False
            returns = list(current.returns)
            returns[return_index] = accepted.model_copy(update={"refunded_cents": return_refunded_cents})
            current = current.model_copy(update={"returns": returns})
            self.state.orders[order_id] = current
            return_refunded_cents = None
        if return_refunded_cents is not None and payment.return_refunded_cents is not None:
            return False
        update: dict[str, Any] = {}
        if status is not None:
            update["status"] = status
        if captured_cents is not None:
            update["captured_cents"] = captured_cents
        if refunded_cents is not None:
            update["refunded_cents"] = refunded_cents
        if return_refunded_cents is not None:
            update["return_refunded_cents"] = return_refunded_cents
        return self._write(current, payment, update)

    def record_failed_attempt(self, order_id: str, *, intent_id: str | None, failure: PaymentFailure) -> bool:
        current = self.state.orders.get(order_id)
        payment = current.payment if current is not None else None
        if current is None or payment is None or current.status is not OrderStatus.PENDING_PAYMENT:
            return False
        if intent_id is not None and payment.intent_id not in (None, intent_id):
            return False
        if payment.last_failure is not None and not payment.last_failure.at < failure.at:
            return False
        return self._write(current, payment, {"last_failure": failure})

    def record_provider_refunds(self, order_id: str, *, refunded_cents: int) -> bool:
        current = self.state.orders.get(order_id)
        payment = current.payment if current is not None else None
        if current is None or payment is None or not payment.refunded_cents < refunded_cents:
            return False
        return self._write(current, payment, {"refunded_cents": refunded_cents})

    def record_dispute(self, order_id: str, dispute: PaymentDispute) -> bool:
        current = self.state.orders.get(order_id)
        payment = current.payment if current is not None else None
        if current is None or payment is None:
            return False
        held = payment.dispute
        if held is not None and not (
            held.updated_at < dispute.updated_at
            or (
                held.updated_at == dispute.updated_at
                and dispute.status in CLOSED_DISPUTE_STATUSES
                and held.status not in CLOSED_DISPUTE_STATUSES
            )
        ):
            return False
        return self._write(current, payment, {"dispute": dispute})

    def _write(self, order: Order, payment: OrderPayment, update: dict[str, Any]) -> bool:
        self.state.orders[order.order_id] = order.model_copy(update={"payment": payment.model_copy(update=update)})
        return True


class MemorySales:
    """SalesStore: totals per (product, day), each order version counted once."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def apply(self, change: SalesChange) -> bool:
        if change.order_id in self.state.archived:  # as the table's count checks the order's ARCHIVED marker
            raise errors.OrderEffectsClosed(change.order_id)
        marker = (change.order_id, change.version)
        if marker in self.state.sales_counted:
            return False
        self.state.sales_counted.add(marker)
        for line in change.lines:
            units, revenue = self.state.sales.get((line.product_id, change.day), (0, 0))
            self.state.sales[(line.product_id, change.day)] = (units + line.units, revenue + line.revenue_cents)
            if line.shard is not None:
                self.state.sales_shards.add((line.product_id, change.day, line.shard))
        for promotion_id in change.promotions:
            counted = self.state.promotion_counts.get(promotion_id, 0)
            self.state.promotion_counts[promotion_id] = counted + change.promotion_delta
        return True

    def days(self, product_id: str, first: str, last: str) -> list[DaySales]:
        return [
            DaySales(date=day, units=units, revenue_cents=revenue)
            for (pid, day), (units, revenue) in sorted(self.state.sales.items())
            if pid == product_id and first <= day <= last
        ]

    def top(self, day: str, limit: int) -> list[TopSeller]:
        ranked = sorted(
            ((pid, totals) for (pid, d), totals in self.state.sales.items() if d == day and totals[0] > 0),
            key=lambda entry: (-entry[1][0], entry[0]),
        )
        return [TopSeller(product_id=pid, units=units, revenue_cents=rev) for pid, (units, rev) in ranked[:limit]]


class MemorySessions:
    """SessionStore."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def create(self, session_id: str, *, created_at: str, expires_at: int) -> StoredCart:
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

    def get(self, session_id: str, *, now: int) -> StoredCart:
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
    ) -> StoredCart:
        cart = self._live(session_id, now)
        if quantity == 0:
            cart.lines.pop(product_id, None)
            cart.added.pop(product_id, None)
        else:
            if product_id not in cart.lines and len(cart.lines) >= MAX_CART_LINES:
                raise errors.CartFull(f"a cart holds at most {MAX_CART_LINES} lines")
            cart.added.setdefault(product_id, added_at)
            cart.lines[product_id] = StoredLine(product_id, name, unit_price_cents, quantity, cart.added[product_id])
        cart.expires_at = expires_at
        cart.version += 1
        return cart.stored()

    def delete(self, session_id: str) -> None:
        self.state.sessions.pop(session_id, None)


class MemoryAlerts:
    """AlertStore: written once per key, read newest first."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def record(self, alert: Alert) -> bool:
        key = (alert.created_at, alert.alert_id)
        if key in self.state.alerts:
            return False
        self.state.alerts[key] = alert
        return True

    def newest(self, *, limit: int, next_token: str | None) -> Page[Alert]:
        ordered = [self.state.alerts[key] for key in sorted(self.state.alerts, reverse=True)]
        return page_of(ordered, limit=limit, next_token=next_token)

    def _state(self, product_id: str) -> tuple[StockLowState, str]:
        return self.state.stock_low.get(product_id, (StockLowState(), ""))

    def stock_total(self, product_id: str, *, shards_hint: int = 1) -> StockTotal | None:
        stored = self.state.products.get(product_id)
        if stored is None:
            return None
        product = stored.product
        return StockTotal(
            product_id=product_id,
            name=product.name,
            total=product.stock + sum(stored.shards),
            threshold=product.low_stock_threshold,
            shard_count=max(1, len(stored.shards)),
            state=self._state(product_id)[0],
        )

    def threshold(self, product_id: str) -> int:
        stored = self.state.products.get(product_id)
        return stored.product.low_stock_threshold if stored is not None else 0

    def claim_low(self, alert: Alert, seen: StockLowState) -> Claim:
        state, sequence = self._state(alert.product_id)
        if (alert.created_at, alert.alert_id) in self.state.alerts:
            return Claim.EXISTS
        if state != seen:
            return Claim.MOVED
        self.state.alerts[(alert.created_at, alert.alert_id)] = alert
        self.state.stock_low[alert.product_id] = (StockLowState(True, state.revision + 1, alert), sequence)
        return Claim.CLAIMED

    def clear_low(self, product_id: str, seen: StockLowState) -> bool:
        state, sequence = self._state(product_id)
        if state != seen or not state.low:
            return False
        self.state.stock_low[product_id] = (StockLowState(False, state.revision + 1, None), sequence)
        return True

    def follow_item(self, product_id: str, *, low: bool, sequence_number: str, alert: Alert | None = None) -> bool:
        state, sequence = self._state(product_id)
        padded = sequence_number.rjust(40, "0")
        if sequence and sequence >= padded:
            return False
        self.state.stock_low[product_id] = (StockLowState(low, state.revision + 1, alert), padded)
        return True


class MemoryCarts:
    """CustomerCartStore, reading MemorySessions' sessions and MemoryCustomers' profiles."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def _require_profile(self, customer_id: str) -> None:
        if customer_id not in self.state.customers:
            raise errors.CustomerNotFound("customer not found")

    def _stored(self, customer_id: str, now: int) -> StoredCart:
        cart = self.state.carts.get(customer_id)
        return cart.stored(now) if cart is not None else StoredCart(customer_id, [], None, 0)

    def get(self, customer_id: str, *, now: int, require_profile: bool = True) -> StoredCart:
        if require_profile:
            self._require_profile(customer_id)
        return self._stored(customer_id, now)

    def product_for(self, customer_id: str, product_id: str) -> Product:
        self._require_profile(customer_id)
        stored = self.state.products.get(product_id)
        if stored is None:
            raise errors.ProductNotFound([product_id])
        return stored.product

    def set_line(
        self,
        customer_id: str,
        *,
        product_id: str,
        name: str,
        unit_price_cents: int,
        quantity: int,
        added_at: str,
        now: int,
        expires_at: int,
    ) -> StoredCart:
        cart = self.state.carts.get(customer_id)
        if cart is None or cart.expires_at <= now:
            if quantity == 0:
                return self._stored(customer_id, now)
            cart = _CustomerCart(customer_id, expires_at, version=cart.version if cart is not None else 0)
            self.state.carts[customer_id] = cart
        if quantity == 0:
            cart.lines.pop(product_id, None)
        else:
            held = cart.lines.get(product_id)
            if held is None and len(cart.lines) >= MAX_CART_LINES:
                raise errors.CartFull(f"a cart holds at most {MAX_CART_LINES} lines")
            first_added = held.added_at if held is not None else added_at
            cart.lines[product_id] = StoredLine(product_id, name, unit_price_cents, quantity, first_added)
        cart.expires_at = expires_at
        cart.version += 1
        return cart.stored(now)

    def read_for_merge(self, customer_id: str, session_id: str, *, now: int) -> MergeView:
        self._require_profile(customer_id)
        session = self.state.sessions.get(session_id)
        return MergeView(
            cart=self._stored(customer_id, now),
            session=session.stored() if session is not None and session.expires_at > now else None,
            merged=self.state.merges.get((customer_id, session_id)),
        )

    def merge(
        self,
        seen: StoredCart,
        lines: list[StoredLine],
        *,
        session: CartClaim,
        not_merged: list[NotMerged],
        updated_at: str,
        expires_at: int,
        marker_expires_at: int,
    ) -> StoredCart:
        current = self.state.carts.get(seen.owner_id)
        if (current.version if current is not None else 0) != seen.cart_version or (
            seen.owner_id,
            session.owner.id,
        ) in self.state.merges:
            raise errors.CartChanged("the cart changed meanwhile")
        held = self.state.sessions.get(session.owner.id)
        if held is None or held.version != session.cart_version or held.expires_at <= session.now:
            raise errors.SessionNotFound("the session changed, expired or went meanwhile")
        del self.state.sessions[session.owner.id]
        cart = _CustomerCart(
            seen.owner_id, expires_at, {line.product_id: line for line in lines}, seen.cart_version + 1
        )
        self.state.carts[seen.owner_id] = cart
        self.state.merges[(seen.owner_id, session.owner.id)] = list(not_merged)
        return cart.stored(session.now)

    def empty(self, customer_id: str, *, updated_at: str) -> None:
        cart = self.state.carts.get(customer_id)
        if cart is not None:
            cart.lines.clear()
            cart.version += 1


class MemoryCategories:
    """CategoryStore and CategoryMoveStore. A move is applied at once, or with `streamed` as the table does it:
    the category itself moves and is `moving`, the move item is written (one at a time), and the stream
    processor's steps (tests/support/memory_stream.py carries the item's changes) re-path the subtree and
    re-file its products."""

    def __init__(self, state: MemoryState, *, streamed: bool = False) -> None:
        self.state = state
        self.streamed = streamed

    def version_of(self, slug: str) -> tuple[Category, int]:
        if slug not in self.state.categories:
            raise errors.CategoryNotFound([slug])
        return self.state.categories[slug]

    def get(self, slug: str) -> Category:
        return self.version_of(slug)[0]

    def get_many(self, slugs: list[str], *, consistent: bool = False) -> dict[str, Category]:
        return {slug: self.get(slug) for slug in dict.fromkeys(slugs) if slug in self.state.categories}

    def children(self, parent: str | None, *, limit: int, next_token: str | None) -> Page[Category]:
        below = sorted(
            (c for c, _ in self.state.categories.values() if c.parent == parent),
            key=lambda c: (keys.name_sort_key(c.name), c.slug),
        )
        return page_of(below, limit=limit, next_token=next_token)

    def subtree_paths(self, path: str, *, limit: int | None = None) -> list[str]:
        below = sorted(c.path for c, _ in self.state.categories.values() if c.path.startswith(path + "/"))
        return below[:limit] if limit is not None else below

    def _adopt(self, parent: Category) -> None:
        current = self.state.categories.get(parent.slug)
        if current is None:
            raise errors.CategoryNotFound([parent.slug])
        if len(self.children(parent.slug, limit=MAX_CHILDREN + 1, next_token=None).items) >= MAX_CHILDREN:
            raise errors.TooManyChildren(f"a category holds at most {MAX_CHILDREN} children", {"parent": "full"})

    def create(self, category: Category, parent: Category | None) -> Category:
        if category.slug in self.state.categories:
            raise errors.CategoryExists(f"category {category.slug} exists")
        if parent is not None:
            self._adopt(parent)
        self.state.categories[category.slug] = (category, 1)
        return category

    def rename(self, current: Category, version: int, name: str) -> Category:
        stored, at = self.state.categories[current.slug]
        if at != version:
            raise errors.Conflict("the category changed meanwhile, retry")
        renamed = stored.model_copy(update={"name": name})
        self.state.categories[current.slug] = (renamed, version + 1)
        return renamed

    def start_move(
        self, current: Category, version: int, *, new_parent: Category | None, name: str, move: dict[str, Any]
    ) -> Category:
        if self.state.categories[current.slug][1] != version:
            raise errors.Conflict("the category changed meanwhile, retry")
        if new_parent is not None:
            self._adopt(new_parent)
        old, new = str(move["old_path"]), str(move["new_path"])
        if self.streamed:
            if self.state.move is not None:
                raise errors.MoveInProgress("another category move is under way, retry later")
            changed = {
                "path": new,
                "depth": len(path_slugs(new)),
                "parent": new_parent.slug if new_parent else None,
                "name": name,
                "moving": True,
            }
            self.state.categories[current.slug] = (current.model_copy(update=changed), version + 1)
            self.state.move = dict(move)
            return self.state.categories[current.slug][0]
        for slug, (category, at) in list(self.state.categories.items()):
            if category.path == old or category.path.startswith(old + "/"):
                path = new + category.path.removeprefix(old)
                changed = {"path": path, "depth": len(path_slugs(path))}
                if slug == current.slug:
                    changed.update(parent=new_parent.slug if new_parent else None, name=name)
                self.state.categories[slug] = (category.model_copy(update=changed), at + (slug == current.slug))
        for pid, stored in self.state.products.items():
            paths = [self.state.categories[s][0].path for s in stored.product.categories if s in self.state.categories]
            if stored.product.listed:
                self.state.listed_in[pid] = list(dict.fromkeys(s for p in paths for s in path_slugs(p)))
        return self.state.categories[current.slug][0]

    # -- CategoryMoveStore: the stream processor's steps of a streamed move

    def repath(self, paths: list[str], old_prefix: str, new_prefix: str) -> None:
        for slug, (category, at) in list(self.state.categories.items()):
            if category.path in paths:
                path = new_prefix + category.path.removeprefix(old_prefix)
                self.state.categories[slug] = (
                    category.model_copy(update={"path": path, "depth": len(path_slugs(path))}),
                    at,
                )

    def advance_move(self, move_id: str, step: int, changes: dict[str, Any]) -> bool:
        move = self.state.move
        if move is None or move["move_id"] != move_id or move["step"] != step:
            return False  # this step was taken already
        self.state.move = {**move, **changes, "step": step + 1}
        return True

    def finish_move(self, move_id: str, step: int, slug: str) -> bool:
        move = self.state.move
        if move is None or move["move_id"] != move_id or move["step"] != step:
            return False
        self.state.move = None
        category, at = self.state.categories[slug]
        self.state.categories[slug] = (category.model_copy(update={"moving": False}), at)
        return True

    def listing_keys_page(
        self, slug: str, *, limit: int, cursor: dict[str, Any] | None
    ) -> tuple[list[str], dict[str, Any] | None]:
        """The products the category's listing holds (its subtree's, each once), by name, from `cursor`."""
        listed = sorted(
            (
                stored.product
                for pid, stored in self.state.products.items()
                if slug in self.state.listed_in.get(pid, [])
            ),
            key=lambda product: (keys.name_sort_key(product.name), product.product_id),
        )
        start = int(cursor["position"]) if cursor else 0
        page = [product.product_id for product in listed[start : start + limit]]
        return page, {"position": start + limit} if start + limit < len(listed) else None


class MemoryArchive:
    """OrderArchive: the archived orders MemoryOrders.expire put there."""

    def __init__(self, state: MemoryState) -> None:
        self.state = state

    def get(self, key: str) -> Order:
        return self.state.archive[key].model_copy(update={"archived": True})


class MemoryStore:
    """One in-memory table: the stores over one state, as the repositories share one table."""

    def __init__(self, *, streamed_moves: bool = False) -> None:
        self.state = MemoryState()
        self.categories = MemoryCategories(self.state, streamed=streamed_moves)
        self.products = MemoryProducts(self.state)
        self.customers = MemoryCustomers(self.state)
        self.orders = MemoryOrders(self.state)
        self.sessions = MemorySessions(self.state)
        self.alerts = MemoryAlerts(self.state)
        self.carts = MemoryCarts(self.state)
        self.sales = MemorySales(self.state)
        self.archive = MemoryArchive(self.state)
        self.order_payments = MemoryOrderPayments(self.state, self.orders)
        self.checkout_settings = MemoryCheckoutSettings(self.state)

    def reset(self) -> None:
        """Empty, as a fresh store is, keeping these objects: services built on them (a handler's, at import)
        then see the empty store, and their caches keyed by the product store's scope start afresh."""
        self.state.__dict__.update(vars(MemoryState()))
        self.products._scope = f"memory-{uuid.uuid4().hex}"

    def catalog_service(self) -> CatalogService:
        return CatalogService(products=self.products, categories=self.categories)

    def category_service(self) -> CategoryService:
        return CategoryService(categories=self.categories)

    def customer_service(self) -> CustomerService:
        return CustomerService(customers=self.customers)

    def order_service(self, *, payments: Callable[[], Payments | None] = lambda: None) -> OrderService:
        """`payments` gives the provider at each checkout (None, the default: PAYMENTS=none's flow)."""
        return OrderService(
            orders=self.orders,
            products=self.products,
            sessions=self.sessions,
            carts=self.carts,
            archive=self.archive,
            settings=settings,
            payment_settings=payment_settings,
            payments=payments,
            checkout=CheckoutSettingsService(self.checkout_settings),
        )

    def payment_service(self, *, payments: Callable[[], Payments | None]) -> PaymentService:
        """The payment rules (the webhook's, the payment steps') on this store and the provider `payments` gives;
        the archive delay from the settings, as shop.wiring's."""
        return PaymentService(
            self.order_payments, payments=payments, settings=settings, payment_settings=payment_settings
        )

    def alert_service(self) -> AlertService:
        return AlertService(alerts=self.alerts)

    def sales_service(self) -> SalesService:
        return SalesService(self.sales)

    def session_service(self, ttl_seconds: int = 600) -> SessionService:
        return SessionService(
            ttl_seconds=ttl_seconds, sessions=self.sessions, products=self.products, settings=settings
        )

    def cart_service(self, ttl_seconds: int = 30 * 24 * 3600) -> CartService:
        return CartService(ttl_seconds=ttl_seconds, carts=self.carts, products=self.products, settings=settings)
