from __future__ import annotations

from shop.models.common import Model, Timestamp


class Review(Model):
    product_id: str
    customer_id: str
    rating: int
    title: str
    body: str
    created_at: Timestamp
