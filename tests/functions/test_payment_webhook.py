"""POST /webhooks/stripe through the payments function and the real rule (PaymentService.apply_event) on moto:
a signed authorisation confirms the order (once the provider holds the amount), a failed attempt is recorded, a
cancelled intent releases its stock, each event is applied once whatever the redeliveries (the order's state is the
guard: nothing else is written, issue 26), forged or stale deliveries are 400 and change nothing, unknown types and
unknown orders are 200 and write nothing, a transient failure is 503 and the redelivery applies it. The provider is
the in-memory fake.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from shop import config, errors, keys, wiring
from shop.models.payments import PaymentEvent
from shop.services.payments import PaymentService
from tests.functions.apigw import API, call
from tests.support.factories import product
from tests.support.fake_payments import FakePayments
from tests.support.unpaid_orders import Unpaid, item, place_unpaid, stock

SECRET = "whsec_test_route"


class Flaky:
    """The real rule, failing its next call for a transient cause when asked (the store throttled)."""

    def __init__(self, service: PaymentService) -> None:
        self.service = service
        self.fail_next = False

    def apply_event(self, event: PaymentEvent) -> None:
        if self.fail_next:
            self.fail_next = False
            raise errors.ServiceUnavailable("the store is throttled")
        self.service.apply_event(event)


@dataclass
class Webhook:
    table: Any
    payments: FakePayments
    service: Flaky

    def order(self, order_id: str) -> dict[str, Any]:
        found = item(self.table, keys.order_key(order_id))
        assert found is not None
        return found

    def items(self) -> list[dict[str, Any]]:
        """Every item of the table (a Scan: tests only), to prove a delivery wrote nothing."""
        found = self.table.client.scan(TableName=self.table.name, ConsistentRead=True)["Items"]
        return sorted(found, key=lambda i: (i["PK"]["S"], i["SK"]["S"]))

    def unpaid(self, quantity: int = 2) -> tuple[Unpaid, str]:
        pid = product(self.table, name="Kettle", price_cents=2500, stock=5)
        return place_unpaid(self.table, self.payments, [(pid, "Kettle", 2500, quantity)]), pid


@pytest.fixture
def webhook(moto_api, monkeypatch) -> Iterator[Webhook]:
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("STRIPE_SECRET_KEY", "sk_test_route")
    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", SECRET)
    config.payment_settings.cache_clear()
    API.handler("payments")
    fake = FakePayments()
    service = Flaky(wiring.payment_service(moto_api.table, provider=fake))
    monkeypatch.setattr(sys.modules["_in_process_payments_handler"], "payment_rules", service)
    yield Webhook(moto_api.table, fake, service)
    config.payment_settings.cache_clear()


def stripe_event(
    event_type: str = "payment_intent.succeeded",
    event_id: str = "evt_route_1",
    unpaid: Unpaid | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A Stripe event about a payment intent; `fields` are more of the intent's own (`last_payment_error`)."""
    intent, order_id = (unpaid.intent_id, unpaid.order_id) if unpaid else ("pi_1", "ord-1")
    obj = {"id": intent, "object": "payment_intent", "metadata": {"order_id": order_id}, **fields}
    return {
        "id": event_id,
        "object": "event",
        "type": event_type,
        "created": int(time.time()),
        "data": {"object": obj},
    }


def signature(body: str, *, secret: str = SECRET, at: int | None = None) -> str:
    at = int(time.time()) if at is None else at
    digest = hmac.new(secret.encode(), f"{at}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={at},v1={digest}"


def deliver(body: str, sig: str | None, **kwargs: Any) -> Any:
    headers = {"Stripe-Signature": sig} if sig is not None else {}
    return call("POST", "/webhooks/stripe", raw_body=body, headers=headers, **kwargs)


def test_an_authorisation_confirms_the_order_once_whatever_the_redeliveries(webhook):
    unpaid, pid = webhook.unpaid()
    webhook.payments.authorise(unpaid.intent_id)
    body = json.dumps(stripe_event("payment_intent.amount_capturable_updated", "evt_route_auth", unpaid))
    answer = deliver(body, signature(body))
    assert answer.status == 200
    assert answer.body == {"received": True, "event_id": "evt_route_auth", "kind": "authorised"}
    confirmed = webhook.items()
    for _ in range(2):
        assert deliver(body, signature(body)).body == answer.body  # redelivered: answered alike, nothing written
    assert webhook.items() == confirmed
    order = webhook.order(unpaid.order_id)
    assert (order["status"], order["version"], order["payment"]["status"]) == ("CONFIRMED", 2, "AUTHORISED")
    assert "payment_expires_at" not in order
    assert stock(webhook.table, pid) == 3  # sold: the stock stays taken
    late = json.dumps(stripe_event("payment_intent.payment_failed", "evt_route_late_failure", unpaid))
    assert deliver(late, signature(late)).status == 200  # a late failure after the confirmation: nothing
    assert webhook.items() == confirmed


def test_a_failed_attempt_is_recorded_once_and_the_order_keeps_its_stock(webhook):
    unpaid, pid = webhook.unpaid()
    declined = {
        "code": "card_declined",
        "decline_code": "insufficient_funds",
        "message": "Your card has insufficient funds.",
    }
    body = json.dumps(
        stripe_event("payment_intent.payment_failed", "evt_route_failed", unpaid, last_payment_error=declined)
    )
    answer = deliver(body, signature(body))
    assert (answer.status, answer.body["kind"]) == (200, "failed")
    recorded = webhook.items()
    for _ in range(2):
        assert deliver(body, signature(body)).body == answer.body  # redelivered: answered alike, nothing written
    assert webhook.items() == recorded
    order = webhook.order(unpaid.order_id)
    assert (order["status"], order["version"], order["payment"]["status"]) == ("PENDING_PAYMENT", 1, "REQUIRES_PAYMENT")
    failure = order["payment"]["last_failure"]
    assert (failure["code"], failure["message"]) == ("insufficient_funds", "Your card has insufficient funds.")
    assert stock(webhook.table, pid) == 3  # still held: the customer may try another card
    assert "expires_at" not in order  # not final


def test_a_cancelled_intent_releases_the_stock_once_whatever_the_redeliveries(webhook):
    unpaid, pid = webhook.unpaid()
    webhook.payments.cancel(unpaid.intent_id, idempotency_key="stripe-dashboard")  # cancelled at Stripe
    body = json.dumps(stripe_event("payment_intent.canceled", "evt_route_canceled", unpaid))
    for _ in range(3):
        answer = deliver(body, signature(body))
        assert (answer.status, answer.body["kind"]) == (200, "canceled")
    order = webhook.order(unpaid.order_id)
    assert (order["status"], order["version"], order["payment"]["status"]) == ("PAYMENT_FAILED", 2, "CANCELED")
    assert stock(webhook.table, pid) == 5  # back, once
    assert order["expires_at"] > time.time()  # final: archived later
    failed = webhook.items()
    authorised = json.dumps(stripe_event("payment_intent.succeeded", "evt_route_after_failure", unpaid))
    assert deliver(authorised, signature(authorised)).status == 200  # an authorisation for a dead order
    assert webhook.items() == failed
    assert stock(webhook.table, pid) == 5


def test_an_unknown_order_is_200_and_writes_nothing(webhook):
    webhook.unpaid()
    before = webhook.items()
    body = json.dumps(stripe_event(event_id="evt_route_nobody"))  # pi_1 of ord-1: not the shop's order
    answer = deliver(body, signature(body))
    assert (answer.status, answer.body["kind"]) == (200, "authorised")
    assert webhook.items() == before


def test_a_base64_encoded_body_is_verified_as_its_bytes(webhook):
    unpaid, _ = webhook.unpaid()
    webhook.payments.authorise(unpaid.intent_id)
    body = json.dumps(stripe_event(event_id="evt_route_b64", unpaid=unpaid), ensure_ascii=False)
    assert deliver(body, signature(body), base64_body=True).status == 200
    assert webhook.order(unpaid.order_id)["status"] == "CONFIRMED"


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
def test_a_forged_or_stale_delivery_is_400_and_changes_nothing(webhook, forge):
    unpaid, _ = webhook.unpaid()
    before = webhook.items()
    body = json.dumps(stripe_event(unpaid=unpaid))
    answer = deliver(body, forge(body))
    assert answer.status == 400
    assert answer.code == "WEBHOOK_SIGNATURE_INVALID"
    assert webhook.items() == before


def test_an_unknown_event_type_is_200_and_changes_nothing(webhook):
    unpaid, _ = webhook.unpaid()
    before = webhook.items()
    body = json.dumps(stripe_event("customer.created", "evt_route_unknown", unpaid))
    answer = deliver(body, signature(body))
    assert answer.status == 200
    assert answer.body["kind"] == "ignored"
    assert webhook.items() == before


def test_a_signed_body_that_is_no_event_is_400(webhook):
    body = json.dumps({"hello": "world"})
    answer = deliver(body, signature(body))
    assert answer.status == 400
    assert answer.code == "WEBHOOK_PAYLOAD_INVALID"


def test_a_transient_failure_to_apply_is_503_and_the_redelivery_applies_it(webhook):
    unpaid, _ = webhook.unpaid()
    webhook.payments.authorise(unpaid.intent_id)
    body = json.dumps(stripe_event(event_id="evt_route_retry", unpaid=unpaid))
    webhook.service.fail_next = True
    first = deliver(body, signature(body))
    assert first.status == 503
    assert "retry-after" in first.headers
    assert webhook.order(unpaid.order_id)["status"] == "PENDING_PAYMENT"
    assert deliver(body, signature(body)).status == 200
    order = webhook.order(unpaid.order_id)
    assert (order["status"], order["version"]) == ("CONFIRMED", 2)


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
