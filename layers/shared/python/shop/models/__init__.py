"""Pydantic v2 models of the shop's entities (the domain's vocabulary).

`events` (the EventBridge event contract, used by order_events only) is imported from its module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shop.runtime.lazy_exports import exports

if TYPE_CHECKING:
    from shop.models.common import Page
    from shop.models.customers import Customer
    from shop.models.notifications import Notification
    from shop.models.orders import (
        ORDER_TRANSITIONS,
        OWNER_ONLY_STATUSES,
        PAYMENT_ONLY_STATUSES,
        Order,
        OrderLine,
        OrderStatus,
        OrderSummary,
        Shipment,
        ShippingAddress,
        StatusDetails,
        StatusEntry,
    )
    from shop.models.products import Product
    from shop.models.reviews import Review
    from shop.models.sessions import CartLine, Session

_WHERE = {
    "Page": "shop.models.common",
    "Customer": "shop.models.customers",
    "Notification": "shop.models.notifications",
    "ORDER_TRANSITIONS": "shop.models.orders",
    "OWNER_ONLY_STATUSES": "shop.models.orders",
    "PAYMENT_ONLY_STATUSES": "shop.models.orders",
    "Order": "shop.models.orders",
    "OrderLine": "shop.models.orders",
    "OrderStatus": "shop.models.orders",
    "OrderSummary": "shop.models.orders",
    "Shipment": "shop.models.orders",
    "ShippingAddress": "shop.models.orders",
    "StatusDetails": "shop.models.orders",
    "StatusEntry": "shop.models.orders",
    "Product": "shop.models.products",
    "Review": "shop.models.reviews",
    "CartLine": "shop.models.sessions",
    "Session": "shop.models.sessions",
}

__all__ = [
    "ORDER_TRANSITIONS",
    "OWNER_ONLY_STATUSES",
    "PAYMENT_ONLY_STATUSES",
    "CartLine",
    "Customer",
    "Notification",
    "Order",
    "OrderLine",
    "OrderStatus",
    "OrderSummary",
    "Page",
    "Product",
    "Review",
    "Session",
    "Shipment",
    "ShippingAddress",
    "StatusDetails",
    "StatusEntry",
]


if not TYPE_CHECKING:  # mypy reads the imports above; at run time each name loads its module on first use
    __getattr__ = exports(__name__, _WHERE)
