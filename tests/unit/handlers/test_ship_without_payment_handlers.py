"""PATCH /orders/{order_id} to SHIPPED on an order whose card authorisation lapsed (issue 39), over API Gateway events
on the in-memory store: 409 PAYMENT_NOT_HELD, or shipped and recorded with "ship_without_payment": true; the flag
goes only with SHIPPED (422, as the document says). The condition under the race: tests/repository/
test_ship_without_payment.py (DynamoDB Local)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
import pytest

from shop import clock
from shop.models import Order, OrderLine, OrderStatus, StatusEntry
from shop.models.orders import OrderPayment, PaymentStatus
from tests.functions.apigw import ADMIN, ALICE, REPO
from tests.support.memory_wiring import Handlers

SHIP = {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"}


def confirmed(handlers: Handlers, payment: PaymentStatus, order_id: str = "01-alice-paid") -> str:
    at = clock.iso_now()
    handlers.wiring.store.state.orders[order_id] = Order(
        order_id=order_id,
        customer_id="alice",
        status=OrderStatus.CONFIRMED,
        version=2,
        total_cents=4900,
        created_at=at,
        updated_at=at,
        lines=[OrderLine.priced("prod-keyboard", "Keyboard", 4900, 1)],
        shipping_address={"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"},
        history=[
            StatusEntry(status=OrderStatus.PENDING_PAYMENT, at=at),
            StatusEntry(status=OrderStatus.CONFIRMED, at=at),
        ],
        payment=OrderPayment(status=payment, intent_id="pi_lapsed", amount_cents=4900, currency="usd"),
    )
    return order_id


def patch(handlers: Handlers, order_id: str, body: dict[str, Any], version: int = 2) -> Any:
    return handlers.call("PATCH", f"/orders/{order_id}", claims=ADMIN, body=body, headers={"If-Match": f'"{version}"'})


def test_shipping_a_lapsed_order_is_409_payment_not_held(handlers):
    order_id = confirmed(handlers, PaymentStatus.LAPSED)
    reply = patch(handlers, order_id, SHIP)
    assert (reply.status, reply.code) == (409, "PAYMENT_NOT_HELD")
    assert reply.body["error"]["details"] == {"order_id": order_id, "payment_status": "LAPSED"}
    got = handlers.call("GET", f"/orders/{order_id}", claims=ALICE)
    assert (got.body["status"], got.body["version"], got.body["shipped_without_payment"]) == ("CONFIRMED", 2, None)


def test_ship_without_payment_ships_it_and_the_answer_says_so(handlers):
    order_id = confirmed(handlers, PaymentStatus.LAPSED)
    reply = patch(handlers, order_id, {**SHIP, "ship_without_payment": True})
    assert reply.status == 200, reply.body
    assert reply.headers["etag"] == '"3"'
    assert (reply.body["status"], reply.body["shipped_without_payment"]) == ("SHIPPED", True)
    entry = reply.body["history"][-1]
    assert (entry["status"], entry["carrier"], entry["shipped_without_payment"]) == ("SHIPPED", "DHL", True)
    got = handlers.call("GET", f"/orders/{order_id}", claims=ALICE).body
    assert (got["shipped_without_payment"], got["history"][-1]["shipped_without_payment"]) == (True, True)
    again = patch(handlers, order_id, {**SHIP, "ship_without_payment": True})  # the answer lost: sent again
    assert (again.status, again.body["version"]) == (200, 3)


def test_the_flag_on_an_order_whose_payment_is_held_changes_nothing(handlers):
    order_id = confirmed(handlers, PaymentStatus.AUTHORISED)
    reply = patch(handlers, order_id, {**SHIP, "ship_without_payment": True})
    assert (reply.status, reply.body["status"], reply.body["shipped_without_payment"]) == (200, "SHIPPED", None)
    assert reply.body["history"][-1]["shipped_without_payment"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"status": "CANCELLED", "ship_without_payment": True},
        {"status": "CANCELLED", "ship_without_payment": False},
        {**SHIP, "ship_without_payment": "yes"},
        {**SHIP, "ship_without_payment": 1},
        {**SHIP, "ship_without_payment": None},
    ],
)
def test_the_flag_outside_shipped_or_not_a_boolean_is_422_as_the_document_says(handlers, body):
    document = json.loads((REPO / "openapi.json").read_text())
    schema = {"$ref": "#/components/schemas/OrderStatusPatch", "components": document["components"]}
    assert not jsonschema_rs.Draft202012Validator(schema).is_valid(body)
    order_id = confirmed(handlers, PaymentStatus.LAPSED)
    reply = patch(handlers, order_id, body)
    assert (reply.status, reply.code) == (422, "VALIDATION_ERROR")
    assert handlers.wiring.store.state.orders[order_id].version == 2


def test_the_document_admits_the_flag_with_shipped():
    document = json.loads((REPO / "openapi.json").read_text())
    schema = {"$ref": "#/components/schemas/OrderStatusPatch", "components": document["components"]}
    for flag in (True, False):
        assert jsonschema_rs.Draft202012Validator(schema).is_valid({**SHIP, "ship_without_payment": flag})
