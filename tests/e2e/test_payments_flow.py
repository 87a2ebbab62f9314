"""The paid checkout over HTTP on `make dev`'s stack with localstripe (`--payments stripe`, make dev's default).

The stack starts localstripe on a free port, points every function at it and registers the gateway's
/webhooks/stripe with a fresh secret (local_runtime.payments). Nothing reaches the internet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import requests

from local_runtime.payments import STATE_FILE, post_event, signed
from tests.e2e.conftest import Stack, create_product, eventually, expect, order_lines, place_order

PAYMENTS = ("--payments", "stripe")


def _state(stack: Stack) -> dict[str, Any]:
    return json.loads((stack.data_dir / STATE_FILE).read_text())


def _intents_of(state: dict[str, Any], order_id: str) -> list[dict[str, Any]]:
    """localstripe's intents whose metadata names the order (it ignores idempotency keys: count them)."""
    import stripe

    client = stripe.StripeClient("sk_test_e2e", base_addresses={"api": state["stripe"]}, max_network_retries=0)
    listed = client.v1.payment_intents.list(params={"limit": 100})
    intents = [i.to_dict() for i in listed.auto_paging_iter()]
    return [i for i in intents if (i.get("metadata") or {}).get("order_id") == order_id]


def test_a_paid_checkout_holds_one_intent_and_the_webhook_verifies_deliveries(new_stack: Callable[..., Stack]) -> None:
    stack = new_stack(options=PAYMENTS)
    api, admin = stack.api, stack.admin_token()
    customer = stack.token("e2e-payer")
    state = _state(stack)
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

    path = f"/orders/{placed['order_id']}/payment"
    mine = expect(api.get(path, token=customer), 200)
    assert mine["client_secret"] == payment["client_secret"]
    assert "client_secret" not in expect(api.get(path, token=admin), 200)
    expect(api.get(path, token=stack.token("e2e-stranger")), 404, "ORDER_NOT_FOUND")

    # The webhook route over the gateway: a forged delivery is 400; an unknown type signed with the endpoint's
    # secret is 200 and applies nothing.
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
        logs = list(stack.data_dir.rglob("payments.log"))
        return sum(log.read_text().count('"Webhook200":[1.0]') for log in logs) >= 2

    eventually(delivered, timeout=30, what="localstripe's signed customer.created answered 200")
    assert expect(api.get(f"/orders/{placed['order_id']}", token=customer), 200)["status"] == "PENDING_PAYMENT"
    stack.stop_cleanly()
