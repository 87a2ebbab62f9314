"""The checkout's fixtures in the fast lane: a shop shipping to Europe and taxing Germany, and the calls the order's
total tests make (tests/unit/handlers/test_checkout_total_handlers.py, test_promotion_handlers.py)."""

from __future__ import annotations

from typing import Any

from tests.functions.apigw import ADMIN, ALICE
from tests.support.memory_wiring import Handlers

BERLIN = {"name": "A", "line1": "1 Hauptstr.", "city": "Berlin", "postal_code": "10115", "country": "DE"}
LOS_ANGELES = {
    "name": "B",
    "line1": "1 Main St",
    "city": "Los Angeles",
    "postal_code": "90001",
    "country": "US",
    "region": "US-CA",
}
EUROPE = {
    "name": "Europe",
    "countries": ["DE", "AT"],
    "options": [
        {"option_id": "standard", "name": "Standard", "price_cents": 499, "free_over_cents": 20000},
        {"option_id": "express", "name": "Express", "price_cents": 1299},
    ],
}
# prod-keyboard 8900 x 2 and prod-cable 900 x 3 (events/seed.json): 20,500 cents of goods
LINES = [{"product_id": "prod-keyboard", "quantity": 2}, {"product_id": "prod-cable", "quantity": 3}]
BREAKDOWN = (
    "subtotal_cents",
    "discount_cents",
    "shipping_cents",
    "shipping_tax_cents",
    "tax_cents",
    "total_cents",
    "prices_include_tax",
    "tax_rate_bps",
    "shipping_option",
    "currency",
)


def admin_put(handlers: Handlers, path: str, body: dict[str, Any]) -> Any:
    reply = handlers.call("PUT", path, claims=ADMIN, body=body)
    assert reply.status == 200, reply.body
    return reply.body


def quote(handlers: Handlers, body: dict[str, Any], status: int = 200) -> Any:
    reply = handlers.call("POST", "/checkout/quote", body=body)
    assert reply.status == status, reply.body
    return reply.body


def place(handlers: Handlers, body: dict[str, Any], key: str, status: int = 201) -> Any:
    reply = handlers.call("POST", "/orders", claims=ALICE, headers={"Idempotency-Key": key}, body=body)
    assert reply.status == status, reply.body
    return reply.body


def assert_order_is_the_quote(order: dict[str, Any], quoted: dict[str, Any]) -> None:
    assert {name: order[name] for name in BREAKDOWN} == {name: quoted[name] for name in BREAKDOWN}
    assert order["lines"] == quoted["lines"]
    lines_paid = sum(line["line_total_cents"] - line["discount_cents"] for line in order["lines"])
    tax_added = 0 if order["prices_include_tax"] else order["tax_cents"]
    assert order["total_cents"] == lines_paid + order["shipping_cents"] + tax_added
