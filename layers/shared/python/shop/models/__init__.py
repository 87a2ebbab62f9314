"""Pydantic v2 models of the shop's entities (the domain's vocabulary).

`events` (the EventBridge event contract, used by order_events only) is imported from its module.
"""

from shop.models.common import Page
from shop.models.customers import Customer
from shop.models.notifications import Notification
from shop.models.orders import (
    ORDER_TRANSITIONS,
    OWNER_ONLY_STATUSES,
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

__all__ = [
    "ORDER_TRANSITIONS",
    "OWNER_ONLY_STATUSES",
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
