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
def paying_flow(paying_stack: Stack, left_to_sweep: dict[str, Any]) -> Paying:
    """The module's orders; first, the one left to the windows' sweep, whose wait then runs beside this module's
    tests (tests/e2e/test_payments_sweep.py)."""
    stack = paying_stack
    admin, customer = stack.admin_token(), stack.token("e2e-payer")
    product = create_product(stack.api, admin, category="e2e-pay-late", name="Tamper", price_cents=1900, stock=4)
    unpaid = expect(place_order(stack.api, customer, "pay-late", order_lines(product["product_id"], 3)), 201)
    return Paying(stack, _state(stack), admin, customer, unpaid, product["product_id"])


def test_a_paid_checkout_holds_one_intent_and_the_webhook_verifies_deliveries(paying_flow: Paying) -> None:
    stack, admin, customer, state = paying_flow.stack, paying_flow.admin, paying_flow.customer, paying_flow.state
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


def test_a_paid_order_is_confirmed_by_the_webhook_and_captured_when_shipped(paying_flow: Paying) -> None:
    api = paying_flow.stack.api
    product = create_product(api, paying_flow.admin, category="e2e-pay", name="Scale", price_cents=3200, stock=5)
    placed = expect(place_order(api, paying_flow.customer, "pay-ship", order_lines(product["product_id"], 2)), 201)
    order_id = placed["order_id"]
    assert "authorised 6400 usd" in paying_flow.pay(order_id)  # the real signed webhook, over the gateway
    confirmed = eventually(
        lambda: (o := paying_flow.order(order_id))["status"] == "CONFIRMED" and o, timeout=30, what="CONFIRMED"
    )
    assert confirmed["version"] == 2
    assert paying_flow.payment(order_id)["status"] == "AUTHORISED"
    assert "client_secret" not in paying_flow.payment(order_id)  # the order no longer waits for a payment
    assert paying_flow.stock(product["product_id"]) == 3  # sold

    shipment = {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"}
    ship = api.patch(f"/orders/{order_id}", token=paying_flow.admin, headers={"If-Match": '"2"'}, json=shipment)
    assert expect(ship, 200)["status"] == "SHIPPED"
    captured = eventually(
        lambda: (p := paying_flow.payment(order_id))["status"] == "CAPTURED" and p, timeout=30, what="captured"
    )
    assert (captured["captured_cents"], captured["amount_cents"]) == (6400, 6400)
    intent = paying_flow.intent(order_id)  # one intent, captured at localstripe for the stored total
    assert (intent["status"], intent["amount"]) == ("succeeded", 6400)

    # delivered, returned by the customer, accepted by the admin: the stored total refunded once, stock back
    delivered = api.patch(
        f"/orders/{order_id}", token=paying_flow.admin, headers={"If-Match": '"3"'}, json={"status": "DELIVERED"}
    )
    assert expect(delivered, 200)["status"] == "DELIVERED"
    asked = api.post(f"/orders/{order_id}/return", token=paying_flow.customer, json={"reason": "Too heavy for me."})
    assert expect(asked, 200)["status"] == "RETURN_REQUESTED"
    accepted = api.patch(
        f"/orders/{order_id}", token=paying_flow.admin, headers={"If-Match": '"5"'}, json={"status": "RETURNED"}
    )
    assert expect(accepted, 200)["status"] == "RETURNED"
    refunded = eventually(
        lambda: (p := paying_flow.payment(order_id))["refunded_cents"] == 6400 and p, timeout=30, what="refunded"
    )
    assert (refunded["captured_cents"], refunded["refunded_cents"]) == (6400, 6400)
    refunds = _refunds_of(paying_flow.state, intent["id"])  # one refund at localstripe, of the stored total
    assert [r["amount"] for r in refunds] == [6400]
    assert paying_flow.stock(product["product_id"]) == 5  # restocked by the return


def _localstripe(state: dict[str, Any]) -> Any:
    import stripe

    return stripe.StripeClient("sk_test_e2e", base_addresses={"api": state["stripe"]}, max_network_retries=0)


def _deliver(paying: Paying, event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
    """What Stripe sends for a change localstripe makes silently (it announces neither a cancelled intent nor a
    refund), signed with the endpoint's secret, over the gateway."""
    event = {
        "id": f"evt_e2e_{event_type}_{time.time_ns()}",
        "object": "event",
        "type": event_type,
        "created": int(time.time()),
        "data": {"object": obj},
    }
    status, answer = post_event(paying.state["webhook_url"], paying.state["webhook_secret"], event)
    assert status == 200, answer
    return json.loads(answer)


def _confirmed(paying: Paying, name: str, price_cents: int, quantity: int = 1) -> tuple[str, str]:
    """(order id, product id) of an order paid with a card that authorises, CONFIRMED."""
    api = paying.stack.api
    product = create_product(api, paying.admin, category="e2e-pay", name=name, price_cents=price_cents, stock=5)
    placed = expect(place_order(api, paying.customer, f"pay-{name}", order_lines(product["product_id"], quantity)), 201)
    order_id = placed["order_id"]
    paying.pay(order_id)
    eventually(lambda: paying.order(order_id)["status"] == "CONFIRMED", timeout=30, what="CONFIRMED")
    return order_id, product["product_id"]


def test_a_declined_card_is_one_attempt_and_another_card_pays_with_the_stock_held(paying_flow: Paying) -> None:
    api = paying_flow.stack.api
    product = create_product(api, paying_flow.admin, category="e2e-pay", name="Jug", price_cents=1500, stock=5)
    placed = expect(place_order(api, paying_flow.customer, "pay-declined", order_lines(product["product_id"], 2)), 201)
    order_id = placed["order_id"]
    assert paying_flow.stock(product["product_id"]) == 3
    assert paying_flow.pay(order_id, "declined").startswith("declined")  # localstripe posts payment_failed itself
    failure = eventually(
        lambda: paying_flow.payment(order_id).get("last_failure"), timeout=30, what="the failed attempt recorded"
    )
    assert failure["code"]
    waiting = paying_flow.order(order_id)
    assert (waiting["status"], waiting["version"]) == ("PENDING_PAYMENT", 1)
    assert paying_flow.stock(product["product_id"]) == 3  # still held
    assert paying_flow.payment(order_id)["client_secret"] == placed["payment"]["client_secret"]  # the same secret
    assert "authorised 3000 usd" in paying_flow.pay(order_id)  # another card, the same intent
    eventually(lambda: paying_flow.order(order_id)["status"] == "CONFIRMED", timeout=30, what="CONFIRMED")
    assert paying_flow.order(order_id)["version"] == 2
    assert paying_flow.stock(product["product_id"]) == 3  # sold, never released in between
    assert paying_flow.intent(order_id)["status"] == "requires_capture"


def test_an_intent_cancelled_at_stripe_fails_the_waiting_order_and_gives_the_stock_back(paying_flow: Paying) -> None:
    api = paying_flow.stack.api
    product = create_product(api, paying_flow.admin, category="e2e-pay", name="Carafe", price_cents=1100, stock=5)
    placed = expect(place_order(api, paying_flow.customer, "pay-gave-up", order_lines(product["product_id"], 2)), 201)
    order_id, intent_id = placed["order_id"], placed["payment"]["intent_id"]
    cancelled = _localstripe(paying_flow.state).v1.payment_intents.cancel(intent_id).to_dict()
    for _ in range(3):  # Stripe delivers at least once
        assert _deliver(paying_flow, "payment_intent.canceled", cancelled)["kind"] == "canceled"
    failed = eventually(
        lambda: (o := paying_flow.order(order_id))["status"] == "PAYMENT_FAILED" and o,
        timeout=30,
        what="PAYMENT_FAILED",
    )
    assert failed["version"] == 2
    assert paying_flow.stock(product["product_id"]) == 5  # back, once
    assert paying_flow.payment(order_id)["status"] == "CANCELED"


def test_a_lapsed_authorisation_is_recorded_and_shipping_it_is_refused_unless_knowingly(paying_flow: Paying) -> None:
    api = paying_flow.stack.api
    order_id, _ = _confirmed(paying_flow, "Kettle", 2700)
    intent_id = paying_flow.intent(order_id)["id"]
    lapsed = _localstripe(paying_flow.state).v1.payment_intents.cancel(intent_id).to_dict()  # Stripe, after ~7 days
    for _ in range(3):
        assert _deliver(paying_flow, "payment_intent.canceled", lapsed)["kind"] == "canceled"
    eventually(lambda: paying_flow.payment(order_id)["status"] == "LAPSED", timeout=30, what="LAPSED")
    assert paying_flow.order(order_id)["status"] == "CONFIRMED"
    shipment = {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000063"}
    refused = api.patch(f"/orders/{order_id}", token=paying_flow.admin, headers={"If-Match": '"2"'}, json=shipment)
    expect(refused, 409, "PAYMENT_NOT_HELD")
    knowingly = {**shipment, "ship_without_payment": True}
    shipped = expect(
        api.patch(f"/orders/{order_id}", token=paying_flow.admin, headers={"If-Match": '"2"'}, json=knowingly), 200
    )
    assert (shipped["status"], shipped["shipped_without_payment"]) == ("SHIPPED", True)
    # The stream has read the SHIPPED record (its history entry is written): the capture step took nothing.
    eventually(
        lambda: any(entry["status"] == "SHIPPED" for entry in paying_flow.order(order_id)["history"]),
        timeout=30,
        what="the SHIPPED record read",
    )
    payment = paying_flow.payment(order_id)
    assert (payment["status"], payment["captured_cents"]) == ("LAPSED", 0)


def test_a_dashboard_refund_is_recorded_and_a_later_return_refunds_only_the_rest(paying_flow: Paying) -> None:
    api = paying_flow.stack.api
    order_id, product_id = _confirmed(paying_flow, "Tray", 2000, quantity=2)
    shipment = {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000064"}
    expect(api.patch(f"/orders/{order_id}", token=paying_flow.admin, headers={"If-Match": '"2"'}, json=shipment), 200)
    eventually(lambda: paying_flow.payment(order_id)["status"] == "CAPTURED", timeout=30, what="captured")
    client = _localstripe(paying_flow.state)
    intent = paying_flow.intent(order_id)
    client.v1.refunds.create(params={"payment_intent": intent["id"], "amount": 1500})  # in Stripe's dashboard
    charge = {
        "id": intent.get("latest_charge") or "ch_e2e",
        "object": "charge",
        "payment_intent": intent["id"],
        "amount_captured": 4000,
        "amount_refunded": 1500,
        "refunded": False,
    }
    for _ in range(3):
        assert _deliver(paying_flow, "charge.refunded", charge)["kind"] == "refunded"
    eventually(lambda: paying_flow.payment(order_id)["refunded_cents"] == 1500, timeout=30, what="the refund recorded")

    delivered = api.patch(
        f"/orders/{order_id}", token=paying_flow.admin, headers={"If-Match": '"3"'}, json={"status": "DELIVERED"}
    )
    expect(delivered, 200)
    expect(api.post(f"/orders/{order_id}/return", token=paying_flow.customer, json={"reason": "Chipped."}), 200)
    accepted = api.patch(
        f"/orders/{order_id}", token=paying_flow.admin, headers={"If-Match": '"5"'}, json={"status": "RETURNED"}
    )
    expect(accepted, 200)
    refunded = eventually(
        lambda: (p := paying_flow.payment(order_id))["refunded_cents"] == 4000 and p, timeout=30, what="refunded"
    )
    assert (refunded["captured_cents"], refunded["refunded_cents"]) == (4000, 4000)
    assert sorted(r["amount"] for r in _refunds_of(paying_flow.state, intent["id"])) == [1500, 2500]  # only the rest
    assert paying_flow.stock(product_id) == 5


def test_a_three_line_order_returned_in_two_parts_is_refunded_exactly_what_was_captured(paying_flow: Paying) -> None:
    """With shipping and 19 % tax added (Berlin: the stack's e2e-europe zone and DE rate): the first return refunds
    its units' share, the second the rest with the shipping; each return is its own refund at localstripe, and
    they sum to the capture."""
    api, admin, customer = paying_flow.stack.api, paying_flow.admin, paying_flow.customer
    products = [
        create_product(api, admin, category="e2e-pay-returns", name=f"Part {price}", price_cents=price, stock=9)
        for price in (1999, 4550, 333)
    ]
    pids = [p["product_id"] for p in products]
    berlin = {"name": "E2E", "line1": "1 Hauptstr.", "city": "Berlin", "postal_code": "10115", "country": "DE"}
    body = {"lines": [{"product_id": pid, "quantity": q} for pid, q in zip(pids, (3, 1, 7), strict=True)]}
    placed = expect(place_order(api, customer, "pay-returns", {**body, "shipping_address": berlin}), 201)
    order_id, total = placed["order_id"], placed["total_cents"]
    assert placed["shipping_cents"] > 0
    assert placed["tax_rate_bps"] == 1900
    paying_flow.pay(order_id)
    eventually(lambda: paying_flow.order(order_id)["status"] == "CONFIRMED", timeout=30, what="CONFIRMED")
    shipment = {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000065"}
    expect(api.patch(f"/orders/{order_id}", token=admin, headers={"If-Match": '"2"'}, json=shipment), 200)
    captured = eventually(
        lambda: (p := paying_flow.payment(order_id))["status"] == "CAPTURED" and p, timeout=30, what="captured"
    )
    assert captured["captured_cents"] == total
    expect(
        api.patch(f"/orders/{order_id}", token=admin, headers={"If-Match": '"3"'}, json={"status": "DELIVERED"}), 200
    )

    first = {
        "reason": "Two too many.",
        "lines": [{"variant_id": pids[0], "quantity": 1}, {"variant_id": pids[2], "quantity": 4}],
    }
    asked = expect(api.post(f"/orders/{order_id}/return", token=customer, json=first), 200)
    assert asked["return_request"]["lines"] == [
        {"variant_id": pids[0], "quantity": 1},
        {"variant_id": pids[2], "quantity": 4},
    ]
    part = expect(
        api.patch(f"/orders/{order_id}", token=admin, headers={"If-Match": '"5"'}, json={"status": "RETURNED"}), 200
    )
    assert part["status"] == "PARTIALLY_RETURNED"
    lines = {line["variant_id"]: line for line in placed["lines"]}

    def paid(pid: str) -> int:
        line = lines[pid]
        return line["line_total_cents"] - line["discount_cents"] + line["tax_cents"]

    due = paid(pids[0]) * 1 // 3 + paid(pids[2]) * 4 // 7
    assert part["returns"][0]["refund_cents"] == due
    assert part["returns"][0]["shipping_refund_cents"] == 0
    eventually(lambda: paying_flow.payment(order_id)["refunded_cents"] == due, timeout=30, what="the first refund")
    assert [paying_flow.stock(pid) for pid in pids] == [7, 8, 6]

    expect(api.post(f"/orders/{order_id}/return", token=customer, json={"reason": "The rest."}), 200)
    done = expect(
        api.patch(f"/orders/{order_id}", token=admin, headers={"If-Match": '"7"'}, json={"status": "RETURNED"}), 200
    )
    assert done["status"] == "RETURNED"
    assert done["returns"][1]["shipping_refund_cents"] == placed["shipping_cents"] + placed["shipping_tax_cents"]
    assert sum(r["refund_cents"] for r in done["returns"]) == total
    refunded = eventually(
        lambda: (p := paying_flow.payment(order_id))["refunded_cents"] == total and p, timeout=30, what="refunded"
    )
    assert (refunded["captured_cents"], refunded["refunded_cents"]) == (total, total)
    intent = paying_flow.intent(order_id)
    assert sorted(r["amount"] for r in _refunds_of(paying_flow.state, intent["id"])) == sorted([due, total - due])
    assert [paying_flow.stock(pid) for pid in pids] == [9, 9, 9]

    def recorded() -> list[int | None]:
        return [r["refunded_cents"] for r in paying_flow.order(order_id)["returns"]]

    eventually(lambda: None not in recorded(), timeout=30, what="each return's refund recorded")
    assert recorded() == [due, total - due]


def test_an_unpaid_order_expires_by_the_windows_sweep(paying_flow: Paying) -> None:
    order_id = paying_flow.unpaid["order_id"]
    assert paying_flow.unpaid["status"] == "PENDING_PAYMENT"
    expired = eventually(
        lambda: (o := paying_flow.order(order_id))["status"] == "EXPIRED" and o,
        timeout=WINDOW_S + 90,  # the window (placed when the stack started), then a sweep and the stream
        interval=1,
        what="EXPIRED",
    )
    assert expired["version"] == 2
    assert paying_flow.stock(paying_flow.unpaid_product) == 4  # the three held units back
    eventually(lambda: paying_flow.payment(order_id)["status"] == "CANCELED", timeout=30, what="intent cancelled")
    assert paying_flow.intent(order_id)["status"] == "canceled"
