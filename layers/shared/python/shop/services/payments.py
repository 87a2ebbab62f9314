"""The payment rules (PAYMENTS=stripe): the webhook's rule, and the payment steps the table's stream drives.

Webhook (`apply_event`), in any order and any number of times: every effect is decided by the order's state, so
a duplicate, replayed or reordered delivery finds the order moved (or the payment recorded) and writes nothing:
- AUTHORISED on a PENDING_PAYMENT order: the intent is read back from the provider (an event is a notice, not a
  proof); if it holds the order's amount, CONFIRMED (payment AUTHORISED): one conditional UpdateItem.
- FAILED (one attempt failed: a declined card) on a PENDING_PAYMENT order: the attempt is recorded on the payment
  (`last_failure`); the order keeps waiting with its stock held, and the customer may try another card.
- CANCELED (the intent can no longer be charged): a PENDING_PAYMENT order becomes PAYMENT_FAILED (stock released);
  a confirmed order whose authorisation was not captured is recorded LAPSED (no money held); a dead order's
  payment is recorded CANCELED.
- REFUNDED (a refund made at the provider, its dashboard included): `refunded_cents` raised to what the provider
  reports, never above the capture.
- DISPUTE: the dispute recorded on the payment (a later report wins).
- AUTHORISED on an order already PAYMENT_FAILED, EXPIRED or CANCELLED whose payment is not captured: the
  intent is cancelled (the CANCEL step, recorded CANCELED); the order does not move.
- Anything else (ignored types, an unknown or archived order, an intent of another order): nothing is written.
The events these changes publish (OrderPaymentLapsed, OrderDisputed, OrderRefunded for a provider's refund) are
the stream processor's, from the order's change (shop.services.order_events).
Amounts never come from the event: the order's stored payment says what was authorised.

Stream steps (`handle`), each by its idempotency key and a condition on the order's payment:
- SHIPPED (CAPTURE=on_ship) or CONFIRMED (CAPTURE=on_confirm): capture (CAPTURE key); what the provider reports
  captured is recorded, or LAPSED when it reports the authorisation cancelled.
- CANCELLED, PAYMENT_FAILED, EXPIRED holding an uncaptured intent: cancel (CANCEL key), CANCELED recorded; a
  captured one (CAPTURE=on_confirm) is refunded instead.
- RETURNED: refund of the returned amount less what was refunded at the provider already (REFUND key, part = the
  order version), OrderRefunded published (the order events publish no OrderRefundDue for it).
Every step reads the order as it is now (not the record's image), so a replayed record finds its step recorded
and calls nothing; a crash between the provider's call and the record repeats the same keyed call, and a call
the provider refuses because it was made already (localstripe ignores keys) is recognised by reading the
intent. PaymentProviderUnavailable fails the record: the stream retries it, then it goes to the failure store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from shop import clock, errors
from shop.models import OrderStatus
from shop.models.events import DetailType, Event, OrderRefunded, Source
from shop.models.orders import RETURN_OUTCOMES, PaymentDispute, PaymentFailure, PaymentStatus, return_at
from shop.models.payments import (
    IntentStatus,
    PaymentEvent,
    PaymentEventKind,
    PaymentIntent,
    PaymentStep,
    Settled,
    idempotency_key,
)
from shop.services.archive_timing import archive_at

if TYPE_CHECKING:
    from shop.config import PaymentSettings, Settings
    from shop.models import Order
    from shop.models.orders import OrderPayment
    from shop.services.ports import OrderPayments, Payments, StreamChange

# How often a rule re-reads an order that changed under it before giving up (transient: retried).
SETTLE_ATTEMPTS = 5
SWEEP_PER_SHARD = 25  # orders a sweep takes from each status shard: the rest are the next sweep's
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
    LAPSED = "authorisation_lapsed"  # the capture found the authorisation cancelled by the provider
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
        *,
        payments: Callable[[], Payments | None],
        settings: Callable[[], Settings],
        payment_settings: Callable[[], PaymentSettings],
        now: Callable[[], datetime] = clock.now,
    ) -> None:
        """`payments` gives the provider at each call to it (None: PAYMENTS=none), so rules that never call it never
        build it; `settings` and `payment_settings` give the settings at each use (shop.config's): the archive
        delay, CAPTURE (on_confirm: capture at CONFIRMED, refund at CANCELLED) and the payment window new orders
        get (PAYMENT_WINDOW_MINUTES), which the sweep looks past."""
        self.store = store
        self._payments = payments
        self.settings = settings
        self.payment_settings = payment_settings
        self.now = now

    def _archive_at(self, status: OrderStatus, moment: datetime) -> int | None:
        settings = self.settings()
        return archive_at(status, clock.epoch(moment), settings.archive_after_days, settings.archive_grace_seconds)

    @property
    def payments(self) -> Payments:
        provider = self._payments()
        if provider is None:
            raise errors.PaymentMisconfigured("a payment step ran with PAYMENTS=none")
        return provider

    # -- the webhook's rule -----------------------------------------------------------------------

    def apply_event(self, event: PaymentEvent) -> None:
        if event.kind is PaymentEventKind.IGNORED:
            return
        order_id = event.order_id or self._order_of(event)
        if not order_id:
            return  # no order named: nothing to write
        if event.kind is PaymentEventKind.FAILED:
            self._attempt_failed(order_id, event)
        elif event.kind is PaymentEventKind.REFUNDED:
            self._refunded_at_provider(order_id, event)
        elif event.kind is PaymentEventKind.DISPUTE:
            self._disputed(order_id, event)
        else:
            self._settle_from(order_id, event)

    def _order_of(self, event: PaymentEvent) -> str | None:
        """A charge's or dispute's order, through its intent's metadata (they carry none of their own)."""
        if event.kind not in (PaymentEventKind.REFUNDED, PaymentEventKind.DISPUTE) or event.intent_id is None:
            return None
        try:
            return self.payments.get_intent(event.intent_id).order_id
        except errors.PaymentRejected:  # not an intent of this account
            return None

    def _payment_of(self, order_id: str, event: PaymentEvent) -> tuple[Order, OrderPayment] | None:
        order = self.store.current(order_id)
        payment = order.payment if order is not None else None
        if order is None or payment is None or not _same_intent(payment, event.intent_id):
            return None  # unknown, archived, or not this order's intent: nothing to write
        return order, payment

    def _settle_from(self, order_id: str, event: PaymentEvent) -> None:
        """AUTHORISED and CANCELED: the order's status decides."""
        authorised = event.kind is PaymentEventKind.AUTHORISED
        for _ in range(SETTLE_ATTEMPTS):
            found = self._payment_of(order_id, event)
            if found is None:
                return
            order, payment = found
            if order.status is OrderStatus.PENDING_PAYMENT:
                if authorised and not self._holds(order, payment, event.intent_id):
                    return  # the provider does not confirm it: the order keeps waiting
                moment = self.now()
                new_status = OrderStatus.CONFIRMED if authorised else OrderStatus.PAYMENT_FAILED
                settled = self.store.settle(
                    order,
                    new_status,
                    payment_status=PaymentStatus.AUTHORISED if authorised else PaymentStatus.CANCELED,
                    updated_at=clock.iso(moment),
                    archive_at=self._archive_at(new_status, moment),
                    release_stock=not authorised,
                    intent_id=event.intent_id,
                )
                if settled is Settled.STALE:
                    continue  # moved since it was read (another delivery, the window, the customer): read again
                return
            if authorised:
                if order.status in DEAD_STATUSES:
                    # Money held for an order that is over: released (recorded CANCELED: a redelivery calls nothing).
                    self._cancel_intent(order.order_id, payment)
                return  # already settled (a duplicate, a replay, a late event): the order's state says so
            if payment.status is PaymentStatus.AUTHORISED and order.status not in DEAD_STATUSES:
                # The provider let the authorisation go before it was captured: no money is held for this order.
                self.store.record_payment(order_id, expected=PaymentStatus.AUTHORISED, status=PaymentStatus.LAPSED)
            elif order.status in DEAD_STATUSES and payment.status in CANCELLABLE:
                self.store.record_payment(order_id, expected=payment.status, status=PaymentStatus.CANCELED)
            return
        raise errors.ServiceUnavailable("the order keeps changing, retry later")

    def _holds(self, order: Order, payment: OrderPayment, intent_id: str | None) -> bool:
        """Whether the provider's own record of the intent holds the order's amount for it."""
        intent = self.payments.get_intent(payment.intent_id or intent_id or "")
        return authorises(intent, order.order_id, payment.amount_cents, payment.currency)

    def _attempt_failed(self, order_id: str, event: PaymentEvent) -> None:
        failure = PaymentFailure(
            code=event.failure_code, message=event.failure_message, at=clock.iso_from_epoch(event.created)
        )
        self.store.record_failed_attempt(order_id, intent_id=event.intent_id, failure=failure)

    def _refunded_at_provider(self, order_id: str, event: PaymentEvent) -> None:
        found = self._payment_of(order_id, event)
        if found is None or event.amount_refunded_cents is None:
            return
        _, payment = found
        if payment.status is PaymentStatus.AUTHORISED:
            # The capture is not recorded yet (its step is being retried): the provider delivers the event again.
            raise errors.ServiceUnavailable("the order's capture is not recorded yet, retry later")
        if payment.status is not PaymentStatus.CAPTURED:
            # Nothing was captured and nothing will be (CANCELED, LAPSED): Stripe API versions before 2025-03-31
            # report a released authorisation as a refund of the whole charge. Nothing to record; answered 200.
            return
        refunded = min(event.amount_refunded_cents, payment.captured_cents)
        if refunded > payment.refunded_cents:
            self.store.record_provider_refunds(order_id, refunded_cents=refunded)

    def _disputed(self, order_id: str, event: PaymentEvent) -> None:
        if event.dispute_id is None or event.dispute_status is None or self._payment_of(order_id, event) is None:
            return
        dispute = PaymentDispute(
            dispute_id=event.dispute_id,
            status=event.dispute_status,
            reason=event.dispute_reason,
            amount_cents=event.dispute_amount_cents or 0,
            updated_at=clock.iso_from_epoch(event.created),
        )
        self.store.record_dispute(order_id, dispute)

    # -- the stream's steps -----------------------------------------------------------------------

    def handle(self, record: StreamChange) -> StepOutcome:
        if record.entity != "ORDER" or record.event_name != "MODIFY" or record.old_status == record.new_status:
            return SKIPPED_STEP
        image = record.new_order()
        if image.payment is None:
            return SKIPPED_STEP
        # SHIPPED captures in either mode: an order confirmed before a switch to CAPTURE=on_confirm is captured then.
        if image.status is OrderStatus.SHIPPED or (
            image.status is OrderStatus.CONFIRMED and self.payment_settings().captures_on_confirm
        ):
            return self.capture(image.order_id)
        if image.status in DEAD_STATUSES:
            return self.cancel(image.order_id, version=image.version, at=image.updated_at)
        if image.status in RETURN_OUTCOMES:
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
            return SKIPPED_STEP  # nothing held (LAPSED: shipped knowingly without it), or not authorised
        try:
            intent = self.payments.capture(
                payment.intent_id, idempotency_key=idempotency_key(order_id, PaymentStep.CAPTURE)
            )
        except errors.PaymentRejected:
            # Captured by an earlier attempt whose record was lost (a provider that ignores keys refuses the
            # second capture instead of answering the first one again), or cancelled by the provider: the
            # intent says which.
            intent = self.payments.get_intent(payment.intent_id)
        if intent.status is IntentStatus.CANCELED:
            self.store.record_payment(order_id, expected=PaymentStatus.AUTHORISED, status=PaymentStatus.LAPSED)
            return StepOutcome(StepAction.LAPSED, order_id)
        if intent.status is not IntentStatus.SUCCEEDED:
            raise errors.PaymentRejected("the provider did not capture the payment", {"status": intent.status.value})
        # What the provider reports taken, never more than the order's amount.
        self.store.record_payment(
            order_id,
            expected=PaymentStatus.AUTHORISED,
            status=PaymentStatus.CAPTURED,
            captured_cents=min(intent.amount_received_cents, payment.amount_cents),
        )
        return StepOutcome(StepAction.CAPTURED, order_id)

    def cancel(self, order_id: str, *, version: int = 0, at: str = "") -> StepOutcome:
        order = self.store.current(order_id)
        payment = order.payment if order is not None else None
        if order is None or payment is None:
            return SKIPPED_STEP
        if order.status not in DEAD_STATUSES:
            return SKIPPED_STEP
        if payment.status is PaymentStatus.CANCELED:
            return StepOutcome(StepAction.ALREADY_DONE, order_id)
        if payment.status is PaymentStatus.CAPTURED:  # captured at confirmation: the money goes back
            return self.refund(order_id, version=version, returned_at=at)
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
        """The money of the return the order's `version` accepted (or of the whole order: a cancel after a capture
        at confirmation, a return accepted before returns per line), less what was refunded at the provider already
        (its dashboard): the returns so far are due, never more than was captured."""
        order = self.store.current(order_id)
        payment = order.payment if order is not None else None
        if order is None or payment is None or payment.intent_id is None:
            return SKIPPED_STEP
        found = return_at(order.returns, version)
        if found is None and order.status is OrderStatus.PARTIALLY_RETURNED:
            return SKIPPED_STEP  # a rejected return: nothing is due
        recorded_before = found[1].refunded_cents if found is not None else payment.return_refunded_cents
        if recorded_before is not None:  # recorded: a replay publishes the event again (deduped by id)
            events = _refund_events(order, version, recorded_before, payment.currency, returned_at)
            return StepOutcome(StepAction.ALREADY_DONE, order_id, events)
        if payment.status in (PaymentStatus.LAPSED, PaymentStatus.CANCELED):
            return SKIPPED_STEP  # nothing was taken
        if payment.status is not PaymentStatus.CAPTURED:
            # The capture is not recorded yet (retried, or in the failure store): refund after it.
            raise errors.ServiceUnavailable("the order's capture is not recorded yet, retry later")
        # The returns up to this one (their refunds sum to the total when every unit is back), or the whole total;
        # capped at what was taken.
        index = found[0] if found is not None else None
        owed = order.total_cents if index is None else sum(r.refund_cents for r in order.returns[: index + 1])
        due = min(owed, payment.captured_cents)
        # Everything refunded on the intent: the dashboard's refunds, and this step's own if an earlier attempt
        # made it and its record was lost.
        made = sum(refund.amount_cents for refund in self.payments.refunds(payment.intent_id))
        now = max(0, due - made)
        if now > 0:
            self.payments.refund(
                payment.intent_id, now, idempotency_key=idempotency_key(order_id, PaymentStep.REFUND, str(version))
            )
        refunded = min(made + now, payment.captured_cents)
        # What the return refunded: everything refunded at the provider that the order's record does not hold yet.
        # Not `now` alone: after an attempt that refunded and died before its record, the retry's `now` is 0, and
        # the return would be recorded as refunding nothing, its OrderRefunded never published.
        returned = max(0, refunded - payment.refunded_cents)
        recorded = self.store.record_payment(
            order_id,
            expected=PaymentStatus.CAPTURED,
            refunded_cents=refunded,
            at_most_refunded_cents=refunded,
            return_refunded_cents=returned,
            return_index=index,
        ) or self.store.record_payment(  # a provider's refund recorded meanwhile holds a higher total: keep it
            order_id, expected=PaymentStatus.CAPTURED, return_refunded_cents=returned, return_index=index
        )
        if not recorded:
            return StepOutcome(StepAction.ALREADY_DONE, order_id)
        events = _refund_events(order, version, returned, payment.currency, returned_at)
        return StepOutcome(StepAction.REFUNDED, order_id, events)

    def sweep(self) -> list[StepOutcome]:
        """The windows that closed on orders still PENDING_PAYMENT, each expired (`expire`: the intent read first).
        The only way a window closes: run on a schedule (every minute deployed), so an unpaid order expires within
        its window and one interval. Idempotent, so two sweeps racing change each order once. An order whose
        provider call fails is left to the next sweep; the others go on, then the failure is raised (the run is
        counted failed)."""
        moment = self.now()
        paying = self.payment_settings()
        due_by = clock.epoch(moment)
        placed_before = clock.iso(moment - timedelta(seconds=paying.payment_window_seconds))
        outcomes: list[StepOutcome] = []
        failed: list[str] = []
        for order_id, closes_at in self.store.overdue(placed_before, per_shard=SWEEP_PER_SHARD):
            if closes_at is not None and closes_at > due_by:
                continue  # a longer window than today's setting: not due yet
            try:
                outcomes.append(self.expire(order_id))
            except (errors.PaymentProviderUnavailable, errors.ServiceUnavailable):
                failed.append(order_id)
        if failed:
            raise errors.ServiceUnavailable(f"the sweep left {len(failed)} orders to the next run", {"orders": failed})
        return outcomes

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


def authorises(intent: PaymentIntent, order_id: str, amount_cents: int, currency: str) -> bool:
    """Whether the provider's intent holds `amount_cents` for this order: authorised (or already captured) for at
    least that much, in the order's currency, with the order's id in its metadata."""
    held = (
        intent.amount_capturable_cents
        if intent.status is IntentStatus.REQUIRES_CAPTURE
        else intent.amount_received_cents
        if intent.status is IntentStatus.SUCCEEDED
        else 0
    )
    return intent.order_id == order_id and intent.currency == currency and held >= amount_cents > 0


def _refund_events(order: Order, version: int, amount_cents: int, currency: str, at: str) -> tuple[Event, ...]:
    return (refunded_event(order, version, amount_cents, currency, at),) if amount_cents > 0 else ()


def _same_intent(payment: OrderPayment, intent_id: str | None) -> bool:
    """The event's intent is the order's (or the order's intent is not written yet: a half-done checkout, whose
    intent was created for this order, as its metadata says)."""
    return payment.intent_id is None or intent_id is None or payment.intent_id == intent_id
