"""`make dev`'s payments: localstripe beside DynamoDB Local, the functions pointed at it, and `make pay`.

`start` runs LocalStripe on a free port, registers the gateway's `/webhooks/stripe` with a fresh signing secret,
and returns the variables every function gets (PAYMENTS=stripe, STRIPE_API_BASE, STRIPE_SECRET_KEY,
STRIPE_WEBHOOK_SECRET) and writes them to `<state>/payments.json` for `make pay`.

`pay(order_id, card)` is the customer's browser: it finds the order's intent on localstripe (by its metadata),
attaches a test card and confirms it. localstripe 1.15.10 announces nothing when a manual-capture intent is
authorised (docs/payments.md), so after an authorising card `pay` posts the event Stripe would send,
`payment_intent.amount_capturable_updated`, signed with the local secret, to the running gateway: the real
route and verification. A declining card (pm_card_chargeCustomerFail) makes localstripe send
`payment_intent.payment_failed` itself, and the intent takes another card (`make pay` again). An order that can no
longer be paid (unknown, cancelled, expired, failed, already paid) is refused in one line: `pay` reads it first
through the gateway, as its admin.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import pathlib
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from local_runtime import auth, dev_state
from local_runtime.localstripe import TEST_SECRET_KEY, LocalStripe

STATE_FILE = "payments.json"
CARDS = {"visa": "pm_card_visa", "declined": "pm_card_chargeCustomerFail"}
WEBHOOK_ID = "shop-local"
MAX_RESTARTS = 5  # of a localstripe that keeps exiting, in one `dev` run
USAGE = "usage: make -s pay ORDER=<order id> [CARD=declined]"
# Why an order in each status cannot be paid (PENDING_PAYMENT can).
NOT_PAYABLE = {
    "PENDING": "it was placed without payments (PAYMENTS=none)",
    "CANCELLED": "it was cancelled",
    "EXPIRED": "its payment window closed",
    "PAYMENT_FAILED": "its payment failed for good: place a new order",
    "CONFIRMED": "it is already paid",
    "SHIPPED": "it is already paid",
    "DELIVERED": "it is already paid",
    "RETURN_REQUESTED": "it is already paid",
    "RETURNED": "it is already paid",
}
# Intent statuses `pay` can confirm (after attaching the card)
CONFIRMABLE = ("requires_payment_method", "requires_confirmation")


@dataclass(frozen=True)
class LocalPayments:
    server: LocalStripe
    webhook_url: str
    webhook_secret: str

    @property
    def environment(self) -> dict[str, str]:
        """What every function of `make dev` gets (overriding the template's payment variables)."""
        return environment(self.server.endpoint, self.webhook_secret)


def environment(stripe_api: str, webhook_secret: str) -> dict[str, str]:
    """The payment variables of functions pointed at localstripe (`stripe_api`) with the webhook's signing secret."""
    return {
        "PAYMENTS": "stripe",
        "STRIPE_API_BASE": stripe_api,
        "STRIPE_SECRET_KEY": TEST_SECRET_KEY,
        "STRIPE_WEBHOOK_SECRET": webhook_secret,
        "STRIPE_SECRET_ARN": "",  # never Secrets Manager locally
    }


def new_webhook_secret() -> str:
    return f"whsec_local_{secrets.token_hex(16)}"


def start(
    state_dir: pathlib.Path, gateway_url: str, server: LocalStripe | None = None, secret: str | None = None
) -> LocalPayments:
    """localstripe on a free port (`server`, when `dev` spawned it earlier), delivering every event to the gateway's
    webhook route, signed with `secret` (a new one when omitted; `dev` makes it first, for its functions)."""
    server = (server or LocalStripe()).start()
    secret = secret or new_webhook_secret()
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


def restart(paying: LocalPayments, *, attempt: int) -> str:
    """`dev`'s answer to a localstripe that exited: the same port again, the webhook registered again with the same
    secret (so nothing the functions were given changes), and the line to print. Past MAX_RESTARTS attempts, or
    when the restart fails, it restarts nothing and says how to."""
    endpoint = paying.server.endpoint
    how = "stop `make dev` (Ctrl-C) and start it again"
    if attempt > MAX_RESTARTS:
        return f"localstripe {endpoint} exited again and stays down: {how}"
    try:
        paying.server.restart()
        paying.server.register_webhook(WEBHOOK_ID, paying.webhook_url, paying.webhook_secret)
    except (RuntimeError, OSError) as failed:
        return f"localstripe {endpoint} exited and could not be restarted ({failed}): {how}"
    return (
        f"localstripe exited; restarted on {endpoint} with the same webhook: the payment intents it held are gone "
        "(it keeps them in memory), so orders placed before cannot be paid"
    )


def running_environment(state_dir: pathlib.Path) -> dict[str, str] | None:
    """The payment variables of the running `make dev` (its payments.json), None when it runs without payments:
    what `make replay` gives the functions so a payment step's kept batch is applied against that localstripe."""
    path = state_dir / STATE_FILE
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    return environment(state["stripe"], state["webhook_secret"])


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
        raise PayError(
            f"no payment intent for order {order_id} on localstripe: it keeps intents in memory, so a localstripe "
            "restarted since the order was placed has lost it"
        )
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
    if intent.status not in CONFIRMABLE:
        done = "already authorised" if intent.status in ("requires_capture", "succeeded") else intent.status
        raise PayError(f"order {order_id}'s payment intent {intent.id} is {done}: nothing to confirm")
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


def order_status(gateway: str, state_dir: pathlib.Path, order_id: str) -> str:
    """The order's status, read through the running gateway as its admin; PayError when there is no such order."""
    token = auth.issue_token(auth.load_or_create_keys(state_dir), "make-pay", groups=["admin"])
    request = urllib.request.Request(f"{gateway}/orders/{urllib.parse.quote(order_id, safe='')}")
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return str(json.loads(answer.read())["status"])
    except urllib.error.HTTPError as refused:
        if refused.code in (400, 404):
            raise PayError(f"no order {order_id} on the running `make dev`") from None
        raise PayError(f"reading order {order_id} answered {refused.code}: {refused.read().decode()[:200]}") from None
    except OSError as unreachable:
        raise PayError(f"the running `make dev`'s gateway {gateway} does not answer: {unreachable}") from None


def pay(state_dir: pathlib.Path, order_id: str, card: str = "visa") -> str:
    """Pay the order of the running `make dev` with a test card; a line saying what happened."""
    import stripe

    if not order_id.strip():
        raise PayError(USAGE)
    if card not in CARDS:
        raise PayError(f"CARD must be one of {', '.join(CARDS)}, got {card!r}")
    running = dev_state.running(state_dir)
    if running is None:
        raise PayError("no `make dev` is running: start it (payments are on by default), then pay its orders")
    path = state_dir / STATE_FILE
    if running.localstripe is None or not path.exists():
        raise PayError("the running `make dev` takes no payments (PAYMENTS=none): its orders need none")
    state = json.loads(path.read_text())
    status = order_status(running.gateway, state_dir, order_id)
    if status != "PENDING_PAYMENT":
        reason = NOT_PAYABLE.get(status, "only a PENDING_PAYMENT order can be paid")
        raise PayError(f"order {order_id} is {status}: {reason}")
    try:
        event = authorised_event(state["stripe"], order_id, card)
    except stripe.CardError as declined:
        # localstripe posts payment_intent.payment_failed to the gateway itself (about a second later).
        return f"declined: {declined.code or 'card_declined'}; localstripe delivers payment_intent.payment_failed"
    except stripe.APIConnectionError:
        raise PayError(f"localstripe does not answer at {state['stripe']}") from None
    except stripe.StripeError as refused:
        raise PayError(f"localstripe refused order {order_id}'s payment: {refused.user_message or refused}") from None
    try:
        status_code, body = post_event(state["webhook_url"], state["webhook_secret"], event)
    except OSError as unreachable:
        raise PayError(f"the webhook {state['webhook_url']} does not answer: {unreachable}") from None
    if status_code != 200:
        raise PayError(f"the webhook answered {status_code}: {body}")
    confirmed = event["data"]["object"]
    return (
        f"authorised {confirmed['amount']} {confirmed['currency']} on {confirmed['id']}; "
        f"webhook {event['id']} -> {status_code}"
    )
