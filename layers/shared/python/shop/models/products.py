from __future__ import annotations

from dataclasses import dataclass

from shop.models.common import Model


class Product(Model):
    product_id: str
    name: str
    category: str
    price_cents: int
    description: str | None = None
    stock: int
    stock_shards: int = 1  # flash-sale stock shards (1: the stock is on the product item alone)
    rating_count: int = 0
    rating_average: float | None = None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class CataloguePrice:
    """What a cart shows of a product: its name and current price."""

    product_id: str
    name: str
    price_cents: int
