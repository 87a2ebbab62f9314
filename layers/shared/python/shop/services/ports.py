"""The stores the services depend on: what each rule needs of persistence, and no more (ports).

shop.repository implements them on the DynamoDB table; tests/support/memory_store.py implements them
in memory for the rule tests (tests/unit). The errors a method raises are part of its contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from shop.models import Customer, Notification, Order, OrderLine, OrderStatus, OrderSummary, Page, Product, Review
from shop.models.orders import Placement, SessionClaim
from shop.models.products import CataloguePrice
from shop.models.sessions import StoredSession


class ProductStore(Protocol):
    """The catalogue as the catalogue service edits it."""

    def create(self, product: Product) -> Product:
        """ProductExists when the id is taken."""

    def get(self, product_id: str) -> Product:
        """ProductNotFound."""

    def list_by_category(self, category: str, *, limit: int, next_token: str | None) -> Page[Product]: ...

    def update(self, current: Product, changes: dict[str, Any], updated_at: str) -> Product:
        """The product with `changes` (a None description removes it); Conflict when it changed since
        `current` was read."""

    def adjust_stock(self, product_id: str, delta: int) -> int:
        """The new stock, never below 0 (InsufficientStock) nor above MAX_STOCK (StockLimitExceeded); applied
        once however often the request is re-sent. ProductNotFound."""

    def add_review(self, review: Review) -> Review:
        """The review counted in the product's rating; ProductNotFound, AlreadyReviewed (one per customer)."""

    def reviews_of_product(self, product_id: str, *, limit: int, next_token: str | None) -> Page[Review]:
        """Highest rating first, then newest; ProductNotFound."""

    def reviews_of_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Review]: ...


class ProductPrices(Protocol):
    """What orders and carts read of the catalogue."""

    def get(self, product_id: str) -> Product:
        """ProductNotFound."""

    def get_many(self, product_ids: list[str]) -> dict[str, Product]:
        """The products that exist, by id."""

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
    def place(self, order: Order, session: SessionClaim | None = None, *, placement: Placement | None = None) -> Order:
        """The order, its stock taken and the session's cart emptied, all or nothing.

        ProductNotFound, OutOfStock, PriceChanged (a line's unit price is no longer the catalogue's),
        SessionNotFound (expired, or its cart changed since `session` was read). Under a placement
        already claimed: the order placed under it.
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
        expires_at: int | None = None,
    ) -> Order:
        """The order in new_status at version + 1, with `restock`'s quantities back in stock, all or nothing;
        its TTL set to `expires_at` in the same write (None: no TTL).

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
