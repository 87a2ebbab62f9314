"""A payment as the shop sees it: the provider's intent for one order, its refunds, its webhook events.

Amounts are integer cents in the order's currency (ISO 4217, lower case as the provider spells it). Every call
that moves money carries an idempotency key derived from the order and the step (`idempotency_key`), so a
retried step is the same request to the provider and, on the shop's side, the same conditional write.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from shop.limits import MAX_PAYMENT_EVENT_ID_LENGTH
from shop.models.common import Model


class PaymentStep(StrEnum):
    """The steps of an order's payment; each is taken at most once per order (its idempotency key)."""

    AUTHORISE = "authorise"  # the intent is created (the customer's card is authorised in the browser)
    CAPTURE = "capture"  # at SHIPPED
    CANCEL = "cancel"  # an unpaid or uncaptured order cancelled, failed or expired
    REFUND = "refund"  # at RETURNED: the returned lines' amount


class IntentStatus(StrEnum):
    """Stripe's PaymentIntent statuses."""

    REQUIRES_PAYMENT_METHOD = "requires_payment_method"
    REQUIRES_CONFIRMATION = "requires_confirmation"
    REQUIRES_ACTION = "requires_action"
    PROCESSING = "processing"
    REQUIRES_CAPTURE = "requires_capture"
    CANCELED = "canceled"
    SUCCEEDED = "succeeded"


class PaymentIntent(Model):
    intent_id: str
    client_secret: str
    status: IntentStatus
    amount_cents: int = Field(ge=0)
    currency: str
    order_id: str | None = None  # the intent's metadata: which order it pays


class Refund(Model):
    refund_id: str
    intent_id: str
    amount_cents: int = Field(gt=0)
    status: str


class PaymentEventKind(StrEnum):
    """What a provider event means to an order; decided from the event's type alone, never from the intent's
    status in the event (the provider sends the intent as it is when the event leaves, not when it happened)."""

    AUTHORISED = "authorised"  # payment_intent.amount_capturable_updated or payment_intent.succeeded
    FAILED = "failed"  # payment_intent.payment_failed
    CANCELED = "canceled"  # payment_intent.canceled
    IGNORED = "ignored"  # every other type: answered 200, changes nothing


EVENT_KINDS: dict[str, PaymentEventKind] = {
    "payment_intent.amount_capturable_updated": PaymentEventKind.AUTHORISED,
    "payment_intent.succeeded": PaymentEventKind.AUTHORISED,
    "payment_intent.payment_failed": PaymentEventKind.FAILED,
    "payment_intent.canceled": PaymentEventKind.CANCELED,
}


class PaymentEvent(Model):
    """A verified webhook event, reduced to what the order rules need."""

    event_id: str = Field(min_length=1, max_length=MAX_PAYMENT_EVENT_ID_LENGTH)
    event_type: str
    kind: PaymentEventKind
    created: int  # epoch seconds, the provider's clock
    intent_id: str | None = None  # None for events about other objects
    order_id: str | None = None  # from the intent's metadata; None when the intent is not the shop's


class Settled(StrEnum):
    """What became of a payment's status change of an order (shop.repository.order_payments.settle)."""

    DONE = "done"  # the order moved
    STALE = "stale"  # the order is no longer as it was read (or holds another intent): nothing written, read again


def event_kind(event_type: str) -> PaymentEventKind:
    return EVENT_KINDS.get(event_type, PaymentEventKind.IGNORED)


def idempotency_key(order_id: str, step: PaymentStep, part: str | None = None) -> str:
    """The provider's idempotency key of one step of one order's payment: the same on every retry of the step.

    `part` tells apart steps that may legitimately happen more than once for one order (a second, partial
    refund); Stripe keeps a key 24 hours and accepts up to 255 characters.
    """
    key = f"shop-order-{order_id}-{step.value}"
    return f"{key}-{part}" if part else key
