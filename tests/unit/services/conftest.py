"""What more than one service's rules file needs: payments on the fake provider, the unpaid hold's limits, the
memory stream. (`memory`, the store itself: tests/unit/conftest.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

import pytest

from shop import clock, config
from shop.services.orders import OrderService
from shop.services.payments import PaymentService
from tests.support.fake_payments import FakePayments
from tests.support.memory_store import MemoryStore
from tests.support.memory_stream import MemoryStream


@pytest.fixture
def orders(memory: MemoryStore) -> OrderService:
    """The order service on the memory store, without payments."""
    return memory.order_service()


@pytest.fixture
def at(monkeypatch: pytest.MonkeyPatch) -> Callable[[datetime], None]:
    """Set the service's clock: at(moment)."""

    def set_clock(moment: datetime) -> None:
        monkeypatch.setattr(clock, "now", lambda: moment)

    return set_clock


@pytest.fixture
def fake_payments(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePayments]:
    """PAYMENTS=stripe with a 30-minute payment window, on the fake provider (tests/support/fake_payments.py)."""
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "30")
    config.payment_settings.cache_clear()
    yield FakePayments()
    config.payment_settings.cache_clear()


@pytest.fixture
def unpaid_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """At most 3 orders and 10 units held unpaid by one customer (MAX_UNPAID_ORDERS, MAX_UNPAID_UNITS)."""
    monkeypatch.setenv("MAX_UNPAID_ORDERS", "3")
    monkeypatch.setenv("MAX_UNPAID_UNITS", "10")
    config.payment_settings.cache_clear()
    yield
    config.payment_settings.cache_clear()


@pytest.fixture
def paid_orders(memory: MemoryStore, fake_payments: FakePayments) -> OrderService:
    """The order service taking payments through `fake_payments`."""
    return memory.order_service(payments=lambda: fake_payments)


@pytest.fixture
def payment_rules(memory: MemoryStore, fake_payments: FakePayments) -> PaymentService:
    """The payment service (the webhook's events, the payment steps) on `fake_payments`."""
    return memory.payment_service(payments=lambda: fake_payments)


@pytest.fixture
def memory_stream(memory: MemoryStore) -> MemoryStream:
    """The memory store's stream, read from here on (the catalogue's set-up is not the test's)."""
    stream = MemoryStream(memory)
    stream.read()
    return stream
