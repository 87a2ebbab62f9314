"""`POST /webhooks/stripe` as API Gateway delivers it: the raw body verified, the answer Stripe acts on (a domain
error raised is answered by the resolver's one error handler, shop.http_api.errors.describe)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import stripe

from local_runtime.events import HttpRequest, http_api_event
from shop import errors
from shop.http_api import errors as http_errors
from shop.http_api.payment_webhooks import delivery, receive_webhook
from shop.models.payments import PaymentEventKind
from shop.payments.stripe_adapter import StripeWebhooks
from tests.payments.test_stripe_webhooks import SECRET, _event, _signed


def _gateway_event(body: bytes, signature: str | None, content_type: str = "application/json") -> dict:
    headers = [("content-type", content_type)] + ([("Stripe-Signature", signature)] if signature is not None else [])
    request = HttpRequest("POST", "/webhooks/stripe", headers=headers, body=body)
    return http_api_event(request, route_key="POST /webhooks/stripe")


class Applied(list):
    def __call__(self, event):
        self.append(event)


def _answer(event: dict, apply=None) -> tuple[int, dict[str, Any], dict[str, str]]:
    try:
        body = receive_webhook(event, webhooks=StripeWebhooks(SECRET), apply=apply if apply is not None else Applied())
    except errors.DomainError as error:
        return http_errors.describe(error)
    return 200, body, {}


def test_a_signed_event_is_applied_once_and_answered_200():
    body = json.dumps(_event("payment_intent.amount_capturable_updated")).encode()
    applied = Applied()

    status, answer, _ = _answer(_gateway_event(body, _signed(body)), applied)

    assert (status, answer) == (200, {"received": True, "event_id": "evt_1", "kind": "authorised"})
    assert [(e.event_id, e.kind, e.order_id) for e in applied] == [("evt_1", PaymentEventKind.AUTHORISED, "ord-1")]


def test_a_non_ascii_body_is_verified_as_its_utf8_bytes():
    body = json.dumps(_event(), ensure_ascii=False).replace("ord-1", "ördér-1").encode()
    event = _gateway_event(body, _signed(body))
    assert not event["isBase64Encoded"]  # a base64 body is decoded by the resolver, before routing
    applied = Applied()

    assert _answer(event, applied)[0] == 200
    assert [e.order_id for e in applied] == ["ördér-1"]


def test_the_signature_header_is_found_whatever_its_case():
    body = json.dumps(_event()).encode()
    signature = _signed(body)
    event = {"body": body.decode(), "isBase64Encoded": False, "headers": {"Stripe-Signature": signature}}

    assert delivery(event) == (body, signature)
    assert _answer(event)[0] == 200


def test_an_unknown_event_type_is_answered_200_and_applies_nothing():
    body = json.dumps(_event("customer.created")).encode()
    applied = Applied()

    status, answer, _ = _answer(_gateway_event(body, _signed(body)), applied)

    assert (status, answer["kind"], applied) == (200, "ignored", [])


@pytest.mark.parametrize(
    "sign",
    [
        pytest.param(lambda body: None, id="unsigned"),
        pytest.param(lambda body: _signed(body, secret="whsec_forger"), id="forged"),
        pytest.param(
            lambda body: _signed(body, at=int(time.time()) - stripe.Webhook.DEFAULT_TOLERANCE - 60), id="stale"
        ),
        pytest.param(lambda body: _signed(body.replace(b"ord-1", b"ord-9")), id="signed-another-body"),
    ],
)
def test_a_delivery_not_signed_with_the_secret_is_400_and_applies_nothing(sign):
    body = json.dumps(_event()).encode()
    applied = Applied()

    status, answer, _ = _answer(_gateway_event(body, sign(body)), applied)

    assert (status, answer["error"]["code"], applied) == (400, "WEBHOOK_SIGNATURE_INVALID", [])


def test_a_transient_failure_to_apply_is_503_so_stripe_delivers_again():
    body = json.dumps(_event()).encode()

    def unavailable(event):
        raise errors.ServiceUnavailable("throttled")

    status, answer, headers = _answer(_gateway_event(body, _signed(body)), unavailable)

    assert (status, answer["error"]["code"], headers["Retry-After"]) == (503, "SERVICE_UNAVAILABLE", "1")
