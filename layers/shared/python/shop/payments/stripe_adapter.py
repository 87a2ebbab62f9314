"""The `Payments` port on Stripe (the `stripe` library; localstripe under make dev). The `PaymentWebhooks` port
is shop.payments.stripe_webhooks (the standard library: the webhook never imports `stripe`), re-exported here.

Stripe's errors become the shop's typed errors here and nowhere else (`translate`): transient causes (no
connection, throttling, a 5xx) are PaymentProviderUnavailable (503), a declined card PaymentDeclined, a request
the intent's state refuses PaymentRejected, bad credentials PaymentMisconfigured. The adapter raises the last as
PaymentCredentialsUnusable, counted for its alarm (shop.payment_secrets.credentials_unusable): a key Stripe refuses
(the secret's placeholder, a revoked or rolled key, a restricted key without the permission) is a 503 to the
client and a page to operations, never a 500. The library retries a transient failure itself
(STRIPE_NETWORK_RETRIES), every time with the call's idempotency key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import stripe

from shop import errors
from shop.limits import STRIPE_NETWORK_RETRIES
from shop.models.payments import IntentStatus, PaymentIntent, Refund
from shop.payment_secrets import credentials_unusable
from shop.payments.stripe_webhooks import StripeWebhooks, parse_event

__all__ = ["StripePayments", "StripeWebhooks", "parse_event", "translate"]

if TYPE_CHECKING:
    from stripe import StripeClient


def translate(error: stripe.StripeError) -> errors.DomainError:
    """The shop's error for a Stripe error (the caller raises it `from` the original)."""
    status = error.http_status
    if isinstance(error, stripe.CardError):
        return errors.PaymentDeclined("the card was declined", {"decline_code": error.code or "card_declined"})
    if isinstance(error, stripe.APIConnectionError | stripe.RateLimitError) or status is None or status >= 500:
        return errors.PaymentProviderUnavailable(f"payment provider unavailable: {type(error).__name__}")
    if isinstance(error, stripe.AuthenticationError | stripe.PermissionError):
        return errors.PaymentMisconfigured(f"payment provider refused the shop's credentials ({status})")
    return errors.PaymentRejected("the payment provider refused the request", {"provider_code": error.code})


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except stripe.StripeError as error:
        translated = translate(error)
        if isinstance(translated, errors.PaymentMisconfigured):
            raise credentials_unusable(translated.message) from error
        raise translated from error


def _intent(obj: Any) -> PaymentIntent:
    data = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    metadata = data.get("metadata") or {}
    status, amount = IntentStatus(data["status"]), int(data["amount"])
    # localstripe reports neither figure: the amount is what its status implies.
    capturable, received = data.get("amount_capturable"), data.get("amount_received")
    return PaymentIntent(
        intent_id=data["id"],
        client_secret=data.get("client_secret") or "",
        status=status,
        amount_cents=amount,
        currency=str(data["currency"]),
        order_id=metadata.get("order_id"),
        amount_capturable_cents=int(capturable)
        if capturable is not None
        else (amount if status is IntentStatus.REQUIRES_CAPTURE else 0),
        amount_received_cents=int(received)
        if received is not None
        else (amount if status is IntentStatus.SUCCEEDED else 0),
    )


class StripePayments:
    """The Payments port on one Stripe account (`api_base`: localstripe's address; None: Stripe itself)."""

    def __init__(
        self,
        secret_key: str,
        *,
        api_base: str | None = None,
        max_network_retries: int = STRIPE_NETWORK_RETRIES,
        client: StripeClient | None = None,
    ) -> None:
        if client is None:
            client = stripe.StripeClient(
                secret_key,
                base_addresses={"api": api_base} if api_base else None,
                max_network_retries=max_network_retries,
            )
        self._client = client

    def create_intent(self, order_id: str, amount_cents: int, currency: str, *, idempotency_key: str) -> PaymentIntent:
        params = {
            "amount": amount_cents,
            "currency": currency,
            "capture_method": "manual",
            "metadata": {"order_id": order_id},
        }
        with _translated():
            created = self._client.v1.payment_intents.create(
                params=params,  # type: ignore[arg-type]
                options={"idempotency_key": idempotency_key},
            )
        return _intent(created)

    def get_intent(self, intent_id: str) -> PaymentIntent:
        with _translated():
            return _intent(self._client.v1.payment_intents.retrieve(intent_id))

    def capture(self, intent_id: str, *, idempotency_key: str) -> PaymentIntent:
        with _translated():
            captured = self._client.v1.payment_intents.capture(intent_id, options={"idempotency_key": idempotency_key})
        return _intent(captured)

    def cancel(self, intent_id: str, *, idempotency_key: str) -> PaymentIntent:
        with _translated():
            cancelled = self._client.v1.payment_intents.cancel(intent_id, options={"idempotency_key": idempotency_key})
        return _intent(cancelled)

    def refund(self, intent_id: str, amount_cents: int, *, idempotency_key: str) -> Refund:
        with _translated():
            refund = self._client.v1.refunds.create(
                params={"payment_intent": intent_id, "amount": amount_cents},
                options={"idempotency_key": idempotency_key},
            )
        return _refund(refund, intent_id)

    def refunds(self, intent_id: str) -> list[Refund]:
        with _translated():
            listed = self._client.v1.refunds.list(params={"payment_intent": intent_id, "limit": 100})
        return [_refund(refund, intent_id) for refund in listed.data]


def _refund(obj: Any, intent_id: str) -> Refund:
    data = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    return Refund(
        refund_id=data["id"],
        intent_id=data.get("payment_intent") or intent_id,
        amount_cents=int(data["amount"]),
        status=str(data.get("status") or "pending"),
    )
