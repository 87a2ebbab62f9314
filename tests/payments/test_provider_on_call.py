"""The payment rules get their provider built at its first call (shop.payments.deferred): the webhook's first
delivery verifies with the standard library and never imports `stripe` unless the rule calls Stripe."""

from __future__ import annotations

import pytest

from shop import errors
from shop.models.payments import PaymentStep, idempotency_key
from shop.payments.deferred import DeferredPayments
from tests.support.fake_payments import FakePayments
from tests.support.fresh_python import LAMBDA_LIKE_ENV, fresh_python


def test_the_provider_is_built_once_at_the_first_call_and_every_call_reaches_it():
    built: list[FakePayments] = []

    def build() -> FakePayments:
        built.append(FakePayments())
        return built[-1]

    payments = DeferredPayments(build)
    assert built == []

    intent = payments.create_intent(
        "ord-d", 500, "eur", idempotency_key=idempotency_key("ord-d", PaymentStep.AUTHORISE)
    )
    built[0].authorise(intent.intent_id)
    assert payments.get_intent(intent.intent_id).status == built[0].get_intent(intent.intent_id).status
    cancelled = payments.cancel(intent.intent_id, idempotency_key=idempotency_key("ord-d", PaymentStep.CANCEL))

    assert len(built) == 1
    assert cancelled.status.value == "canceled"
    assert [operation for operation, _ in built[0].calls] == ["create_intent", "get_intent", "get_intent", "cancel"]
    assert payments.refunds(intent.intent_id) == []
    assert len(built) == 1


def test_payments_off_is_a_misconfiguration_at_the_first_call():
    payments = DeferredPayments(lambda: None)
    with pytest.raises(errors.PaymentMisconfigured):
        payments.get_intent("pi_1")


def test_a_delivery_verified_and_the_rules_built_load_no_stripe_until_a_call():
    env = {
        **LAMBDA_LIKE_ENV,
        "PAYMENTS": "stripe",
        "STRIPE_SECRET_KEY": "sk_test_deferred",
        "STRIPE_WEBHOOK_SECRET": "whsec_deferred",
        "STRIPE_API_BASE": "http://127.0.0.1:9",
    }
    loaded = fresh_python(
        "import json, sys\n"
        "from local_runtime.payments import signed\n"
        "from shop import wiring\n"
        "body = json.dumps({'id': 'evt_1', 'object': 'event', 'type': 'payment_intent.payment_failed',\n"
        "    'created': 1, 'data': {'object': {'id': 'pi_1', 'object': 'payment_intent'}}}).encode()\n"
        "event = wiring.payment_webhooks().verify(body, signed(body, 'whsec_deferred'))\n"
        "service = wiring.payment_service()\n"
        "before = 'stripe' in sys.modules\n"
        "provider = type(service.payments.provider).__name__\n"
        "print(json.dumps({'event': event.event_id, 'before': before, 'provider': provider,\n"
        "    'after': 'stripe' in sys.modules}))",
        env,
    )
    assert loaded == {"event": "evt_1", "before": False, "provider": "StripePayments", "after": True}
