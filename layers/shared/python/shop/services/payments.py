"""The payment rules (PAYMENTS=stripe): the webhook's rule, and the payment steps the table's stream drives.

Webhook (`apply_event`), in any order and any number of times: every effect is decided by the order's state, so
a duplicate, replayed or reordered delivery finds the order moved and writes nothing (no per-event mark):
- AUTHORISED on a PENDING_PAYMENT order: CONFIRMED (payment AUTHORISED): one conditional UpdateItem.
- FAILED on a PENDING_PAYMENT order: PAYMENT_FAILED (payment FAILED, stock released): one transaction; the
  intent is then cancelled (the CANCEL step), so a later authorisation cannot hold money for a dead order.
- AUTHORISED on an order already PAYMENT_FAILED, EXPIRED or CANCELLED whose payment is not captured: the
  intent is cancelled (the same CANCEL step, recorded CANCELED: a second delivery finds it recorded); the order
  does not move.
- Anything else (CANCELED and ignored types, an order in another status, an unknown or archived order, an
  intent of another order or of no order): nothing is written.
The PAYMENT_DUE window is left to its TTL: its removal finds the order no longer PENDING_PAYMENT and does nothing.
Amounts never come from the event: the order's stored payment says what was authorised.

Stream steps (`handle`), each by its idempotency key and a condition on the order's payment:
- SHIPPED: capture (CAPTURE key), captured_cents recorded.
- CANCELLED, PAYMENT_FAILED, EXPIRED holding an uncaptured intent: cancel (CANCEL key), CANCELED recorded.
- RETURNED: refund of the returned amount from the stored order (REFUND key, part = the order version),
  refunded_cents recorded, OrderRefunded published (the order events publish no OrderRefundDue for it).
- The PAYMENT_DUE item's TTL removal: the window closed. Still PENDING_PAYMENT: the intent is read;
  `requires_capture` (the authorisation's event was lost) confirms the order, anything else expires it
  (EXPIRED, stock released; OrderExpired published by the order events) and cancels the intent.
Every step reads the order as it is now (not the record's image), so a replayed record finds its step recorded
and calls nothing; a crash between the provider's call and the record repeats the same keyed call, and a call
the provider refuses because it was made already (localstripe ignores keys) is recognised by reading the
intent. PaymentProviderUnavailable fails the record: the stream retries it, then it goes to the failure store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from shop import clock, errors
from shop.models import OrderStatus
from shop.models.events import DetailType, Event, OrderRefunded, Source
from shop.models.orders import PaymentStatus
from shop.models.payments import IntentStatus, PaymentEvent, PaymentEventKind, PaymentStep, Settled, idempotency_key
from shop.services.archive_timing import archive_at

if TYPE_CHECKING:
    from shop.models import Order
    from shop.models.orders import OrderPayment
    from shop.services.ports import OrderPayments, Payments, StreamChange

# How often a rule re-reads an order that changed under it before giving up (transient: retried).
SETTLE_ATTEMPTS = 5
DEAD_STATUSES = frozenset({OrderStatus.PAYMENT_FAILED, OrderStatus.EXPIRED, OrderStatus.CANCELLED})
# Payment states whose intent still holds, or may still hold, the customer's money: the CANCEL step's.
CANCELLABLE = frozenset({PaymentStatus.REQUIRES_PAYMENT, PaymentStatus.AUTHORISED, PaymentStatus.FAILED})
AUTHORISED_INTENTS = frozenset({IntentStatus.REQUIRES_CAPTURE, IntentStatus.SUCCEEDED})


class StepAction(StrEnum):
    SKIPPED = "skipped"  # not a payment step's record, or nothing to do
    CAPTURED = "captured"
    CANCELLED = "intent_cancelled"
    REFUNDED = "refunded"
    CONFIRMED = "confirmed"  # the window closed on an authorised intent whose event was lost
    EXPIRED = "expired"
    ALREADY_DONE = "already_done"  # a replay: the step is recorded


@dataclass(frozen=True)
class StepOutcome:
    action: StepAction
    order_id: str | None = None
    events: tuple[Event, ...] = field(default=())


SKIPPED_STEP = StepOutcome(StepAction.SKIPPED)


def refunded_event(order: Order, version: int, amount_cents: int, currency: str, at: str) -> Event:
    detail = OrderRefunded(
        id=f"{order.order_id}:{version}",
        order_id=order.order_id,
        customer_id=order.customer_id,
        amount_cents=amount_cents,
        currency=currency,
        returned_at=at,
    )
    return Event(source=Source.ORDERS, detail_type=DetailType.ORDER_REFUNDED, detail=dict(detail))


class PaymentService:
    def __init__(
        self,
        store: OrderPayments,
        payments: Payments | None,
        *,
        archive_after_days: Callable[[], int],
        archive_grace_seconds: Callable[[], int],
        now: Callable[[], datetime] = clock.now,
    ) -> None:
        self.store = store
        self._payments = payments
        self.archive_after_days = archive_after_days
        self.archive_grace_seconds = archive_grace_seconds
        self.now = now

    def _archive_at(self, status: OrderStatus, moment: datetime) -> int | None:
        return archive_at(status, clock.epoch(moment), self.archive_after_days(), self.archive_grace_seconds())

    @property
    def payments(self) -> Payments:
        if self._payments is None:
            raise errors.PaymentMisconfigured("a payment step ran with PAYMENTS=none")
        return self._payments

    # -- the webhook's rule -----------------------------------------------------------------------

    def apply_event(self, event: PaymentEvent) -> None:
        if event.kind not in (PaymentEventKind.AUTHORISED, PaymentEventKind.FAILED) or not event.order_id:
            return  # changes no order: nothing to write
        authorised = event.kind is PaymentEventKind.AUTHORISED
        for _ in range(SETTLE_ATTEMPTS):
            order = self.store.current(event.order_id)
            payment = order.payment if order is not None else None
            if order is None or payment is None or not _same_intent(payment, event.intent_id):
                return  # unknown, archived, or not this order's intent: nothing to write
            if order.status is OrderStatus.PENDING_PAYMENT:
                moment = self.now()
                new_status = OrderStatus.CONFIRMED if authorised else OrderStatus.PAYMENT_FAILED
                settled = self.store.settle(
                    order,
                    new_status,
                    payment_status=PaymentStatus.AUTHORISED if authorised else PaymentStatus.FAILED,
                    updated_at=clock.iso(moment),
                    archive_at=self._archive_at(new_status, moment),
                    release_stock=not authorised,
                    intent_id=event.intent_id,
                )
                if settled is Settled.STALE:
                    continue  # moved since it was read (another delivery, the window, the customer): read again
                return
            if authorised and order.status in DEAD_STATUSES:
                # Money held for an order that is over: released (recorded CANCELED, so a redelivery calls nothing).
                self._cancel_intent(order.order_id, payment)
            return  # already settled (a duplicate, a replay, a late failure): the order's state says so
        raise errors.ServiceUnavailable("the order keeps changing, retry later")

    # -- the stream's steps -----------------------------------------------------------------------

    def handle(self, record: StreamChange) -> StepOutcome:
        if record.entity == "ORDER_PAYMENT_DUE":
            if record.event_name == "REMOVE" and record.removed_by_ttl:
                return self.expire(record.entity_id)
            return SKIPPED_STEP
        if record.entity != "ORDER" or record.event_name != "MODIFY" or record.old_status == record.new_status:
            return SKIPPED_STEP
        image = record.new_order()
        if image.payment is None:
            return SKIPPED_STEP
        if image.status is OrderStatus.SHIPPED:
            return self.capture(image.order_id)
        if image.status in DEAD_STATUSES:
            return self.cancel(image.order_id)
        if image.status is OrderStatus.RETURNED:
            return self.refund(image.order_id, version=image.version, returned_at=image.updated_at)
        return SKIPPED_STEP

    def capture(self, order_id: str) -> StepOutcome:
        order = self.store.current(order_id)
        payment = order.payment if order is not None else None
        if payment is None or payment.intent_id is None:
            return SKIPPED_STEP
        if payment.status is PaymentStatus.CAPTURED:
            return StepOutcome(StepAction.ALREADY_DONE, order_id)
        if payment.status is not PaymentStatus.AUTHORISED:
            return SKIPPED_STEP
        try:
            self.payments.capture(payment.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CAPTURE))
        except errors.PaymentRejected:
            # Captured by an earlier attempt whose record was lost (a provider that ignores keys refuses the
            # second capture instead of answering the first one again): the intent says so.
            if self.payments.get_intent(payment.intent_id).status is not IntentStatus.SUCCEEDED:
                raise
        self.store.record_payment(
            order_id,
            expected=PaymentStatus.AUTHORISED,
            status=PaymentStatus.CAPTURED,
            captured_cents=payment.amount_cents,
        )
        return StepOutcome(StepAction.CAPTURED, order_id)

    def cancel(self, order_id: str) -> StepOutcome:
        order = self.store.current(order_id)
        payment = order.payment if order is not None else None
        if order is None or payment is None:
            return SKIPPED_STEP
        if order.status not in DEAD_STATUSES:
            return SKIPPED_STEP
        if payment.status is PaymentStatus.CANCELED:
            return StepOutcome(StepAction.ALREADY_DONE, order_id)
        return StepOutcome(StepAction.CANCELLED, order_id) if self._cancel_intent(order_id, payment) else SKIPPED_STEP

    def _cancel_intent(self, order_id: str, payment: OrderPayment) -> bool:
        """The CANCEL step on an order's intent, recorded as CANCELED; False when there is nothing to cancel."""
        if payment.intent_id is None or payment.status not in CANCELLABLE:
            return False
        try:
            self.payments.cancel(payment.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CANCEL))
        except errors.PaymentRejected:
            # Cancelled already (an earlier attempt whose record was lost), or captured: that needs a refund by
            # a person, so the record fails and reaches the failure store and its alarm.
            if self.payments.get_intent(payment.intent_id).status is not IntentStatus.CANCELED:
                raise
        self.store.record_payment(order_id, expected=payment.status, status=PaymentStatus.CANCELED)
        return True

    def refund(self, order_id: str, *, version: int, returned_at: str) -> StepOutcome:
        order = self.store.current(order_id)
        payment = order.payment if order is not None else None
        if order is None or payment is None or payment.intent_id is None:
            return SKIPPED_STEP
        if payment.refunded_cents > 0:  # recorded: a replay publishes the event again (consumers dedupe by id)
            event = refunded_event(order, version, payment.refunded_cents, payment.currency, returned_at)
            return StepOutcome(StepAction.ALREADY_DONE, order_id, (event,))
        if payment.status is not PaymentStatus.CAPTURED:
            # The capture at SHIPPED is not recorded yet (retried, or in the failure store): refund after it.
            raise errors.ServiceUnavailable("the order's capture is not recorded yet, retry later")
        # Every line of a return is returned (shop.services.orders): the order's total, capped at what was taken.
        amount = min(order.total_cents, payment.captured_cents)
        if amount <= 0:
            return SKIPPED_STEP
        made = sum(refund.amount_cents for refund in self.payments.refunds(payment.intent_id))
        if made < amount:  # else an earlier attempt refunded it and its record was lost: record only
            self.payments.refund(
                payment.intent_id,
                amount - made,
                idempotency_key=idempotency_key(order_id, PaymentStep.REFUND, str(version)),
            )
        self.store.record_payment(
            order_id,
            expected=PaymentStatus.CAPTURED,
            refunded_cents=amount,
            expected_refunded_cents=0,
        )
        event = refunded_event(order, version, amount, payment.currency, returned_at)
        return StepOutcome(StepAction.REFUNDED, order_id, (event,))

    def expire(self, order_id: str) -> StepOutcome:
        for attempt in range(SETTLE_ATTEMPTS):
            # Every paid order's window closes by TTL after its webhook settled it, so the common case is a skip:
            # the first look is eventually consistent (0.5 RRU). A stale read can only show PENDING_PAYMENT (an
            # order never returns to it), and settling is conditional on the status and version: safe.
            order = self.store.current(order_id, consistent=attempt > 0)
            if order is None and attempt == 0:  # absent at a first look (archived since): make sure
                order = self.store.current(order_id)
            if order is None or order.status is not OrderStatus.PENDING_PAYMENT:
                return SKIPPED_STEP  # settled before the window closed (or archived since)
            payment = order.payment
            authorised = False
            if payment is not None and payment.intent_id is not None:
                intent = self.payments.get_intent(payment.intent_id)
                if intent.status is IntentStatus.PROCESSING:
                    raise errors.ServiceUnavailable("the payment is being processed, retry later")
                authorised = intent.status in AUTHORISED_INTENTS
            moment = self.now()
            new_status = OrderStatus.CONFIRMED if authorised else OrderStatus.EXPIRED
            settled = self.store.settle(
                order,
                new_status,
                payment_status=PaymentStatus.AUTHORISED
                if authorised
                else (payment.status if payment is not None else PaymentStatus.REQUIRES_PAYMENT),
                updated_at=clock.iso(moment),
                archive_at=self._archive_at(new_status, moment),
                release_stock=not authorised,
            )
            if settled is Settled.STALE:
                continue
            if authorised:
                return StepOutcome(StepAction.CONFIRMED, order_id)
            # The order is over first, then its intent is cancelled: an authorisation arriving in between finds
            # the order EXPIRED and cancels the intent itself (apply_event). The EXPIRED record's CANCEL step
            # retries this one if it fails here.
            if payment is not None:
                self._cancel_intent(order_id, payment)
            return StepOutcome(StepAction.EXPIRED, order_id)
        raise errors.ServiceUnavailable("the order keeps changing, retry later")


def _same_intent(payment: OrderPayment, intent_id: str | None) -> bool:
    """The event's intent is the order's (or the order's intent is not written yet: a half-done checkout, whose
    intent was created for this order, as its metadata says)."""
    return payment.intent_id is None or intent_id is None or payment.intent_id == intent_id
