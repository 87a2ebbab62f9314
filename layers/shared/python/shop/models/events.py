"""The events the shop publishes on its EventBridge bus: sources, detail types and each detail's shape.

Delivery is at least once; `id` is deterministic (`<order_id>:<version>`, `<session_id>:<cart_version>`,
`customer:<customer_id>:<expires_at>`)
so consumers can dedupe a redelivered event. The details are TypedDicts, not pydantic models: they
are built from images already validated, go out as JSON as they are, and cost nothing at import
(order_events' cold start).
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
    CART_ABANDONED = "CartAbandoned"  # source shop.sessions, detail CartAbandoned or CustomerCartAbandoned


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


class CustomerCartAbandoned(TypedDict):
    """A customer cart expired (TTL, 30 days after its last change) with lines: in the order they were added.

    Same detail type as a session's (CartAbandoned); `customer_id` instead of `session_id` tells them apart.
    """

    id: str  # customer:<customer_id>:<expires_at epoch seconds> - one per cart life, as expiry only moves later
    customer_id: str
    lines: list[AbandonedLine]
    subtotal_cents: int
