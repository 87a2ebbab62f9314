"""The payment rules are handed their provider as a callable (shop.wiring's `_current_payments`), called only when
a rule calls the provider: the webhook's first delivery verifies with the standard library and never imports
`stripe` unless the rule calls Stripe."""

from __future__ import annotations

import pytest

from shop import errors, wiring
from shop.models.payments import PaymentStep, idempotency_key
from shop.repository.store import Table
from tests.support.fake_payments import FakePayments
from tests.support.fresh_python import LAMBDA_LIKE_ENV, fresh_python


def test_the_rules_ask_for_the_provider_at_each_call_and_every_call_reaches_it(monkeypatch):
    built: list[FakePayments] = []
    provider = FakePayments()

    def payments() -> FakePayments:
        built.append(provider)
        return provider

    monkeypatch.setattr(wiring, "payments", payments)  # looked up at the call, as the tests that replace it need
    rules = wiring.payment_service(Table(client=object(), table_name="shop-provider"))
    assert built == []

    intent = rules.payments.create_intent(
        "ord-d", 500, "eur", idempotency_key=idempotency_key("ord-d", PaymentStep.AUTHORISE)
    )
    provider.authorise(intent.intent_id)
    cancelled = rules.payments.cancel(intent.intent_id, idempotency_key=idempotency_key("ord-d", PaymentStep.CANCEL))

    assert len(built) == 2
    assert cancelled.status.value == "canceled"
    assert [operation for operation, _ in provider.calls] == ["create_intent", "cancel"]


def test_payments_off_is_a_misconfiguration_at_the_first_call(monkeypatch):
    monkeypatch.setattr(wiring, "payments", lambda: None)
    rules = wiring.payment_service(Table(client=object(), table_name="shop-provider"))
    with pytest.raises(errors.PaymentMisconfigured):
        rules.payments.get_intent("pi_1")


def test_a_delivery_verified_and_the_rules_built_load_no_stripe_until_a_call():
    env = {
        **LAMBDA_LIKE_ENV,
        "PAYMENTS": "stripe",
        "STRIPE_SECRET_KEY": "sk_test_on_call",
        "STRIPE_WEBHOOK_SECRET": "whsec_on_call",
        "STRIPE_API_BASE": "http://127.0.0.1:9",
    }
    loaded = fresh_python(
        "import json, sys\n"
        "from local_runtime.payments import signed\n"
        "from shop import wiring\n"
        "body = json.dumps({'id': 'evt_1', 'object': 'event', 'type': 'payment_intent.payment_failed',\n"
        "    'created': 1, 'data': {'object': {'id': 'pi_1', 'object': 'payment_intent'}}}).encode()\n"
        "event = wiring.payment_webhooks().verify(body, signed(body, 'whsec_on_call'))\n"
        "service = wiring.payment_service()\n"
        "before = 'stripe' in sys.modules\n"
        "provider = type(service.payments).__name__\n"
        "print(json.dumps({'event': event.event_id, 'before': before, 'provider': provider,\n"
        "    'after': 'stripe' in sys.modules}))",
        env,
    )
    assert loaded == {"event": "evt_1", "before": False, "provider": "StripePayments", "after": True}
