"""The handlers on the in-memory store (tests/support/memory_wiring.py): imported once, every store emptied and
loaded with events/seed.json before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shop import config, payment_secrets
from tests.functions.generate_payment_events import SAMPLE_SECRET
from tests.support.checkout import EUROPE, admin_put
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


@pytest.fixture
def europe(handlers: Handlers) -> Handlers:
    """The seeded shop with a zone shipping to Germany and Austria (EUROPE) and a 19 % rate for Germany."""
    admin_put(handlers, "/shipping/zones/zone-europe", EUROPE)
    admin_put(handlers, "/tax/rates/DE", {"rate_bps": 1900})
    return handlers


@pytest.fixture
def inclusive(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """PRICES_INCLUDE_TAX=true for the test."""
    monkeypatch.setenv("PRICES_INCLUDE_TAX", "true")
    config.settings.cache_clear()
    yield
    config.settings.cache_clear()
