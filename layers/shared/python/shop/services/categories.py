"""The catalogue tree's rules: admin-only edits, at most MAX_CATEGORY_DEPTH levels, no move into a
category's own subtree, and a move that rewrites its subtree's listings through the stream."""

from __future__ import annotations

from typing import Any

from shop import clock, errors, ids
from shop.limits import MAX_CATEGORY_DEPTH, MAX_CHILDREN
from shop.models import Page
from shop.models.categories import Breadcrumb, Category, CategoryDetail, category_path, path_slugs
from shop.services.actor import Actor
from shop.services.ports import CategoryStore

PHASE_CATEGORIES = "CATEGORIES"  # re-path the categories below the moved one
PHASE_PRODUCTS = "PRODUCTS"  # re-file the listing entries of the products below it


def too_deep(depth: int) -> errors.CategoryTooDeep:
    return errors.CategoryTooDeep(
        f"the category tree is at most {MAX_CATEGORY_DEPTH} levels deep",
        {"parent": f"this would make a category of depth {depth}"},
    )


class CategoryService:
    def __init__(self, *, categories: CategoryStore) -> None:
        self.categories = categories

    def create(self, actor: Actor, *, slug: str, name: str, parent: str | None) -> Category:
        actor.require_admin()
        above = self.categories.get(parent) if parent is not None else None
        depth = above.depth + 1 if above else 1
        if depth > MAX_CATEGORY_DEPTH:
            raise too_deep(depth)
        path = category_path([*path_slugs(above.path), slug] if above else [slug])
        category = Category(slug=slug, name=name, parent=parent, path=path, depth=depth, created_at=clock.iso_now())
        return self.categories.create(category, above)

    def top_level(self, *, limit: int, next_token: str | None) -> Page[Category]:
        return self.categories.children(None, limit=limit, next_token=next_token)

    def detail(self, slug: str) -> CategoryDetail:
        """GetItem of the category, BatchGetItem of its ancestors (none for a top-level one), Query of its children."""
        category = self.categories.get(slug)
        above = self.categories.get_many(category.ancestors)
        breadcrumbs = [Breadcrumb(slug=s, name=above[s].name if s in above else s) for s in category.ancestors] + [
            Breadcrumb(slug=category.slug, name=category.name)
        ]
        children = self.categories.children(slug, limit=MAX_CHILDREN, next_token=None).items
        return CategoryDetail(**category.model_dump(), breadcrumbs=breadcrumbs, children=children)

    def update(self, actor: Actor, slug: str, changes: dict[str, Any]) -> Category:
        """A rename (one conditional write: breadcrumbs read names live, products are not touched) or a
        move (its subtree's paths and listings are rewritten by the stream; `moving` until done)."""
        actor.require_admin()
        current, version = self.categories.version_of(slug)
        name = changes.get("name", current.name)
        if "parent" not in changes or changes["parent"] == current.parent:
            if name == current.name:
                return current
            return self.categories.rename(current, version, name)
        return self._move(current, version, changes["parent"], name)

    def _move(self, current: Category, version: int, parent: str | None, name: str) -> Category:
        if parent is not None:
            if parent == current.slug:
                raise errors.InvalidMove("a category cannot be its own parent", {"parent": parent})
            target = self.categories.get(parent)
            if target.path.startswith(current.path + "/"):
                raise errors.InvalidMove(
                    "a category cannot move into its own subtree", {"parent": parent, "path": target.path}
                )
        else:
            target = None
        new_path = category_path([*path_slugs(target.path), current.slug] if target else [current.slug])
        below = self.categories.subtree_paths(current.path)
        deepest = max((len(path_slugs(path)) for path in below), default=current.depth) - current.depth
        new_depth = len(path_slugs(new_path))
        if new_depth + deepest > MAX_CATEGORY_DEPTH:
            raise too_deep(new_depth + deepest)
        move = {
            "move_id": ids.new_id(),
            "slug": current.slug,
            "old_path": current.path,
            "new_path": new_path,
            "phase": PHASE_CATEGORIES if below else PHASE_PRODUCTS,
            "step": 0,
            "started_at": clock.iso_now(),
        }
        return self.categories.start_move(current, version, new_parent=target, name=name, move=move)
