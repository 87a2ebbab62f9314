"""The localstripe launcher: a server per instance on a port of its own, sharing nothing, stopped for good."""

from __future__ import annotations

import json
import os
import urllib.error
from typing import Any

import pytest

from local_runtime.localstripe import LocalStripe


def _customers(server: LocalStripe) -> list[str]:
    return [c["email"] for c in json.loads(server.request("GET", "/v1/customers"))["data"]]


def test_two_servers_and_a_restart_share_no_data():
    with LocalStripe() as first, LocalStripe() as second:
        assert first.port != second.port
        first.request("POST", "/v1/customers", {"email": "a@example.com"})
        assert (_customers(first), _customers(second)) == (["a@example.com"], [])
    # localstripe itself pickles its store to one /tmp file and reloads it at start; the launcher's servers do not
    with LocalStripe() as restarted:
        assert _customers(restarted) == []


def test_flush_forgets_every_object():
    with LocalStripe() as server:
        server.request("POST", "/v1/customers", {"email": "b@example.com"})
        server.flush()
        assert _customers(server) == []


def test_stop_ends_the_server_and_frees_its_port():
    server = LocalStripe().start()
    pid = server.pid
    assert pid is not None

    server.stop()
    server.stop()  # idempotent

    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not server.is_running()
    with pytest.raises(urllib.error.URLError):
        server.request("GET", "/v1/customers")  # nothing listens on its port any more


def test_a_webhook_needs_an_http_url_and_a_secret():
    with LocalStripe() as server:
        server.register_webhook("shop", "http://127.0.0.1:3900/webhooks/stripe", "whsec_x")
        with pytest.raises(urllib.error.HTTPError) as refused:
            server.register_webhook("shop", "not-a-url", "whsec_x")
        assert refused.value.code == 400


def test_make_pay_finds_the_intent_the_order_holds_not_one_its_reprice_cancelled():
    """A checkout repriced while placed made an intent for the old total (cancelled) before the order's own:
    `make pay` confirms the live one, whichever localstripe lists last."""
    from local_runtime.payments import _intent_of, _stripe
    from shop.payments.stripe_adapter import StripePayments

    with LocalStripe() as server:
        provider = StripePayments("sk_test_local", api_base=server.endpoint)
        old = provider.create_intent("order-r", 1000, "usd", idempotency_key="shop-order-order-r-authorise")
        held = provider.create_intent("order-r", 1100, "usd", idempotency_key="shop-order-order-r-authorise-reprice-1")
        provider.cancel(old.intent_id, idempotency_key=f"shop-order-order-r-cancel-{old.intent_id}")
        assert _intent_of(_stripe(server.endpoint), "order-r").id == held.intent_id
        provider.cancel(held.intent_id, idempotency_key=f"shop-order-order-r-cancel-{held.intent_id}")
        newer = provider.create_intent("order-r", 1100, "usd", idempotency_key="shop-order-order-r-authorise-reprice-2")
        assert _intent_of(_stripe(server.endpoint), "order-r").id == newer.intent_id


def _declined_then_visa(server: LocalStripe, order_id: str) -> tuple[str, Any]:
    """An intent for the order, confirmed with a declining card, then `make pay`'s second attempt with a good one:
    the intent's status after the decline, and the second attempt's outcome (its event, or the error)."""
    import stripe

    from local_runtime.payments import _stripe, authorised_event
    from shop.payments.stripe_adapter import StripePayments

    provider = StripePayments("sk_test_local", api_base=server.endpoint)
    held = provider.create_intent(order_id, 1200, "usd", idempotency_key=f"shop-order-{order_id}-authorise")
    with pytest.raises(stripe.CardError):
        authorised_event(server.endpoint, order_id, "declined")
    after_decline = _stripe(server.endpoint).v1.payment_intents.retrieve(held.intent_id).status
    try:
        return after_decline, authorised_event(server.endpoint, order_id, "visa")
    except stripe.StripeError as refused:
        return after_decline, refused


def test_a_declined_intent_is_confirmed_again_with_another_card_as_stripe_allows():
    """Stripe returns an intent whose confirmation was declined to requires_payment_method; a new payment method
    makes it confirmable again. `make pay ORDER=<id> CARD=declined` then `make pay ORDER=<id>` pays the order."""
    with LocalStripe() as server:
        after_decline, second = _declined_then_visa(server, "order-retry")
    assert after_decline == "requires_payment_method"
    assert isinstance(second, dict), second
    intent = second["data"]["object"]
    assert (second["type"], intent["status"], intent["amount"]) == (
        "payment_intent.amount_capturable_updated",
        "requires_capture",
        1200,
    )
    assert intent["metadata"] == {"order_id": "order-retry"}


def test_localstripe_as_released_refuses_to_confirm_a_declined_intent_again():
    """What the launcher corrects (docs/payments.md, "What localstripe does differently"): localstripe 1.15.10 keeps
    deriving the status from the declined charge, so the intent never becomes confirmable again. When this fails,
    localstripe does it itself and the launcher's correction can go."""
    import stripe

    with LocalStripe(as_released=True) as server:
        after_decline, second = _declined_then_visa(server, "order-retry")
    assert after_decline == "requires_payment_method"
    assert isinstance(second, stripe.InvalidRequestError)
    assert second.http_status == 400


def test_a_spawned_server_boots_while_the_caller_works_and_start_waits_for_it():
    """`make dev` spawns localstripe before it starts DynamoDB Local, so both boot at once; start() then waits."""
    server = LocalStripe().spawn()
    try:
        assert server.is_running()
        with pytest.raises(RuntimeError, match="no port yet"):
            _ = server.endpoint  # not known until it has booted
        assert server.start() is server
        server.request("POST", "/v1/customers", {"email": "c@example.com"})
        assert _customers(server) == ["c@example.com"]
    finally:
        server.stop()
    assert not server.is_running()
