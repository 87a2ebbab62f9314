"""Checkout with PAYMENTS=stripe through the orders function: every source is written PENDING_PAYMENT with its
payment and window, then gets one intent; a provider outage is a 503 the repeat completes; GET .../payment.

The rules run on the in-memory fake provider (which keeps Stripe's idempotency keys) and, where exactly-once
must be proved without them, on localstripe (which ignores keys: the intents are counted there)."""

from __future__ import annotations

from typing import Any

import pytest

from shop import config, keys, wiring
from shop.repository.store import from_item, to_item
from tests.functions.apigw import ADMIN, ALICE, BOB, call
from tests.payments.conftest import localstripe  # noqa: F401 - the session fixture, shared
from tests.support.fake_payments import FakePayments

ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}
LINES = {"lines": [{"product_id": "prod-cable", "quantity": 2}], "shipping_address": ADDRESS}


@pytest.fixture
def stripe_on(monkeypatch):
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "30")
    config.payment_settings.cache_clear()
    yield
    config.payment_settings.cache_clear()


@pytest.fixture
def fake(monkeypatch, stripe_on) -> FakePayments:
    provider = FakePayments()
    monkeypatch.setattr(wiring, "payments", lambda: provider)
    return provider


def place(body: dict[str, Any], key: str = "k-pay", claims: dict[str, Any] = ALICE) -> Any:
    return call("POST", "/orders", claims=claims, headers={"Idempotency-Key": key}, body=body)


def item(api, key: dict[str, str]) -> Any:
    """The item as stored, None when there is none."""
    found = api.client.get_item(TableName=api.table_name, Key=to_item(key), ConsistentRead=True).get("Item")
    return from_item(found) if found else None


def creates(fake: FakePayments) -> int:
    return sum(1 for operation, _ in fake.calls if operation == "create_intent")


def session_with_cart() -> dict[str, Any]:
    sid = call("POST", "/sessions").body["session_id"]
    assert call("PUT", f"/sessions/{sid}/cart/prod-keyboard", body={"quantity": 1}).status == 200
    return {"session_id": sid, "shipping_address": ADDRESS}


def customer_cart() -> dict[str, Any]:
    assert call("PUT", "/customers/alice/cart/prod-mouse", claims=ALICE, body={"quantity": 1}).status == 200
    return {"cart": "customer", "shipping_address": ADDRESS}


SOURCES = {"lines": lambda: LINES, "session": session_with_cart, "customer_cart": customer_cart}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_source_is_placed_unpaid_with_one_intent_and_its_window(api, fake, source):
    body = SOURCES[source]()
    placed = place(body)
    assert placed.status == 201, placed.body
    order = placed.body
    assert order["status"] == "PENDING_PAYMENT"
    assert [entry["status"] for entry in order["history"]] == ["PENDING_PAYMENT"]
    payment = order["payment"]
    intent = fake.intents[payment["intent_id"]].intent
    assert payment == {
        "provider": "stripe",
        "intent_id": intent.intent_id,
        "client_secret": intent.client_secret,
        "amount_cents": order["total_cents"],
        "currency": "usd",
    }
    assert intent.order_id == order["order_id"]
    assert intent.amount_cents == order["total_cents"]
    assert fake.calls == [("create_intent", f"shop-order-{order['order_id']}-authorise")]
    stored = item(api, keys.order_key(order["order_id"]))
    # The defaults (provider stripe, nothing captured or refunded) are not stored: the item stays under 1 KB
    # (issue 26); OrderPayment reads them back.
    assert stored["payment"] == {
        "status": "REQUIRES_PAYMENT",
        "intent_id": intent.intent_id,
        "client_secret": intent.client_secret,
        "amount_cents": order["total_cents"],
        "currency": "usd",
    }
    due = item(api, keys.payment_due_key(order["order_id"]))
    assert due["entity"] == "ORDER_PAYMENT_DUE"
    assert due["expires_at"] == stored["payment_expires_at"]
    assert "expires_at" not in stored  # the order item itself never expires while unpaid
    # The repeat is the same answer, and no second intent.
    again = place(body)
    assert again.status == 201
    assert again.body == order
    assert creates(fake) == 1
    # The order reads as it was placed (its payment is not part of the order's answer).
    read = call("GET", f"/orders/{order['order_id']}", claims=ALICE).body
    assert read["status"] == "PENDING_PAYMENT"
    assert "payment" not in read


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_an_outage_between_the_two_writes_is_a_503_the_repeat_completes(api, fake, source):
    body = SOURCES[source]()
    fake.fail_next()
    failed = place(body, key="k-outage")
    assert failed.status == 503
    assert failed.code == "PAYMENT_PROVIDER_UNAVAILABLE"
    assert "retry-after" in failed.headers
    listed = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    (half_done,) = [o for o in listed if o["status"] == "PENDING_PAYMENT"]
    stored = item(api, keys.order_key(half_done["order_id"]))
    assert "intent_id" not in stored["payment"]  # nothing anyone could pay
    assert item(api, keys.payment_due_key(half_done["order_id"])) is not None  # the stock is held until the window
    # The repeat (a session's or cart's checkout finds its cart emptied by the first) completes that order.
    again = place(body, key="k-outage")
    assert again.status == 201, again.body
    assert again.body["order_id"] == half_done["order_id"]
    assert again.body["payment"]["intent_id"] in fake.intents
    assert len(fake.intents) == 1  # the failed call never reached the provider
    assert place(body, key="k-outage").body == again.body


def test_a_half_done_order_cancelled_before_its_repeat_gets_no_payable_intent(api, fake):
    fake.fail_next()
    assert place(LINES, key="k-cancel").status == 503
    listed = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    (half_done,) = [o for o in listed if o["status"] == "PENDING_PAYMENT"]
    cancelled = call("POST", f"/orders/{half_done['order_id']}/cancel", claims=ALICE)
    assert cancelled.status == 200
    assert cancelled.body["status"] == "CANCELLED"
    assert item(api, keys.payment_due_key(half_done["order_id"])) is None  # settled: the window is gone with it
    again = place(LINES, key="k-cancel")
    assert again.status == 201
    assert again.body["status"] == "CANCELLED"
    assert "payment" not in again.body
    assert fake.intents == {}  # a cancelled order gets no intent


def test_an_order_cancelled_while_its_intent_is_created_gets_the_intent_cancelled(api, fake, monkeypatch):
    created = fake.create_intent

    def create_while_the_customer_cancels(order_id: str, *args: Any, **kwargs: Any) -> Any:
        assert call("POST", f"/orders/{order_id}/cancel", claims=ALICE).status == 200
        return created(order_id, *args, **kwargs)

    monkeypatch.setattr(fake, "create_intent", create_while_the_customer_cancels)
    placed = place(LINES, key="k-race")
    assert placed.status == 201
    assert placed.body["status"] == "CANCELLED"
    assert "payment" not in placed.body
    (intent,) = fake.intents.values()
    assert intent.intent.status == "canceled"  # refused by the order, then cancelled under a key of its own
    assert ("cancel", f"shop-order-{placed.body['order_id']}-cancel-{intent.intent.intent_id}") in fake.calls
    assert "intent_id" not in item(api, keys.order_key(placed.body["order_id"]))["payment"]


def test_the_payment_reads_for_owner_and_admin_and_is_absent_for_others(api, fake):
    order = place(LINES).body
    path = f"/orders/{order['order_id']}/payment"
    owner = call("GET", path, claims=ALICE)
    assert owner.status == 200
    assert owner.body == {
        "status": "REQUIRES_PAYMENT",
        "amount_cents": order["total_cents"],
        "captured_cents": 0,
        "refunded_cents": 0,
        "currency": "usd",
        "client_secret": order["payment"]["client_secret"],
    }
    admin = call("GET", path, claims=ADMIN)
    assert admin.status == 200
    assert "client_secret" not in admin.body
    assert call("GET", path, claims=BOB).code == "ORDER_NOT_FOUND"
    assert call("GET", "/orders/nope/payment", claims=ALICE).code == "ORDER_NOT_FOUND"
    # Once the order no longer waits for its payment, the secret is not shown, even to its owner.
    call("POST", f"/orders/{order['order_id']}/cancel", claims=ALICE)
    assert "client_secret" not in call("GET", path, claims=ALICE).body


def test_an_order_placed_without_payments_has_no_payment(api, monkeypatch):
    monkeypatch.setenv("PAYMENTS", "none")
    config.payment_settings.cache_clear()
    try:
        order = place(LINES, key="k-v2").body
        assert order["status"] == "PENDING"
        assert "payment" not in order
        assert [entry["status"] for entry in order["history"]] == ["PENDING"]
        assert item(api, keys.payment_due_key(order["order_id"])) is None
        missing = call("GET", f"/orders/{order['order_id']}/payment", claims=ALICE)
        assert missing.status == 404
        assert missing.code == "PAYMENT_NOT_FOUND"
    finally:
        config.payment_settings.cache_clear()


@pytest.mark.integration
def test_on_localstripe_a_repeat_creates_no_second_intent(moto_api, stripe_on, localstripe, monkeypatch):  # noqa: F811
    """localstripe ignores idempotency keys: one intent for the order proves the shop made one call."""
    import stripe

    from local_runtime.localstripe import TEST_SECRET_KEY

    monkeypatch.setenv("STRIPE_API_BASE", localstripe.endpoint)
    monkeypatch.setenv("STRIPE_SECRET_KEY", TEST_SECRET_KEY)
    config.payment_settings.cache_clear()
    client = stripe.StripeClient(TEST_SECRET_KEY, base_addresses={"api": localstripe.endpoint})

    def intents_of(order_id: str) -> list[Any]:
        listed = client.v1.payment_intents.list(params={"limit": 100})
        return [i for i in listed.data if i.to_dict().get("metadata", {}).get("order_id") == order_id]

    first = place(LINES, key="k-localstripe")
    assert first.status == 201, first.body
    order_id = first.body["order_id"]
    for _ in range(3):
        assert place(LINES, key="k-localstripe").body == first.body
    (intent,) = intents_of(order_id)
    assert intent.id == first.body["payment"]["intent_id"]
    assert (intent.amount, intent.currency, intent.capture_method) == (first.body["total_cents"], "usd", "manual")


def test_a_checkout_without_the_providers_configuration_writes_nothing(api, stripe_on, monkeypatch):
    monkeypatch.delenv("STRIPE_SECRET_KEY", raising=False)
    monkeypatch.delenv("STRIPE_SECRET_ARN", raising=False)
    config.payment_settings.cache_clear()
    before = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    refused = place(LINES, key="k-misconfigured")
    assert refused.status == 500
    assert refused.code == "INTERNAL_ERROR"
    assert call("GET", "/customers/alice/orders", claims=ALICE).body["items"] == before
