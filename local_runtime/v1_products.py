"""Version 1 product items, as that version wrote them (GSI1 keys on the item, one free-text category,
no listing entries), bulk-loaded with BatchWriteItem: the input of migration 0001's tests and measured run."""

from __future__ import annotations

from typing import Any

from shop import keys
from shop.repository.store import to_item

BATCH = 25


def v1_product_item(number: int, category: str) -> dict[str, Any]:
    product_id = f"V1PRODUCT{number:07d}"
    name = f"Version one product {number}"
    at = f"2025-01-{1 + number % 28:02d}T00:00:00.{number % 1000:03d}Z"
    return {
        **keys.product_key(product_id),
        **keys.product_category_gsi_v1(category, name, product_id),
        "entity": "PRODUCT",
        "product_id": product_id,
        "name": name,
        "category": category,
        "price_cents": 100 + number,
        "description": None,
        "stock": 10,
        "rating_count": 0,
        "rating_sum": 0,
        "created_at": at,
        "updated_at": at,
    }


def load(client: Any, table: str, count: int, *, categories: tuple[str, ...] = ("beans", "unfiled-legacy")) -> None:
    """`count` products, their category alternating over `categories`; unprocessed items sent again."""
    items = [v1_product_item(number, categories[number % len(categories)]) for number in range(count)]
    for start in range(0, len(items), BATCH):
        request: dict[str, Any] = {
            table: [{"PutRequest": {"Item": to_item(item)}} for item in items[start : start + BATCH]]
        }
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
