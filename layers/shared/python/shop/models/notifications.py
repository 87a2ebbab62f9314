from __future__ import annotations

from shop.models.common import Model


class Notification(Model):
    notification_id: str
    type: str
    order_id: str
    message: str
    created_at: str
