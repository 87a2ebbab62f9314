"""A deployed stage whose Stripe secret cannot be used never answers 500: checkout and webhook deliveries answer
503 PAYMENT_PROVIDER_UNAVAILABLE with Retry-After, nothing is written, and each refusal counts the EMF metric
PaymentCredentialsUnusable of the function (the alarm of infra.constructs.monitoring sums it).

The secret is moto's Secrets Manager, created as the stage creates it (infra.constructs.data.StripeSecret: the
placeholder `unset` and a generated webhook secret), then filled as docs/deploy.md says; Stripe refusing a key is a
local server answering 401 and 403 as Stripe does.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from shop import config, errors, payment_secrets
from shop.payments.stripe_adapter import StripePayments
from tests.functions.apigw import ALICE, call

ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}
LINES = {"lines": [{"product_id": "prod-cable", "quantity": 2}], "shipping_address": ADDRESS}
# What CloudFormation puts in the secret at the first deploy: the template's placeholder key and a generated string.
PLACEHOLDER = {"secret_key": "unset", "webhook_secret": "Qm3pX9vRk2LwT8nYc4HsJ7dFa1GeZ5bU"}
FILLED = {"secret_key": "sk_live_filled_by_the_operator", "webhook_secret": "whsec_filled_by_the_operator"}
METRIC = payment_secrets.CREDENTIALS_UNUSABLE_METRIC


def _emf(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


def counted(output: str, name: str = METRIC) -> list[dict[str, Any]]:
    """Each EMF line of `output` counting `name`: its dimensions with their values, and the value."""
    found = []
    for blob in _emf(output):
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            if any(metric["Name"] == name for metric in directive["Metrics"]):
                for dimensions in directive["Dimensions"]:
                    found.append(
                        {"namespace": directive["Namespace"], **{d: blob[d] for d in dimensions}, name: blob[name]}
                    )
    return found


@pytest.fixture
def stripe_secret(moto_api, monkeypatch) -> Iterator[Any]:
    """A deployed function's view: PAYMENTS=stripe and only the secret's ARN (no literal key), the secret as the
    stage created it. Yields a setter that writes a new value (the operator's put-secret-value)."""
    import boto3

    client = boto3.client("secretsmanager", region_name=os.environ.get("AWS_REGION", "us-east-1"))
    arn = client.create_secret(Name="shop-test-stripe", SecretString=json.dumps(PLACEHOLDER))["ARN"]
    for name in ("STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "STRIPE_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_SECRET_ARN", arn)
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "30")
    config.payment_settings.cache_clear()
    payment_secrets.clear()

    def put(value: Any) -> None:
        text = value if isinstance(value, str) else json.dumps(value)
        client.put_secret_value(SecretId=arn, SecretString=text)
        payment_secrets.clear()  # a fresh instance (deployed: within MAX_AGE_S)

    yield put
    config.payment_settings.cache_clear()
    payment_secrets.clear()


def place(key: str = "k-credentials") -> Any:
    return call("POST", "/orders", claims=ALICE, headers={"Idempotency-Key": key}, body=LINES)


def orders_of_alice() -> list[Any]:
    return call("GET", "/customers/alice/orders", claims=ALICE).body["items"]


def assert_unavailable(reply: Any) -> None:
    assert reply.status == 503, reply.body
    assert reply.code == "PAYMENT_PROVIDER_UNAVAILABLE"
    assert reply.headers["retry-after"] == "1"
    assert "unset" not in json.dumps(reply.body)  # the body says nothing of the shop's credentials


@pytest.mark.parametrize(
    "value",
    [
        PLACEHOLDER,  # never filled after the first deploy
        {"secret_key": "pk_live_the_publishable_key", "webhook_secret": "whsec_x"},  # the wrong key pasted
        "sk_live_pasted_without_the_json",  # not the JSON object
        {"secret_key": "sk_live_x"},  # the webhook secret left out
    ],
    ids=["placeholder", "publishable_key", "not_json", "field_missing"],
)
def test_checkout_with_an_unusable_secret_is_503_with_nothing_written_and_counted(stripe_secret, capsys, value):
    stripe_secret(value)
    stock, before = call("GET", "/products/prod-cable").body["stock"], orders_of_alice()
    capsys.readouterr()
    assert_unavailable(place())
    output = capsys.readouterr().out
    function = {
        "namespace": os.environ["POWERTOOLS_METRICS_NAMESPACE"],
        "service": os.environ["POWERTOOLS_SERVICE_NAME"],
    }
    assert counted(output) == [{**function, METRIC: [1.0]}]  # Shop/<stage> and the function's name, deployed
    assert counted(output, "ServerErrors") == []  # not a 500: the release is not to blame, nor rolled back
    assert orders_of_alice() == before
    assert call("GET", "/products/prod-cable").body["stock"] == stock


def test_a_deleted_secret_is_503_and_counted(stripe_secret, monkeypatch, capsys):
    monkeypatch.setenv("STRIPE_SECRET_ARN", os.environ["STRIPE_SECRET_ARN"] + "-gone")
    config.payment_settings.cache_clear()
    capsys.readouterr()
    assert_unavailable(place())
    assert len(counted(capsys.readouterr().out)) == 1


def test_once_the_operator_fills_the_secret_the_same_checkout_goes_through(stripe_secret, monkeypatch, capsys):
    from shop import wiring
    from tests.support.fake_payments import FakePayments

    assert_unavailable(place("k-filled"))
    stripe_secret(FILLED)
    # Stripe itself is the fake here; the key it is built with is the one the secret now holds
    built_with: list[str] = []
    provider = FakePayments()

    def stripe_payments(key: str, api_base: str | None) -> FakePayments:
        built_with.append(key)
        return provider

    monkeypatch.setattr(wiring, "_stripe_payments", stripe_payments)
    capsys.readouterr()
    placed = place("k-filled")  # the client's repeat, under the same Idempotency-Key
    assert placed.status == 201, placed.body
    assert placed.body["status"] == "PENDING_PAYMENT"
    assert built_with == [FILLED["secret_key"]]
    assert counted(capsys.readouterr().out) == []


def _signed(body: str, secret: str) -> str:
    at = int(time.time())
    return f"t={at},v1={hmac.new(secret.encode(), f'{at}.{body}'.encode(), hashlib.sha256).hexdigest()}"


def test_a_delivery_before_the_signing_secret_is_filled_is_503_and_stripe_redelivers_it_after(stripe_secret, capsys):
    body = json.dumps(
        {"id": "evt_early", "object": "event", "type": "customer.created", "created": int(time.time()),
         "data": {"object": {"id": "cus_1", "object": "customer"}}}
    )  # fmt: skip
    signature = _signed(body, FILLED["webhook_secret"])  # Stripe signs with the endpoint's real secret
    capsys.readouterr()
    early = call("POST", "/webhooks/stripe", raw_body=body, headers={"Stripe-Signature": signature})
    assert_unavailable(early)  # not 400 WEBHOOK_SIGNATURE_INVALID: Stripe retries, operations are paged
    output = capsys.readouterr().out
    assert [c["service"] for c in counted(output)] == [os.environ["POWERTOOLS_SERVICE_NAME"]]
    stripe_secret(FILLED)
    later = call("POST", "/webhooks/stripe", raw_body=body, headers={"Stripe-Signature": signature})
    assert later.status == 200, later.body
    assert later.body == {"received": True, "event_id": "evt_early", "kind": "ignored"}


def test_a_forged_delivery_once_the_secret_is_filled_is_still_400_and_not_counted(stripe_secret, capsys):
    stripe_secret(FILLED)
    body = json.dumps({"id": "evt_forged", "type": "payment_intent.succeeded"})
    capsys.readouterr()
    forged = call("POST", "/webhooks/stripe", raw_body=body, headers={"Stripe-Signature": _signed(body, "whsec_no")})
    assert (forged.status, forged.code) == (400, "WEBHOOK_SIGNATURE_INVALID")
    assert counted(capsys.readouterr().out) == []


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Stripe refusing the key: 401 (unknown, revoked or expired key) or 403 (a restricted key without the right)."""

    status = 401

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        kind = "invalid_request_error"
        message = "Invalid API Key provided: sk_live_****" if self.status == 401 else "The provided key lacks rights"
        payload = json.dumps({"error": {"type": kind, "message": message}}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(params=[401, 403])
def refusing_stripe(request: pytest.FixtureRequest) -> Iterator[str]:
    handler = type("Refusing", (_Refusing,), {"status": request.param})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_key_stripe_refuses_is_unavailable_and_counted(refusing_stripe, capsys):
    payments = StripePayments("sk_live_revoked", api_base=refusing_stripe, max_network_retries=0)
    capsys.readouterr()
    with pytest.raises(errors.PaymentCredentialsUnusable) as raised:
        payments.create_intent("ord-1", 100, "usd", idempotency_key="shop-order-ord-1-authorise")
    assert isinstance(raised.value, errors.PaymentProviderUnavailable)  # a payment step fails its record: retried
    assert raised.value.code == "PAYMENT_PROVIDER_UNAVAILABLE"
    assert len(counted(capsys.readouterr().out)) == 1


def test_checkout_with_a_key_stripe_refuses_is_503_with_nothing_written(stripe_secret, refusing_stripe, monkeypatch):
    stripe_secret(FILLED)
    monkeypatch.setenv("STRIPE_API_BASE", refusing_stripe)
    config.payment_settings.cache_clear()
    before = orders_of_alice()
    assert_unavailable(place("k-refused"))
    assert orders_of_alice() == before
