"""The confirmed orders whose card authorisation will soon lapse (GET /orders?payment=expiring, issue 39): the rules
on the memory store. CONFIRMED and placed more than AUTHORISATION_WARN_DAYS ago (placement stands for confirmation:
a paid order is confirmed within its payment window), oldest first, each with its payment's status; admins only. The
index's key condition and read amplification: tests/repository/test_expiring_authorisations.py (DynamoDB Local)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shop import clock, config, errors
from shop.models import Order, OrderLine, OrderStatus, StatusEntry
from shop.models.orders import OrderPayment, PaymentStatus
from tests.support.factories import ADDRESS, ADMIN, ALICE
from tests.support.memory_store import MemoryStore


def order(
    memory: MemoryStore,
    order_id: str,
    days_ago: float,
    *,
    status: OrderStatus = OrderStatus.CONFIRMED,
    payment: PaymentStatus | None = PaymentStatus.AUTHORISED,
) -> Order:
    at = clock.iso(clock.now() - timedelta(days=days_ago))
    placed = Order(
        order_id=order_id,
        customer_id=ALICE.sub,
        status=status,
        version=2,
        total_cents=1000,
        created_at=at,
        updated_at=at,
        lines=[OrderLine.priced("p-1", "Widget", 1000, 1)],
        shipping_address=ADDRESS,
        history=[StatusEntry(status=status, at=at)],
        payment=None if payment is None else OrderPayment(status=payment, amount_cents=1000, currency="usd"),
    )
    memory.state.orders[order_id] = placed
    return placed


@pytest.fixture
def warn_days(monkeypatch: pytest.MonkeyPatch):
    def set_days(days: int) -> None:
        monkeypatch.setenv("AUTHORISATION_WARN_DAYS", str(days))
        config.payment_settings.cache_clear()

    yield set_days
    config.payment_settings.cache_clear()


def listed(memory: MemoryStore, limit: int = 50) -> list[tuple[str, PaymentStatus | None]]:
    seen, token = [], None
    while True:
        page = memory.order_service().list_expiring_authorisations(ADMIN, limit=limit, next_token=token)
        seen += [(o.order_id, o.payment_status) for o in page.items]
        token = page.next_token
        if token is None:
            return seen


def test_confirmed_orders_placed_before_the_warning_oldest_first_with_their_payment(memory, warn_days):
    warn_days(6)
    order(memory, "recent", 5.9)
    order(memory, "old", 6.5)
    order(memory, "older", 8, payment=PaymentStatus.LAPSED)
    order(memory, "oldest", 30, payment=PaymentStatus.CAPTURED)
    order(memory, "no-payment", 7, payment=None)
    order(memory, "shipped", 9, status=OrderStatus.SHIPPED)
    order(memory, "pending", 10, status=OrderStatus.PENDING_PAYMENT, payment=PaymentStatus.REQUIRES_PAYMENT)
    assert listed(memory) == [
        ("oldest", PaymentStatus.CAPTURED),
        ("older", PaymentStatus.LAPSED),
        ("no-payment", None),
        ("old", PaymentStatus.AUTHORISED),
    ]
    assert listed(memory, limit=1) == listed(memory)  # paged alike


def test_the_setting_moves_the_cutoff(memory, warn_days):
    order(memory, "two-days", 2)
    order(memory, "four-days", 4)
    warn_days(3)
    assert [oid for oid, _ in listed(memory)] == ["four-days"]
    warn_days(1)
    assert [oid for oid, _ in listed(memory)] == ["four-days", "two-days"]


def test_a_walk_keeps_its_first_pages_cutoff(memory, warn_days, monkeypatch):
    warn_days(6)
    order(memory, "a", 9)
    order(memory, "b", 8)
    order(memory, "c", 5)  # not yet: two days later it would be
    service = memory.order_service()
    first = service.list_expiring_authorisations(ADMIN, limit=1, next_token=None)
    later = clock.now() + timedelta(days=2)
    monkeypatch.setattr(clock, "now", lambda: later)
    rest = service.list_expiring_authorisations(ADMIN, limit=5, next_token=first.next_token)
    assert [o.order_id for o in [*first.items, *rest.items]] == ["a", "b"]  # the walk's cutoff: its first page's
    assert [oid for oid, _ in listed(memory)] == ["a", "b", "c"]  # a new walk, two days later


def test_only_an_administrator_lists_them(memory):
    order(memory, "old", 10)
    with pytest.raises(errors.Forbidden):
        memory.order_service().list_expiring_authorisations(ALICE, limit=5, next_token=None)
