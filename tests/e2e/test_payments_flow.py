"""Payments over HTTP on `make dev`'s stack with localstripe (`--payments stripe`, make dev's default): one stack,
booted once (conftest's `paying_stack`), with a 30-second payment window (`--env PAYMENT_WINDOW_SECONDS=30`, what
`make dev FUNCTION_ENV=PAYMENT_WINDOW_SECONDS=30` passes). The fuzz test runs on the same stack, in the same
xdist group, before these tests (collection order): every assertion here is about this module's own orders,
products and intents, and webhook deliveries are counted from what the log held before them.

The stack starts localstripe on a free port, points every function at it and registers the gateway's
/webhooks/stripe with a fresh secret (local_runtime.payments); payment_steps consumes the table's stream beside
order_events with its deployed filters. The customer's browser is `make -s pay` (`local_runtime pay`). Nothing
reaches the internet.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from local_runtime.payments import STATE_FILE, post_event, signed
from tests.e2e.conftest import (
    PAYING_WINDOW_S,
    REPO_ROOT,
    Stack,
    create_product,
    eventually,
    expect,
    order_lines,
    place_order,
    stack_env,
)

# Its own group, shared with the fuzz test, which runs on the same stack (conftest's `paying_stack`).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-payments")]
WINDOW_S = PAYING_WINDOW_S


def _state(stack: Stack) -> dict[str, Any]:
    return json.loads((stack.data_dir / STATE_FILE).read_text())


def _intents(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every intent at localstripe (it ignores idempotency keys: the shop's calls are counted by its objects)."""
    import stripe

    client = stripe.StripeClient("sk_test_e2e", base_addresses={"api": state["stripe"]}, max_network_retries=0)
    listed = client.v1.payment_intents.list(params={"limit": 100})
    return [i.to_dict() for i in listed.auto_paging_iter()]


def _intents_of(state: dict[str, Any], order_id: str) -> list[dict[str, Any]]:
    """localstripe's intents whose metadata names the order."""
    return [i for i in _intents(state) if (i.get("metadata") or {}).get("order_id") == order_id]


def _refunds_of(state: dict[str, Any], intent_id: str) -> list[dict[str, Any]]:
    """localstripe's refunds of the intent (it ignores idempotency keys: count them)."""
    import stripe

    client = stripe.StripeClient("sk_test_e2e", base_addresses={"api": state["stripe"]}, max_network_retries=0)
    listed = client.v1.refunds.list(params={"payment_intent": intent_id, "limit": 100})
    return [r.to_dict() for r in listed.auto_paging_iter()]


@dataclass
class Paying:
    """The module's stack, its localstripe state, and an order left unpaid from the start (its window runs while
    the other tests do)."""

    stack: Stack
    state: dict[str, Any]
    admin: str
    customer: str
    unpaid: dict[str, Any]
    unpaid_product: str

    def pay(self, order_id: str, card: str = "visa") -> str:
        """`make -s pay ORDER=<id> [CARD=declined]` against this stack's data directory."""
        command = [sys.executable, "-m", "local_runtime", "pay", "--order", order_id, "--card", card]
        done = subprocess.run(
            [*command, "--data-dir", str(self.stack.data_dir)],
            cwd=REPO_ROOT,
            env=stack_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def order(self, order_id: str) -> dict[str, Any]:
        return expect(self.stack.api.get(f"/orders/{order_id}", token=self.customer), 200)

    def payment(self, order_id: str) -> dict[str, Any]:
        return expect(self.stack.api.get(f"/orders/{order_id}/payment", token=self.customer), 200)

    def stock(self, product_id: str) -> int:
        return int(expect(self.stack.api.get(f"/products/{product_id}"), 200)["stock"])

    def intent(self, order_id: str) -> dict[str, Any]:
        (intent,) = _intents_of(self.state, order_id)
        return intent


@pytest.fixture(scope="module")
def paying(paying_stack: Stack) -> Paying:
    stack = paying_stack
    admin, customer = stack.admin_token(), stack.token("e2e-payer")
    product = create_product(stack.api, admin, category="e2e-pay-late", name="Tamper", price_cents=1900, stock=4)
    unpaid = expect(place_order(stack.api, customer, "pay-late", order_lines(product["product_id"], 3)), 201)
    return Paying(stack, _state(stack), admin, customer, unpaid, product["product_id"])


def test_a_paid_checkout_holds_one_intent_and_the_webhook_verifies_deliveries(paying: Paying) -> None:
    stack, admin, customer, state = paying.stack, paying.admin, paying.customer, paying.state
    api = stack.api
    product = create_product(api, admin, category="e2e-pay", name="Grinder", price_cents=4500, stock=5)

    placed = expect(place_order(api, customer, "pay-1", order_lines(product["product_id"], 2)), 201)
    assert placed["status"] == "PENDING_PAYMENT"
    payment = placed["payment"]
    assert (payment["provider"], payment["amount_cents"], payment["currency"]) == ("stripe", 9000, "usd")
    for _ in range(2):  # the repeat is the same order and makes no second intent
        assert expect(place_order(api, customer, "pay-1", order_lines(product["product_id"], 2)), 201) == placed
    (intent,) = _intents_of(state, placed["order_id"])
    assert (intent["id"], intent["amount"], intent["capture_method"]) == (payment["intent_id"], 9000, "manual")
    assert expect(api.get(f"/products/{product['product_id']}"), 200)["stock"] == 3  # held while unpaid
    # The intent comes after the read: a checkout the read already refuses never reaches Stripe.
    before = len(_intents(state))
    expect(place_order(api, customer, "pay-short", order_lines(product["product_id"], 4)), 409, "OUT_OF_STOCK")
    expect(place_order(api, customer, "pay-ghost", order_lines("prod-e2e-ghost", 1)), 404, "PRODUCT_NOT_FOUND")
    assert len(_intents(state)) == before

    path = f"/orders/{placed['order_id']}/payment"
    mine = expect(api.get(path, token=customer), 200)
    assert mine["client_secret"] == payment["client_secret"]
    assert "client_secret" not in expect(api.get(path, token=admin), 200)
    expect(api.get(path, token=stack.token("e2e-stranger")), 404, "ORDER_NOT_FOUND")

    # The webhook route over the gateway: a forged delivery is 400; an unknown type signed with the endpoint's
    # secret is 200 and applies nothing.
    def answered_200() -> int:
        return sum(log.read_text().count('"Webhook200":[1.0]') for log in stack.data_dir.rglob("payments.log"))

    before_deliveries = answered_200()  # the fuzz test's, on this stack before this module
    url = state["webhook_url"]
    event = {"id": "evt_e2e_unknown", "object": "event", "type": "customer.created", "created": int(time.time())}
    event["data"] = {"object": {"id": "cus_1", "object": "customer"}}
    body = json.dumps(event).encode()
    forged = requests.post(
        url,
        data=body,
        headers={"Content-Type": "application/json", "Stripe-Signature": signed(body, "whsec_x")},
        timeout=30,
    )
    expect(forged, 400, "WEBHOOK_SIGNATURE_INVALID")
    status, answer = post_event(url, state["webhook_secret"], event)
    assert status == 200, answer
    assert json.loads(answer)["kind"] == "ignored"

    # A delivery localstripe signs itself: creating a customer there makes it post customer.created to the
    # gateway, verified by the payments function (its metric line counts the 200).
    import stripe

    stripe.StripeClient("sk_test_e2e", base_addresses={"api": state["stripe"]}).v1.customers.create()

    def delivered() -> bool:
        return answered_200() >= before_deliveries + 2

    eventually(delivered, timeout=30, what="localstripe's signed customer.created answered 200")
    assert expect(api.get(f"/orders/{placed['order_id']}", token=customer), 200)["status"] == "PENDING_PAYMENT"


def test_a_paid_order_is_confirmed_by_the_webhook_and_captured_when_shipped(paying: Paying) -> None:
    api = paying.stack.api
    product = create_product(api, paying.admin, category="e2e-pay", name="Scale", price_cents=3200, stock=5)
    placed = expect(place_order(api, paying.customer, "pay-ship", order_lines(product["product_id"], 2)), 201)
    order_id = placed["order_id"]
    assert "authorised 6400 usd" in paying.pay(order_id)  # the real signed webhook, over the gateway
    confirmed = eventually(
        lambda: (o := paying.order(order_id))["status"] == "CONFIRMED" and o, timeout=30, what="CONFIRMED"
    )
    assert confirmed["version"] == 2
    assert paying.payment(order_id)["status"] == "AUTHORISED"
    assert "client_secret" not in paying.payment(order_id)  # the order no longer waits for a payment
    assert paying.stock(product["product_id"]) == 3  # sold

    shipment = {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"}
    ship = api.patch(f"/orders/{order_id}", token=paying.admin, headers={"If-Match": '"2"'}, json=shipment)
    assert expect(ship, 200)["status"] == "SHIPPED"
    captured = eventually(
        lambda: (p := paying.payment(order_id))["status"] == "CAPTURED" and p, timeout=30, what="captured"
    )
    assert (captured["captured_cents"], captured["amount_cents"]) == (6400, 6400)
    intent = paying.intent(order_id)  # one intent, captured at localstripe for the stored total
    assert (intent["status"], intent["amount"]) == ("succeeded", 6400)

    # delivered, returned by the customer, accepted by the admin: the stored total refunded once, stock back
    delivered = api.patch(
        f"/orders/{order_id}", token=paying.admin, headers={"If-Match": '"3"'}, json={"status": "DELIVERED"}
    )
    assert expect(delivered, 200)["status"] == "DELIVERED"
    asked = api.post(f"/orders/{order_id}/return", token=paying.customer, json={"reason": "Too heavy for me."})
    assert expect(asked, 200)["status"] == "RETURN_REQUESTED"
    accepted = api.patch(
        f"/orders/{order_id}", token=paying.admin, headers={"If-Match": '"5"'}, json={"status": "RETURNED"}
    )
    assert expect(accepted, 200)["status"] == "RETURNED"
    refunded = eventually(
        lambda: (p := paying.payment(order_id))["refunded_cents"] == 6400 and p, timeout=30, what="refunded"
    )
    assert (refunded["captured_cents"], refunded["refunded_cents"]) == (6400, 6400)
    refunds = _refunds_of(paying.state, intent["id"])  # one refund at localstripe, of the stored total
    assert [r["amount"] for r in refunds] == [6400]
    assert paying.stock(product["product_id"]) == 5  # restocked by the return


def test_a_declined_card_fails_the_payment_and_gives_the_stock_back(paying: Paying) -> None:
    api = paying.stack.api
    product = create_product(api, paying.admin, category="e2e-pay", name="Jug", price_cents=1500, stock=5)
    placed = expect(place_order(api, paying.customer, "pay-declined", order_lines(product["product_id"], 2)), 201)
    order_id = placed["order_id"]
    assert paying.stock(product["product_id"]) == 3
    assert paying.pay(order_id, "declined").startswith("declined")  # localstripe posts payment_failed itself
    failed = eventually(
        lambda: (o := paying.order(order_id))["status"] == "PAYMENT_FAILED" and o, timeout=30, what="PAYMENT_FAILED"
    )
    assert failed["version"] == 2
    assert paying.stock(product["product_id"]) == 5  # back, once
    # the stream's CANCEL step releases the intent
    eventually(lambda: paying.payment(order_id)["status"] == "CANCELED", timeout=30, what="intent cancelled")
    assert paying.intent(order_id)["status"] == "canceled"


def test_an_unpaid_order_expires_through_the_ttl_emulator(paying: Paying) -> None:
    order_id = paying.unpaid["order_id"]
    assert paying.unpaid["status"] == "PENDING_PAYMENT"
    expired = eventually(
        lambda: (o := paying.order(order_id))["status"] == "EXPIRED" and o,
        timeout=WINDOW_S + 90,  # the window (placed when the stack started), then a sweep and the stream
        interval=1,
        what="EXPIRED",
    )
    assert expired["version"] == 2
    assert paying.stock(paying.unpaid_product) == 4  # the three held units back
    eventually(lambda: paying.payment(order_id)["status"] == "CANCELED", timeout=30, what="intent cancelled")
    assert paying.intent(order_id)["status"] == "canceled"
