from __future__ import annotations

from shop.models.common import Model


class Product(Model):
    product_id: str
    name: str
    category: str
    price_cents: int
    description: str | None = None
    stock: int
    rating_count: int = 0
    rating_average: float | None = None
    created_at: str
    updated_at: str
