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

MAX_EPOCH_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z: a later time is no provider's clock


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
    # What the card holds for a capture (requires_capture) and what was taken (succeeded): the provider's own
    # figures where it reports them, else the amount for the status that implies it.
    amount_capturable_cents: int = Field(default=0, ge=0)
    amount_received_cents: int = Field(default=0, ge=0)


class Refund(Model):
    refund_id: str
    intent_id: str
    amount_cents: int = Field(gt=0)
    status: str


class PaymentEventKind(StrEnum):
    """What a provider event means to an order; decided from the event's type alone, never from the intent's
    status in the event (the provider sends the intent as it is when the event leaves, not when it happened)."""

    AUTHORISED = "authorised"  # payment_intent.amount_capturable_updated or payment_intent.succeeded
    FAILED = "failed"  # payment_intent.payment_failed: one attempt failed; the intent can be confirmed again
    CANCELED = "canceled"  # payment_intent.canceled: nothing can be charged on the intent any more
    REFUNDED = "refunded"  # charge.refunded: a refund made at the provider (its dashboard, or the shop's own)
    DISPUTE = "dispute"  # charge.dispute.created, .updated, .closed
    IGNORED = "ignored"  # every other type: answered 200, changes nothing


EVENT_KINDS: dict[str, PaymentEventKind] = {
    "payment_intent.amount_capturable_updated": PaymentEventKind.AUTHORISED,
    "payment_intent.succeeded": PaymentEventKind.AUTHORISED,
    "payment_intent.payment_failed": PaymentEventKind.FAILED,
    "payment_intent.canceled": PaymentEventKind.CANCELED,
    "charge.refunded": PaymentEventKind.REFUNDED,
    "charge.dispute.created": PaymentEventKind.DISPUTE,
    "charge.dispute.updated": PaymentEventKind.DISPUTE,
    "charge.dispute.closed": PaymentEventKind.DISPUTE,
}


class PaymentEvent(Model):
    """A verified webhook event, reduced to what the order rules need."""

    event_id: str = Field(min_length=1, max_length=MAX_PAYMENT_EVENT_ID_LENGTH)
    event_type: str
    kind: PaymentEventKind
    created: int = Field(ge=0, le=MAX_EPOCH_SECONDS)  # epoch seconds, the provider's clock
    intent_id: str | None = None  # the payment intent the event is about (a charge's or dispute's own)
    order_id: str | None = None  # from the object's metadata; None when it names none (or not one of the shop's)
    failure_code: str | None = None  # FAILED: the attempt's decline or error code
    failure_message: str | None = None
    amount_refunded_cents: int | None = None  # REFUNDED: everything refunded on the charge so far
    dispute_id: str | None = None  # DISPUTE: the dispute as the provider reports it now
    dispute_status: str | None = None
    dispute_reason: str | None = None
    dispute_amount_cents: int | None = None


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
