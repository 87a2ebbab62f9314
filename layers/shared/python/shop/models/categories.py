"""The catalogue tree: categories with their materialised path, and the detail a category page shows."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from shop.models.common import Model, Timestamp


class ListingOrder(StrEnum):
    """How a product listing is sorted (each order is its own listing)."""

    NAME = "NAME"
    PRICE = "PRICE"
    NEWEST = "NEWEST"


def category_path(ancestors: list[str]) -> str:
    """The materialised path of a category: its slugs from the root, ``/coffee/beans/espresso``."""
    return "/" + "/".join(ancestors)


def path_slugs(path: str) -> list[str]:
    return [slug for slug in path.split("/") if slug]


class Category(Model):
    slug: str
    name: str
    parent: str | None = None
    path: str = Field(description="the slugs from the root, e.g. /coffee/beans/espresso")
    depth: int = Field(description="1 for a top-level category")
    created_at: Timestamp
    moving: bool = Field(default=False, description="true while a move rewrites the listings of its subtree")

    @property
    def ancestors(self) -> list[str]:
        """The slugs above this category, root first."""
        return [slug for slug in self.path.split("/") if slug][:-1]


class Breadcrumb(Model):
    slug: str
    name: str


class CategoryDetail(Category):
    breadcrumbs: list[Breadcrumb] = Field(description="root first, ending with this category")
    children: list[Category] = Field(description="by name")


def listing_scopes(paths: list[str]) -> list[str]:
    """The categories whose listings show a product filed under categories with these paths: each
    category and every ancestor, once (a product in /coffee/beans and /coffee/cups is listed under
    coffee once). Root first, in the order the paths give them."""
    scopes: dict[str, None] = {}
    for path in paths:
        for slug in path.split("/"):
            if slug:
                scopes[slug] = None
    return list(scopes)
