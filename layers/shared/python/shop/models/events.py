"""The events the shop publishes on its EventBridge bus: sources, detail types and each detail's shape.

Each detail's `id` is deterministic, for consumers to dedupe at-least-once delivery. The details are TypedDicts,
not pydantic models (docs/decisions.md, "Stream processor").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NotRequired, TypedDict


class Source(StrEnum):
    ORDERS = "shop.orders"
    SESSIONS = "shop.sessions"
    PRODUCTS = "shop.products"


class DetailType(StrEnum):
    ORDER_CONFIRMED = "OrderConfirmed"  # source shop.orders, detail OrderChange
    ORDER_STATUS_CHANGED = "OrderStatusChanged"  # source shop.orders, detail OrderChange
    CART_ABANDONED = "CartAbandoned"  # source shop.sessions, detail CartAbandoned or CustomerCartAbandoned
    PRODUCT_CREATED = "ProductCreated"  # source shop.products, detail ProductChange
    PRODUCT_UPDATED = "ProductUpdated"  # source shop.products, detail ProductChange
    PRODUCT_ARCHIVED = "ProductArchived"  # source shop.products, detail ProductChange
    STOCK_LOW = "StockLow"  # source shop.products, detail StockLow
    ORDER_REFUND_DUE = "OrderRefundDue"  # source shop.orders, detail OrderRefundDue (orders without a payment)
    ORDER_REFUNDED = "OrderRefunded"  # source shop.orders, detail OrderRefunded (PAYMENTS=stripe: refund made)
    ORDER_EXPIRED = "OrderExpired"  # source shop.orders, detail OrderExpired (unpaid within the payment window)
    ORDER_PAYMENT_LAPSED = "OrderPaymentLapsed"  # source shop.orders, detail OrderPaymentLapsed
    ORDER_DISPUTED = "OrderDisputed"  # source shop.orders, detail OrderDisputed


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


class OrderRefunded(TypedDict):
    """A return accepted (RETURNED) of a paid order: the provider refunded `amount_cents` (from the stored order)."""

    id: str  # <order_id>:<version> of the RETURNED version
    order_id: str
    customer_id: str
    amount_cents: int
    currency: str
    returned_at: str


class OrderRefundedAtProvider(TypedDict):
    """A refund made at the payment provider (its dashboard), not by a return: recorded on the order's payment."""

    id: str  # <order_id>:refunded:<refunded_cents>, everything refunded once it was recorded
    order_id: str
    customer_id: str
    amount_cents: int  # this refund: the rise in what is refunded
    refunded_cents: int  # everything refunded on the order's charge
    currency: str
    origin: str  # "provider"
    recorded_at: str


class OrderPaymentLapsed(TypedDict):
    """The provider cancelled a confirmed order's authorisation before it was captured: no money is held."""

    id: str  # <order_id>:lapsed (a payment lapses once)
    order_id: str
    customer_id: str
    status: str  # the order's status when it was recorded
    amount_cents: int
    currency: str
    recorded_at: str


class OrderDisputed(TypedDict):
    """A dispute (chargeback) on the order's charge, opened, changed or closed."""

    id: str  # <order_id>:<dispute_id>:<dispute status>
    order_id: str
    customer_id: str
    dispute_id: str
    dispute_status: str
    reason: NotRequired[str]
    amount_cents: int
    currency: str
    updated_at: str


class OrderExpired(TypedDict):
    """An unpaid order's payment window closed: its stock is back and its payment intent is cancelled."""

    id: str  # <order_id>:<version> of the EXPIRED version
    order_id: str
    customer_id: str
    total_cents: int
    expired_at: str


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


class ProductChange(TypedDict):
    """A product created, its catalogue fields changed, or archived: the product as the change left it.

    Stock moves alone publish nothing (every order moves it); StockLow reports the moves that matter.
    """

    id: str  # <product_id>:<sequence number of the stream record>:<created|updated|archived>
    product_id: str
    name: str
    categories: list[str]
    price_cents: int
    description: str | None
    status: str  # ACTIVE or ARCHIVED
    stock: int
    low_stock_threshold: int
    changed: list[str]  # the catalogue fields this change set ([] for ProductCreated)
    changed_at: str  # the product's updated_at


class StockLow(TypedDict):
    """A product's stock crossed below its low_stock_threshold (once per crossing, not per order below it)."""

    id: str  # <product_id>:<sequence number of the stream record>:stock-low, also the alert's id
    product_id: str
    name: str
    stock: int
    previous_stock: int
    low_stock_threshold: int
    at: str  # when the crossing write happened (the stream record's creation time)


class CustomerCartAbandoned(TypedDict):
    """A customer cart expired (TTL, 30 days after its last change) with lines: in the order they were added.

    Same detail type as a session's (CartAbandoned); `customer_id` instead of `session_id` tells them apart.
    """

    id: str  # customer:<customer_id>:<expires_at epoch seconds> - one per cart life, as expiry only moves later
    customer_id: str
    lines: list[AbandonedLine]
    subtotal_cents: int


@dataclass(frozen=True)
class Event:
    """One domain event. `detail["id"]` is deterministic so consumers can dedupe redeliveries."""

    source: str
    detail_type: str
    detail: dict[str, Any]

    def entry(self, bus_name: str) -> dict[str, Any]:
        return {
            "EventBusName": bus_name,
            "Source": self.source,
            "DetailType": self.detail_type,
            "Detail": json.dumps(self.detail, separators=(",", ":"), sort_keys=True),
        }
