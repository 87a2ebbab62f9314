"""Writes events/payments/*.json: Stripe's webhook deliveries as API Gateway (2.0) events, named <what>_<status>.json.

Stripe signs each delivery with the time it sends it, and a signature older than 300 s is refused: the committed
events carry the signature of `SAMPLE_SECRET` at a fixed time, so `sign(event, secret)` re-signs one for now (what
`sam local invoke` users do with their own `whsec_...`; tests/functions/test_payment_sample_events.py does it).
The forged one keeps a signature no secret produces. Run ``python -m tests.functions.generate_payment_events``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from tests.functions.apigw import REPO
from tests.functions.generate_events import sample

SAMPLE_SECRET = "whsec_sample_events"
SIGNED_AT = 1767225600  # 2026-01-01T00:00:00Z
ORDER = "00-alice-pending"
INTENT = "pi_sample_00alicepending"
CHARGE = "ch_sample_00alicepending"


def _intent(status: str, **more: Any) -> dict[str, Any]:
    return {
        "id": INTENT,
        "object": "payment_intent",
        "amount": 2500,
        "amount_capturable": 2500 if status == "requires_capture" else 0,
        "currency": "usd",
        "capture_method": "manual",
        "status": status,
        "metadata": {"order_id": ORDER},
        **more,
    }


def _charge() -> dict[str, Any]:
    """The intent's charge after a partial refund in the dashboard: it names its intent, not the order (Stripe does
    not copy the intent's metadata onto its charge)."""
    return {
        "id": CHARGE,
        "object": "charge",
        "amount": 2500,
        "amount_captured": 2500,
        "amount_refunded": 1000,
        "captured": True,
        "currency": "usd",
        "payment_intent": INTENT,
        "refunded": False,
        "status": "succeeded",
        "metadata": {},
    }


def _dispute() -> dict[str, Any]:
    return {
        "id": "du_sample_00alicepending",
        "object": "dispute",
        "amount": 2500,
        "charge": CHARGE,
        "currency": "usd",
        "payment_intent": INTENT,
        "reason": "fraudulent",
        "status": "needs_response",
        "metadata": {},
    }


def _stripe_event(event_id: str, event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": event_id,
        "object": "event",
        "api_version": "2025-10-29.clover",
        "created": SIGNED_AT,
        "livemode": False,
        "type": event_type,
        "data": {"object": obj},
    }


STRIPE_EVENTS: dict[str, dict[str, Any]] = {
    "payment_intent_amount_capturable_updated_200": _stripe_event(
        "evt_sample_authorised", "payment_intent.amount_capturable_updated", _intent("requires_capture")
    ),
    "payment_intent_payment_failed_200": _stripe_event(
        "evt_sample_failed",
        "payment_intent.payment_failed",
        _intent(
            "requires_payment_method",
            last_payment_error={
                "code": "card_declined",
                "decline_code": "insufficient_funds",
                "message": "Your card has insufficient funds.",
                "type": "card_error",
            },
        ),
    ),
    "payment_intent_canceled_200": _stripe_event(
        "evt_sample_canceled",
        "payment_intent.canceled",
        _intent("canceled", cancellation_reason="expired", canceled_at=SIGNED_AT),
    ),
    "charge_refunded_200": _stripe_event("evt_sample_refunded", "charge.refunded", _charge()),
    "charge_dispute_created_200": _stripe_event("evt_sample_dispute", "charge.dispute.created", _dispute()),
    "customer_created_ignored_200": _stripe_event(
        "evt_sample_ignored", "customer.created", {"id": "cus_sample", "object": "customer"}
    ),
    "forged_signature_400": _stripe_event("evt_sample_forged", "payment_intent.succeeded", _intent("succeeded")),
}


def signature(body: str, secret: str, at: int) -> str:
    digest = hmac.new(secret.encode(), f"{at}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={at},v1={digest}"


def delivery(name: str) -> dict[str, Any]:
    body = json.dumps(STRIPE_EVENTS[name], separators=(",", ":"))
    signed = (
        signature(body, SAMPLE_SECRET, SIGNED_AT) if not name.startswith("forged") else f"t={SIGNED_AT},v1={'0' * 64}"
    )
    evt = sample(
        name,
        "POST",
        "/webhooks/stripe",
        "/webhooks/stripe",
        {"raw_body": body, "headers": {"Stripe-Signature": signed, "content-type": "application/json; charset=utf-8"}},
    )
    evt["headers"]["user-agent"] = "Stripe/1.0 (+https://stripe.com/docs/webhooks)"
    return evt


def sign(event: dict[str, Any], secret: str, at: int | None = None) -> dict[str, Any]:
    """The event with its Stripe-Signature made again for `at` (default: now), as Stripe would send it."""
    at = int(time.time()) if at is None else at
    headers = {**event["headers"], "stripe-signature": signature(event["body"], secret, at)}
    return {**event, "headers": headers}


def main() -> None:
    folder = REPO / "events" / "payments"
    folder.mkdir(exist_ok=True)
    for name in STRIPE_EVENTS:
        (folder / f"{name}.json").write_text(json.dumps(delivery(name), indent=2) + "\n")


if __name__ == "__main__":
    main()
