"""`POST /webhooks/stripe` as HTTP: the raw body and `Stripe-Signature` of an API Gateway (payload 2.0) event,
verified and handed to the rules. The payments function (functions/payments/handler.py) routes it, calls
`receive_webhook` with `shop.wiring.payment_webhooks()` and the rule that applies an event, and answers as every
route does: the 200 body with `json_response`, a domain error raised to the resolver's one error handler.

The body is verified exactly as it arrived: never parsed and re-serialised before the signature check. It is
text here, whatever API Gateway passed: the resolver answers 415 to a body that is not JSON and decodes a base64
one before routing (shop.http_api.resolver), so its UTF-8 is the bytes Stripe signed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from shop.models.payments import PaymentEventKind

if TYPE_CHECKING:
    from shop.models.payments import PaymentEvent
    from shop.services.ports import PaymentWebhooks

SIGNATURE_HEADER = "stripe-signature"  # API Gateway passes header names in lower case


def delivery(event: Mapping[str, Any]) -> tuple[bytes, str | None]:
    """(raw body, Stripe-Signature) of a payload 2.0 event as the resolver routes it (its body text, decoded)."""
    raw = str(event.get("body") or "").encode("utf-8")
    headers = {str(name).lower(): value for name, value in (event.get("headers") or {}).items()}
    return raw, headers.get(SIGNATURE_HEADER)


def receive_webhook(
    event: Mapping[str, Any], *, webhooks: PaymentWebhooks, apply: Callable[[PaymentEvent], None]
) -> dict[str, Any]:
    """The 200 body once the event is applied (or is of a type the shop ignores: nothing applied). Raises what
    the resolver answers: InvalidWebhookSignature or InvalidWebhookPayload (400) for a delivery that is not signed
    with the endpoint's secret or is no event; a transient failure to apply it (503: Stripe redelivers). `apply`
    must be idempotent by event id: Stripe delivers at least once."""
    payload, signature = delivery(event)
    verified = webhooks.verify(payload, signature)
    if verified.kind is not PaymentEventKind.IGNORED:
        apply(verified)
    return {"received": True, "event_id": verified.event_id, "kind": verified.kind.value}
