"""Listing entries: a product's adjacency items, one per (listing scope, sort order), and their pages.

A product filed under categories is listed under each of them and every ancestor (its listing
scopes, `shop.models.categories.listing_scopes`), and under ``ALL`` (every active product, newest
first). Each scope has a name and a price entry; price descending reads the price entries backwards.
Entries live in the product's partition (``SK LISTING#<scope>#<order>``) and are indexed on GSI1 under
``LISTING#<scope>#<order>``; they carry what a listing shows and never the stock, so orders do not
rewrite them. An archived product has none (the index is sparse).
"""

from __future__ import annotations

from typing import Any

from shop import keys
from shop.models import Page
from shop.models.products import Product, ProductListing
from shop.repository.queries import gsi1_page

LISTED_FIELDS = ("product_id", "name", "category", "categories", "price_cents", "status", "created_at", "updated_at")
SORT_ORDERS = (keys.BY_NAME, keys.BY_PRICE)


def _sort_value(product: Product, order: str) -> str:
    if order == keys.BY_NAME:
        return keys.name_sort_key(product.name)
    if order == keys.BY_PRICE:
        return keys.price_sort_key(product.price_cents)
    return product.created_at


def _orders_of(scope: str) -> tuple[str, ...]:
    return (keys.BY_NEWEST,) if scope == keys.ALL_PRODUCTS else SORT_ORDERS


def entry_items(product: Product, scopes: list[str]) -> list[dict[str, Any]]:
    """Every listing entry of `product` filed under `scopes` (plus the all-products entry)."""
    body = {"entity": "PRODUCT_LISTING", **product.model_dump(include=set(LISTED_FIELDS), mode="json")}
    return [
        {**keys.listing_entry_key(product.product_id, scope, order, _sort_value(product, order)), **body}
        for scope in [keys.ALL_PRODUCTS, *scopes]
        for order in _orders_of(scope)
    ]


def entry_keys(product_id: str, scopes: list[str], *, with_all: bool = True) -> list[keys.Key]:
    """The table keys of a product's entries under `scopes` (and the all-products entry)."""
    chosen = [keys.ALL_PRODUCTS, *scopes] if with_all else scopes
    return [
        {keys.PK: keys.product_pk(product_id), keys.SK: f"{keys.LISTING_PREFIX}{scope}#{order}"}
        for scope in chosen
        for order in _orders_of(scope)
    ]


def listing_page(
    table: Any, *, scope: str, order: str, descending: bool, limit: int, next_token: str | None
) -> Page[ProductListing]:
    """One Query of one listing's index partition: every item read is returned."""
    return gsi1_page(
        table,
        scope=f"listing:{scope}:{order}:{'desc' if descending else 'asc'}",
        partition=keys.listing_pk(scope, order),
        limit=limit,
        next_token=next_token,
        newest_first=descending,
    ).as_page(ProductListing.model_validate)
