"""The stores the services depend on: what each rule needs of persistence, and no more (ports).

shop.repository implements them on the DynamoDB table; tests/support/memory_store.py implements them
in memory for the rule tests (tests/unit). The errors a method raises are part of its contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: a function loads the models it uses, not every port's
    from shop.models import Customer, Notification, Order, OrderLine, OrderStatus, OrderSummary, Page, Product, Review
    from shop.models.alerts import Alert
    from shop.models.carts import CartClaim, MergeView, NotMerged, StoredCart
    from shop.models.categories import Category
    from shop.models.orders import Placement, SessionClaim, StatusDetails
    from shop.models.products import CataloguePrice, ProductListing
    from shop.models.sales import DaySales, SalesChange, TopSeller
    from shop.models.sessions import StoredLine, StoredSession
    from shop.models.stock import StockLayout, StockMove, StockTake


class ProductStore(Protocol):
    """The catalogue as the catalogue service edits it."""

    def create(self, product: Product, scopes: list[str]) -> Product:
        """The product, listed under each of `scopes` (category slugs) and among all products unless
        archived; ProductExists when the id is taken."""

    def get(self, product_id: str) -> Product:
        """ProductNotFound."""

    def cache_scope(self) -> str:
        """What tells this store's data from another's (its table): reads kept in memory are kept per scope."""

    def list_all(self, *, limit: int, next_token: str | None) -> Page[ProductListing]:
        """Every active product, newest first."""

    def list_by_category(
        self, category: str, order: str, *, descending: bool, limit: int, next_token: str | None
    ) -> Page[ProductListing]:
        """The active products listed under `category` (keys.BY_NAME or keys.BY_PRICE order), each once."""

    def update(self, current: Product, changes: dict[str, Any], updated_at: str, scopes: list[str]) -> Product:
        """The product with `changes` (a None description removes it), listed under `scopes` (none when
        archived); Conflict when it changed since `current` was read."""

    def archive(self, current: Product, updated_at: str) -> Product:
        """ARCHIVED and out of every listing; Conflict when it changed since `current` was read."""

    def adjust_stock(self, product_id: str, delta: int) -> int:
        """The new stock, never below 0 (InsufficientStock) nor above MAX_STOCK (StockLimitExceeded); applied
        once however often the request is re-sent. ProductNotFound."""

    def stock_layout(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        """The stock of the product item and of each flash-sale shard, read consistently; ProductNotFound."""

    def spread_stock(self, seen: StockLayout, shards: int) -> StockLayout:
        """All of the stock evenly over `shards` shards (1: back onto the product item); Conflict when any of it
        moved since `seen` was read (or the price did)."""

    def add_review(self, review: Review) -> Review:
        """The review counted in the product's rating; ProductNotFound, AlreadyReviewed (one per customer)."""

    def reviews_of_product(self, product_id: str, *, limit: int, next_token: str | None) -> Page[Review]:
        """Highest rating first, then newest; ProductNotFound."""

    def reviews_of_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Review]: ...


class CategoryStore(Protocol):
    """The catalogue tree."""

    def get(self, slug: str) -> Category:
        """CategoryNotFound."""

    def version_of(self, slug: str) -> tuple[Category, int]:
        """The category and the version a change of it is conditional on; CategoryNotFound."""

    def get_many(self, slugs: list[str]) -> dict[str, Category]:
        """The categories that exist, by slug."""

    def children(self, parent: str | None, *, limit: int, next_token: str | None) -> Page[Category]:
        """A category's children, or (None) the top-level categories, by name."""

    def subtree_paths(self, path: str, *, limit: int | None = None) -> list[str]:
        """The paths strictly below `path`, in path order."""

    def create(self, category: Category, parent: Category | None) -> Category:
        """CategoryExists, CategoryNotFound (the parent), TooManyChildren, MoveInProgress."""

    def rename(self, current: Category, version: int, name: str) -> Category:
        """Conflict when the category is no longer at `version`."""

    def start_move(
        self, current: Category, version: int, *, new_parent: Category | None, name: str, move: dict[str, Any]
    ) -> Category:
        """The category under its new parent, `moving` until the move's job is done; Conflict,
        MoveInProgress (another move runs), CategoryNotFound, TooManyChildren (the new parent)."""


class ProductPrices(Protocol):
    """What orders and carts read of the catalogue."""

    def get(self, product_id: str) -> Product:
        """ProductNotFound."""

    def get_many(self, product_ids: list[str], *, consistent: bool = False) -> dict[str, Product]:
        """The products that exist, by id (a product with stock shards: `stock` is its product item's alone)."""

    def cache_scope(self) -> str:
        """What tells this store's data from another's (its table): reads kept in memory are kept per scope."""

    def stock_layout(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        """The stock of the product item and of each flash-sale shard, read consistently; ProductNotFound."""

    def stock_snapshot(self, product_id: str, *, shards_hint: int = 1) -> StockLayout:
        """stock_layout as of one instant, serializable with gatherings: what an OUT_OF_STOCK answer rests on."""

    def gather_stock(self, moves: Sequence[StockMove], token: str) -> None:
        """Stock moved between shards of its product, in one transaction (`token` its ClientRequestToken);
        StockSourceShort when a source held less than leaves it (with what it held)."""

    def current_prices(self, product_ids: list[str]) -> dict[str, CataloguePrice]:
        """Name and price of the products that exist, by id."""


class CustomerStore(Protocol):
    def create(self, customer: Customer) -> Customer:
        """CustomerExists (the id has a profile), EmailTaken (another profile has the email)."""

    def get(self, customer_id: str) -> Customer:
        """CustomerNotFound."""

    def find_by_email(self, email: str) -> Customer:
        """By the normalised email; CustomerNotFound."""

    def update(self, current: Customer, *, name: str | None, email: str | None, updated_at: str) -> Customer:
        """The fields given, at version + 1; VersionMismatch when the profile is no longer at `current`'s
        version, EmailTaken."""

    def notifications(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Notification]: ...


class OrderStore(Protocol):
    def place(
        self,
        order: Order,
        session: SessionClaim | None = None,
        *,
        placement: Placement | None = None,
        cart: CartClaim | None = None,
        takes: Mapping[str, Sequence[StockTake]] | None = None,
    ) -> Order:
        """The order, its stock taken and the session's or the customer's cart emptied, all or nothing.

        A line takes its stock from its product item, or from the places `takes` names for its product
        (flash-sale shards); the order returned records the shards (`stock_taken`).
        ProductNotFound, OutOfStock, StockSourceShort (a place of a product with shards held too little),
        PriceChanged (a line's unit price is no longer the catalogue's), SessionNotFound (expired, or its
        cart changed since `session` was read), CartChanged (the customer cart is no longer at `cart`'s
        version, or expired). Under a placement already claimed: the order placed under it.
        """

    def get(self, order_id: str) -> Order:
        """OrderNotFound; OrderArchived (with the archive's key and the owner) once the order is archived;
        ServiceUnavailable while it is being archived."""

    def list_for_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[OrderSummary]:
        """Newest first."""

    def list_by_status(self, status: OrderStatus, *, limit: int, next_token: str | None) -> Page[OrderSummary]:
        """Newest first."""

    def change_status(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        updated_at: str,
        restock: Sequence[OrderLine] = (),
        details: StatusDetails = ...,
        expires_at: int | None = None,
    ) -> Order:
        """The order in new_status at version + 1 with `details` recorded (shipment, reason, first delivery),
        `restock`'s quantities back in stock (where the order took them: its product item or the flash-sale
        shards it recorded), all or nothing; its TTL set to `expires_at` in the same write (None: no TTL).

        VersionMismatch when the order is no longer at `order`'s status and version, unless it is
        already at new_status and version + 1 (a retry): then that order. OrderNotFound.
        """


class OrderArchive(Protocol):
    """The archive of finished orders (S3), as the order reads see it."""

    def get(self, key: str) -> Order:
        """The archived order at `key` (`archived` true); ServiceUnavailable when the archive does not answer."""


class SessionStore(Protocol):
    def create(self, session_id: str, *, created_at: str, expires_at: int) -> StoredSession:
        """An empty cart; Conflict when another session has the id (a re-sent create is not another)."""

    def get(self, session_id: str, *, now: int) -> StoredSession:
        """SessionNotFound, also when it expired by `now` (epoch seconds)."""

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
        """Put, change or (quantity 0) remove one line and move the expiry to `expires_at`.

        A line keeps its place in the cart when changed. SessionNotFound (also expired), CartFull (a new
        product in a cart of MAX_CART_LINES).
        """

    def delete(self, session_id: str) -> None: ...


class AlertStore(Protocol):
    """Admin alerts: written by the stream processor, read by admins."""

    def record(self, alert: Alert) -> bool:
        """Write the alert once: False when an alert with its id (and time) exists already."""

    def newest(self, *, limit: int, next_token: str | None) -> Page[Alert]:
        """Newest first."""


class CustomerCartStore(Protocol):
    """Customer carts (one per customer) and the markers of the sessions merged into them."""

    def get(self, customer_id: str, *, now: int, require_profile: bool = True) -> StoredCart:
        """The live cart, or an empty one (absent or expired by `now`); CustomerNotFound when
        `require_profile` and the customer has no profile."""

    def product_for(self, customer_id: str, product_id: str) -> Product:
        """The product to put in the customer's cart, read with the profile: CustomerNotFound, ProductNotFound."""

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
        """Put, change or (quantity 0) remove one line and move the expiry to `expires_at`; a line put in
        no live cart starts a new one, a removal from none writes nothing. CartFull."""

    def read_for_merge(self, customer_id: str, session_id: str, *, now: int) -> MergeView:
        """The cart, the live session (None: absent or expired) and an earlier merge of it; CustomerNotFound."""

    def merge(
        self,
        seen: StoredCart,
        lines: list[StoredLine],
        *,
        session: SessionClaim,
        not_merged: list[NotMerged],
        updated_at: str,
        expires_at: int,
        marker_expires_at: int,
    ) -> StoredCart:
        """The cart holding `lines`, the session deleted and the merge recorded (until
        `marker_expires_at`), all or nothing. CartChanged (the cart moved past `seen`, or this session
        was merged meanwhile), SessionNotFound (the session moved past `session`, expired or went)."""

    def empty(self, customer_id: str, *, updated_at: str) -> None:
        """No lines left (nothing happens without a cart)."""


class SalesStore(Protocol):
    """Per-product daily sales: counted once per order version by the stream processor, read by admins."""

    def apply(self, change: SalesChange) -> bool:
        """Add the change's lines to their (product, day) totals and mark the order version counted, all or
        nothing; False (nothing written) when that version was counted before."""

    def days(self, product_id: str, first: str, last: str) -> list[DaySales]:
        """The product's days from `first` to `last` (YYYY-MM-DD, both included) that have sales, in order."""

    def top(self, day: str, limit: int) -> list[TopSeller]:
        """The day's `limit` products with the most units, most first (equal units: by product id)."""
