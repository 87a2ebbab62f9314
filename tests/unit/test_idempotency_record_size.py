"""The stored response of an idempotent placement: compacted so a 3-line order's record stays under 1 KB
(its completing update 1 WRU, not 2), and read back exactly; records stored before compaction still read."""

from __future__ import annotations

import json
from typing import Any

from shop.http_api.idempotency import compact, expand

LINE: dict[str, Any] = {
    "product_id": "01M8DJA02J2VA7BBH932NW2QXX",
    "name": "Bench item 01",
    "unit_price_cents": 1100,
    "quantity": 2,
    "line_total_cents": 2200,
}


def a_placed_order(lines: int) -> dict[str, Any]:
    """The shape of POST /orders' 201 body (about 950 bytes for 3 lines here)."""
    return {
        "order_id": "01M8DJA03B08PZT5KPGW6B3EGV",
        "customer_id": "alice-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        "status": "PENDING",
        "version": 1,
        "lines": [{**LINE, "product_id": f"{LINE['product_id'][:-2]}{n:02d}"} for n in range(lines)],
        "total_cents": 2200 * lines,
        "shipping_address": {
            "name": "Alice Example",
            "line1": "1 Bench Street",
            "line2": None,
            "city": "Springfield",
            "postal_code": "12345",
            "country": "US",
        },
        "created_at": "2026-11-27T03:55:39.564000+00:00",
        "updated_at": "2026-11-27T03:55:39.564000+00:00",
        "history": [{"status": "PENDING", "at": "2026-11-27T03:55:39.564000+00:00"}],
        "shipment": None,
        "archived": False,
    }


def test_a_compacted_response_reads_back_exactly():
    for lines in (1, 3, 25):
        response = a_placed_order(lines)
        assert expand(compact(response)) == response


def test_a_three_line_order_is_stored_in_well_under_one_kilobyte():
    response = a_placed_order(3)
    stored = json.dumps(compact(response))
    assert len(json.dumps(response)) > 900
    assert len(stored) < 600  # with the record's key, status, hashes and expiry: under 1 KB


def test_a_record_stored_before_compaction_is_its_response():
    response = a_placed_order(3)
    assert expand(response) == response
    assert expand({"z": 1, "order_id": "x"}) == {"z": 1, "order_id": "x"}
