"""What the stream processor's rules read of a changed item: the item as a stream image holds it.

Parsed from the table's stream records by `shop.repository.stream_records` (the only code that knows their
wire format); the rules see these models only.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from shop.limits import DEFAULT_LOW_STOCK_THRESHOLD
from shop.models.orders import OrderLine, OrderPayment, OrderReturn, OrderSummary, Shipment


class OrderImage(OrderSummary):
    """The order item as a stream image holds it: one order version (keys and the rest are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    lines: list[OrderLine] = []
    shipment: Shipment | None = None
    status_reason: str | None = None  # the reason given for this version's status change
    shipped_without_payment: bool | None = None  # SHIPPED while its payment was not held (the admin's choice)
    confirmed_at: str | None = None  # when it was confirmed (absent on orders confirmed before it was kept)
    stock_taken: dict[str, dict[str, int]] | None = None  # flash-sale shards taken: product -> label -> qty
    payment: OrderPayment | None = None  # PAYMENTS=stripe: the order's payment as this version holds it
    returns: list[OrderReturn] = []  # the accepted returns, oldest first


class CartItem(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    name: str
    unit_price_cents: int
    quantity: int
    added_at: str = ""


class SessionImage(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    session_id: str
    cart: dict[str, CartItem] = {}
    cart_added: dict[str, str] = {}  # product id -> when the line was added (the cart's order)
    cart_version: int = 0

    def added_at(self, product_id: str) -> str:
        return self.cart_added.get(product_id) or self.cart[product_id].added_at


class ProductImage(BaseModel):
    """The product item as a stream image holds it, with the defaults of items written before the catalogue tree existed
    (no status: ACTIVE; no threshold: DEFAULT_LOW_STOCK_THRESHOLD; one `category`, no `categories`)."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    product_id: str
    name: str
    price_cents: int
    stock: int = 0
    category: str | None = None
    categories: list[str] | None = None
    description: str | None = None
    status: str = "ACTIVE"
    low_stock_threshold: int = DEFAULT_LOW_STOCK_THRESHOLD
    created_at: str = ""
    updated_at: str = ""

    @property
    def category_slugs(self) -> list[str]:
        if self.categories:
            return list(self.categories)
        return [self.category] if self.category else []


class CustomerCartImage(BaseModel):
    """A customer cart item as a stream image holds it (keys and the rest are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    customer_id: str
    cart: dict[str, CartItem] = {}
    cart_added: dict[str, str] = {}
    cart_version: int = 0
    expires_at: int

    def added_at(self, product_id: str) -> str:
        return self.cart_added.get(product_id) or self.cart[product_id].added_at


class MoveImage(BaseModel):
    """The category move item as a stream image holds it: which step of the move to run next."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    move_id: str
    slug: str
    old_path: str
    new_path: str
    phase: str
    step: int
    cursor: dict[str, Any] | None = None
