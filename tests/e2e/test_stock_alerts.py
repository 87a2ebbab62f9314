"""StockLow over HTTP: orders take stock below the threshold, the stream processor (behind the synthesized
mapping's filter, through the local poller) writes one alert, and an admin reads it at GET /admin/alerts.

6 -> 4 crosses the default threshold 5; 4 -> 3 stays low (no second alert); a restock to 10 and an
order down to 2 crosses again. Over stock shards, the total decides: 40 spread over 8 shards alerts
nothing, 36 sold across them alerts once, at 4.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.conftest import ADDRESS, Api, Stack, create_product, eventually, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

WAIT_S = 30.0


def alerts_of(api: Api, admin: str, product_id: str) -> list[dict[str, Any]]:
    page = expect(api.get("/admin/alerts", token=admin, params={"limit": "100"}), 200)
    return [alert for alert in page["items"] if alert["product_id"] == product_id]


def order(api: Api, customer: str, product_id: str, quantity: int, key: str) -> None:
    expect(
        api.post(
            "/orders",
            token=customer,
            headers={"Idempotency-Key": key},
            json={"lines": [{"product_id": product_id, "quantity": quantity}], "shipping_address": ADDRESS},
        ),
        201,
    )


def test_stock_low_is_one_alert_per_crossing(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    customer = stack.token(f"e2e-alerts-{uid}")
    product = create_product(stack_api, admin, category=f"e2e-alerts-{uid}", name="Beans", price_cents=700, stock=6)
    pid = product["product_id"]

    order(stack_api, customer, pid, 2, f"alerts-1-{uid}")  # 6 -> 4: crosses
    [first] = eventually(lambda: alerts_of(stack_api, admin, pid), timeout=WAIT_S, what="StockLow alert")
    assert (first["type"], first["previous_stock"], first["stock"], first["low_stock_threshold"]) == (
        "STOCK_LOW",
        6,
        4,
        5,
    )

    order(stack_api, customer, pid, 1, f"alerts-2-{uid}")  # 4 -> 3: stays low
    expect(stack_api.post(f"/products/{pid}/stock", token=admin, json={"delta": 7}), 200)  # 3 -> 10
    order(stack_api, customer, pid, 8, f"alerts-3-{uid}")  # 10 -> 2: crosses again
    latest = eventually(
        lambda: (found := alerts_of(stack_api, admin, pid)) and len(found) >= 2 and found,
        timeout=WAIT_S,
        what="the second StockLow alert",
    )
    time.sleep(2)  # the stream has drained what it will: no third alert for the order that stayed low
    assert [(a["previous_stock"], a["stock"]) for a in alerts_of(stack_api, admin, pid)] == [(10, 2), (6, 4)]
    assert latest[0]["alert_id"] != latest[1]["alert_id"]


def test_stock_low_follows_the_total_over_stock_shards(stack: Stack, stack_api: Api, uid: str) -> None:
    """Issue 23's scenario: stock 40, threshold 5, spread over 8 shards: no alert from spreading; 36 sold
    across the shards: exactly one alert, at 4."""
    admin = stack.admin_token()
    customer = stack.token(f"e2e-shards-{uid}")
    product = create_product(stack_api, admin, category=f"e2e-shards-{uid}", name="Earbuds", price_cents=900, stock=40)
    pid = product["product_id"]
    spread = expect(stack_api.post(f"/products/{pid}/stock-shards", token=admin, json={"shards": 8}), 200)
    assert (spread["stock"], spread["stock_shards"], spread["shards"]) == (40, 8, [5] * 8)

    for n in range(9):  # 9 x 4 = 36, across the shards
        order(stack_api, customer, pid, 4, f"shards-{n}-{uid}")
    [alert] = eventually(lambda: alerts_of(stack_api, admin, pid), timeout=WAIT_S, what="the StockLow alert at 4")
    assert (alert["stock"], alert["low_stock_threshold"]) == (4, 5)
    time.sleep(2)  # the stream has drained what it will: no second alert, none from the spread (stock 0)
    assert [(a["alert_id"], a["stock"]) for a in alerts_of(stack_api, admin, pid)] == [(alert["alert_id"], 4)]
