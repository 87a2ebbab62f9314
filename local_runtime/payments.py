"""`make dev`'s payments: localstripe beside DynamoDB Local, the functions pointed at it, and `make pay`.

`start` runs LocalStripe on a free port, registers the gateway's `/webhooks/stripe` with a fresh signing secret,
and returns the variables every function gets (PAYMENTS=stripe, STRIPE_API_BASE, STRIPE_SECRET_KEY,
STRIPE_WEBHOOK_SECRET) and writes them to `<state>/payments.json` for `make pay`.

`pay(order_id, card)` is the customer's browser: it finds the order's intent on localstripe (by its metadata),
attaches a test card and confirms it. localstripe 1.15.10 announces nothing when a manual-capture intent is
authorised (docs/payments.md), so after an authorising card `pay` posts the event Stripe would send,
`payment_intent.amount_capturable_updated`, signed with the local secret, to the running gateway: the real
route and verification. A declining card (pm_card_chargeCustomerFail) makes localstripe send
`payment_intent.payment_failed` itself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import pathlib
import secrets
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from local_runtime.localstripe import TEST_SECRET_KEY, LocalStripe

STATE_FILE = "payments.json"
CARDS = {"visa": "pm_card_visa", "declined": "pm_card_chargeCustomerFail"}
WEBHOOK_ID = "shop-local"


@dataclass(frozen=True)
class LocalPayments:
    server: LocalStripe
    webhook_url: str
    webhook_secret: str

    @property
    def environment(self) -> dict[str, str]:
        """What every function of `make dev` gets (overriding the template's payment variables)."""
        return {
            "PAYMENTS": "stripe",
            "STRIPE_API_BASE": self.server.endpoint,
            "STRIPE_SECRET_KEY": TEST_SECRET_KEY,
            "STRIPE_WEBHOOK_SECRET": self.webhook_secret,
            "STRIPE_SECRET_ARN": "",  # never Secrets Manager locally
        }


def start(state_dir: pathlib.Path, gateway_url: str) -> LocalPayments:
    """localstripe on a free port, delivering every event to the gateway's webhook route (signed)."""
    server = LocalStripe().start()
    secret = f"whsec_local_{secrets.token_hex(16)}"
    url = f"{gateway_url}/webhooks/stripe"
    try:
        server.register_webhook(WEBHOOK_ID, url, secret)
    except Exception:
        server.stop()
        raise
    running = LocalPayments(server, url, secret)
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / STATE_FILE).write_text(
        json.dumps({"stripe": server.endpoint, "webhook_url": url, "webhook_secret": secret}) + "\n"
    )
    return running


def running_environment(state_dir: pathlib.Path) -> dict[str, str] | None:
    """The payment variables of the running `make dev` (its payments.json), None when it runs without payments:
    what `make replay` gives the functions so a payment step's kept batch is applied against that localstripe."""
    path = state_dir / STATE_FILE
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    return {
        "PAYMENTS": "stripe",
        "STRIPE_API_BASE": state["stripe"],
        "STRIPE_SECRET_KEY": TEST_SECRET_KEY,
        "STRIPE_WEBHOOK_SECRET": state["webhook_secret"],
        "STRIPE_SECRET_ARN": "",
    }


def forget(state_dir: pathlib.Path) -> None:
    (state_dir / STATE_FILE).unlink(missing_ok=True)


def signed(body: bytes, secret: str, at: int | None = None) -> str:
    """A Stripe-Signature header for `body`, as Stripe (and localstripe) compute it."""
    at = int(time.time()) if at is None else at
    digest = hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={digest}"


class PayError(RuntimeError):
    pass


def _stripe(endpoint: str) -> Any:
    import stripe

    return stripe.StripeClient(TEST_SECRET_KEY, base_addresses={"api": endpoint}, max_network_retries=0)


def _intent_of(client: Any, order_id: str) -> Any:
    listed = client.v1.payment_intents.list(params={"limit": 100})
    found = [i for i in listed.auto_paging_iter() if (i.to_dict().get("metadata") or {}).get("order_id") == order_id]
    if not found:
        raise PayError(f"no payment intent for order {order_id} on localstripe (placed with payments on?)")
    # A checkout repriced while it was placed made an intent for the old total too, cancelled at once: the
    # order holds the other one (docs/payments.md, "Checkout").
    live = [i for i in found if i.status != "canceled"]
    return (live or found)[-1]


def post_event(webhook_url: str, secret: str, event: dict[str, Any]) -> tuple[int, str]:
    """Deliver one event as Stripe does: the JSON body, signed; (status, body) of the answer."""
    body = json.dumps(event).encode()
    request = urllib.request.Request(webhook_url, data=body, method="POST")
    request.add_header("Content-Type", "application/json; charset=utf-8")
    request.add_header("Stripe-Signature", signed(body, secret))
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def authorised_event(endpoint: str, order_id: str, card: str = "visa") -> dict[str, Any]:
    """The customer's browser at localstripe `endpoint`: attach a test card to the order's intent and confirm it;
    the event Stripe would send for the authorisation (unsigned). stripe.CardError for a declining card."""
    client = _stripe(endpoint)
    intent = _intent_of(client, order_id)
    client.v1.payment_intents.update(intent.id, params={"payment_method": CARDS[card]})
    confirmed = client.v1.payment_intents.confirm(intent.id)
    if confirmed.status != "requires_capture":
        raise PayError(f"the intent is {confirmed.status}, not authorised")
    return {
        "id": f"evt_local_{secrets.token_hex(12)}",
        "object": "event",
        "type": "payment_intent.amount_capturable_updated",
        "created": int(time.time()),
        "livemode": False,
        "data": {"object": confirmed.to_dict()},
    }


def pay(state_dir: pathlib.Path, order_id: str, card: str = "visa") -> str:
    """Pay the order of the running `make dev` with a test card; a line saying what happened."""
    import stripe

    path = state_dir / STATE_FILE
    if not path.exists():
        raise PayError("no running `make dev` with payments (start it with PAYMENTS=stripe, the default)")
    state = json.loads(path.read_text())
    if card not in CARDS:
        raise PayError(f"CARD must be one of {', '.join(CARDS)}, got {card!r}")
    try:
        event = authorised_event(state["stripe"], order_id, card)
    except stripe.CardError as declined:
        # localstripe posts payment_intent.payment_failed to the gateway itself (about a second later).
        return f"declined: {declined.code or 'card_declined'}; localstripe delivers payment_intent.payment_failed"
    status, body = post_event(state["webhook_url"], state["webhook_secret"], event)
    if status != 200:
        raise PayError(f"the webhook answered {status}: {body}")
    confirmed = event["data"]["object"]
    return (
        f"authorised {confirmed['amount']} {confirmed['currency']} on {confirmed['id']}; "
        f"webhook {event['id']} -> {status}"
    )
