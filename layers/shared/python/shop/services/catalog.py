"""The catalogue: products, stock adjustments and reviews."""

from __future__ import annotations

from typing import Any

from shop import clock, ids
from shop.models import Page, Product, Review
from shop.repository import ProductRepository, Table
from shop.services.actor import Actor
from shop.services.ports import ProductStore


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
