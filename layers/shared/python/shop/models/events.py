"""The events the shop publishes on its EventBridge bus: sources, detail types and each detail's shape.

Delivery is at least once; `id` is deterministic (`<order_id>:<version>`, `<session_id>:<cart_version>`)
so consumers can dedupe a redelivered event. The details are TypedDicts, not pydantic models: they
are built from images already validated, go out as JSON as they are, and cost nothing at import
(order_events' cold start).
"""

from __future__ import annotations

from enum import StrEnum
from typing import NotRequired, TypedDict


class Source(StrEnum):
    ORDERS = "shop.orders"
    SESSIONS = "shop.sessions"


class DetailType(StrEnum):
    ORDER_CONFIRMED = "OrderConfirmed"  # source shop.orders, detail OrderChange
    ORDER_STATUS_CHANGED = "OrderStatusChanged"  # source shop.orders, detail OrderChange
    CART_ABANDONED = "CartAbandoned"  # source shop.sessions, detail CartAbandoned
    ORDER_REFUND_DUE = "OrderRefundDue"  # source shop.orders, detail OrderRefundDue


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
    shipment: NotRequired[ShipmentDetail]  # SHIPPED only
    reason: NotRequired[str]  # RETURN_REQUESTED: the customer's; DELIVERED after a return: the rejection's


class ShipmentDetail(TypedDict):
    carrier: str
    tracking_number: str
    shipped_at: str


class OrderRefundDue(TypedDict):
    """A return was accepted (RETURNED): every line is back in stock and the whole total is to be refunded."""

    id: str  # <order_id>:<version>
    order_id: str
    customer_id: str
    amount_cents: int
    returned_at: str


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
