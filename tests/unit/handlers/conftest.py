"""The handlers on the in-memory store (tests/support/memory_wiring.py): imported once, every store emptied and
loaded with events/seed.json before each test."""

from __future__ import annotations

import pytest

from tests.support.factories import ADMIN
from tests.support.memory_wiring import Handlers, MemoryWiring

# The top-level categories beside the seed's that the HTTP tests file products under (tests/functions/conftest.py's).
TEST_CATEGORIES = ("c", "bulk", "paged", "tools", "x", "limits", "lights")


@pytest.fixture(scope="session")
def _memory_handlers() -> Handlers:
    handlers = Handlers(MemoryWiring())
    handlers.load()
    return handlers


@pytest.fixture
def handlers(_memory_handlers: Handlers) -> Handlers:
    """Every function on an in-memory store holding the seed (the stream read past it)."""
    _memory_handlers.wiring.reset()
    _memory_handlers.wiring.seed()
    tree = _memory_handlers.wiring.category_service()
    for slug in TEST_CATEGORIES:
        tree.create(ADMIN, slug=slug, name=slug.capitalize(), parent=None)
    return _memory_handlers
