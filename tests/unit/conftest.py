"""The fast lane (`make unit`): rules on the in-memory store; no moto, no DynamoDB Local, no Java.

A test here that asks for a table fixture is refused, whatever else runs with it. When tests/unit
runs alone, moto and the DynamoDB Local launcher must not have been imported by collection, and
importing them afterwards fails: nothing slow creeps in through a helper module either.
Store-backed tests belong in tests/repository, which also proves the memory store against the table.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import pathlib
import sys
from collections.abc import Sequence
from types import ModuleType

import pytest

from tests.support.memory_store import MemoryStore

HERE = pathlib.Path(__file__).parent
TABLE_FIXTURES = frozenset({"store", "moto_store", "local_store", "dynamodb_local", "api", "moto_api", "local_api"})
SLOW_MODULES = ("moto", "local_runtime.dynamodb_local")


def _slow(name: str) -> bool:
    return any(name == slow or name.startswith(f"{slow}.") for slow in SLOW_MODULES)


class _RefuseSlowModules(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if _slow(fullname):
            raise ImportError(f"{fullname} is not for tests/unit (the fast lane): put the test in tests/repository")
        return None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if item.path.is_relative_to(HERE)]
    for item in mine:
        used = TABLE_FIXTURES & set(getattr(item, "fixturenames", ()))
        if used:
            raise pytest.UsageError(
                f"{item.nodeid} uses {', '.join(sorted(used))}: tests/unit runs on tests/support/memory_store.py"
            )
    if mine and len(mine) == len(items):
        loaded = sorted(name for name in sys.modules if _slow(name))
        if loaded:
            raise pytest.UsageError(f"collecting tests/unit imported {', '.join(loaded[:3])}: not for the fast lane")
        sys.meta_path.insert(0, _RefuseSlowModules())


@pytest.fixture
def memory() -> MemoryStore:
    """A fresh store holding one top-level category, ``tools``, to file products under."""
    from tests.support.factories import ADMIN

    store = MemoryStore()
    store.category_service().create(ADMIN, slug="tools", name="Tools", parent=None)
    return store
