"""The `Payments` port with its provider built on the first call, not when the rules are built.

The webhook's rule calls Stripe only to cancel the intent of an order that can no longer be paid; every other
delivery reads the order and writes (shop.services.payments). Built through this, the payments function's first
delivery never imports `stripe` nor reads the secret key unless it calls Stripe (docs/payments.md, "The webhook").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from shop import errors

if TYPE_CHECKING:
    from shop.models.payments import PaymentIntent, Refund
    from shop.services.ports import Payments


class DeferredPayments:
    """Payments whose provider `build` makes on the first call (then kept); PaymentMisconfigured when it makes
    none (PAYMENTS=none)."""

    def __init__(self, build: Callable[[], Payments | None]) -> None:
        self._build = build
        self._provider: Payments | None = None

    @property
    def provider(self) -> Payments:
        if self._provider is None:
            built = self._build()
            if built is None:
                raise errors.PaymentMisconfigured("a payment step ran with PAYMENTS=none")
            self._provider = built
        return self._provider

    def create_intent(self, order_id: str, amount_cents: int, currency: str, *, idempotency_key: str) -> PaymentIntent:
        return self.provider.create_intent(order_id, amount_cents, currency, idempotency_key=idempotency_key)

    def get_intent(self, intent_id: str) -> PaymentIntent:
        return self.provider.get_intent(intent_id)

    def capture(self, intent_id: str, *, idempotency_key: str) -> PaymentIntent:
        return self.provider.capture(intent_id, idempotency_key=idempotency_key)

    def cancel(self, intent_id: str, *, idempotency_key: str) -> PaymentIntent:
        return self.provider.cancel(intent_id, idempotency_key=idempotency_key)

    def refund(self, intent_id: str, amount_cents: int, *, idempotency_key: str) -> Refund:
        return self.provider.refund(intent_id, amount_cents, idempotency_key=idempotency_key)

    def refunds(self, intent_id: str) -> list[Refund]:
        return self.provider.refunds(intent_id)
