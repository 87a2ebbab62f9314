"""The Stripe adapter's own behaviour: Stripe's errors as the shop's, retries under one idempotency key, and
what localstripe does that Stripe does not (pinned, so that the shop never leans on it)."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator

import pytest
import stripe

from local_runtime.localstripe import TEST_SECRET_KEY
from shop import errors
from shop.http_api import errors as http_errors
from shop.models.payments import PaymentStep, idempotency_key
from shop.payments.stripe_adapter import StripePayments, translate


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (stripe.APIConnectionError("no route to host"), errors.PaymentProviderUnavailable),
        (stripe.RateLimitError("slow down", http_status=429), errors.PaymentProviderUnavailable),
        (stripe.APIError("boom", http_status=500), errors.PaymentProviderUnavailable),
        (stripe.APIError("bad gateway", http_status=502), errors.PaymentProviderUnavailable),
        (stripe.APIError("no status"), errors.PaymentProviderUnavailable),
        (stripe.CardError("declined", None, "card_declined", http_status=402), errors.PaymentDeclined),
        (
            stripe.InvalidRequestError("no such intent", None, "resource_missing", http_status=404),
            errors.PaymentRejected,
        ),
        (stripe.InvalidRequestError("wrong state", None, http_status=400), errors.PaymentRejected),
        (stripe.IdempotencyError("key reused", http_status=400), errors.PaymentRejected),
        (stripe.AuthenticationError("bad key", http_status=401), errors.PaymentMisconfigured),
        (stripe.PermissionError("restricted key", http_status=403), errors.PaymentMisconfigured),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else value.__name__,
)
def test_stripe_errors_become_the_shops_typed_errors(error, expected):
    assert type(translate(error)) is expected


def test_the_typed_errors_answer_over_http_with_their_codes():
    status, body, headers = http_errors.describe(errors.PaymentProviderUnavailable("x"))
    assert (status, body["error"]["code"], headers) == (503, "PAYMENT_PROVIDER_UNAVAILABLE", {"Retry-After": "1"})
    assert http_errors.describe(errors.PaymentDeclined("x"))[:2] == (
        409,
        {"error": {"code": "PAYMENT_DECLINED", "message": "x"}},
    )
    assert http_errors.status_for(errors.PaymentRejected("x")) == 409
    # the shop's credentials are no client's business: a generic 500
    status, body, _ = http_errors.describe(errors.PaymentMisconfigured("bad key"))
    assert (status, body["error"]["code"]) == (500, "INTERNAL_ERROR")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when this returns: nothing listens there


def test_an_unreachable_provider_is_unavailable_and_nothing_else():
    payments = StripePayments(TEST_SECRET_KEY, api_base=f"http://127.0.0.1:{_closed_port()}", max_network_retries=0)
    with pytest.raises(errors.PaymentProviderUnavailable):
        payments.create_intent("ord-1", 100, "eur", idempotency_key="shop-order-ord-1-authorise")


class _FailingProvider(http.server.BaseHTTPRequestHandler):
    """Answers every call with the next of `statuses` (then 200 with an intent) and records its idempotency key."""

    statuses: list[int] = []
    keys: list[str | None] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).keys.append(self.headers.get("Idempotency-Key"))
        status = type(self).statuses.pop(0) if type(self).statuses else 200
        body = (
            {"error": {"type": "api_error", "message": "try again"}}
            if status >= 400
            else {
                "id": "pi_1",
                "object": "payment_intent",
                "status": "succeeded",
                "amount": 100,
                "currency": "eur",
                "client_secret": "pi_1_secret_x",
                "metadata": {"order_id": "ord-1"},
            }
        )
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def failing_provider() -> Iterator[tuple[str, type[_FailingProvider]]]:
    handler = type("Provider", (_FailingProvider,), {"statuses": [], "keys": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_a_provider_5xx_is_retried_with_the_same_idempotency_key(failing_provider):
    base, provider = failing_provider
    provider.statuses = [503]
    key = idempotency_key("ord-1", PaymentStep.CAPTURE)

    captured = StripePayments(TEST_SECRET_KEY, api_base=base, max_network_retries=1).capture(
        "pi_1", idempotency_key=key
    )

    assert captured.intent_id == "pi_1"
    assert provider.keys == [key, key]


def test_a_provider_that_keeps_failing_is_unavailable(failing_provider):
    base, provider = failing_provider
    provider.statuses = [500, 503]
    key = idempotency_key("ord-1", PaymentStep.CAPTURE)

    with pytest.raises(errors.PaymentProviderUnavailable):
        StripePayments(TEST_SECRET_KEY, api_base=base, max_network_retries=1).capture("pi_1", idempotency_key=key)
    assert provider.keys == [key, key]


# -- what localstripe 1.15.10 does that Stripe does not: the shop's own keys and conditions must hold ----


def _captured_on_localstripe(localstripe, order_id):
    payments = StripePayments(TEST_SECRET_KEY, api_base=localstripe.endpoint)
    intent = payments.create_intent(
        order_id, 2500, "eur", idempotency_key=idempotency_key(order_id, PaymentStep.AUTHORISE)
    )
    client = stripe.StripeClient(TEST_SECRET_KEY, base_addresses={"api": localstripe.endpoint})
    client.v1.payment_intents.update(intent.intent_id, params={"payment_method": "pm_card_visa"})
    client.v1.payment_intents.confirm(intent.intent_id)
    payments.capture(intent.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CAPTURE))
    return payments, intent


def test_localstripe_ignores_idempotency_keys(localstripe):
    payments, intent = _captured_on_localstripe(localstripe, "ord-ls-keys")
    key = idempotency_key("ord-ls-keys", PaymentStep.REFUND)

    first = payments.refund(intent.intent_id, 500, idempotency_key=key)
    again = payments.refund(intent.intent_id, 500, idempotency_key=key)

    assert first.refund_id != again.refund_id  # Stripe would answer the first refund again


def test_localstripe_refunds_past_the_captured_amount(localstripe):
    payments, intent = _captured_on_localstripe(localstripe, "ord-ls-over")

    refund = payments.refund(intent.intent_id, 5000, idempotency_key=idempotency_key("ord-ls-over", PaymentStep.REFUND))

    assert refund.amount_cents == 5000  # Stripe refuses this; the shop takes refund amounts from the stored order
