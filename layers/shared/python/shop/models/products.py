from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import Field, PrivateAttr, model_validator

from shop.limits import DEFAULT_LOW_STOCK_THRESHOLD
from shop.models.common import Model, Timestamp


class ProductStatus(StrEnum):
    ACTIVE = "ACTIVE"
    ARCHIVED = "ARCHIVED"  # out of every listing, readable by id, not orderable


def _categories_from_category(data: Any) -> Any:
    """Products stored before categories had one ``category``: it is their one-element ``categories``."""
    if isinstance(data, dict) and not data.get("categories") and data.get("category"):
        return {**data, "categories": [data["category"]]}
    if isinstance(data, dict) and data.get("categories") and not data.get("category"):
        return {**data, "category": data["categories"][0]}
    return data


class PublicProduct(Model):
    """A product as anyone reads it (GET /products/{id}): no operations data."""

    product_id: str
    name: str
    # Either may be given: `category` is the first of `categories`, for clients of version 1.
    category: str = ""
    categories: list[str] = Field(default_factory=list)
    price_cents: int
    description: str | None = None
    stock: int
    status: ProductStatus = ProductStatus.ACTIVE
    rating_count: int = 0
    rating_average: float | None = None
    created_at: Timestamp
    updated_at: Timestamp

    _from_category = model_validator(mode="before")(_categories_from_category)


class Product(PublicProduct):
    """A product with its operations data, which only admins' answers show."""

    stock_shards: int = Field(
        default=1, description="admin only: flash-sale stock shards (1: the stock is on the product item alone)"
    )
    low_stock_threshold: int = Field(
        default=DEFAULT_LOW_STOCK_THRESHOLD, description="admin only: StockLow fires below it"
    )

    # The repository's: the listing scopes the product's entries are under, and that set's version.
    _listed_in: list[str] = PrivateAttr(default_factory=list)
    _listing_version: int = PrivateAttr(default=0)

    @property
    def listed(self) -> bool:
        return self.status is ProductStatus.ACTIVE

    def public(self) -> PublicProduct:
        """What anyone may read of it."""
        return PublicProduct.model_validate(self.model_dump(include=set(PublicProduct.model_fields)))


class ProductListing(Model):
    """A product as listings show it: what its listing entries carry (no stock, no description)."""

    product_id: str
    name: str
    category: str = ""
    categories: list[str] = Field(default_factory=list)
    price_cents: int
    status: ProductStatus = ProductStatus.ACTIVE
    created_at: Timestamp
    updated_at: Timestamp

    _from_category = model_validator(mode="before")(_categories_from_category)


@dataclass(frozen=True)
class CataloguePrice:
    """What a cart shows of a product: its name and current price."""

    product_id: str
    name: str
    price_cents: int
