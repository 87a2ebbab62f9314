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
Stripe (shop.wiring hands the service the provider as a callable).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from shop import errors
from shop.limits import MAX_ID_LENGTH
from shop.models.payments import PaymentEvent, event_kind

MAX_CODE_LENGTH = 100  # a decline code, a dispute's status or reason
MAX_MESSAGE_LENGTH = 500  # a decline's message, shown to the owner
MAX_PROVIDER_CENTS = 99_999_999_999  # Stripe's largest amount, in any currency

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
    """The shop's view of a Stripe event (already verified); InvalidWebhookPayload when it is not one.

    The object may be a PaymentIntent (`payment_intent.*`), a Charge (`charge.refunded`) or a Dispute
    (`charge.dispute.*`); each names its intent. A field of the wrong type or size is read as absent: the event then
    changes nothing, rather than being refused (Stripe would deliver it again for three days)."""
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
    obj: Mapping[str, Any] = body["object"]
    kind = obj.get("object")
    if kind == "payment_intent" and not isinstance(obj.get("id"), str):
        raise errors.InvalidWebhookPayload("not a Stripe event: a payment intent's id is a string")
    metadata = obj.get("metadata")
    order_id = _text(metadata.get("order_id"), MAX_ID_LENGTH) if isinstance(metadata, Mapping) else None
    fields: dict[str, Any] = {}
    if kind == "payment_intent":
        fields["intent_id"] = _text(obj.get("id"), MAX_ID_LENGTH)
        error = obj.get("last_payment_error")
        if isinstance(error, Mapping):
            fields["failure_code"] = _text(error.get("decline_code"), MAX_CODE_LENGTH) or _text(
                error.get("code"), MAX_CODE_LENGTH
            )
            fields["failure_message"] = _text(error.get("message"), MAX_MESSAGE_LENGTH, cut=True)
    elif kind == "charge":
        fields["intent_id"] = _text(obj.get("payment_intent"), MAX_ID_LENGTH)
        fields["amount_refunded_cents"] = _cents(obj.get("amount_refunded"))
    elif kind == "dispute":
        fields["intent_id"] = _text(obj.get("payment_intent"), MAX_ID_LENGTH)
        fields["dispute_id"] = _text(obj.get("id"), MAX_ID_LENGTH)
        fields["dispute_status"] = _text(obj.get("status"), MAX_CODE_LENGTH)
        fields["dispute_reason"] = _text(obj.get("reason"), MAX_CODE_LENGTH)
        fields["dispute_amount_cents"] = _cents(obj.get("amount"))
    try:
        return PaymentEvent(
            event_id=data["id"],
            event_type=data["type"],
            kind=event_kind(data["type"]),
            created=data["created"],
            order_id=order_id,
            **fields,
        )
    except ValueError as error:  # pydantic's ValidationError: an event id out of bounds
        raise errors.InvalidWebhookPayload(f"not a Stripe event: {error.__class__.__name__}") from error


def _text(value: Any, most: int, *, cut: bool = False) -> str | None:
    """A non-empty string of at most `most` characters (cut to it when `cut`), else None."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) > most:
        return value[:most] if cut else None
    return value


def _cents(value: Any) -> int | None:
    return value if type(value) is int and 0 <= value <= MAX_PROVIDER_CENTS else None
