"""`POST /webhooks/stripe` as HTTP: the raw body and `Stripe-Signature` of an API Gateway (payload 2.0) event,
verified and handed to the rules. The payments function (functions/payments/handler.py) routes it, calls
`receive_webhook` with `shop.wiring.payment_webhooks()` and the rule that applies an event, and answers as every
route does: the 200 body with `json_response`, a domain error raised to the resolver's one error handler.

The body is verified exactly as it arrived: never parsed and re-serialised before the signature check. API
Gateway passes a JSON body as text (the bytes are its UTF-8) and any other as base64.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from shop import errors
from shop.models.payments import PaymentEventKind

if TYPE_CHECKING:
    from shop.models.payments import PaymentEvent
    from shop.services.ports import PaymentWebhooks

SIGNATURE_HEADER = "stripe-signature"  # API Gateway passes header names in lower case


def delivery(event: Mapping[str, Any]) -> tuple[bytes, str | None]:
    """(raw body, Stripe-Signature) of a payload 2.0 event; InvalidWebhookPayload when the body cannot be read."""
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as error:
            raise errors.InvalidWebhookPayload("the body is not valid base64") from error
    else:
        raw = str(body).encode("utf-8")
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
