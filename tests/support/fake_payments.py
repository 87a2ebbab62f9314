"""The Payments port (shop.services.ports.Payments) in memory: the fast lane's stand-in for Stripe.

It keeps what the rules rely on, as Stripe does: manual capture, the intent's state machine (capture only
while `requires_capture`, no cancel once captured, refunds up to what was captured), the typed errors, and
idempotency keys (the same key and parameters: the first answer again, no second effect; the same key with
other parameters: PaymentRejected). localstripe ignores keys; this fake does not, so rule tests can tell a
retried step from a second one. `authorise` plays the browser's confirmation with a test card, and
`fail_next` makes the next calls fail as a provider outage does. tests/payments/test_payments_contract.py
runs the same scenarios on this and on the Stripe adapter against localstripe.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from shop import errors
from shop.models.payments import IntentStatus, PaymentIntent, Refund

DECLINING_CARDS = frozenset({"pm_card_chargeCustomerFail"})
_CANCELLABLE = {
    IntentStatus.REQUIRES_PAYMENT_METHOD,
    IntentStatus.REQUIRES_CONFIRMATION,
    IntentStatus.REQUIRES_ACTION,
    IntentStatus.REQUIRES_CAPTURE,
}


@dataclass
class _Intent:
    intent: PaymentIntent
    captured_cents: int = 0
    refunded_cents: int = 0


@dataclass
class FakePayments:
    intents: dict[str, _Intent] = field(default_factory=dict)
    refunds_made: dict[str, Refund] = field(default_factory=dict)  # every refund, by id
    calls: list[tuple[str, str]] = field(default_factory=list)  # (operation, idempotency key) of each call
    _answers: dict[str, tuple[tuple[Any, ...], Any]] = field(default_factory=dict)
    _failures: list[errors.DomainError] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    # -- test controls ----------------------------------------------------------------------------
    def fail_next(self, times: int = 1, error: errors.DomainError | None = None) -> None:
        """The next `times` calls fail before reaching the provider's state (an outage)."""
        self._failures += [error or errors.PaymentProviderUnavailable("payment provider unavailable")] * times

    def authorise(self, intent_id: str, payment_method: str = "pm_card_visa") -> PaymentIntent:
        """What the customer's browser does with the client secret: attach a card and confirm."""
        record = self._record(intent_id)
        if record.intent.status not in {IntentStatus.REQUIRES_PAYMENT_METHOD, IntentStatus.REQUIRES_CONFIRMATION}:
            raise errors.PaymentRejected("the intent cannot be confirmed now")
        if payment_method in DECLINING_CARDS:
            self._set(record, IntentStatus.REQUIRES_PAYMENT_METHOD)
            raise errors.PaymentDeclined("the card was declined", {"decline_code": "card_declined"})
        return self._set(record, IntentStatus.REQUIRES_CAPTURE)

    def lapse(self, intent_id: str) -> PaymentIntent:
        """What the provider does to an authorisation left uncaptured too long (Stripe: about 7 days)."""
        record = self._record(intent_id)
        if record.intent.status is not IntentStatus.REQUIRES_CAPTURE:
            raise errors.PaymentRejected("only an authorisation lapses")
        return self._set(record, IntentStatus.CANCELED)

    def dashboard_refund(self, intent_id: str, amount_cents: int) -> Refund:
        """A refund made outside the shop (the provider's dashboard), under a key of its own."""
        return self.refund(intent_id, amount_cents, idempotency_key=f"dashboard-{next(self._ids)}")

    def captured_cents(self, intent_id: str) -> int:
        return self._record(intent_id).captured_cents

    def refunded_cents(self, intent_id: str) -> int:
        return self._record(intent_id).refunded_cents

    # -- the port ---------------------------------------------------------------------------------
    def create_intent(self, order_id: str, amount_cents: int, currency: str, *, idempotency_key: str) -> PaymentIntent:
        def create() -> PaymentIntent:
            intent_id = f"pi_fake{next(self._ids)}"
            intent = PaymentIntent(
                intent_id=intent_id,
                client_secret=f"{intent_id}_secret_fake",
                status=IntentStatus.REQUIRES_PAYMENT_METHOD,
                amount_cents=amount_cents,
                currency=currency,
                order_id=order_id,
            )
            self.intents[intent_id] = _Intent(intent)
            return intent

        return self._once("create_intent", idempotency_key, (order_id, amount_cents, currency), create)

    def get_intent(self, intent_id: str) -> PaymentIntent:
        self._maybe_fail("get_intent", "")
        return self._record(intent_id).intent

    def capture(self, intent_id: str, *, idempotency_key: str) -> PaymentIntent:
        def capture() -> PaymentIntent:
            record = self._record(intent_id)
            if record.intent.status is not IntentStatus.REQUIRES_CAPTURE:
                raise errors.PaymentRejected("the intent does not require capture", {"status": record.intent.status})
            record.captured_cents = record.intent.amount_cents
            return self._set(record, IntentStatus.SUCCEEDED)

        return self._once("capture", idempotency_key, (intent_id,), capture)

    def cancel(self, intent_id: str, *, idempotency_key: str) -> PaymentIntent:
        def cancel() -> PaymentIntent:
            record = self._record(intent_id)
            if record.intent.status not in _CANCELLABLE:
                raise errors.PaymentRejected("the intent cannot be cancelled", {"status": record.intent.status})
            return self._set(record, IntentStatus.CANCELED)

        return self._once("cancel", idempotency_key, (intent_id,), cancel)

    def refund(self, intent_id: str, amount_cents: int, *, idempotency_key: str) -> Refund:
        def refund() -> Refund:
            record = self._record(intent_id)
            if amount_cents <= 0 or record.refunded_cents + amount_cents > record.captured_cents:
                raise errors.PaymentRejected("the refund exceeds what is left to refund")
            record.refunded_cents += amount_cents
            made = Refund(
                refund_id=f"re_fake{next(self._ids)}",
                intent_id=intent_id,
                amount_cents=amount_cents,
                status="succeeded",
            )
            self.refunds_made[made.refund_id] = made
            return made

        return self._once("refund", idempotency_key, (intent_id, amount_cents), refund)

    def refunds(self, intent_id: str) -> list[Refund]:
        self._maybe_fail("refunds", "")
        self._record(intent_id)
        return [refund for refund in self.refunds_made.values() if refund.intent_id == intent_id]

    # -- internals --------------------------------------------------------------------------------
    def _once(self, operation: str, key: str, params: tuple[Any, ...], act: Any) -> Any:
        self._maybe_fail(operation, key)
        stored = self._answers.get(key)
        if stored is not None:
            if stored[0] != (operation, *params):
                raise errors.PaymentRejected("idempotency key reused with other parameters", {"provider_code": None})
            if isinstance(stored[1], errors.DomainError):
                raise stored[1]
            return stored[1]
        try:
            answer = act()
        except errors.DomainError as refused:  # Stripe saves the answer of a request it executed, a refusal too
            self._answers[key] = ((operation, *params), refused)
            raise
        self._answers[key] = ((operation, *params), answer)
        return answer

    def _maybe_fail(self, operation: str, key: str) -> None:
        self.calls.append((operation, key))
        if self._failures:
            raise self._failures.pop(0)

    def _record(self, intent_id: str) -> _Intent:
        record = self.intents.get(intent_id)
        if record is None:
            raise errors.PaymentRejected("no such payment intent", {"provider_code": "resource_missing"})
        return record

    def _set(self, record: _Intent, status: IntentStatus) -> PaymentIntent:
        amount = record.intent.amount_cents
        record.intent = record.intent.model_copy(
            update={
                "status": status,
                "amount_capturable_cents": amount if status is IntentStatus.REQUIRES_CAPTURE else 0,
                "amount_received_cents": record.captured_cents,
            }
        )
        return record.intent
