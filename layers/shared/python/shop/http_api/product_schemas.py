"""Bodies of the products function (shared parts in shop.http_api.schemas)."""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import ConfigDict, Field, StrictInt, model_validator

from shop.http_api.category_schemas import Slug
from shop.http_api.schemas import INTEGRAL, MISSING, Body, OneOfBody, given
from shop.limits import MAX_PRICE_CENTS, MAX_PRODUCT_CATEGORIES, MAX_PRODUCT_NAME_LENGTH, MAX_STOCK, MAX_STOCK_SHARDS
from shop.models import Product, Review
from shop.models.common import Model
from shop.models.products import ProductListing, PublicProduct

Name = Annotated[str, Field(min_length=1, max_length=MAX_PRODUCT_NAME_LENGTH)]
Category = Annotated[Slug, Field(description="shorthand for a one-element categories")]
Categories = Annotated[
    list[Slug],
    Field(min_length=1, max_length=MAX_PRODUCT_CATEGORIES, json_schema_extra={"uniqueItems": True}),
]
Threshold = Annotated[StrictInt, Field(ge=0, le=MAX_STOCK, description="StockLow fires below this stock"), INTEGRAL]


def _unique(categories: list[str]) -> list[str]:
    if len(set(categories)) != len(categories):
        raise ValueError("categories must not repeat")
    return categories


Description = Annotated[str, Field(max_length=4000)]
PriceCents = Annotated[StrictInt, Field(ge=0, le=MAX_PRICE_CENTS), INTEGRAL]


Stock = Annotated[StrictInt, Field(ge=0, le=MAX_STOCK), INTEGRAL]


class _NewProduct(Body):
    name: Name
    price_cents: PriceCents
    description: Description | None = None
    stock: Stock = 0
    low_stock_threshold: Threshold | MISSING = MISSING


class ProductInCategories(_NewProduct):
    """A new product filed under 1 to 5 existing categories."""

    categories: Categories


class ProductInCategory(_NewProduct):
    """A new product filed under one existing category (as version 1 had it)."""

    category: Category


class ProductIn(_NewProduct, OneOfBody):
    """Exactly one of ``categories`` (1 to 5 existing slugs) or ``category`` (one slug, as version 1 had it)."""

    ALTERNATIVES = (ProductInCategories, ProductInCategory)

    category: Category | MISSING = MISSING
    categories: Categories | MISSING = MISSING

    @model_validator(mode="after")
    def _one_way_to_file(self) -> ProductIn:
        if ("category" in self.model_fields_set) == ("categories" in self.model_fields_set):
            raise ValueError("give exactly one of category or categories")
        _unique(given(self.categories) or [])
        return self

    def filed_under(self) -> list[str]:
        return given(self.categories) or [str(given(self.category))]


class ProductPatch(Body):
    """Any catalogue field but stock, at least one; only ``description`` may be null (removes it).
    ``category`` is shorthand for a one-element ``categories``; not both."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "not": {"required": ["category", "categories"]}})

    name: Name | MISSING = MISSING
    category: Category | MISSING = MISSING
    categories: Categories | MISSING = MISSING
    price_cents: PriceCents | MISSING = MISSING
    description: Description | MISSING | None = MISSING
    low_stock_threshold: Threshold | MISSING = MISSING

    @model_validator(mode="after")
    def _something(self) -> ProductPatch:
        if not self.model_fields_set:
            raise ValueError("give at least one of name, categories, price_cents, description, low_stock_threshold")
        if {"category", "categories"} <= self.model_fields_set:
            raise ValueError("give category or categories, not both")
        _unique(given(self.categories) or [])
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
    """Listing entries: what a listing shows of a product (no stock; GET /products/{id} has it)."""

    items: list[ProductListing]
    next_token: str | None


class ReviewPage(Model):
    items: list[Review]
    next_token: str | None


# What GET /products/{id} answers of a Product: PublicProduct's fields, which come first and in the same order in
# Product (its subclass), so serialising these of the Product writes the bytes PublicProduct would, without
# building a PublicProduct per request, or its validator and serialiser at a cold start.
PUBLIC_PRODUCT_FIELDS: Final = set(PublicProduct.model_fields)  # never changed

__all__ = [
    "PUBLIC_PRODUCT_FIELDS",
    "Product",
    "ProductIn",
    "ProductInCategories",
    "ProductInCategory",
    "ProductListing",
    "ProductPage",
    "ProductPatch",
    "PublicProduct",
    "Review",
    "ReviewIn",
    "ReviewPage",
    "StockIn",
    "StockOut",
    "StockShardsIn",
    "StockShardsOut",
]
