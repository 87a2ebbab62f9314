"""The events the shop publishes on its EventBridge bus: sources, detail types and each detail's shape.

Each detail's `id` is deterministic, for consumers to dedupe at-least-once delivery. The details are TypedDicts,
not pydantic models (docs/decisions.md, "Stream processor").
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypedDict


class Source(StrEnum):
    ORDERS = "shop.orders"
    SESSIONS = "shop.sessions"


class DetailType(StrEnum):
    ORDER_CONFIRMED = "OrderConfirmed"  # source shop.orders, detail OrderChange
    ORDER_STATUS_CHANGED = "OrderStatusChanged"  # source shop.orders, detail OrderChange
    CART_ABANDONED = "CartAbandoned"  # source shop.sessions, detail CartAbandoned


class OrderChange(TypedDict):
    """One order version whose status changed."""

    id: str  # <order_id>:<version>
    order_id: str
    customer_id: str
    status: str
    previous_status: str | None
    version: int
    total_cents: int
    line_count: int
    changed_at: str


class AbandonedLine(TypedDict):
    product_id: str
    name: str
    unit_price_cents: int
    quantity: int


class CartAbandoned(TypedDict):
    """A session expired (TTL) with a non-empty cart: its lines in the order they were added."""

    id: str  # <session_id>:<cart_version>
    session_id: str
    lines: list[AbandonedLine]
    subtotal_cents: int
