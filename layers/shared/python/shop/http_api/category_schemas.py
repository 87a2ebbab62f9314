"""Bodies of the category routes (served by the products function)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from shop.http_api.schemas import MISSING, Body
from shop.limits import CATEGORY_SLUG_PATTERN, MAX_CATEGORY_NAME_LENGTH, MAX_SLUG_LENGTH
from shop.models.categories import Breadcrumb, Category, CategoryDetail
from shop.models.common import Model

Slug = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_SLUG_LENGTH,
        pattern=CATEGORY_SLUG_PATTERN,
        description="lower-case letters, digits and '-', starting with a letter or digit",
    ),
]
CategoryName = Annotated[str, Field(min_length=1, max_length=MAX_CATEGORY_NAME_LENGTH)]


class CategoryIn(Body):
    slug: Slug
    name: CategoryName
    parent: Slug | MISSING = MISSING


class CategoryPatch(Body):
    """A new name, a new parent (null: top level; a move moves the subtree), or both."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    name: CategoryName | MISSING = MISSING
    parent: Slug | MISSING | None = MISSING

    @model_validator(mode="after")
    def _something(self) -> CategoryPatch:
        if not self.model_fields_set:
            raise ValueError("give name, parent or both")
        return self

    def changes(self) -> dict[str, Any]:
        return self.model_dump(include=self.model_fields_set)


class CategoryPage(Model):
    items: list[Category]
    next_token: str | None


__all__ = ["Breadcrumb", "Category", "CategoryDetail", "CategoryIn", "CategoryPage", "CategoryPatch", "Slug"]
