from __future__ import annotations

from shop.models.common import Model, Timestamp
from shop.models.orders import Shipment


class Notification(Model):
    notification_id: str
    type: str
    order_id: str
    message: str
    created_at: Timestamp
    shipment: Shipment | None = None  # ORDER_STATUS_CHANGED to SHIPPED: carrier, tracking number, when
