"""The in-memory fake keeps what localstripe does not: idempotency keys and the refund ceiling, as Stripe."""

from __future__ import annotations

import pytest

from shop import errors
from shop.models.payments import IntentStatus, PaymentStep, idempotency_key
from tests.support.fake_payments import FakePayments


def _captured(fake: FakePayments, order_id: str = "ord-1", amount: int = 2500) -> str:
    intent = fake.create_intent(
        order_id, amount, "eur", idempotency_key=idempotency_key(order_id, PaymentStep.AUTHORISE)
    )
    fake.authorise(intent.intent_id)
    fake.capture(intent.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CAPTURE))
    return intent.intent_id


def test_a_retried_step_is_answered_again_and_takes_effect_once():
    fake = FakePayments()
    key = idempotency_key("ord-1", PaymentStep.AUTHORISE)
    first = fake.create_intent("ord-1", 2500, "eur", idempotency_key=key)
    assert fake.create_intent("ord-1", 2500, "eur", idempotency_key=key) == first
    assert len(fake.intents) == 1

    intent_id = first.intent_id
    fake.authorise(intent_id)
    capture_key = idempotency_key("ord-1", PaymentStep.CAPTURE)
    assert fake.capture(intent_id, idempotency_key=capture_key) == fake.capture(intent_id, idempotency_key=capture_key)
    refund_key = idempotency_key("ord-1", PaymentStep.REFUND)
    assert fake.refund(intent_id, 700, idempotency_key=refund_key) == fake.refund(
        intent_id, 700, idempotency_key=refund_key
    )
    assert (fake.captured_cents(intent_id), fake.refunded_cents(intent_id), len(fake.refunds_made)) == (2500, 700, 1)


def test_a_key_reused_with_other_parameters_is_rejected():
    fake = FakePayments()
    intent_id = _captured(fake)
    key = idempotency_key("ord-1", PaymentStep.REFUND)
    fake.refund(intent_id, 700, idempotency_key=key)

    with pytest.raises(errors.PaymentRejected):
        fake.refund(intent_id, 800, idempotency_key=key)
    assert fake.refunded_cents(intent_id) == 700


def test_refunds_stop_at_the_captured_amount():
    fake = FakePayments()
    intent_id = _captured(fake, amount=1000)
    fake.refund(intent_id, 600, idempotency_key=idempotency_key("ord-1", PaymentStep.REFUND, "1"))

    with pytest.raises(errors.PaymentRejected):
        fake.refund(intent_id, 401, idempotency_key=idempotency_key("ord-1", PaymentStep.REFUND, "2"))
    assert fake.refunded_cents(intent_id) == 600


def test_a_refused_step_is_refused_again_under_its_key():
    fake = FakePayments()
    intent = fake.create_intent("ord-1", 1000, "eur", idempotency_key=idempotency_key("ord-1", PaymentStep.AUTHORISE))
    key = idempotency_key("ord-1", PaymentStep.CAPTURE)
    with pytest.raises(errors.PaymentRejected):
        fake.capture(intent.intent_id, idempotency_key=key)  # not authorised yet
    fake.authorise(intent.intent_id)

    with pytest.raises(errors.PaymentRejected):
        fake.capture(intent.intent_id, idempotency_key=key)  # Stripe saves the refusal under the key
    assert fake.get_intent(intent.intent_id).status is IntentStatus.REQUIRES_CAPTURE


def test_an_outage_fails_the_call_before_it_takes_effect_and_a_retry_then_succeeds():
    fake = FakePayments()
    fake.fail_next(2)
    key = idempotency_key("ord-1", PaymentStep.AUTHORISE)
    for _ in range(2):
        with pytest.raises(errors.PaymentProviderUnavailable):
            fake.create_intent("ord-1", 1000, "eur", idempotency_key=key)
    assert fake.intents == {}

    fake.create_intent("ord-1", 1000, "eur", idempotency_key=key)
    assert len(fake.intents) == 1
    assert fake.calls == [("create_intent", key)] * 3
