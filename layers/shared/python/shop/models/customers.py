from __future__ import annotations

from shop.models.common import Model


class Customer(Model):
    customer_id: str
    email: str
    name: str
    created_at: str
    updated_at: str
