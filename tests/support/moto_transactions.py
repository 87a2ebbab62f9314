"""moto's TransactWriteItems backs up a table once per item of the transaction, not once per table.

`DynamoDBBackend.transact_write_items` deep-copies `self.tables[name]` for every item naming that table, before
it writes anything, to restore them if an item fails: with a seeded table and a placement of six items, six
copies of every item of the table, the same six times over (in a profile of tests/functions/test_api.py, 9 of
its 24 s of CPU). Each copy after the first is of the same unchanged object, so handing back the first gives
moto the same backup: `once_per_table` does that, inside that method only (and only for a table: its deep copy of
an item in UpdateItem is untouched). tests/functions/test_moto_transactions.py pins the shape it relies on and shows
a failed transaction still restored.
"""

from __future__ import annotations

import copy
import functools
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_copies = threading.local()


def _deepcopy(obj: Any, memo: dict[int, Any] | None = None) -> Any:
    from moto.dynamodb.models.table import Table

    copies: dict[int, tuple[Any, Any]] | None = getattr(_copies, "by_id", None)
    if copies is None or not isinstance(obj, Table):
        return copy.deepcopy(obj, memo)
    kept = copies.get(id(obj))
    if kept is None or kept[0] is not obj:
        kept = copies[id(obj)] = (obj, copy.deepcopy(obj, memo))
    return kept[1]


@contextmanager
def _one_transaction() -> Iterator[None]:
    _copies.by_id = {}
    try:
        yield
    finally:
        _copies.by_id = None


def install() -> None:
    """Once per process, after moto is imported; idempotent."""
    from moto.dynamodb import models

    if getattr(models.DynamoDBBackend.transact_write_items, "_copies_once", False):
        return
    original: Callable[..., None] = models.DynamoDBBackend.transact_write_items

    @functools.wraps(original)
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with _one_transaction():
            original(self, transact_items)

    transact_write_items._copies_once = True  # type: ignore[attr-defined]
    models.DynamoDBBackend.transact_write_items = transact_write_items
    models.copy = types.SimpleNamespace(deepcopy=_deepcopy)  # type: ignore[attr-defined]
