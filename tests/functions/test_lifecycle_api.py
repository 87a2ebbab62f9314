"""Shipments, returns and sales by date over HTTP (issue 13), on moto and DynamoDB Local, from the seed:
bob's ``00-bob-delivered`` (delivered now) and ``00-bob-return`` (a return requested), alice's orders."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from shop import clock, wiring
from shop.limits import RETURN_WINDOW_DAYS
from shop.models import OrderStatus
from shop.repository import Table
from shop.repository.sales import SalesRepository
from shop.services.sales import SalesService
from tests.functions.apigw import ADMIN, ALICE, BOB, call
from tests.support.calls import counting

SHIP = {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD014600006281234567"}


def patch(order_id: str, version: int, body: dict[str, Any]) -> Any:
    return call("PATCH", f"/orders/{order_id}", claims=ADMIN, headers={"If-Match": f'"{version}"'}, body=body)


@pytest.mark.dynamodb_semantics
def test_shipping_needs_carrier_and_tracking_number(api):
    assert patch("00-alice-pending", 1, {"status": "CONFIRMED"}).status == 200
    for body in ({"status": "SHIPPED"}, {"status": "SHIPPED", "carrier": "DHL"}):
        missing = patch("00-alice-pending", 2, body)
        assert (missing.status, missing.code) == (422, "VALIDATION_ERROR")
    stray = patch("00-alice-pending", 2, {"status": "CANCELLED", "carrier": "DHL"})
    assert (stray.status, stray.code) == (422, "VALIDATION_ERROR")
    bad_tracking = patch("00-alice-pending", 2, {**SHIP, "tracking_number": "JD 1"})
    assert bad_tracking.status == 422

    shipped = patch("00-alice-pending", 2, SHIP)
    assert shipped.status == 200, shipped.body
    shipment = shipped.body["shipment"]
    assert (shipment["carrier"], shipment["tracking_number"]) == ("DHL", "JD014600006281234567")
    assert shipment["shipped_at"] == shipped.body["updated_at"]
    last = shipped.body["history"][-1]
    assert (last["status"], last["carrier"], last["tracking_number"]) == ("SHIPPED", "DHL", "JD014600006281234567")
    read = call("GET", "/orders/00-alice-pending", claims=ALICE).body
    assert read["shipment"] == shipment
    assert read["history"][-1] == last


@pytest.mark.dynamodb_semantics
def test_the_owner_requests_a_return_of_a_delivered_order(api):
    assert call("POST", "/orders/00-bob-delivered/return", claims=ALICE, body={"reason": "x"}).code == "ORDER_NOT_FOUND"
    assert call("POST", "/orders/00-bob-delivered/return", claims=ADMIN, body={"reason": "x"}).code == "FORBIDDEN"
    empty = call("POST", "/orders/00-bob-delivered/return", claims=BOB, body={"reason": ""})
    assert (empty.status, empty.code) == (422, "VALIDATION_ERROR")
    requested = call("POST", "/orders/00-bob-delivered/return", claims=BOB, body={"reason": "Too short."})
    assert requested.status == 200, requested.body
    assert (requested.body["status"], requested.headers["etag"]) == ("RETURN_REQUESTED", '"5"')
    assert requested.body["history"][-1]["reason"] == "Too short."
    again = call("POST", "/orders/00-bob-delivered/return", claims=BOB, body={"reason": "Too short."})
    assert (again.status, again.code) == (409, "INVALID_TRANSITION")
    shipped = call("POST", "/orders/00-alice-shipped/return", claims=ALICE, body={"reason": "x"})
    assert (shipped.status, shipped.code) == (409, "INVALID_TRANSITION")


@pytest.mark.dynamodb_semantics
def test_the_return_window_closes_thirty_days_after_delivery(api, monkeypatch):
    delivered = call("GET", "/orders/00-bob-delivered", claims=BOB).body["delivered_at"]
    later = datetime.fromisoformat(delivered) + timedelta(days=RETURN_WINDOW_DAYS, seconds=1)
    monkeypatch.setattr(clock, "now", lambda: later)
    closed = call("POST", "/orders/00-bob-delivered/return", claims=BOB, body={"reason": "Too short."})
    assert (closed.status, closed.code) == (409, "RETURN_WINDOW_CLOSED")


def stock(product_id: str) -> int:
    return int(call("GET", f"/products/{product_id}").body["stock"])


@pytest.mark.dynamodb_semantics
def test_an_accepted_return_restocks_every_line_in_one_transaction(api):
    before = stock("prod-mouse")
    with counting(api.client) as calls:
        returned = patch("00-bob-return", 5, {"status": "RETURNED"})
    assert returned.status == 200, returned.body
    assert (returned.body["status"], returned.body["version"]) == ("RETURNED", 6)
    assert stock("prod-mouse") == before + 1
    assert calls.operations == ["Query", "TransactWriteItems"]
    repeated = patch("00-bob-return", 5, {"status": "RETURNED"})  # the answer was lost: the same order, no restock
    assert (repeated.status, repeated.body["version"]) == (200, 6)
    assert stock("prod-mouse") == before + 1


@pytest.mark.dynamodb_semantics
def test_a_rejected_return_needs_a_reason_and_goes_back_to_delivered(api):
    before = stock("prod-mouse")
    missing = patch("00-bob-return", 5, {"status": "DELIVERED"})
    assert (missing.status, missing.code) == (422, "VALIDATION_ERROR")
    assert patch("00-bob-return", 5, {"status": "RETURN_REQUESTED"}).code == "INVALID_TRANSITION"
    rejected = patch("00-bob-return", 5, {"status": "DELIVERED", "reason": "The cable shows wear."})
    assert rejected.status == 200, rejected.body
    assert rejected.body["status"] == "DELIVERED"
    assert rejected.body["history"][-1] == {
        "status": "DELIVERED",
        "at": rejected.body["updated_at"],
        "carrier": None,
        "tracking_number": None,
        "reason": "The cable shows wear.",
        "shipped_without_payment": None,
    }
    assert stock("prod-mouse") == before


def confirmed_sales(api: Any, product_id: str, day: str, units: int, price: int) -> None:
    """Count a confirmed order of `units` directly through the sales rules (the stream's path)."""
    from shop.models import OrderLine, OrderSummary

    order = OrderSummary(
        order_id=f"o-{product_id}-{units}",
        customer_id="alice",
        status=OrderStatus.CONFIRMED,
        version=2,
        total_cents=units * price,
        created_at=f"{day}T10:00:00.000000Z",
        updated_at=f"{day}T10:00:01.000000Z",
    )
    line = OrderLine.priced(product_id, product_id, price, units)
    SalesService(SalesRepository(Table(api.client, api.table_name))).record(order, [line], "PENDING", None)


@pytest.mark.dynamodb_semantics
def test_product_sales_by_day_are_one_query(api):
    confirmed_sales(api, "prod-mouse", "2026-01-02", 3, 2900)
    confirmed_sales(api, "prod-mouse", "2026-01-04", 1, 2900)
    with counting(api.client) as calls:
        report = call(
            "GET", "/products/prod-mouse/sales", claims=ADMIN, query={"from": "2026-01-01", "to": "2026-01-05"}
        )
    assert report.status == 200, report.body
    assert calls.operations == ["Query"]
    assert report.body == {
        "product_id": "prod-mouse",
        "days": [
            {"date": "2026-01-01", "units": 0, "revenue_cents": 0},
            {"date": "2026-01-02", "units": 3, "revenue_cents": 8700},
            {"date": "2026-01-03", "units": 0, "revenue_cents": 0},
            {"date": "2026-01-04", "units": 1, "revenue_cents": 2900},
            {"date": "2026-01-05", "units": 0, "revenue_cents": 0},
        ],
    }
    over = call("GET", "/products/prod-mouse/sales", claims=ADMIN, query={"from": "2025-01-01", "to": "2026-01-02"})
    assert (over.status, over.code) == (422, "VALIDATION_ERROR")
    whole_year = call(
        "GET", "/products/prod-mouse/sales", claims=ADMIN, query={"from": "2024-01-01", "to": "2024-12-31"}
    )
    assert len(whole_year.body["days"]) == 366
    for query in (
        {"from": "2026-01-05", "to": "2026-01-01"},
        {"from": "2026-02-30", "to": "2026-03-01"},
        {"from": "x", "to": "y"},
    ):
        assert call("GET", "/products/prod-mouse/sales", claims=ADMIN, query=query).status == 422


@pytest.mark.dynamodb_semantics
def test_top_sellers_of_a_day_most_units_first(api):
    confirmed_sales(api, "prod-mouse", "2026-01-02", 3, 2900)
    confirmed_sales(api, "prod-cable", "2026-01-02", 7, 900)
    confirmed_sales(api, "prod-keyboard", "2026-01-02", 1, 8900)
    confirmed_sales(api, "prod-keyboard", "2026-01-03", 9, 8900)
    top = call("GET", "/sales/top", claims=ADMIN, query={"date": "2026-01-02", "limit": "2"})
    assert top.status == 200, top.body
    assert top.body == {
        "items": [
            {"product_id": "prod-cable", "units": 7, "revenue_cents": 6300},
            {"product_id": "prod-mouse", "units": 3, "revenue_cents": 8700},
        ],
        "next_token": None,
    }
    assert call("GET", "/sales/top", claims=ADMIN, query={"date": "2026-01-09"}).body["items"] == []
    assert call("GET", "/sales/top", claims=ADMIN, query={"date": "2026-13-01"}).status == 422


@pytest.mark.dynamodb_semantics
def test_the_stream_processor_is_built_with_the_sales_rules(api):
    effects = wiring.order_events_service(Table(api.client, api.table_name)).effects
    assert isinstance(effects.sales, SalesRepository)  # type: ignore[attr-defined]
