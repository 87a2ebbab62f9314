"""POST /webhooks/stripe through the payments function: signed deliveries are applied once, forged or stale ones
are 400, unknown types are 200 and apply nothing; a real localstripe delivery verifies through the handler.

Until pay-stream's PaymentService is merged, `apply` is a minimal one of this test (the event's mark only, as the
rule writes it for an event that changes no order); the route, verification and answers are the production code.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from shop import config, errors
from shop.limits import WEBHOOK_EVENT_TTL_SECONDS
from shop.models.payments import PaymentEvent
from tests.functions.apigw import API, call

SECRET = "whsec_test_route"


class MarkOnly:
    """A test's stand-in for PaymentService.apply_event: records each event and marks it once."""

    def __init__(self, table: Any) -> None:
        from shop.repository.payment_events import PaymentEventRepository

        self.marks = PaymentEventRepository(table)
        self.applied: list[PaymentEvent] = []
        self.fail_next = False

    def apply_event(self, event: PaymentEvent) -> None:
        if self.fail_next:
            self.fail_next = False
            raise errors.ServiceUnavailable("the store is throttled")
        if self.marks.mark_applied(event, expires_at=int(time.time()) + WEBHOOK_EVENT_TTL_SECONDS):
            self.applied.append(event)


@pytest.fixture
def webhook(moto_api, monkeypatch) -> Iterator[MarkOnly]:
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_SECRET_KEY", "sk_test_route")
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", SECRET)
    config.payment_settings.cache_clear()
    API.handler("payments")
    service = MarkOnly(moto_api.table)
    monkeypatch.setattr(sys.modules["_in_process_payments_handler"], "_service", service)
    yield service
    config.payment_settings.cache_clear()


def stripe_event(event_type: str = "payment_intent.succeeded", event_id: str = "evt_route_1") -> dict[str, Any]:
    return {
        "id": event_id,
        "object": "event",
        "type": event_type,
        "created": int(time.time()),
        "data": {"object": {"id": "pi_1", "object": "payment_intent", "metadata": {"order_id": "ord-1"}}},
    }


def signature(body: str, *, secret: str = SECRET, at: int | None = None) -> str:
    at = int(time.time()) if at is None else at
    digest = hmac.new(secret.encode(), f"{at}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={at},v1={digest}"


def deliver(body: str, sig: str | None, **kwargs: Any) -> Any:
    headers = {"Stripe-Signature": sig} if sig is not None else {}
    return call("POST", "/webhooks/stripe", raw_body=body, headers=headers, **kwargs)


def test_a_signed_delivery_is_applied_once_whatever_the_redeliveries(webhook):
    body = json.dumps(stripe_event())
    for _ in range(3):
        answer = deliver(body, signature(body))
        assert answer.status == 200
        assert answer.body == {"received": True, "event_id": "evt_route_1", "kind": "authorised"}
    assert [(e.event_id, e.order_id, e.intent_id) for e in webhook.applied] == [("evt_route_1", "ord-1", "pi_1")]


def test_a_base64_encoded_body_is_verified_as_its_bytes(webhook):
    body = json.dumps(stripe_event(event_id="evt_route_b64"), ensure_ascii=False)
    assert deliver(body, signature(body), base64_body=True).status == 200
    assert [e.event_id for e in webhook.applied] == ["evt_route_b64"]


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda body: None, id="unsigned"),
        pytest.param(lambda body: signature(body, secret="whsec_someone_else"), id="other-secret"),
        pytest.param(lambda body: signature(body + " "), id="tampered"),
        pytest.param(lambda body: signature(body, at=int(time.time()) - 301), id="stale"),
        pytest.param(lambda body: "t=1,v1=zz", id="malformed"),
    ],
)
def test_a_forged_or_stale_delivery_is_400_and_applies_nothing(webhook, forge):
    body = json.dumps(stripe_event())
    answer = deliver(body, forge(body))
    assert answer.status == 400
    assert answer.code == "WEBHOOK_SIGNATURE_INVALID"
    assert webhook.applied == []


def test_an_unknown_event_type_is_200_and_applies_nothing(webhook):
    body = json.dumps(stripe_event("customer.created", "evt_route_unknown"))
    answer = deliver(body, signature(body))
    assert answer.status == 200
    assert answer.body["kind"] == "ignored"
    assert webhook.applied == []


def test_a_signed_body_that_is_no_event_is_400(webhook):
    body = json.dumps({"hello": "world"})
    answer = deliver(body, signature(body))
    assert answer.status == 400
    assert answer.code == "WEBHOOK_PAYLOAD_INVALID"


def test_a_transient_failure_to_apply_is_503_and_the_redelivery_applies_it(webhook):
    body = json.dumps(stripe_event(event_id="evt_route_retry"))
    webhook.fail_next = True
    first = deliver(body, signature(body))
    assert first.status == 503
    assert "retry-after" in first.headers
    assert deliver(body, signature(body)).status == 200
    assert [e.event_id for e in webhook.applied] == ["evt_route_retry"]


def test_with_payments_off_the_route_is_not_there(moto_api, monkeypatch):
    monkeypatch.setenv("PAYMENTS", "none")
    config.payment_settings.cache_clear()
    try:
        body = json.dumps(stripe_event())
        answer = deliver(body, signature(body))
        assert answer.status == 404
        assert answer.code == "NOT_FOUND"
    finally:
        config.payment_settings.cache_clear()


def test_the_payments_function_loads_stripe_only_at_its_first_delivery(moto_api):
    """Importing the handler (its cold start) loads neither stripe nor the adapter."""
    import subprocess

    code = (
        "import sys; sys.path[:0] = ['layers/shared/python', '.']\n"
        "from local_runtime.worker import import_handler_module\n"
        "import_handler_module('functions/payments', 'handler', 'h', isolated=True)\n"
        "assert 'stripe' not in sys.modules and 'shop.payments.stripe_adapter' not in sys.modules\n"
    )
    env = {"PAYMENTS": "stripe", "TABLE_NAME": "t", "AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
