"""Checkout with PAYMENTS=stripe through the orders function: every source gets one intent, then is written
PENDING_PAYMENT with it, its payment and window in one transaction; a provider outage is a 503 with nothing
written, a refusal after the intent cancels it; GET .../payment.

The rules run on the in-memory fake provider (which keeps Stripe's idempotency keys) and, where exactly-once
must be proved without them, on localstripe (which ignores keys: the intents are counted there)."""

from __future__ import annotations

from typing import Any

import pytest

from shop import config, errors, keys, wiring
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
PRODUCTS = ("prod-cable", "prod-keyboard", "prod-mouse")


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_source_is_placed_unpaid_with_one_intent_and_its_window(api, wired_fake_payments, source):
    body = SOURCES[source]()
    placed = place(body)
    assert placed.status == 201, placed.body
    order = placed.body
    assert order["status"] == "PENDING_PAYMENT"
    assert [entry["status"] for entry in order["history"]] == ["PENDING_PAYMENT"]
    payment = order["payment"]
    intent = wired_fake_payments.intents[payment["intent_id"]].intent
    assert payment == {
        "provider": "stripe",
        "intent_id": intent.intent_id,
        "client_secret": intent.client_secret,
        "amount_cents": order["total_cents"],
        "currency": "usd",
    }
    assert intent.order_id == order["order_id"]
    assert intent.amount_cents == order["total_cents"]
    assert wired_fake_payments.calls == [("create_intent", f"shop-order-{order['order_id']}-authorise")]
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
    assert stored["payment_expires_at"] > 0  # what the windows' sweep compares
    assert "expires_at" not in stored  # the order item itself never expires while unpaid
    # The repeat is the same answer, and no second intent.
    again = place(body)
    assert again.status == 201
    assert again.body == order
    assert creates(wired_fake_payments) == 1
    # The order reads as it was placed (its payment is not part of the order's answer).
    read = call("GET", f"/orders/{order['order_id']}", claims=ALICE).body
    assert read["status"] == "PENDING_PAYMENT"
    assert "payment" not in read


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_provider_outage_is_a_503_with_nothing_written_and_the_repeat_places(api, wired_fake_payments, source):
    body = SOURCES[source]()
    before = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    stock = {pid: call("GET", f"/products/{pid}").body["stock"] for pid in PRODUCTS}
    wired_fake_payments.fail_next()
    failed = place(body, key="k-outage")
    assert failed.status == 503
    assert failed.code == "PAYMENT_PROVIDER_UNAVAILABLE"
    assert "retry-after" in failed.headers
    # The intent comes before the transaction: no order, no stock held, no window, the cart as it was.
    assert call("GET", "/customers/alice/orders", claims=ALICE).body["items"] == before
    assert {pid: call("GET", f"/products/{pid}").body["stock"] for pid in PRODUCTS} == stock
    assert wired_fake_payments.intents == {}  # the failed call never reached the provider
    # The repeat (the Idempotency-Key's record is not kept on a failure) places as a first attempt would.
    again = place(body, key="k-outage")
    assert again.status == 201, again.body
    assert again.body["payment"]["intent_id"] in wired_fake_payments.intents
    assert len(wired_fake_payments.intents) == 1
    assert wired_fake_payments.calls[-1] == ("create_intent", f"shop-order-{again.body['order_id']}-authorise")
    assert place(body, key="k-outage").body == again.body


def test_a_checkout_the_read_refuses_creates_no_intent(api, wired_fake_payments):
    """Unknown or archived products, quantity limits, visible shortage, an empty cart: refused as without
    payments, before the provider is called (the unit tests hold each case; these are the HTTP answers)."""
    refused = [
        place({"lines": [{"product_id": "prod-ghost", "quantity": 1}], "shipping_address": ADDRESS}, key="r-1"),
        place({"lines": [{"product_id": "prod-soldout", "quantity": 1}], "shipping_address": ADDRESS}, key="r-2"),
        place({"session_id": call("POST", "/sessions").body["session_id"], "shipping_address": ADDRESS}, key="r-3"),
    ]
    assert [(r.status, r.code) for r in refused] == [
        (404, "PRODUCT_NOT_FOUND"),
        (409, "OUT_OF_STOCK"),
        (409, "CART_EMPTY"),
    ]
    assert wired_fake_payments.calls == []


def test_a_checkout_refused_after_its_intent_gets_the_intent_cancelled_and_the_same_4xx(
    api, wired_fake_payments, monkeypatch
):
    """The session's cart changes while the intent is created: the transaction refuses the checkout as it
    would without payments, and the intent made for it is cancelled under a key of its own."""
    body = session_with_cart()
    created = wired_fake_payments.create_intent

    def create_while_the_cart_changes(order_id: str, *args: Any, **kwargs: Any) -> Any:
        changed = call("PUT", f"/sessions/{body['session_id']}/cart/prod-keyboard", body={"quantity": 3})
        assert changed.status == 200
        return created(order_id, *args, **kwargs)

    monkeypatch.setattr(wired_fake_payments, "create_intent", create_while_the_cart_changes)
    refused = place(body, key="k-race")
    assert (refused.status, refused.code) == (404, "SESSION_NOT_FOUND")
    (intent,) = wired_fake_payments.intents.values()
    assert intent.intent.status == "canceled"
    order_id = intent.intent.order_id
    assert ("cancel", f"shop-order-{order_id}-cancel-{intent.intent.intent_id}") in wired_fake_payments.calls
    assert item(api, keys.order_key(order_id)) is None  # nothing written for it


def test_the_payment_reads_for_owner_and_admin_and_is_absent_for_others(api, wired_fake_payments):
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
        assert "payment_expires_at" not in item(api, keys.order_key(order["order_id"]))
        missing = call("GET", f"/orders/{order['order_id']}/payment", claims=ALICE)
        assert missing.status == 404
        assert missing.code == "PAYMENT_NOT_FOUND"
    finally:
        config.payment_settings.cache_clear()


@pytest.fixture
def on_localstripe(stripe_on, localstripe, monkeypatch):  # noqa: F811
    """The Stripe adapter against localstripe; yields the intents at localstripe of an order id, read there
    (localstripe ignores idempotency keys, so the provider's objects are counted, not the shop's calls), and
    the order ids the shop created intents for."""
    import stripe

    from local_runtime.localstripe import TEST_SECRET_KEY
    from shop.payments.stripe_adapter import StripePayments

    monkeypatch.setenv("STRIPE_API_BASE", localstripe.endpoint)
    monkeypatch.setenv("STRIPE_SECRET_KEY", TEST_SECRET_KEY)
    config.payment_settings.cache_clear()
    client = stripe.StripeClient(TEST_SECRET_KEY, base_addresses={"api": localstripe.endpoint})
    asked: list[str] = []
    create = StripePayments.create_intent

    def recorded(self: Any, order_id: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(order_id)
        return create(self, order_id, *args, **kwargs)

    monkeypatch.setattr(StripePayments, "create_intent", recorded)

    def intents_of(order_id: str) -> list[Any]:
        listed = client.v1.payment_intents.list(params={"limit": 100})  # every page: the server is the session's
        return [i for i in listed.auto_paging_iter() if i.to_dict().get("metadata", {}).get("order_id") == order_id]

    return intents_of, asked


@pytest.mark.integration
def test_on_localstripe_a_repeat_creates_no_second_intent(moto_api, on_localstripe):
    intents_of, _ = on_localstripe
    first = place(LINES, key="k-localstripe")
    assert first.status == 201, first.body
    order_id = first.body["order_id"]
    for _ in range(3):
        assert place(LINES, key="k-localstripe").body == first.body
    (intent,) = intents_of(order_id)
    assert intent.id == first.body["payment"]["intent_id"]
    assert (intent.amount, intent.currency, intent.capture_method) == (first.body["total_cents"], "usd", "manual")


@pytest.mark.integration
@pytest.mark.dynamodb_semantics
def test_on_localstripe_a_placement_repeated_after_an_outage_between_intent_and_transaction_is_one_order(
    api, on_localstripe
):
    """The store fails the placement's transaction (5xx through the client's retries) after the intent exists:
    503, and whether the transaction was written is unknown to the shop, so the intent is left as it is. The
    repeats: one order, with one intent of its own; the first run's intent is an orphan nobody can confirm
    (its client secret was never answered) and is counted as one."""
    from tests.functions.test_faults_and_concurrency import SERVER_ERROR, Fault

    intents_of, asked = on_localstripe
    before = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    with Fault(api.client, {"TransactWriteItems"}, *SERVER_ERROR):
        failed = place(LINES, key="k-store-down")
    assert (failed.status, failed.code) == (503, "SERVICE_UNAVAILABLE")
    (orphan_order,) = asked
    replies = [place(LINES, key="k-store-down") for _ in range(4)]
    assert {r.status for r in replies} == {201}
    assert all(r.body == replies[0].body for r in replies)
    order = replies[0].body
    after = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    assert len(after) == len(before) + 1  # one order
    assert asked == [orphan_order, order["order_id"]]  # one intent per run that reached the provider
    (paid,) = intents_of(order["order_id"])
    assert paid.id == order["payment"]["intent_id"]
    assert paid.status == "requires_payment_method"
    (orphan,) = intents_of(orphan_order)
    assert orphan.id != paid.id
    assert item(api, keys.order_key(orphan_order)) is None  # no order: its secret was never given out
    assert all(orphan.client_secret not in str(r.body) for r in [failed, *replies])
    assert call("GET", "/products/prod-cable").body["stock"] == 100 - 2


@pytest.mark.integration
@pytest.mark.dynamodb_semantics
def test_on_localstripe_a_placement_refused_after_its_intent_cancels_it(api, on_localstripe, monkeypatch):
    """Another customer takes the last units while the intent is created: 409 OUT_OF_STOCK as without
    payments, and the intent is cancelled at localstripe."""
    from shop.payments.stripe_adapter import StripePayments

    intents_of, asked = on_localstripe
    stock = call("GET", "/products/prod-cable").body["stock"]
    monkeypatch.setenv("MAX_UNPAID_UNITS", "10000")  # the other buyer holds all the stock but one unit, unpaid
    config.payment_settings.cache_clear()
    create = StripePayments.create_intent

    def create_while_another_buys(self: Any, *args: Any, **kwargs: Any) -> Any:
        intent = create(self, *args, **kwargs)
        if len(asked) == 1:
            lines = {"lines": [{"product_id": "prod-cable", "quantity": stock - 1}], "shipping_address": ADDRESS}
            assert place(lines, key="k-other", claims=BOB).status == 201
        return intent

    monkeypatch.setattr(StripePayments, "create_intent", create_while_another_buys)
    refused = place(LINES, key="k-refused")
    assert (refused.status, refused.code) == (409, "OUT_OF_STOCK")
    refused_order = asked[0]
    (intent,) = intents_of(refused_order)
    assert intent.status == "canceled"
    assert item(api, keys.order_key(refused_order)) is None
    assert call("GET", "/products/prod-cable").body["stock"] == 1


@pytest.mark.integration
@pytest.mark.dynamodb_semantics
def test_on_localstripe_concurrent_placements_under_one_key_are_one_order_with_one_confirmable_intent(
    api, on_localstripe
):
    """Threads placing under one Idempotency-Key at once, past the HTTP layer's record (as when it is lost):
    each run creates an intent for its own order id; one transaction claims the key, the others find it
    claimed (or collide with it: the store cancels theirs) and cancel their intents."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from shop.models import ShippingAddress
    from shop.services.actor import Actor
    from shop.services.orders import RequestedLine

    intents_of, asked = on_localstripe
    service = wiring.order_service()
    start = threading.Barrier(6)

    def place_once(_: int) -> str:
        start.wait()
        for _attempt in range(5):  # a client retrying a 503 (the store cancelled a colliding transaction)
            try:
                return service.place(
                    Actor("alice"),
                    address=ShippingAddress.model_validate(ADDRESS),
                    lines=[RequestedLine("prod-cable", 2)],
                    idempotency_key="k-concurrent",
                ).order_id
            except errors.WriteCancelled:
                continue
        raise AssertionError("the store kept cancelling")

    with ThreadPoolExecutor(max_workers=6) as pool:
        placed = set(pool.map(place_once, range(6)))
    (order_id,) = placed
    order = call("GET", f"/orders/{order_id}", claims=ALICE)
    assert order.status == 200
    assert call("GET", "/products/prod-cable").body["stock"] == 100 - 2
    intents = [intent for asked_for in set(asked) for intent in intents_of(asked_for)]
    assert len(intents) == len(asked) >= 6
    confirmable = [intent for intent in intents if intent.status != "canceled"]
    (held,) = confirmable
    assert held.to_dict()["metadata"]["order_id"] == order_id


@pytest.mark.integration
@pytest.mark.dynamodb_semantics
def test_on_localstripe_parallel_repeats_of_one_key_over_http_are_one_order_with_one_confirmable_intent(
    api, on_localstripe
):
    """The same checkout sent 8 times at once through the orders function (its Idempotency-Key record in play):
    one order, one answer, and of the intents any run created, one confirmable: the order's."""
    from concurrent.futures import ThreadPoolExecutor

    intents_of, asked = on_localstripe
    before = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(pool.map(lambda _: place(LINES, key="k-parallel"), range(8)))
    assert {r.status for r in replies} == {201}, [(r.status, r.code) for r in replies]
    (order_id,) = {r.body["order_id"] for r in replies}
    assert len(call("GET", "/customers/alice/orders", claims=ALICE).body["items"]) == len(before) + 1
    assert call("GET", "/products/prod-cable").body["stock"] == 100 - 2
    intents = [intent for asked_for in set(asked) for intent in intents_of(asked_for)]
    assert len(intents) == len(asked) >= 1
    (held,) = [intent for intent in intents if intent.status != "canceled"]
    assert held.id == replies[0].body["payment"]["intent_id"]
    assert held.to_dict()["metadata"]["order_id"] == order_id


def test_a_checkout_without_the_providers_configuration_writes_nothing(api, stripe_on, monkeypatch):
    monkeypatch.delenv("STRIPE_SECRET_KEY", raising=False)
    monkeypatch.delenv("STRIPE_SECRET_ARN", raising=False)
    config.payment_settings.cache_clear()
    before = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    refused = place(LINES, key="k-misconfigured")
    assert refused.status == 500
    assert refused.code == "INTERNAL_ERROR"
    assert call("GET", "/customers/alice/orders", claims=ALICE).body["items"] == before
