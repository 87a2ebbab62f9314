"""The catalogue: products, stock adjustments and reviews."""

from __future__ import annotations

from typing import Any

from shop import clock, errors, ids
from shop.models import Page, Product, Review
from shop.models.stock import StockLayout
from shop.repository import ProductRepository, Table
from shop.services.actor import Actor
from shop.services.ports import ProductStore

# Reads and spreads one POST /products/{id}/stock-shards tries while orders keep taking stock.
STOCK_SPREAD_ATTEMPTS = 3


class CatalogService:
    def __init__(self, table: Table | None = None, *, products: ProductStore | None = None) -> None:
        """The rules over `products`; by default the DynamoDB repository on `table` (the function's table)."""
        self.products: ProductStore = products if products is not None else ProductRepository(table or Table())

    def create(
        self, actor: Actor, *, name: str, category: str, price_cents: int, description: str | None, stock: int
    ) -> Product:
        actor.require_admin()
        now = clock.iso_now()
        product = Product(
            product_id=ids.new_id(),
            name=name,
            category=category,
            price_cents=price_cents,
            description=description,
            stock=stock,
            created_at=now,
            updated_at=now,
        )
        return self.products.create(product)

    def get(self, product_id: str) -> Product:
        return self.products.get(product_id)

    def list_by_category(self, category: str, *, limit: int, next_token: str | None) -> Page[Product]:
        return self.products.list_by_category(category, limit=limit, next_token=next_token)

    def update(self, actor: Actor, product_id: str, changes: dict[str, Any]) -> Product:
        actor.require_admin()
        current = self.products.get(product_id)
        return self.products.update(current, changes, clock.iso_now())

    def adjust_stock(self, actor: Actor, product_id: str, delta: int) -> int:
        actor.require_admin()
        return self.products.adjust_stock(product_id, delta)

    def set_stock_shards(self, actor: Actor, product_id: str, shards: int) -> StockLayout:
        """Spread the product's whole stock evenly over `shards` flash-sale shards (1: back onto the product
        item). Repeating it changes nothing; stock that moved between the read and the write (orders keep
        coming) is read again, STOCK_SPREAD_ATTEMPTS times in all, then Conflict."""
        actor.require_admin()
        for attempt in range(STOCK_SPREAD_ATTEMPTS):
            seen = self.products.stock_layout(product_id)
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
