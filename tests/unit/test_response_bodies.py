"""Response bodies written without the model the route declares are byte for byte what that model writes."""

from __future__ import annotations

from typing import Any

import pytest

from shop.http_api.product_schemas import PUBLIC_PRODUCT_FIELDS
from shop.http_api.resolver import json_response
from shop.models import Product
from shop.models.products import PublicProduct

BASE: dict[str, Any] = {
    "product_id": "p1",
    "name": 'Drill \u00e9\u2603 "quoted"',
    "price_cents": 1999,
    "stock": 7,
    "created_at": "2026-01-26T10:00:00.000000Z",
    "updated_at": "2026-01-27T10:00:00.000000Z",
}
PRODUCTS = [
    {**BASE, "category": "tools"},  # stored before categories: category only
    {**BASE, "categories": ["tools", "drills"]},  # category from the first
    {**BASE, "categories": ["tools"], "description": "Sturdy.", "rating_count": 3, "rating_average": 4.33},
    {**BASE, "categories": ["x"], "status": "ARCHIVED", "stock_shards": 8, "low_stock_threshold": 2, "stock": 0},
]


@pytest.mark.parametrize("fields", PRODUCTS)
def test_a_product_answered_as_public_is_public_products_bytes(fields: dict[str, Any]) -> None:
    product = Product.model_validate(fields)
    body = json_response(200, product, include=PUBLIC_PRODUCT_FIELDS).body
    assert body == product.public().model_dump_json()
    assert body == PublicProduct.model_validate(fields).model_dump_json()
    assert "stock_shards" not in body
    assert "low_stock_threshold" not in body


def test_public_products_fields_come_first_in_product_in_the_same_order() -> None:
    public = list(PublicProduct.model_fields)
    assert list(Product.model_fields)[: len(public)] == public
    assert set(public) == PUBLIC_PRODUCT_FIELDS
