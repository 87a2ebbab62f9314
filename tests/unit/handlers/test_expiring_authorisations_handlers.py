"""GET /orders?payment=expiring (issue 39) over API Gateway events on the in-memory store: the admin's list of
confirmed orders whose card authorisation will soon lapse, oldest first, each with its payment_status; exactly one of
status and payment (422 otherwise, as the document says); the answer is what the document declares."""

from __future__ import annotations

import json
from datetime import timedelta

import jsonschema_rs
import pytest

from shop import clock
from shop.models import Order, OrderLine, OrderStatus, StatusEntry
from shop.models.orders import OrderPayment, PaymentStatus
from tests.functions.apigw import ADMIN, ALICE, REPO
from tests.support.memory_wiring import Handlers

DOCUMENT = json.loads((REPO / "openapi.json").read_text())


def confirmed(handlers: Handlers, order_id: str, days_ago: float, payment: PaymentStatus | None) -> None:
    at = clock.iso(clock.now() - timedelta(days=days_ago))
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
        history=[StatusEntry(status=OrderStatus.CONFIRMED, at=at)],
        payment=None if payment is None else OrderPayment(status=payment, amount_cents=4900, currency="usd"),
    )


def declared(body: object) -> bool:
    schema = {"$ref": "#/components/schemas/OrderListPage", "components": DOCUMENT["components"]}
    return bool(jsonschema_rs.Draft202012Validator(schema).is_valid(body))


def test_the_admin_lists_the_orders_whose_authorisation_will_soon_lapse_oldest_first(handlers):
    confirmed(handlers, "01-lapsing", 6.5, PaymentStatus.AUTHORISED)
    confirmed(handlers, "01-lapsed", 9, PaymentStatus.LAPSED)
    confirmed(handlers, "01-fresh", 1, PaymentStatus.AUTHORISED)
    confirmed(handlers, "01-unpaid-era", 7, None)
    reply = handlers.call("GET", "/orders", claims=ADMIN, query={"payment": "expiring"})
    assert reply.status == 200, reply.body
    assert [(o["order_id"], o["payment_status"]) for o in reply.body["items"]] == [
        ("01-lapsed", "LAPSED"),
        ("01-unpaid-era", None),
        ("01-lapsing", "AUTHORISED"),
    ]
    assert reply.body["next_token"] is None
    assert declared(reply.body)
    assert set(reply.body["items"][0]) == {
        "order_id",
        "customer_id",
        "status",
        "version",
        "total_cents",
        "created_at",
        "updated_at",
        "payment_status",
    }


def test_pages_follow_their_token(handlers):
    for n in range(5):
        confirmed(handlers, f"01-old-{n}", 10 - n, PaymentStatus.AUTHORISED)
    seen, token = [], None
    while True:
        query = {"payment": "expiring", "limit": "2", **({"next_token": token} if token else {})}
        reply = handlers.call("GET", "/orders", claims=ADMIN, query=query)
        assert reply.status == 200, reply.body
        seen += [o["order_id"] for o in reply.body["items"]]
        token = reply.body["next_token"]
        if token is None:
            break
    assert seen == [f"01-old-{n}" for n in range(5)]


def test_the_status_listing_answers_as_before(handlers):
    reply = handlers.call("GET", "/orders", claims=ADMIN, query={"status": "PENDING"})
    assert reply.status == 200
    assert [o["order_id"] for o in reply.body["items"]] == ["00-alice-pending"]
    assert "payment_status" not in reply.body["items"][0]
    assert declared(reply.body)


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"status": "CONFIRMED", "payment": "expiring"},
        {"payment": "lapsing"},
        {"payment": ""},
        {"payment": "EXPIRING"},
    ],
    ids=["neither", "both", "unknown", "empty", "case"],
)
def test_exactly_one_of_status_and_payment_and_only_expiring(handlers, query):
    reply = handlers.call("GET", "/orders", claims=ADMIN, query=query)
    assert (reply.status, reply.code) == (422, "VALIDATION_ERROR")


def test_customers_are_refused_whatever_they_ask(handlers):
    for query in ({"payment": "expiring"}, {}):
        reply = handlers.call("GET", "/orders", claims=ALICE, query=query)
        assert (reply.status, reply.code) == (403, "FORBIDDEN")
