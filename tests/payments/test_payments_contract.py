"""The Payments port's contract, on the in-memory fake and on the Stripe adapter against localstripe.

What localstripe does differently from Stripe (idempotency keys ignored, refunds past the captured amount
accepted) is pinned in test_stripe_adapter.py; the fake keeps Stripe's behaviour there (test_fake_payments.py).
"""

from __future__ import annotations

import itertools

import pytest

from shop import errors
from shop.models.payments import IntentStatus, PaymentStep, idempotency_key

_orders = itertools.count()


def _order_id() -> str:
    return f"ord-contract-{next(_orders)}"


def _authorised(payments, amount_cents=2500):
    order_id = _order_id()
    intent = payments.port.create_intent(
        order_id, amount_cents, "eur", idempotency_key=idempotency_key(order_id, PaymentStep.AUTHORISE)
    )
    payments.authorise(intent.intent_id, "pm_card_visa")
    return order_id, intent


def test_an_intent_is_created_for_manual_capture_with_the_order_in_its_metadata(payments):
    order_id = _order_id()
    intent = payments.port.create_intent(
        order_id, 2500, "eur", idempotency_key=idempotency_key(order_id, PaymentStep.AUTHORISE)
    )
    assert intent.status is IntentStatus.REQUIRES_PAYMENT_METHOD
    assert (intent.amount_cents, intent.currency, intent.order_id) == (2500, "eur", order_id)
    assert intent.client_secret.startswith(intent.intent_id)
    assert payments.port.get_intent(intent.intent_id) == intent


def test_a_card_that_authorises_leaves_the_amount_to_capture_and_capture_takes_it(payments):
    order_id, intent = _authorised(payments)
    assert payments.port.get_intent(intent.intent_id).status is IntentStatus.REQUIRES_CAPTURE

    captured = payments.port.capture(intent.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CAPTURE))

    assert (captured.status, captured.amount_cents) == (IntentStatus.SUCCEEDED, 2500)


def test_a_captured_intent_is_refunded_in_parts(payments):
    order_id, intent = _authorised(payments)
    payments.port.capture(intent.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CAPTURE))

    first = payments.port.refund(
        intent.intent_id, 1000, idempotency_key=idempotency_key(order_id, PaymentStep.REFUND, "1")
    )
    second = payments.port.refund(
        intent.intent_id, 1500, idempotency_key=idempotency_key(order_id, PaymentStep.REFUND, "2")
    )

    assert [(r.intent_id, r.amount_cents, r.status) for r in (first, second)] == [
        (intent.intent_id, 1000, "succeeded"),
        (intent.intent_id, 1500, "succeeded"),
    ]
    assert first.refund_id != second.refund_id


def test_an_uncaptured_intent_is_cancelled_and_a_captured_one_cannot_be(payments):
    order_id, authorised = _authorised(payments)
    cancelled = payments.port.cancel(
        authorised.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CANCEL)
    )
    assert cancelled.status is IntentStatus.CANCELED

    other_order, captured = _authorised(payments)
    payments.port.capture(captured.intent_id, idempotency_key=idempotency_key(other_order, PaymentStep.CAPTURE))
    with pytest.raises(errors.PaymentRejected):
        payments.port.cancel(captured.intent_id, idempotency_key=idempotency_key(other_order, PaymentStep.CANCEL))
    assert payments.port.get_intent(captured.intent_id).status is IntentStatus.SUCCEEDED


def test_an_unpaid_intent_is_cancelled(payments):
    order_id = _order_id()
    intent = payments.port.create_intent(
        order_id, 700, "eur", idempotency_key=idempotency_key(order_id, PaymentStep.AUTHORISE)
    )
    cancelled = payments.port.cancel(intent.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CANCEL))
    assert cancelled.status is IntentStatus.CANCELED


def test_a_declined_card_is_a_typed_error_and_leaves_the_intent_waiting_for_another_card(payments):
    order_id = _order_id()
    intent = payments.port.create_intent(
        order_id, 2500, "eur", idempotency_key=idempotency_key(order_id, PaymentStep.AUTHORISE)
    )

    with pytest.raises(errors.PaymentDeclined) as declined:
        payments.authorise(intent.intent_id, "pm_card_chargeCustomerFail")

    assert declined.value.details == {"decline_code": "card_declined"}
    assert payments.port.get_intent(intent.intent_id).status is IntentStatus.REQUIRES_PAYMENT_METHOD


def test_an_unknown_intent_is_rejected(payments):
    with pytest.raises(errors.PaymentRejected):
        payments.port.get_intent("pi_unknown")
    with pytest.raises(errors.PaymentRejected):
        payments.port.capture("pi_unknown", idempotency_key="shop-order-x-capture")
