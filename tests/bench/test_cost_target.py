"""The cost target of issue 26 (<= $15.00 a million orders) and where the paid order's parts join the life."""

from __future__ import annotations

from typing import Any

from bench.capacity import LIFE_PARTS, PAYMENT_PARTS, cost, life_parts
from bench.run import evaluate


def a_life(wru_each: float, rru_each: float, names: tuple[str, ...] = LIFE_PARTS) -> dict[str, Any]:
    parts = {name: {"wcu": wru_each, "rcu": rru_each} for name in names}
    return {"order_life": {"parts": parts, "missing_parts": []}}


def test_the_payment_parts_join_the_life_only_when_measured():
    assert life_parts(dict.fromkeys(LIFE_PARTS)) == LIFE_PARTS
    assert life_parts({"payment_webhook": None}) == LIFE_PARTS + PAYMENT_PARTS


def test_the_target_is_met_at_or_under_fifteen_dollars():
    cheap = cost(a_life(1.5, 1))  # 8 parts: 12 WRU + 8 RRU = $8.50
    assert (cheap["value"], cheap["met"], cheap["payments_included"]) == (8.5, True, False)
    assert cheap["headroom_for_payments_usd"] == 15.0 - 8.5 - 5.0  # 8 WRU kept for the payment parts
    at_the_line = cost(a_life(2.75, 1.25))  # 22 WRU + 10 RRU = $15.00
    assert (at_the_line["value"], at_the_line["met"]) == (15.0, True)
    dear = cost(a_life(4, 1))  # 32 WRU + 8 RRU = $21.00
    assert (dear["value"], dear["met"]) == (21.0, False)
    verdict = evaluate({"cost_per_million_orders_usd": dear})["cost_per_million_orders_usd"]
    assert (verdict["target"], verdict["met"]) == ("<= 15.00", False)
    assert "$21.0 a million orders" in verdict["why"]


def test_with_payments_their_units_count_and_no_headroom_is_reported():
    paid = cost(a_life(2, 0.5, LIFE_PARTS + PAYMENT_PARTS))  # 10 parts: 20 WRU + 5 RRU = $13.125
    assert (paid["value"], paid["met"], paid["payments_included"]) == (13.125, True, True)
    assert paid["headroom_for_payments_usd"] is None
