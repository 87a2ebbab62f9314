"""Webhook deliveries: verified with the endpoint's secret within Stripe's tolerance, or refused (400)."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import stripe

from local_runtime.localstripe import TEST_SECRET_KEY, LocalStripe
from shop import errors
from shop.http_api import errors as http_errors
from shop.models.payments import PaymentEventKind, PaymentStep, idempotency_key
from shop.payments.stripe_adapter import StripePayments, StripeWebhooks

SECRET = "whsec_test_shop"


def _event(event_type: str = "payment_intent.succeeded", order_id: str | None = "ord-1") -> dict:
    metadata = {"order_id": order_id} if order_id else {}
    return {
        "id": "evt_1",
        "object": "event",
        "type": event_type,
        "created": 1_800_000_000,
        "data": {"object": {"id": "pi_1", "object": "payment_intent", "status": "canceled", "metadata": metadata}},
    }


def _signed(body: bytes, *, secret: str = SECRET, at: int | None = None) -> str:
    at = int(time.time()) if at is None else at
    digest = hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={digest}"


def test_a_signed_authorisation_is_read_from_its_type_and_metadata():
    body = json.dumps(_event()).encode()

    event = StripeWebhooks(SECRET).verify(body, _signed(body))

    assert (event.event_id, event.kind, event.intent_id, event.order_id, event.created) == (
        "evt_1",
        PaymentEventKind.AUTHORISED,
        "pi_1",
        "ord-1",
        1_800_000_000,
    )  # authorised although the intent in the body is already canceled: the type decides, never the status


@pytest.mark.parametrize(
    ("event_type", "kind"),
    [
        ("payment_intent.amount_capturable_updated", PaymentEventKind.AUTHORISED),
        ("payment_intent.succeeded", PaymentEventKind.AUTHORISED),
        ("payment_intent.payment_failed", PaymentEventKind.FAILED),
        ("payment_intent.canceled", PaymentEventKind.CANCELED),
        ("payment_intent.created", PaymentEventKind.IGNORED),
        ("charge.refunded", PaymentEventKind.REFUNDED),
        ("charge.dispute.created", PaymentEventKind.DISPUTE),
        ("charge.dispute.updated", PaymentEventKind.DISPUTE),
        ("charge.dispute.closed", PaymentEventKind.DISPUTE),
        ("charge.succeeded", PaymentEventKind.IGNORED),
        ("charge.dispute.funds_withdrawn", PaymentEventKind.IGNORED),
    ],
)
def test_each_event_type_has_one_meaning(event_type, kind):
    body = json.dumps(_event(event_type)).encode()
    assert StripeWebhooks(SECRET).verify(body, _signed(body)).kind is kind


def test_an_event_about_another_object_names_no_intent():
    data = _event("customer.created")
    data["data"]["object"] = {"id": "cus_1", "object": "customer", "payment_intent": "pi_1"}
    body = json.dumps(data).encode()

    event = StripeWebhooks(SECRET).verify(body, _signed(body))

    assert (event.kind, event.intent_id, event.order_id) == (PaymentEventKind.IGNORED, None, None)


def test_a_charge_or_dispute_names_its_intent_and_only_what_the_shop_reads():
    """A charge (charge.refunded) and a dispute (charge.dispute.*) name their payment intent, not the order: the rule
    finds the order through the intent's metadata. A charge made without an intent names none."""
    webhooks = StripeWebhooks(SECRET)

    def verified(event_type: str, obj: dict) -> Any:
        data = _event(event_type)
        data["data"]["object"] = obj
        body = json.dumps(data).encode()
        return webhooks.verify(body, _signed(body))

    refunded = verified(
        "charge.refunded",
        {"id": "ch_1", "object": "charge", "payment_intent": "pi_1", "amount": 5000, "amount_refunded": 1200},
    )
    assert (refunded.kind, refunded.intent_id, refunded.order_id, refunded.amount_refunded_cents) == (
        PaymentEventKind.REFUNDED,
        "pi_1",
        None,
        1200,
    )
    bare = verified("charge.refunded", {"id": "ch_2", "object": "charge", "amount_refunded": 1200})
    assert (bare.kind, bare.intent_id, bare.order_id) == (PaymentEventKind.REFUNDED, None, None)
    disputed = verified(
        "charge.dispute.closed",
        {
            "id": "dp_1",
            "object": "dispute",
            "charge": "ch_1",
            "payment_intent": "pi_1",
            "amount": 5000,
            "status": "lost",
            "reason": "fraudulent",
        },
    )
    assert (
        disputed.kind,
        disputed.intent_id,
        disputed.dispute_id,
        disputed.dispute_status,
        disputed.dispute_reason,
        disputed.dispute_amount_cents,
    ) == (PaymentEventKind.DISPUTE, "pi_1", "dp_1", "lost", "fraudulent", 5000)


def _refused(body: bytes, signature: str | None) -> errors.DomainError:
    with pytest.raises((errors.InvalidWebhookSignature, errors.InvalidWebhookPayload)) as refused:
        StripeWebhooks(SECRET).verify(body, signature)
    return refused.value


@pytest.mark.parametrize(
    "signature",
    [
        pytest.param(None, id="unsigned"),
        pytest.param("", id="empty"),
        pytest.param("garbage", id="malformed"),
        pytest.param("t=1800000000", id="no-v1"),
    ],
)
def test_an_unsigned_or_malformed_signature_is_refused(signature):
    body = json.dumps(_event()).encode()
    assert _refused(body, signature).code == "WEBHOOK_SIGNATURE_INVALID"


def test_a_forged_signature_is_refused():
    body = json.dumps(_event()).encode()
    assert _refused(body, _signed(body, secret="whsec_someone_else")).code == "WEBHOOK_SIGNATURE_INVALID"


def test_a_body_changed_after_signing_is_refused():
    body = json.dumps(_event()).encode()
    signature = _signed(body)
    tampered = body.replace(b"ord-1", b"ord-2")
    assert _refused(tampered, signature).code == "WEBHOOK_SIGNATURE_INVALID"


def test_a_stale_delivery_is_refused_past_the_librarys_tolerance():
    body = json.dumps(_event()).encode()
    stale = int(time.time()) - stripe.Webhook.DEFAULT_TOLERANCE - 60
    assert _refused(body, _signed(body, at=stale)).code == "WEBHOOK_SIGNATURE_INVALID"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(json.dumps({"id": "evt_1", "type": "payment_intent.succeeded"}).encode(), id="no-object"),
        pytest.param(json.dumps([1, 2]).encode(), id="not-an-object"),
    ],
)
def test_a_signed_body_that_is_no_event_is_refused(body):
    assert _refused(body, _signed(body)).code == "WEBHOOK_PAYLOAD_INVALID"


def test_refusals_answer_400_with_their_codes():
    for error in (errors.InvalidWebhookSignature("x"), errors.InvalidWebhookPayload("x")):
        status, body, _ = http_errors.describe(error)
        assert (status, body["error"]["code"]) == (400, error.code)


# -- real deliveries: localstripe signs and posts its events to a registered URL -------------------------------


class _Receiver(http.server.BaseHTTPRequestHandler):
    deliveries: list[tuple[bytes, str | None]]
    arrived: threading.Condition

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.arrived:
            self.deliveries.append((body, self.headers.get("Stripe-Signature")))
            self.arrived.notify_all()
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def delivering_localstripe() -> Iterator[tuple[LocalStripe, type[_Receiver]]]:
    """A localstripe of its own (webhooks are server-wide) posting every event to a local receiver."""
    receiver = type("Receiver", (_Receiver,), {"deliveries": [], "arrived": threading.Condition()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stripe_server = LocalStripe().start()
    try:
        stripe_server.register_webhook("shop", f"http://127.0.0.1:{server.server_address[1]}/webhooks/stripe", SECRET)
        yield stripe_server, receiver
    finally:
        stripe_server.stop()
        server.shutdown()
        server.server_close()


def _events_of(receiver: type[_Receiver], intent_id: str, event_type: str, timeout: float = 30.0) -> list:
    """The verified deliveries about `intent_id` once one of `event_type` arrived (localstripe waits ~1 s)."""
    webhooks = StripeWebhooks(SECRET)

    def verified() -> list:
        events = [webhooks.verify(body, signature) for body, signature in receiver.deliveries]
        return [event for event in events if event.intent_id == intent_id]

    with receiver.arrived:
        receiver.arrived.wait_for(lambda: any(e.event_type == event_type for e in verified()), timeout=timeout)
        return verified()


def test_localstripes_deliveries_verify_and_a_manual_capture_is_announced_as_succeeded_at_capture(
    delivering_localstripe,
):
    """localstripe 1.15.10 sends nothing when a manual-capture intent is authorised (Stripe sends
    amount_capturable_updated); its one event, payment_intent.succeeded, leaves when the intent is captured."""
    stripe_server, receiver = delivering_localstripe
    payments = StripePayments(TEST_SECRET_KEY, api_base=stripe_server.endpoint)
    intent = payments.create_intent(
        "ord-hook-1", 1200, "eur", idempotency_key=idempotency_key("ord-hook-1", PaymentStep.AUTHORISE)
    )
    client = stripe.StripeClient(TEST_SECRET_KEY, base_addresses={"api": stripe_server.endpoint})
    client.v1.payment_intents.update(intent.intent_id, params={"payment_method": "pm_card_visa"})
    client.v1.payment_intents.confirm(intent.intent_id)
    payments.capture(intent.intent_id, idempotency_key=idempotency_key("ord-hook-1", PaymentStep.CAPTURE))

    events = _events_of(receiver, intent.intent_id, "payment_intent.succeeded")

    assert [(e.event_type, e.kind, e.order_id) for e in events] == [
        ("payment_intent.succeeded", PaymentEventKind.AUTHORISED, "ord-hook-1")
    ]


def test_a_declined_card_arrives_as_payment_failed(delivering_localstripe):
    stripe_server, receiver = delivering_localstripe
    payments = StripePayments(TEST_SECRET_KEY, api_base=stripe_server.endpoint)
    intent = payments.create_intent(
        "ord-hook-2", 1200, "eur", idempotency_key=idempotency_key("ord-hook-2", PaymentStep.AUTHORISE)
    )
    client = stripe.StripeClient(TEST_SECRET_KEY, base_addresses={"api": stripe_server.endpoint})
    client.v1.payment_intents.update(intent.intent_id, params={"payment_method": "pm_card_chargeCustomerFail"})
    with pytest.raises(stripe.CardError):
        client.v1.payment_intents.confirm(intent.intent_id)

    events = _events_of(receiver, intent.intent_id, "payment_intent.payment_failed")

    failed = [e for e in events if e.kind is PaymentEventKind.FAILED]
    assert [(e.event_type, e.order_id) for e in failed] == [("payment_intent.payment_failed", "ord-hook-2")]
    assert not any(e.kind is PaymentEventKind.AUTHORISED for e in events)


def test_an_event_id_too_long_for_a_key_is_refused():
    data = {**_event(), "id": "evt_" + "x" * 300}
    body = json.dumps(data).encode()
    assert _refused(body, _signed(body)).code == "WEBHOOK_PAYLOAD_INVALID"


def test_a_delivery_from_localstripe_through_the_gateway_is_applied(delivering_localstripe):
    from local_runtime.events import HttpRequest, http_api_event
    from shop.http_api.payment_webhooks import receive_webhook

    stripe_server, receiver = delivering_localstripe
    payments = StripePayments(TEST_SECRET_KEY, api_base=stripe_server.endpoint)
    client = stripe.StripeClient(TEST_SECRET_KEY, base_addresses={"api": stripe_server.endpoint})
    other = client.v1.payment_intents.create(
        params={"amount": 900, "currency": "eur", "capture_method": "manual", "metadata": {"order_id": "ord-hook-4"}}
    )
    client.v1.payment_intents.update(other.id, params={"payment_method": "pm_card_visa"})
    client.v1.payment_intents.confirm(other.id)
    payments.capture(other.id, idempotency_key=idempotency_key("ord-hook-4", PaymentStep.CAPTURE))
    _events_of(receiver, other.id, "payment_intent.succeeded")

    applied = []
    for body, signature in list(receiver.deliveries):
        request = HttpRequest(
            "POST",
            "/webhooks/stripe",
            headers=[("Content-Type", "application/json; charset=utf-8"), ("Stripe-Signature", signature or "")],
            body=body,
        )
        received = receive_webhook(  # a refusal would raise
            http_api_event(request, route_key="POST /webhooks/stripe"),
            webhooks=StripeWebhooks(SECRET),
            apply=applied.append,
        )
        assert received["received"] is True, received

    assert ("ord-hook-4", PaymentEventKind.AUTHORISED) in [(e.order_id, e.kind) for e in applied]
