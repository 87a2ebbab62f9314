"""The catalogue: products filed in categories and listed, archival, stock adjustments and reviews."""

from __future__ import annotations

from typing import Any

from shop import clock, errors, ids
from shop.limits import DEFAULT_LOW_STOCK_THRESHOLD
from shop.models import Page, Product, Review
from shop.models.categories import ListingOrder, listing_scopes
from shop.models.products import ProductListing, ProductStatus
from shop.models.stock import StockLayout
from shop.services.actor import Actor
from shop.services.hot_products import HotProductCache, Kind
from shop.services.ports import CategoryStore, ProductStore

# GET /products?category=&sort=: the listing read and its direction.
SORTS = {
    "name": (ListingOrder.NAME, False),
    "price_asc": (ListingOrder.PRICE, False),
    "price_desc": (ListingOrder.PRICE, True),
}

# Reads and spreads one POST /products/{id}/stock-shards tries while orders keep taking stock.
STOCK_SPREAD_ATTEMPTS = 3
# Reads and writes one product create or edit tries while a category move re-files it (or re-paths its categories).
FILING_ATTEMPTS = 3


class CatalogService:
    def __init__(
        self,
        *,
        products: ProductStore,
        categories: CategoryStore,
        hot: HotProductCache | None = None,
    ) -> None:
        """The rules over `products` and `categories`. `hot` keeps flash-sale products' reads a moment (this
        instance's own cache)."""
        self.products = products
        self.categories = categories
        self.hot = hot if hot is not None else HotProductCache()

    def _scopes(self, categories: list[str]) -> tuple[list[str], dict[str, str]]:
        """The listings a product filed in `categories` appears in: each and every ancestor (one BatchGetItem),
        and the paths they come from (the write checks them); CategoryNotFound names the categories that do
        not exist."""
        found = self.categories.get_many(categories)
        missing = [slug for slug in categories if slug not in found]
        if missing:
            raise errors.CategoryNotFound(missing)
        paths = {slug: found[slug].path for slug in categories}
        return listing_scopes(list(paths.values())), paths

    def create(
        self,
        actor: Actor,
        *,
        name: str,
        price_cents: int,
        description: str | None,
        stock: int,
        category: str | None = None,
        categories: list[str] | None = None,
        low_stock_threshold: int = DEFAULT_LOW_STOCK_THRESHOLD,
    ) -> Product:
        """BatchGetItem of the categories, then one transaction: the product and its listing entries."""
        actor.require_admin()
        filed = list(dict.fromkeys(categories or ([category] if category else [])))
        if not filed:
            raise errors.InvalidRequest("a product needs a category", {"categories": "give 1 to 5 categories"})
        now = clock.iso_now()
        product = Product(
            product_id=ids.new_id(),
            name=name,
            category=filed[0],
            categories=filed,
            price_cents=price_cents,
            description=description,
            stock=stock,
            low_stock_threshold=low_stock_threshold,
            created_at=now,
            updated_at=now,
        )
        for attempt in range(FILING_ATTEMPTS):
            scopes, paths = self._scopes(filed)
            try:
                return self.products.create(product, scopes, paths)
            except errors.CategoriesMoved:
                if attempt == FILING_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def get(self, product_id: str) -> Product:
        """The product; a hot one (flash sale) as this instance read it at most HOT_PRODUCT_CACHE_SECONDS ago."""
        scope = self.products.cache_scope()
        cached = self.hot.get(scope, Kind.VIEW, product_id)
        if cached is not None:
            return cached
        return self.hot.keep(scope, Kind.VIEW, self.products.get(product_id))

    def _forget(self, product_id: str) -> None:
        """This instance's next read of the product goes to the store (an admin changed it here)."""
        self.hot.drop(self.products.cache_scope(), product_id)

    def list_all(self, *, limit: int, next_token: str | None) -> Page[ProductListing]:
        return self.products.list_all(limit=limit, next_token=next_token)

    def list_by_category(
        self, category: str, *, sort: str = "name", limit: int, next_token: str | None
    ) -> Page[ProductListing]:
        """The active products of the category's subtree, each once: one Query; only an empty first page
        reads the category too (GetItem), to tell an empty category from an unknown one (404)."""
        order, descending = SORTS[sort]
        page = self.products.list_by_category(
            category, order, descending=descending, limit=limit, next_token=next_token
        )
        if not page.items and not next_token:
            self.categories.get(category)
        return page

    def update(self, actor: Actor, product_id: str, changes: dict[str, Any]) -> Product:
        """GetItem of the product and a BatchGetItem of its categories, then one transaction: the product and
        its listing entries, rewritten whole under the scopes its categories have now (never the scopes it
        was stored with: a category move may be re-filing it), conditional on those categories' paths.

        A category move that re-paths one of its categories, or re-files the product, between the reads and
        the write cancels the write; it is read again and re-applied (FILING_ATTEMPTS in all) when no other
        edit came in between (its `updated_at` unchanged), Conflict otherwise."""
        actor.require_admin()
        changes = dict(changes)
        if "category" in changes and "categories" not in changes:
            changes["categories"] = [changes["category"]]
        if "categories" in changes:
            changes["categories"] = list(dict.fromkeys(changes["categories"]))
            changes["category"] = changes["categories"][0]
        try:
            current = self.products.get(product_id)
            for attempt in range(FILING_ATTEMPTS):
                scopes, paths = self._scopes(changes.get("categories", current.categories))
                try:
                    return self.products.update(current, changes, clock.iso_now(), scopes, paths)
                except errors.Conflict as conflict:
                    if attempt == FILING_ATTEMPTS - 1:
                        raise
                    if not isinstance(conflict, errors.CategoriesMoved):
                        seen = current.updated_at
                        current = self.products.get(product_id)
                        if current.updated_at != seen:  # another edit came in between: the caller decides
                            raise
            raise AssertionError("unreachable")
        finally:
            self._forget(product_id)

    def archive(self, actor: Actor, product_id: str) -> Product:
        """ARCHIVED: out of every listing (its entries deleted), still readable by id. Archiving an archived
        product answers it as it is."""
        actor.require_admin()
        current = self.products.get(product_id)
        if current.status is ProductStatus.ARCHIVED:
            return current
        try:
            return self.products.archive(current, clock.iso_now())
        finally:
            self._forget(product_id)

    def adjust_stock(self, actor: Actor, product_id: str, delta: int) -> int:
        actor.require_admin()
        try:
            return self.products.adjust_stock(product_id, delta)
        finally:
            self._forget(product_id)

    def set_stock_shards(self, actor: Actor, product_id: str, shards: int) -> StockLayout:
        """Spread the product's whole stock evenly over `shards` flash-sale shards (1: back onto the product
        item). Repeating it changes nothing; stock that moved between the read and the write (orders keep
        coming) is read again, STOCK_SPREAD_ATTEMPTS times in all, then Conflict."""
        actor.require_admin()
        self._forget(product_id)
        for attempt in range(STOCK_SPREAD_ATTEMPTS):
            seen = self.products.stock_layout(product_id)
            if seen.archived:
                raise errors.ProductUnavailable([product_id])
            try:
                return self.products.spread_stock(seen, shards)
            except errors.Conflict:
                if attempt == STOCK_SPREAD_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def review(self, actor: Actor, product_id: str, *, rating: int, title: str, body: str) -> Review:
        review = Review(
            product_id=product_id,
            customer_id=actor.sub,
            rating=rating,
            title=title,
            body=body,
            created_at=clock.iso_now(),
        )
        return self.products.add_review(review)

    def reviews_of_product(self, product_id: str, *, limit: int, next_token: str | None) -> Page[Review]:
        return self.products.reviews_of_product(product_id, limit=limit, next_token=next_token)

    def reviews_of_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[Review]:
        return self.products.reviews_of_customer(customer_id, limit=limit, next_token=next_token)
