from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import Field

from shop.models.common import Model
from shop.models.pricing import line_total


class OrderStatus(StrEnum):
    PENDING = "PENDING"
    CONFIRMED = "CONFIRMED"
    SHIPPED = "SHIPPED"
    DELIVERED = "DELIVERED"
    CANCELLED = "CANCELLED"


ORDER_TRANSITIONS: dict[OrderStatus, frozenset[OrderStatus]] = {
    OrderStatus.PENDING: frozenset({OrderStatus.CONFIRMED, OrderStatus.CANCELLED}),
    OrderStatus.CONFIRMED: frozenset({OrderStatus.SHIPPED, OrderStatus.CANCELLED}),
    OrderStatus.SHIPPED: frozenset({OrderStatus.DELIVERED}),
    OrderStatus.DELIVERED: frozenset(),
    OrderStatus.CANCELLED: frozenset(),
}


class ShippingAddress(Model):
    name: str = Field(min_length=1, max_length=200)
    line1: str = Field(min_length=1, max_length=200)
    line2: str | None = Field(default=None, max_length=200)
    city: str = Field(min_length=1, max_length=100)
    postal_code: str = Field(min_length=1, max_length=20)
    country: str = Field(pattern=r"^[A-Z]{2}$")


class OrderLine(Model):
    product_id: str
    name: str
    unit_price_cents: int
    quantity: int
    line_total_cents: int

    @classmethod
    def priced(cls, product_id: str, name: str, unit_price_cents: int, quantity: int) -> OrderLine:
        """The line at this unit price, its total computed by the one rule."""
        return cls(
            product_id=product_id,
            name=name,
            unit_price_cents=unit_price_cents,
            quantity=quantity,
            line_total_cents=line_total(unit_price_cents, quantity),
        )


class StatusEntry(Model):
    status: OrderStatus
    at: str


class OrderSummary(Model):
    order_id: str
    customer_id: str
    status: OrderStatus
    version: int
    total_cents: int
    created_at: str
    updated_at: str


class Order(OrderSummary):
    lines: list[OrderLine]
    shipping_address: ShippingAddress
    history: list[StatusEntry]
    archived: bool = Field(
        default=False, description="true when the order is read from the archive (S3): it can no longer change"
    )


@dataclass(frozen=True)
class SessionClaim:
    """The session whose cart is being checked out, as it was read; `now` is the checkout's epoch second."""

    session_id: str
    cart_version: int
    now: int


@dataclass(frozen=True)
class Placement:
    """The customer's Idempotency-Key an order is placed under, claimed until `expires_at` (epoch s)."""

    key: str
    expires_at: int
