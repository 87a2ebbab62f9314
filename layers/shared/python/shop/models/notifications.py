from __future__ import annotations

from pydantic import BaseModel


class Notification(BaseModel):
    notification_id: str
    type: str
    order_id: str
    message: str
    created_at: str
