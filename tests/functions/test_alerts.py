"""GET /admin/alerts over the products function (moto and DynamoDB Local): newest first, paged, admin only.

The alerts are written as the stream processor writes them (AlertRepository.record); how they come to be
is tests/stream/test_product_events.py.
"""

from __future__ import annotations

import pytest

from shop.models.alerts import Alert
from shop.repository import AlertRepository
from tests.functions.apigw import ADMIN, ALICE, call


def alert(n: int) -> Alert:
    return Alert(
        alert_id=f"prod-{n}:10000000000000000000{n}:stock-low",
        product_id=f"prod-{n}",
        name=f"Product {n}",
        stock=4,
        previous_stock=6,
        low_stock_threshold=5,
        created_at=f"2026-01-0{n}T00:00:00.000000Z",
    )


@pytest.mark.dynamodb_semantics
def test_alerts_newest_first_in_pages(api):
    repository = AlertRepository(api.table)
    for n in (2, 1, 3):
        assert repository.record(alert(n)) is True
    assert repository.record(alert(2)) is False  # the stream processor's replay

    first = call("GET", "/admin/alerts", claims=ADMIN, query={"limit": "2"})
    assert first.status == 200, first.body
    assert [item["product_id"] for item in first.body["items"]] == ["prod-3", "prod-2"]
    assert first.body["items"][0] == {**alert(3).model_dump(), "type": "STOCK_LOW"}
    rest = call("GET", "/admin/alerts", claims=ADMIN, query={"limit": "2", "next_token": first.body["next_token"]})
    assert [item["product_id"] for item in rest.body["items"]] == ["prod-1"]
    assert rest.body["next_token"] is None


@pytest.mark.dynamodb_semantics
def test_alerts_are_for_admins_only(api):
    AlertRepository(api.table).record(alert(1))
    assert call("GET", "/admin/alerts", claims=ALICE).status == 403
    assert call("GET", "/admin/alerts").status == 401
    assert call("GET", "/admin/alerts", claims=ADMIN).body["items"][0]["product_id"] == "prod-1"
