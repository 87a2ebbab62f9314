"""What a migration is: a name, and a pure function from one scanned item to the writes it needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from shop.migrations.changes import Change


class Lookups(Protocol):
    """What a migration may read besides the scanned items (one call per Scan page)."""

    def category_paths(self, slugs: list[str]) -> dict[str, str]: ...


class Migration(Protocol):
    # `NNNN-what-it-does`: the number orders the migrations; the name keys its record and checkpoints.
    name: str
    description: str

    def context(self, items: list[dict[str, Any]], lookups: Lookups) -> Mapping[str, Any]:
        """What `plan` needs for this page of items, read once for the page."""
        ...

    def plan(self, item: dict[str, Any], context: Mapping[str, Any]) -> Change | None:
        """The item's writes, or None when the item is not this migration's (or is done already)."""
        ...
