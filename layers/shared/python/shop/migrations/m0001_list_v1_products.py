"""0001: file the products of version 1 into version 2's listings.

A version 1 product item carries GSI1 keys itself (``CATEGORY#<category>`` / ``<name>#<id>``: its one
category's listing by name) and has no listing entries, no ``listed_in`` and no ``listing_version``.
Its change, one transaction conditional on the item being as scanned and still of version 1: the
listing entries (under ALL, and under its category and that category's ancestors when the category
exists in the tree), ``categories``/``listed_in``/``listing_version`` set, the GSI1 keys removed.
An edit racing the migration either lands first (it removes the GSI1 keys: the migration's condition
fails, the edit filed the product) or reads a version the migration bumped (its condition fails: 409).
A category the tree does not hold (version 1 categories were free text) lists the product under ALL
only; the operator re-files it with a PATCH.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shop import keys
from shop.migrations.base import Lookups
from shop.migrations.changes import Change, Put, Update
from shop.models.categories import listing_scopes
from shop.repository.listings import entry_items
from shop.repository.products import product_from_item

LEGACY_GSI_PREFIX = keys.category_pk("")


def is_version_1_product(item: Mapping[str, Any]) -> bool:
    return (
        item.get(keys.SK) == keys.PRODUCT_SK
        and str(item.get(keys.PK, "")).startswith(keys.product_pk(""))
        and str(item.get(keys.GSI1PK, "")).startswith(LEGACY_GSI_PREFIX)
        and "listing_version" not in item
    )


class ListVersion1Products:
    name = "0001-list-version-1-products"
    description = "file version 1 products (GSI1 keys on the item) into version 2's listing entries"

    def context(self, items: list[dict[str, Any]], lookups: Lookups) -> Mapping[str, Any]:
        slugs = sorted({str(item.get("category", "")) for item in items if is_version_1_product(item)} - {""})
        return {"paths": lookups.category_paths(slugs) if slugs else {}}

    def plan(self, item: dict[str, Any], context: Mapping[str, Any]) -> Change | None:
        if not is_version_1_product(item):
            return None
        product = product_from_item(item)
        path = context["paths"].get(product.category)
        filed = [product.category] if path else []
        scopes = listing_scopes([path]) if path and product.listed else []
        product = product.model_copy(update={"categories": filed or product.categories})
        update = Update(
            key=keys.product_key(product.product_id),
            expression=(
                f"SET categories = :categories, listed_in = :scopes, listing_version = :version "
                f"REMOVE {keys.GSI1PK}, {keys.GSI1SK}"
            ),
            condition="attribute_exists(GSI1PK) AND attribute_not_exists(listing_version) AND updated_at = :seen",
            values={"categories": product.categories, "scopes": scopes, "version": 1, "seen": product.updated_at},
        )
        entries = entry_items(product, scopes) if product.listed else []
        return Change((update, *(Put(entry) for entry in entries)))
