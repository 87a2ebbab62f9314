"""Bodies of the products function (shared parts in shop.http_api.schemas)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, StrictInt, model_validator

from shop.http_api.schemas import INTEGRAL, MISSING, Body
from shop.limits import MAX_CATEGORY_LENGTH, MAX_PRICE_CENTS, MAX_PRODUCT_NAME_LENGTH, MAX_STOCK, MAX_STOCK_SHARDS
from shop.models import Product, Review
from shop.models.common import Model

Name = Annotated[str, Field(min_length=1, max_length=MAX_PRODUCT_NAME_LENGTH)]
Category = Annotated[str, Field(min_length=1, max_length=MAX_CATEGORY_LENGTH)]
Description = Annotated[str, Field(max_length=4000)]
PriceCents = Annotated[StrictInt, Field(ge=0, le=MAX_PRICE_CENTS), INTEGRAL]


class ProductIn(Body):
    name: Name
    category: Category
    price_cents: PriceCents
    description: Description | None = None
    stock: Annotated[StrictInt, Field(ge=0, le=MAX_STOCK), INTEGRAL] = 0


class ProductPatch(Body):
    """Any catalogue field but stock, at least one; only ``description`` may be null (removes it)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    name: Name | MISSING = MISSING
    category: Category | MISSING = MISSING
    price_cents: PriceCents | MISSING = MISSING
    description: Description | MISSING | None = MISSING

    @model_validator(mode="after")
    def _something(self) -> ProductPatch:
        if not self.model_fields_set:
            raise ValueError("give at least one of name, category, price_cents, description")
        return self

    def changes(self) -> dict[str, Any]:
        return self.model_dump(include=self.model_fields_set)


class StockIn(Body):
    delta: Annotated[StrictInt, Field(ge=-MAX_STOCK, le=MAX_STOCK), INTEGRAL]


class StockOut(Model):
    product_id: str
    stock: int


class StockShardsIn(Body):
    """How many stock shards the product's stock is spread over; 1 puts it all back on the product."""

    shards: Annotated[StrictInt, Field(ge=1, le=MAX_STOCK_SHARDS), INTEGRAL]


class StockShardsOut(Model):
    product_id: str
    stock: int = Field(description="all of the product's stock: the shards' and the product item's")
    stock_shards: int
    shards: list[int] = Field(description="each shard's stock, shard 0 first; empty when not sharded")
    unsharded_stock: int = Field(description="stock on the product item itself (0 right after spreading)")


class ReviewIn(Body):
    rating: Annotated[StrictInt, Field(ge=1, le=5), INTEGRAL]
    title: str = Field(min_length=1, max_length=200)
    body: str = Field(min_length=1, max_length=4000)


class ProductPage(Model):
    items: list[Product]
    next_token: str | None


class ReviewPage(Model):
    items: list[Review]
    next_token: str | None


__all__ = [
    "Product",
    "ProductIn",
    "ProductPage",
    "ProductPatch",
    "Review",
    "ReviewIn",
    "ReviewPage",
    "StockIn",
    "StockOut",
    "StockShardsIn",
    "StockShardsOut",
]
