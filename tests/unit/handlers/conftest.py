"""The handlers on the in-memory store (tests/support/memory_wiring.py): imported once, every store emptied and
loaded with events/seed.json before each test."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from shop import config, payment_secrets, publishing
from tests.functions.generate_payment_events import SAMPLE_SECRET
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


class RecordedBus:
    """EventBridge's PutEvents, recorded (every entry accepted)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries += Entries
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(uuid.uuid4())} for _ in Entries]}

    @property
    def events(self) -> list[dict[str, Any]]:
        return [{"type": entry["DetailType"], **json.loads(entry["Detail"])} for entry in self.entries]


@pytest.fixture
def bus(monkeypatch: pytest.MonkeyPatch) -> RecordedBus:
    """EVENT_BUS_NAME set: what order_events publishes is recorded here."""
    recorded = RecordedBus()
    monkeypatch.setenv("EVENT_BUS_NAME", "shop-test-bus")
    monkeypatch.setattr(publishing, "events_client", lambda: recorded)
    return recorded


@pytest.fixture
def paying(handlers: Handlers, monkeypatch: pytest.MonkeyPatch) -> Iterator[Handlers]:
    """The handlers with PAYMENTS=stripe and the samples' webhook secret (literal, as locally)."""
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_SECRET_KEY", "sk_test_fast_lane")
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", SAMPLE_SECRET)
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "30")
    config.payment_settings.cache_clear()
    payment_secrets.clear()
    yield handlers
    config.payment_settings.cache_clear()
    payment_secrets.clear()
