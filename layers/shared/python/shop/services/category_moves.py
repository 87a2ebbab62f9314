"""A category move's rewrite, run by the stream processor one step per record of the move item.

`PATCH /categories/{slug}` with a new parent moves the category itself and writes the move item
(``CATEGORY_MOVE``). Each INSERT or MODIFY record of that item runs one step, and the step ends by
advancing the item (conditional on its step number), whose MODIFY record runs the next:

1. CATEGORIES: re-path up to MOVE_STEP_CATEGORIES categories below the moved one (tree entry,
   path, depth), until none is left under the old path.
2. PRODUCTS: one page (MOVE_STEP_PRODUCTS) of the moved category's name listing, which holds every
   product of its subtree once; each product is re-filed under its listing scopes as the tree now
   is (every path is final by then, read consistently): entries under the old ancestors deleted,
   entries under the new ones written, conditional on its listing version (a product edited
   meanwhile is re-read and re-filed).
3. The last page done: the category is no longer `moving` and the move item is deleted.

Exactly once: each step's writes are idempotent (deterministic keys, the same values), and only one
run of a step can advance the move; a replayed or retried record of a step taken already changes
nothing. Listings never show a product twice (one entry per product and listing) nor lose one
that stays in them (the entries of the moved category's own subtree are never touched).

An edit can rename a product past the cursor, so the walk may miss a product edited during the
PRODUCTS phase; it need not visit it: every product create or edit files the product under the
scopes its categories have when it commits (its transaction checks the paths it computed them from,
`ProductRepository.update`), and from the PRODUCTS phase on those are the final ones. A product not
edited since then keeps its place in the listing, and the walk reaches it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from shop.limits import MOVE_STEP_CATEGORIES
from shop.models.categories import listing_scopes
from shop.services.categories import PHASE_CATEGORIES, PHASE_PRODUCTS

if TYPE_CHECKING:
    from shop.models.stream_images import MoveImage
    from shop.services.ports import CategoryMoveStore, ProductRelisting

RELIST_ATTEMPTS = 5


class CategoryMoves:
    def __init__(
        self, categories: CategoryMoveStore, products: ProductRelisting, *, step_products: Callable[[], int]
    ) -> None:
        """`step_products` gives at each step how many products it re-files (CATEGORY_MOVE_STEP_PRODUCTS)."""
        self.categories = categories
        self.products = products
        self.step_products = step_products

    def step(self, move: MoveImage) -> bool:
        """Run the step `move` is at; False when another run of it advanced the move first."""
        if move.phase == PHASE_CATEGORIES:
            paths = self.categories.subtree_paths(move.old_path, limit=MOVE_STEP_CATEGORIES)
            self.categories.repath(paths, move.old_path, move.new_path)
            more = len(paths) == MOVE_STEP_CATEGORIES
            return self.categories.advance_move(
                move.move_id, move.step, {"phase": PHASE_CATEGORIES if more else PHASE_PRODUCTS}
            )
        product_ids, cursor = self.categories.listing_keys_page(
            move.slug, limit=self.step_products(), cursor=move.cursor
        )
        self.relist(product_ids)
        if cursor is None:
            return self.categories.finish_move(move.move_id, move.step, move.slug)
        return self.categories.advance_move(move.move_id, move.step, {"cursor": cursor})

    def relist(self, product_ids: list[str]) -> None:
        """File each product under the listing scopes its categories have now."""
        pending = product_ids
        for _ in range(RELIST_ATTEMPTS):
            if not pending:
                return
            products = self.products.get_many(pending, consistent=True)
            slugs = [slug for product in products.values() for slug in product.categories]
            paths = {slug: category.path for slug, category in self.categories.get_many(slugs, consistent=True).items()}
            pending = self.products.relist(
                [
                    (product, listing_scopes([paths[slug] for slug in product.categories if slug in paths]))
                    for product in products.values()
                ]
            )
        if pending:
            raise RuntimeError(f"products kept changing during the move: {pending[:5]}")
