"""The stores the services depend on: what each rule needs of persistence, and no more (ports).

shop.repository implements them on the DynamoDB table; tests/support/memory_store.py implements them
in memory for the rule tests (tests/unit). The errors a method raises are part of its contract.
shop.wiring (the composition root) hands each service its adapters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only: a function loads the models it uses, not every port's
    from shop.models import Customer, Notification, Order, OrderLine, OrderStatus, OrderSummary, Page, Product, Review
    from shop.models.alerts import Alert, Claim, StockLowState, StockTotal
    from shop.models.carts import CartClaim, MergeView, NotMerged, StoredCart
    from shop.models.categories import Category
    from shop.models.checkout import CheckoutSettings, Promotion, PromotionUse, SettingsCheck, ShippingZone, TaxRate
    from shop.models.orders import (
        OrderPaymentSummary,
        PaymentDispute,
        PaymentFailure,
        PaymentStatus,
        Placement,
        Shipment,
        StatusDetails,
        StatusEntry,
        UnpaidLimits,
    )
    from shop.models.payments import PaymentEvent, PaymentIntent, Refund, Settled
    from shop.models.products import CataloguePrice, ProductListing
    from shop.models.sales import DaySales, Recorded, SalesChange, TopSeller
    from shop.models.sessions import StoredLine
    from shop.models.stock import StockLayout, StockMove, StockTake
    from shop.models.stream_images import CustomerCartImage, MoveImage, OrderImage, ProductImage, SessionImage


class ProductStore(Protocol):
    """The catalogue as the catalogue service edits it."""

    def create(self, product: Product, scopes: list[str], filed_paths: dict[str, str] | None = None) -> Product:
        """The product, listed under each of `scopes` (category slugs) and among all products unless
        archived; ProductExists when the id is taken, CategoriesMoved when a category of `filed_paths`
        (slug -> the path `scopes` came from) has another path now."""

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

    def update(
        self,
        current: Product,
        changes: dict[str, Any],
        updated_at: str,
        scopes: list[str],
        filed_paths: dict[str, str] | None = None,
    ) -> Product:
        """The product with `changes` (a None description removes it), listed under `scopes` (none when
        archived); Conflict when it changed since `current` was read, CategoriesMoved when a category of
        `filed_paths` (slug -> the path `scopes` came from) has another path now."""

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


class CheckoutSettingsStore(Protocol):
    """Shipping zones and tax rates (shop.repository.checkout_settings), edited one at a time under a version."""

    def edit_id(self, shard: int) -> str | None:
        """The latest edit's id as copy `shard` holds it, strongly consistent (None: never edited)."""
        ...

    def snapshot(self) -> CheckoutSettings: ...

    def put_zone(self, zone: ShippingZone, *, read_version: int) -> int:
        """Writes the zone as the edit after `read_version`; the new version. VersionMismatch when another edit
        came first."""
        ...

    def put_rate(self, rate: TaxRate, *, read_version: int) -> int: ...

    def put_promotion(self, promotion: Promotion, *, read_version: int) -> int: ...

    def uses(self, promotion: Promotion) -> list[int]:
        """The uses each of a limited promotion's counters holds, strongly consistent."""
        ...

    def counts(self, promotion: Promotion) -> list[int]:
        """The confirmed orders each counter of a promotion without a usage limit holds (the stream's count)."""
        ...

    def promotions_page(self, *, limit: int, next_token: str | None) -> Page[Promotion]:
        """Newest first."""
        ...


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
        cart: CartClaim | None = None,
        *,
        placement: Placement | None = None,
        takes: Mapping[str, Sequence[StockTake]] | None = None,
        attempt: int = 0,
        unpaid: UnpaidLimits | None = None,
        uses: Sequence[PromotionUse] = (),
        settings: SettingsCheck | None = None,
    ) -> Order:
        """The order, its stock taken and the claimed cart (a session's or a customer's) emptied, all or nothing.
        `uses`: the limited promotions' uses it takes (PromotionUseRefused names the one refused); `settings`: the
        checkout's settings it was priced with are still the latest edit's (CheckoutSettingsChanged otherwise).

        A line takes its stock from its product item, or from the places `takes` names for its product
        (flash-sale shards); the order returned records the shards (`stock_taken`).
        ProductNotFound, OutOfStock, StockSourceShort (a place of a product with shards held too little),
        PriceChanged (a line's unit price is no longer the catalogue's); the cart no longer at `cart`'s
        version, or expired: SessionNotFound for a session's, CartChanged for a customer's. Under a placement already claimed: the order placed under it.
        `attempt` numbers a placement's attempts at one order id (each a different write: a retry of the same
        attempt is the same write).
        With `unpaid` (a PENDING_PAYMENT order) the customer's unpaid hold takes the order's id and units in the same
        write, within those limits: UnpaidOrderLimit, with the ids and units it held, when it would pass either.
        """

    def held_unpaid(self, order_ids: Sequence[str]) -> dict[str, tuple[OrderStatus, int]]:
        """The status and units of each of these orders still in the table (an archived one is absent): one read."""

    def release_unpaid(self, customer_id: str, order_ids: Sequence[str], units: int) -> bool:
        """`order_ids` and `units` out of the customer's unpaid hold, only if every id is still in it (False: one
        was released before, nothing written)."""

    def get(self, order_id: str) -> Order:
        """OrderNotFound; OrderArchived (with the archive's key and the owner) once the order is archived;
        ServiceUnavailable while it is being archived."""

    def placed_under(self, customer_id: str, placement_key: str) -> Order | None:
        """The order the customer placed under this Idempotency-Key, None when none was (or its claim expired)."""

    def list_for_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[OrderSummary]:
        """Newest first."""

    def list_by_status(self, status: OrderStatus, *, limit: int, next_token: str | None) -> Page[OrderSummary]:
        """Newest first."""

    def list_confirmed_before(self, cutoff: str, *, limit: int, next_token: str | None) -> Page[OrderPaymentSummary]:
        """The CONFIRMED orders created before `cutoff` (ISO-8601), oldest first, each with its payment's status; a
        token keeps the cutoff of its walk's first page."""

    def change_status(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        updated_at: str,
        restock: Sequence[OrderLine] = (),
        details: StatusDetails = ...,
        expires_at: int | None = None,
        unless_payment: PaymentStatus | None = None,
    ) -> Order:
        """The order in new_status at version + 1 with `details` recorded (shipment, reason, first delivery,
        shipped without its payment held), `restock`'s quantities back in stock (where the order took them: its
        product item or the flash-sale shards it recorded), all or nothing; its TTL set to `expires_at` in the same
        write (None: no TTL). With `unless_payment`, only if the order's payment is not in that status then.

        VersionMismatch when the order is no longer at `order`'s status and version, unless it is
        already at new_status and version + 1 (a retry): then that order. PaymentNotHeld when it is as read but
        its payment is in `unless_payment`'s status (recorded since the read: payment records keep the version).
        OrderNotFound.
        """


class OrderArchive(Protocol):
    """The archive of finished orders (S3), as the order reads see it."""

    def get(self, key: str) -> Order:
        """The archived order at `key` (`archived` true); ServiceUnavailable when the archive does not answer."""


class ArchiveWriter(Protocol):
    """The archive of finished orders, as the stream processor writes it."""

    def put(self, order: Order, *, archived_at: str) -> str:
        """Write the whole order (its history included) and return its object key (deterministic)."""


class CartStore(Protocol):
    """One kind of owner's carts (the sessions', the customers'), each keyed by its owner's id: the line
    operations both carts share."""

    def set_line(
        self,
        owner_id: str,
        *,
        product_id: str,
        name: str,
        unit_price_cents: int,
        quantity: int,
        added_at: str,
        now: int,
        expires_at: int,
    ) -> StoredCart:
        """Put, change or (quantity 0) remove one line and move the expiry to `expires_at`.

        A line keeps its place in the cart when changed. CartFull (a new product in a cart of
        MAX_CART_LINES). No live cart (absent, or expired by `now`): a session's is SessionNotFound; a
        customer's starts anew with the line put (a removal writes nothing).
        """


class SessionStore(CartStore, Protocol):
    """Anonymous sessions: a cart that is created empty, found until it expires, and deleted whole."""

    def create(self, session_id: str, *, created_at: str, expires_at: int) -> StoredCart:
        """An empty cart; Conflict when another session has the id (a re-sent create is not another)."""

    def get(self, session_id: str, *, now: int) -> StoredCart:
        """SessionNotFound, also when it expired by `now` (epoch seconds)."""

    def delete(self, session_id: str) -> None: ...


class AlertStore(Protocol):
    """Admin alerts: written by the stream processor, read by admins."""

    def record(self, alert: Alert) -> bool:
        """Write the alert once: False when an alert with its id (and time) exists already."""

    def newest(self, *, limit: int, next_token: str | None) -> Page[Alert]:
        """Newest first."""


class StockAlertStore(AlertStore, Protocol):
    """The alerts and, per product, the low-stock state they follow (shop.repository.alerts)."""

    def stock_total(self, product_id: str, *, shards_hint: int = 1) -> StockTotal | None:
        """The product's total stock (item + shards), threshold and state: one consistent read; None: no product."""

    def threshold(self, product_id: str) -> int:
        """The product's low_stock_threshold (one eventually consistent read; a product gone: 0, never low)."""

    def claim_low(self, alert: Alert, seen: StockLowState) -> Claim:
        """Mark the product low with `alert` and write the alert, if the state is still as `seen`."""

    def clear_low(self, product_id: str, seen: StockLowState) -> bool:
        """Mark the product not low, if the state is still as `seen`; False when it moved."""

    def follow_item(self, product_id: str, *, low: bool, sequence_number: str, alert: Alert | None = None) -> bool:
        """A product-item record crossed the threshold (down: with its alert): the state follows, unless a
        later record of the item moved it already."""


class CustomerCartStore(CartStore, Protocol):
    """Customer carts (one per customer) and the markers of the sessions merged into them."""

    def get(self, customer_id: str, *, now: int, require_profile: bool = True) -> StoredCart:
        """The live cart, or an empty one (absent or expired by `now`); CustomerNotFound when
        `require_profile` and the customer has no profile."""

    def product_for(self, customer_id: str, product_id: str) -> Product:
        """The product to put in the customer's cart, read with the profile: CustomerNotFound, ProductNotFound."""

    def read_for_merge(self, customer_id: str, session_id: str, *, now: int) -> MergeView:
        """The cart, the live session (None: absent or expired) and an earlier merge of it; CustomerNotFound."""

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
        """The cart holding `lines`, the session deleted and the merge recorded (until
        `marker_expires_at`), all or nothing. CartChanged (the cart moved past `seen`, or this session
        was merged meanwhile), SessionNotFound (the session moved past `session`, expired or went)."""

    def empty(self, customer_id: str, *, updated_at: str) -> None:
        """No lines left (nothing happens without a cart)."""


class SalesStore(Protocol):
    """Per-product daily sales: counted once per order version by the stream processor, read by admins."""

    def apply(self, change: SalesChange) -> bool:
        """Add the change's lines to their (product, day) totals and mark the order version counted, all or
        nothing; False (nothing written) when that version was counted before; OrderEffectsClosed (nothing
        written) when the order is archived. The stream processor counts through OrderEffects.append_history
        (the history entry is the key); this marks the version on its own."""

    def days(self, product_id: str, first: str, last: str) -> list[DaySales]:
        """The product's days from `first` to `last` (YYYY-MM-DD, both included) that have sales, in order."""

    def top(self, day: str, limit: int) -> list[TopSeller]:
        """The day's `limit` products with the most units, most first (equal units: by product id)."""


class SalesCutover(Protocol):
    """When the running release of the stream processor first counted sales on the table."""

    def cutover_at(self, now: str) -> str:
        """The cut-over (ISO-8601), recorded as `now` when this release has none yet; the same for every
        processor of the release (the first to record it wins), read once per instance."""


# -- the stream side -------------------------------------------------------------------------------


class StreamChange(Protocol):
    """One change of a table item as the stream rules read it: keys decoded, images parsed on demand.

    shop.repository.stream_records.StreamRecord reads it from a DynamoDB stream record; tests build their own.
    An unreadable image raises the adapter's MalformedRecord (a ValueError).
    """

    @property
    def event_name(self) -> str:
        """INSERT, MODIFY or REMOVE."""

    @property
    def sequence_number(self) -> str: ...

    @property
    def entity(self) -> str:
        """What the item is: ORDER, SESSION, PRODUCT, CUSTOMER_CART, CATEGORY_MOVE, ..."""

    @property
    def entity_id(self) -> str:
        """The id the item is kept under: the order's, the session's, the customer's for CUSTOMER_CART."""

    @property
    def removed_by_ttl(self) -> bool: ...

    @property
    def new_status(self) -> str | None: ...

    @property
    def old_status(self) -> str | None: ...

    @property
    def created_at(self) -> str:
        """When the write happened (the same on every delivery), ISO-8601."""

    def new_number(self, name: str) -> int | None: ...

    def old_number(self, name: str) -> int | None: ...

    def changed_attributes(self, names: Iterable[str]) -> list[str]:
        """Those of `names` whose value differs between the old and new item."""

    def new_product(self) -> ProductImage: ...

    def new_order(self) -> OrderImage: ...

    def new_move(self) -> MoveImage: ...

    def old_item(self) -> dict[str, Any]:
        """The item as it was before the change, as the table holds it."""

    def old_session(self) -> SessionImage: ...

    def old_customer_cart(self) -> CustomerCartImage: ...


class OrderEffects(Protocol):
    """What the stream processor writes of an order version; every write conditional (a replay writes nothing)."""

    def confirm(self, order_id: str, *, version: int, confirmed_at: str, created_at: str) -> bool:
        """PENDING at `version` -> CONFIRMED; False when the order moved on first (a replay, a cancel)."""

    def begin_batch(self) -> None:
        """A stream batch starts: writes that can wait for its end (the top list's refresh) wait."""

    def settle_batch(self) -> None:
        """The batch's waiting writes; raises when one failed (the batch's counting records fail with it)."""

    def customer_index_current(self, change: OrderSummary) -> bool:
        """Whether the customer's order entry shows exactly this version (written after its notification)."""

    def counted_promotions(self, order_id: str) -> list[str]:
        """The order's promotions without a usage limit (the stream counts their uses), read strongly consistent."""

    # `guarded` (each effect below): the write also checks that the order is not archived (OrderEffectsClosed
    # when it is); False for a fresh record, whose order cannot be archived yet (shop.services.archive_timing).

    def append_history(
        self,
        change: OrderSummary,
        entry: StatusEntry | None = None,
        sales: SalesChange | None = None,
        *,
        guarded: bool = True,
        legacy: bool = True,
    ) -> Recorded:
        """The version's history entry, once; with `sales`, the version's sales counted in the same write, all
        or nothing (the entry is their once-only key: a replay writes and counts nothing). `legacy`: the count
        also checks that an older release (one that kept a sales marker per version) did not count the version on its own sales marker."""

    def notify(
        self,
        change: OrderSummary,
        *,
        kind: str,
        message: str,
        shipment: Shipment | None = None,
        guarded: bool = True,
    ) -> Notification: ...

    def update_customer_index(self, change: OrderSummary, *, guarded: bool = True) -> bool:
        """Newer versions only: an older or repeated change never moves the index backwards."""

    def release_unpaid(self, customer_id: str, order_ids: Sequence[str], units: int) -> bool:
        """An order that left PENDING_PAYMENT out of its customer's unpaid hold (its id and units), only if its id is
        still held: a replayed or reordered record releases nothing (False)."""


class OrderRemains(Protocol):
    """What the order's partition holds once TTL removed the order item."""

    @property
    def archive_key(self) -> str | None:
        """Set when the order is archived already (its marker exists)."""

    @property
    def history(self) -> list[dict[str, Any]]: ...

    @property
    def leftovers(self) -> list[dict[str, Any]]:
        """Everything of the order still there but its marker."""


class ArchivalStore(Protocol):
    """The table side of archiving an order whose TTL passed."""

    def remains(self, order_id: str) -> OrderRemains: ...

    def order(self, removed: Mapping[str, Any], history: list[dict[str, Any]]) -> Order:
        """The whole order from its removed item and its history items."""

    def mark_archived(self, order: Order, *, archive_key: str, archived_at: str) -> bool: ...

    def delete_history(self, order_id: str, history: list[dict[str, Any]]) -> int: ...


class CategoryMoveStore(Protocol):
    """The category side of a category move's steps."""

    def subtree_paths(self, path: str, *, limit: int | None = None) -> list[str]: ...

    def repath(self, paths: list[str], old_prefix: str, new_prefix: str) -> None: ...

    def advance_move(self, move_id: str, step: int, changes: dict[str, Any]) -> bool:
        """The move's next step; False when this step was taken already."""

    def finish_move(self, move_id: str, step: int, slug: str) -> bool: ...

    def listing_keys_page(
        self, slug: str, *, limit: int, cursor: dict[str, Any] | None
    ) -> tuple[list[str], dict[str, Any] | None]: ...

    def get_many(self, slugs: list[str], *, consistent: bool = False) -> dict[str, Category]: ...


class ProductRelisting(Protocol):
    """The product side of a category move: re-file products under their listing scopes."""

    def get_many(self, product_ids: list[str], *, consistent: bool = False) -> dict[str, Product]: ...

    def relist(self, products: list[tuple[Product, list[str]]]) -> list[str]:
        """The ids whose product changed meanwhile (to re-read and re-file)."""


# -- payments -----------------------------------------------------------------------------


class Payments(Protocol):
    """The payment provider: shop.payments.stripe_adapter on Stripe, tests/support/fake_payments.py in memory.

    Every call that changes an intent takes the idempotency key of its order and step
    (shop.models.payments.idempotency_key): a retry with the same key and parameters is the same call, never a
    second charge, capture or refund (where the provider honours keys: Stripe does, localstripe does not).
    Errors: PaymentProviderUnavailable (unreachable, throttled, 5xx: retry), PaymentDeclined (the card),
    PaymentRejected (not possible in the intent's state, unknown intent, key reused with other parameters),
    PaymentMisconfigured (the shop's credentials).
    """

    def create_intent(self, order_id: str, amount_cents: int, currency: str, *, idempotency_key: str) -> PaymentIntent:
        """An intent for `amount_cents`, captured manually later, with the order id in its metadata."""

    def get_intent(self, intent_id: str) -> PaymentIntent: ...

    def capture(self, intent_id: str, *, idempotency_key: str) -> PaymentIntent:
        """The whole authorised amount; PaymentRejected unless the intent requires capture."""

    def cancel(self, intent_id: str, *, idempotency_key: str) -> PaymentIntent:
        """Nothing can be charged on it any more; PaymentRejected once it succeeded (refund instead)."""

    def refund(self, intent_id: str, amount_cents: int, *, idempotency_key: str) -> Refund:
        """Part or all of the captured amount back; PaymentRejected beyond what is left."""

    def refunds(self, intent_id: str) -> list[Refund]:
        """The refunds made on the intent (what a refund step retried after a crash checks before refunding:
        localstripe ignores idempotency keys, so the shop cannot rely on the key alone)."""


class PaymentWebhooks(Protocol):
    """The provider's webhook deliveries, verified."""

    def verify(self, payload: bytes, signature: str | None) -> PaymentEvent:
        """The event of a delivery whose raw body is signed with the endpoint's secret within the provider's
        tolerance; InvalidWebhookSignature (unsigned, forged, stale), InvalidWebhookPayload (not an event)."""


class OrderPayments(Protocol):
    """An order's payment on the table: shop.repository.order_payments. The order's status changes that a payment
    makes (one transaction each, conditional on the order's status and version) and the steps' records on the
    order's `payment` (conditional on the payment's state, so a replayed step records nothing twice)."""

    def current(self, order_id: str, *, consistent: bool = True) -> Order | None:
        """The order item as it is now (a strongly consistent GetItem; `consistent=False`: eventually consistent,
        for a first look that only a settled order ends); None when there is none (never placed, or archived)."""

    def overdue(self, placed_before: str, *, per_shard: int) -> list[tuple[str, int | None]]:
        """(order id, the payment window's end in epoch seconds) of PENDING_PAYMENT orders placed before
        `placed_before` (ISO time), at most `per_shard` from each shard of the status index, oldest first."""

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
        """PENDING_PAYMENT (as read, at its version; holding `intent_id` or no intent yet, when given) ->
        new_status: one conditional update of the order, in one transaction with the stock returns when
        release_stock. STALE: the order changed since it was read."""

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
        """A step's outcome on the order's payment, if the payment is still as `expected` (its status), its refunds
        recorded are at most `at_most_refunded_cents` when given, and no return's refund is recorded when
        `return_refunded_cents` is given; False when it is not (recorded before, or the order is gone)."""

    def record_failed_attempt(self, order_id: str, *, intent_id: str | None, failure: PaymentFailure) -> bool:
        """The latest failed attempt to pay a PENDING_PAYMENT order (holding `intent_id`, or no intent yet); False
        when the order is not waiting, or a report as late or later is recorded."""

    def record_provider_refunds(self, order_id: str, *, refunded_cents: int) -> bool:
        """`refunded_cents` as the provider reports the charge's refunds, if above what is recorded."""

    def record_dispute(self, order_id: str, dispute: PaymentDispute) -> bool:
        """The order's dispute as the provider reports it, if no later report is recorded."""
