"""Bodies of the category routes (served by the products function)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from shop.http_api.schemas import MISSING, PYTHON_REGEX, Body
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
# No control character (Unicode's Cc: tab, newlines, NUL...) anywhere, and at least one visible character: one
# outside the controls and every character ECMA-262, Rust or Python counts as whitespace (schemas.EMAIL_PATTERN
# says why the classes are spelled out and why the end is `(?![\s\S])`, which needs PYTHON_REGEX).
_CONTROLS = r"\x00-\x1f\x7f-\x9f"
_BLANKS = r"\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
VISIBLE_NAME_PATTERN = rf"^[^{_CONTROLS}]*[^{_CONTROLS}{_BLANKS}][^{_CONTROLS}]*(?![\s\S])"
CategoryName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_CATEGORY_NAME_LENGTH,
        pattern=VISIBLE_NAME_PATTERN,
        description="at least one visible character, no control characters (tab, newline, NUL...)",
    ),
]


class CategoryIn(Body):
    model_config = PYTHON_REGEX

    slug: Slug
    name: CategoryName
    parent: Slug | MISSING = MISSING


class CategoryPatch(Body):
    """A new name, a new parent (null: top level; a move moves the subtree), or both."""

    model_config = ConfigDict(**PYTHON_REGEX, json_schema_extra={"minProperties": 1})

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
