"""Admin alerts (shop.services.alerts) on the memory store: read by administrators only, newest first, page by page.
How the stream processor writes them: test_product_events.py."""

from __future__ import annotations

import pytest

from shop import errors
from shop.models.alerts import Alert
from tests.support.factories import ADMIN, ALICE
from tests.support.memory_store import MemoryStore


def stock_low(memory: MemoryStore, n: int) -> Alert:
    alert = Alert(
        alert_id=f"p{n}:{n}:stock-low",
        product_id=f"p{n}",
        name=f"Product {n}",
        stock=2,
        previous_stock=6,
        low_stock_threshold=5,
        created_at=f"2026-03-0{n}T12:00:00.000000Z",
    )
    assert memory.alerts.record(alert)
    return alert


def test_an_admin_reads_the_newest_first_page_by_page(memory):
    for n in (2, 1, 3):
        stock_low(memory, n)
    alerts = memory.alert_service()
    first = alerts.newest(ADMIN, limit=2, next_token=None)
    assert [a.product_id for a in first.items] == ["p3", "p2"]
    assert first.next_token is not None
    rest = alerts.newest(ADMIN, limit=2, next_token=first.next_token)
    assert ([a.product_id for a in rest.items], rest.next_token) == (["p1"], None)


def test_only_an_admin_reads_alerts(memory):
    stock_low(memory, 1)
    with pytest.raises(errors.Forbidden):
        memory.alert_service().newest(ALICE, limit=10, next_token=None)


def test_no_alert_is_an_empty_page(memory):
    page = memory.alert_service().newest(ADMIN, limit=10, next_token=None)
    assert (page.items, page.next_token) == ([], None)
