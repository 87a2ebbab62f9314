"""Payments (issue 25) in the fast lane: checkout under PAYMENTS=stripe, GET /orders/{order_id}/payment, Stripe's
webhook (POST /webhooks/stripe, signed as Stripe signs) and the payment steps' stream consumer, each handler on the
in-memory store with the fake provider (tests/support/fake_payments.py). The same rules on moto, DynamoDB Local
and localstripe: tests/functions/test_payment_checkout.py, test_payment_webhook.py, tests/payments/."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from shop.models import OrderStatus
from tests.functions.apigw import ADMIN, ALICE, BOB
from tests.functions.generate_payment_events import SAMPLE_SECRET, signature
from tests.support.memory_stream import lambda_event
from tests.support.memory_wiring import Handlers

ADDRESS = {
    "name": "Alice Example",
    "line1": "1 Main Street",
    "city": "Springfield",
    "postal_code": "12345",
    "country": "US",
}
WEBHOOK_HEADERS = {"content-type": "application/json; charset=utf-8"}


def place(handlers: Handlers, key: str, quantity: int = 2) -> dict[str, Any]:
    reply = handlers.call(
        "POST",
        "/orders",
        claims=ALICE,
        headers={"Idempotency-Key": key},
        body={"lines": [{"product_id": "prod-keyboard", "quantity": quantity}], "shipping_address": ADDRESS},
    )
    assert reply.status == 201, reply.body
    return reply.body


def stock(handlers: Handlers) -> int:
    return handlers.wiring.store.state.products["prod-keyboard"].product.stock


def deliver(
    handlers: Handlers,
    event_id: str,
    event_type: str,
    intent_id: str | None,
    order_id: str | None,
    *,
    created: int = 1,
    **fields: Any,
) -> Any:
    """Stripe's delivery of one event about the intent, signed with the endpoint's secret now."""
    obj: dict[str, Any] = {"id": intent_id, "object": "payment_intent", "metadata": {"order_id": order_id}, **fields}
    if intent_id is None:  # an event about another object (Stripe names every object by a string id)
        obj = {"id": "cus_1", "object": "customer"}
    body = json.dumps(
        {"id": event_id, "object": "event", "created": created, "type": event_type, "data": {"object": obj}}
    )
    headers = {**WEBHOOK_HEADERS, "Stripe-Signature": signature(body, SAMPLE_SECRET, int(time.time()))}
    return handlers.call("POST", "/webhooks/stripe", raw_body=body, headers=headers)


def steps(handlers: Handlers) -> Any:
    """The stream's new records through payment_steps (the deployed filter's work is the rules' here too)."""
    changes = handlers.wiring.stream.read()
    return handlers.invoke("payment_steps", lambda_event(changes)) if changes else None


def test_checkout_places_the_order_pending_payment_with_its_intent(paying):
    before = stock(paying)
    order = place(paying, "pay-fast-1")
    assert order["status"] == "PENDING_PAYMENT"
    payment = order["payment"]
    assert payment["provider"] == "stripe"
    assert payment["amount_cents"] == order["total_cents"]
    assert payment["client_secret"]
    assert stock(paying) == before - 2
    intents = paying.wiring.payments.intents
    assert list(intents) == [payment["intent_id"]]
    assert intents[payment["intent_id"]].intent.amount_cents == order["total_cents"]
    assert paying.wiring.store.state.orders[order["order_id"]].payment_expires_at > 0
    again = place(paying, "pay-fast-1")  # the same Idempotency-Key: the first answer, no second intent
    assert again["order_id"] == order["order_id"]
    assert len(paying.wiring.payments.intents) == 1


def test_the_payment_is_its_owners_or_an_admins(paying):
    order = place(paying, "pay-fast-2")
    path = f"/orders/{order['order_id']}/payment"
    mine = paying.call("GET", path, claims=ALICE)
    assert mine.status == 200, mine.body
    assert mine.body["status"] == "REQUIRES_PAYMENT"
    assert mine.body["amount_cents"] == order["total_cents"]
    assert mine.body["client_secret"] == order["payment"]["client_secret"]
    admin = paying.call("GET", path, claims=ADMIN)
    assert admin.status == 200
    assert "client_secret" not in admin.body  # the secret is the customer's alone
    other = paying.call("GET", path, claims=BOB)
    assert (other.status, other.code) == (404, "ORDER_NOT_FOUND")
    assert paying.call("GET", path).status == 401
    unpaid = paying.call("GET", "/orders/00-alice-pending/payment", claims=ALICE)  # placed with payments off
    assert (unpaid.status, unpaid.code) == (404, "PAYMENT_NOT_FOUND")


def test_an_authorisation_confirms_the_order_once(paying):
    order = place(paying, "pay-fast-3")
    intent = order["payment"]["intent_id"]
    paying.wiring.payments.authorise(intent)
    for _ in range(3):  # Stripe delivers again
        reply = deliver(paying, "evt_fast_auth", "payment_intent.amount_capturable_updated", intent, order["order_id"])
        assert reply.status == 200, reply.body
        assert reply.body == {"received": True, "event_id": "evt_fast_auth", "kind": "authorised"}
    stored = paying.wiring.store.state.orders[order["order_id"]]
    assert (stored.status, stored.version) == (OrderStatus.CONFIRMED, 2)
    assert stored.payment is not None
    assert stored.payment.status.value == "AUTHORISED"
    assert stored.payment.client_secret is None  # shown only while PENDING_PAYMENT: it leaves the order
    late = deliver(paying, "evt_fast_late_fail", "payment_intent.payment_failed", intent, order["order_id"])
    assert late.status == 200
    assert paying.wiring.store.state.orders[order["order_id"]].status is OrderStatus.CONFIRMED


def test_a_declined_card_is_one_attempt_and_another_card_pays(paying):
    before = stock(paying)
    order = place(paying, "pay-fast-4")
    intent = order["payment"]["intent_id"]
    assert steps(paying) == {"batchItemFailures": []}  # the placement's INSERT: no step
    declined = {"last_payment_error": {"code": "card_declined", "decline_code": "insufficient_funds", "message": "No"}}
    for _ in range(2):
        reply = deliver(paying, "evt_fast_fail", "payment_intent.payment_failed", intent, order["order_id"], **declined)
        assert (reply.status, reply.body["kind"]) == (200, "failed")
    stored = paying.wiring.store.state.orders[order["order_id"]]
    assert (stored.status, stored.version) == (OrderStatus.PENDING_PAYMENT, 1)  # still waiting, stock held
    assert stock(paying) == before - 2
    assert stored.payment is not None
    assert stored.payment.last_failure is not None
    assert (stored.payment.last_failure.code, stored.payment.last_failure.message) == ("insufficient_funds", "No")
    shown = paying.call("GET", f"/orders/{order['order_id']}/payment", claims=ALICE).body
    assert shown["last_failure"]["code"] == "insufficient_funds"
    assert shown["client_secret"] == order["payment"]["client_secret"]  # the same secret keeps working
    paying.wiring.payments.authorise(intent)  # another card
    reply = deliver(paying, "evt_fast_paid", "payment_intent.amount_capturable_updated", intent, order["order_id"])
    assert reply.status == 200
    assert paying.wiring.store.state.orders[order["order_id"]].status is OrderStatus.CONFIRMED
    assert stock(paying) == before - 2


def test_a_cancelled_intent_fails_the_order_and_gives_the_stock_back_once(paying):
    before = stock(paying)
    order = place(paying, "pay-fast-4b")
    intent = order["payment"]["intent_id"]
    assert steps(paying) == {"batchItemFailures": []}
    paying.wiring.payments.cancel(intent, idempotency_key="customer-gave-up")
    for _ in range(2):
        reply = deliver(paying, "evt_fast_cancel", "payment_intent.canceled", intent, order["order_id"])
        assert (reply.status, reply.body["kind"]) == (200, "canceled")
    stored = paying.wiring.store.state.orders[order["order_id"]]
    assert (stored.status, stored.version) == (OrderStatus.PAYMENT_FAILED, 2)
    assert stock(paying) == before
    assert paying.wiring.store.state.order_ttls[order["order_id"]] > 0  # final: archived later
    calls = len(paying.wiring.payments.calls)
    assert steps(paying) == {"batchItemFailures": []}  # the PAYMENT_FAILED record: the intent is cancelled already
    assert len(paying.wiring.payments.calls) == calls
    payment = paying.wiring.store.state.orders[order["order_id"]].payment
    assert payment is not None
    assert payment.status.value == "CANCELED"


def test_unknown_orders_and_other_types_are_received_and_change_nothing(paying):
    before = dict(paying.wiring.store.state.orders)
    unknown = deliver(paying, "evt_fast_unknown", "payment_intent.succeeded", "pi_nobody", "no-such-order")
    assert (unknown.status, unknown.body["kind"]) == (200, "authorised")
    ignored = deliver(paying, "evt_fast_ignored", "customer.created", None, None)
    assert (ignored.status, ignored.body["kind"]) == (200, "ignored")
    assert paying.wiring.store.state.orders == before


def test_a_forged_or_unsigned_delivery_is_refused(paying):
    order = place(paying, "pay-fast-5")
    body = json.dumps(
        {
            "id": "evt_forged",
            "object": "event",
            "created": 1,
            "type": "payment_intent.succeeded",
            "data": {
                "object": {
                    "id": order["payment"]["intent_id"],
                    "object": "payment_intent",
                    "metadata": {"order_id": order["order_id"]},
                }
            },
        }
    )
    forged = {**WEBHOOK_HEADERS, "Stripe-Signature": "t=1,v1=" + "0" * 64}
    for headers in (forged, WEBHOOK_HEADERS):
        reply = paying.call("POST", "/webhooks/stripe", raw_body=body, headers=headers)
        assert (reply.status, reply.code) == (400, "WEBHOOK_SIGNATURE_INVALID"), reply.body
    assert paying.wiring.store.state.orders[order["order_id"]].status is OrderStatus.PENDING_PAYMENT


def test_each_delivery_is_counted_by_its_status_refusals_too(paying, capsys):
    capsys.readouterr()
    deliver(paying, "evt_fast_counted", "customer.created", None, None)
    forged = {**WEBHOOK_HEADERS, "Stripe-Signature": "t=1,v1=" + "0" * 64}
    paying.call("POST", "/webhooks/stripe", raw_body="{}", headers=forged)
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [name for blob in emitted for name in blob if name.startswith("Webhook")] == ["Webhook200", "Webhook400"]


def test_a_signed_body_nested_too_deeply_is_refused_not_a_500(paying):
    """Found attacking the webhook by hand on make dev: a correctly signed body of 100,000 nested lists made
    json.loads raise RecursionError, which is no ValueError, and the route answered 500 INTERNAL_ERROR."""
    for body in ("[" * 100_000 + "]" * 100_000, '{"a":' * 5_000 + "1" + "}" * 5_000):
        headers = {**WEBHOOK_HEADERS, "Stripe-Signature": signature(body, SAMPLE_SECRET, int(time.time()))}
        reply = paying.call("POST", "/webhooks/stripe", raw_body=body, headers=headers)
        assert (reply.status, reply.code) == (400, "WEBHOOK_PAYLOAD_INVALID"), reply.body


@pytest.mark.parametrize(
    "wrong",
    [
        {"id": {}},
        {"id": 7},
        {"type": 5},
        {"type": None},
        {"created": "1800000000"},
        {"created": 1.5},
        {"created": True},
        {"data": {"object": "pi_1"}},
        {"data": []},
        {"data": {"object": {"id": 5, "object": "payment_intent", "metadata": {}}}},
    ],
)
def test_a_signed_event_of_other_types_than_the_document_says_is_refused(paying, wrong):
    """Found by the fuzz test once it signed its deliveries: `{"id": {}, ...}` was answered 200 (its id read as the
    string "{}"), a schema-violating request accepted. id and type are strings, created an integer, data.object an
    object: what the document says a Stripe Event is."""
    event = {"id": "evt_t", "object": "event", "type": "payment_intent.succeeded", "created": 1}
    event |= {"data": {"object": {"id": "pi_1", "object": "payment_intent", "metadata": {}}}} | wrong
    body = json.dumps(event)
    headers = {**WEBHOOK_HEADERS, "Stripe-Signature": signature(body, SAMPLE_SECRET, int(time.time()))}
    reply = paying.call("POST", "/webhooks/stripe", raw_body=body, headers=headers)
    assert (reply.status, reply.code) == (400, "WEBHOOK_PAYLOAD_INVALID"), reply.body


def test_the_webhook_is_not_there_with_payments_off_and_its_404_is_counted(handlers, capsys):
    capsys.readouterr()
    reply = handlers.call("POST", "/webhooks/stripe", raw_body="{}", headers={"Stripe-Signature": "t=1,v1=00"})
    assert (reply.status, reply.code) == (404, "NOT_FOUND")
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [name for blob in emitted for name in blob if name.startswith("Webhook")] == ["Webhook404"]


def test_shipping_a_paid_order_captures_it_once_through_payment_steps(paying):
    order = place(paying, "pay-fast-6")
    intent = order["payment"]["intent_id"]
    paying.wiring.payments.authorise(intent)
    deliver(paying, "evt_fast_ship", "payment_intent.succeeded", intent, order["order_id"])
    steps(paying)  # the confirmation's record: no step
    assert paying.wiring.payments.captured_cents(intent) == 0
    shipped = paying.call(
        "PATCH",
        f"/orders/{order['order_id']}",
        claims=ADMIN,
        headers={"If-Match": '"2"'},
        body={"status": "SHIPPED", "carrier": "UPS", "tracking_number": "1Z999"},
    )
    assert shipped.status == 200, shipped.body
    changes = paying.wiring.stream.read()
    for _ in range(2):  # a replayed batch captures nothing twice
        answer = paying.invoke("payment_steps", lambda_event(changes))
        assert answer == {"batchItemFailures": []}
    assert paying.wiring.payments.captured_cents(intent) == order["total_cents"]
    assert [op for op, _ in paying.wiring.payments.calls].count("capture") == 1
    payment = paying.wiring.store.state.orders[order["order_id"]].payment
    assert payment is not None
    assert (payment.status.value, payment.captured_cents) == ("CAPTURED", order["total_cents"])
