"""The `PaymentWebhooks` port for Stripe: `Stripe-Signature` verified with the standard library, not `stripe`.

The check is the one `stripe.WebhookSignature.verify_header` makes (stripe 16.1.0): the header is a comma-separated
list of `key=value` items; `t` is the signing time (read with `int()`, the first `t` wins); every `v1` item is a
candidate signature, any one of which may match (Stripe sends several while an endpoint's secret is being rolled);
the expected signature is the hex HMAC-SHA256 of `"{t}.{raw body}"` under the endpoint's secret, compared in
constant time; a delivery signed more than `tolerance` seconds ago is refused (one signed in the future is not,
as with the library). `tests/payments/test_webhook_signature_parity.py` proves the two agree on a matrix of
deliveries. The one deliberate difference: a signature with non-ASCII characters is refused here, where the
library lets `hmac.compare_digest`'s TypeError escape (a 500 for a forged header).

Why not the library (docs/decisions.md, "The webhook verifies Stripe-Signature with the standard library"):
importing `stripe` for this one HMAC cost the payments function's cold start ~55 ms of its ~120 ms first
delivery (its HTTP client imports requests, urllib3 and asyncio); the service imports stripe only when it calls
Stripe (shop.payments.deferred).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from shop import errors
from shop.models.payments import PaymentEvent, event_kind

SCHEME = "v1"
DEFAULT_TOLERANCE = 300  # seconds: stripe.Webhook.DEFAULT_TOLERANCE


def _timestamp_and_signatures(header: str) -> tuple[int, list[str]]:
    """As the library reads the header; raises (IndexError, ValueError) where it does."""
    items = [item.split("=", 2) for item in header.split(",")]
    # every `t` item read, as the library reads them: a later `t` with no value refuses the header too
    timestamp = int([item[1] for item in items if item[0] == "t"][0])  # noqa: RUF015
    return timestamp, [item[1] for item in items if item[0] == SCHEME]


def verify_signature(
    payload: bytes, header: str | None, secret: str, tolerance: int | None, now: Callable[[], float] = time.time
) -> None:
    """InvalidWebhookSignature unless `header` signs `payload` with `secret` within `tolerance` seconds."""
    try:
        payload.decode("utf-8")  # the library signs the body's text: a body that is not UTF-8 cannot be signed
    except UnicodeDecodeError as error:
        raise errors.InvalidWebhookSignature("the body is not UTF-8 text") from error
    if not header:
        raise errors.InvalidWebhookSignature("the Stripe-Signature header is missing")
    try:
        timestamp, signatures = _timestamp_and_signatures(header)
    except (IndexError, ValueError) as error:
        raise errors.InvalidWebhookSignature("the Stripe-Signature header cannot be read") from error
    if not signatures:
        raise errors.InvalidWebhookSignature(f"the Stripe-Signature has no {SCHEME} signature")
    expected = hmac.new(secret.encode("utf-8"), b"%d." % timestamp + payload, hashlib.sha256).hexdigest().encode()
    if not any(hmac.compare_digest(expected, signature.encode("utf-8")) for signature in signatures):
        raise errors.InvalidWebhookSignature("the Stripe-Signature does not match the body")
    if tolerance and timestamp < now() - tolerance:
        raise errors.InvalidWebhookSignature(f"the delivery was signed more than {tolerance} s ago")


class StripeWebhooks:
    """The PaymentWebhooks port: deliveries signed with the endpoint's secret, within Stripe's tolerance."""

    def __init__(self, endpoint_secret: str, *, tolerance: int = DEFAULT_TOLERANCE) -> None:
        if not endpoint_secret or not endpoint_secret.strip():
            raise errors.PaymentMisconfigured("no webhook endpoint secret")
        self._secret = endpoint_secret
        self._tolerance = tolerance

    def verify(self, payload: bytes, signature: str | None) -> PaymentEvent:
        verify_signature(payload, signature, self._secret, self._tolerance)
        try:
            data = json.loads(payload)
        except ValueError as error:  # json.JSONDecodeError is a ValueError (so is a number too long to convert)
            raise errors.InvalidWebhookPayload("the body is not JSON") from error
        except RecursionError:  # nested deeper than the interpreter's recursion limit: no event is
            raise errors.InvalidWebhookPayload("the body is JSON nested too deeply") from None
        return parse_event(data)


def parse_event(data: Any) -> PaymentEvent:
    """The shop's view of a Stripe event (already verified); InvalidWebhookPayload when it is not one."""
    if not isinstance(data, Mapping):
        raise errors.InvalidWebhookPayload(f"not a Stripe event: a JSON {type(data).__name__}")
    body = data.get("data")
    # What the document says an Event is (and Stripe sends): id and type strings, created an integer, data.object
    # an object. Read as they come, not converted: an id of {} was the id "{}" (found by the fuzz test).
    if not (
        isinstance(data.get("id"), str)
        and isinstance(data.get("type"), str)
        and type(data.get("created")) is int
        and isinstance(body, Mapping)
        and isinstance(body.get("object"), Mapping)
    ):
        raise errors.InvalidWebhookPayload(f"not a Stripe event: fields {sorted(map(str, data))}")
    try:
        event_type = str(data["type"])
        obj = data["data"]["object"]
        is_intent = isinstance(obj, Mapping) and obj.get("object") == "payment_intent"
        if is_intent and not isinstance(obj.get("id"), str):
            raise ValueError("a payment intent's id is a string")
        metadata = (obj.get("metadata") or {}) if is_intent else {}
        return PaymentEvent(
            event_id=str(data["id"]),
            event_type=event_type,
            kind=event_kind(event_type),
            created=int(data["created"]),
            intent_id=str(obj["id"]) if is_intent else None,
            order_id=metadata.get("order_id") if isinstance(metadata, Mapping) else None,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise errors.InvalidWebhookPayload(f"not a Stripe event: fields {sorted(map(str, data))}") from error
