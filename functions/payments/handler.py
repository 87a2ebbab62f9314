"""payments: Stripe's webhook deliveries (POST /webhooks/stripe), verified byte for byte and applied to the order.

The only HTTP function that calls Stripe's library (through shop.wiring, when a rule calls it); it carries the
payments layer. The route is public: API Gateway's authorizer cannot check a Stripe-Signature, the handler does
(shop.http_api.payment_webhooks). docs/payments.md, "The webhook".
"""

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop.runtime import lean_init

lean_init.begin()  # lazy Powertools packages, no cyclic GC until lean_init.done() below

# isort: split
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header

from shop import errors, wiring
from shop.http_api.errors import status_for
from shop.http_api.observability import count, lambda_handler
from shop.http_api.payment_webhooks import receive_webhook
from shop.http_api.resolver import create_app, declare, json_response
from shop.models.common import Model

app = create_app("payments")
TAGS = ["payments"]
payment_rules = wiring.payment_service()  # on the function's table (shop.wiring); `stripe` loads when it is called


StripeSignature = Annotated[
    str | None,
    Header(alias="Stripe-Signature", description="t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<raw body>'>"),
]


class WebhookReceived(Model):
    received: bool
    event_id: str
    kind: str  # authorised | failed | canceled | ignored (a type the shop does not act on)


@app.post(
    "/webhooks/stripe",
    summary="Stripe's webhook: payment events for orders (public; Stripe-Signature verified)",
    description="The raw body must be signed with the endpoint's secret (Stripe-Signature, Stripe's 300 s "
    "tolerance). An event is applied once whatever the deliveries; unknown types and events for unknown or "
    "archived orders answer 200 and change nothing.",
    responses=declare(
        200,
        WebhookReceived,
        400,
        404,
        body=True,
        errors_described={
            400: "WEBHOOK_SIGNATURE_INVALID (unsigned, forged, tampered or older than the tolerance), "
            "WEBHOOK_PAYLOAD_INVALID (signed but not a Stripe event)",
            404: "NOT_FOUND: payments are off (PAYMENTS=none)",
            503: "PAYMENT_PROVIDER_UNAVAILABLE or SERVICE_UNAVAILABLE: applying failed for a transient cause; "
            "Stripe delivers again",
        },
    ),
    tags=TAGS,
)
def stripe_webhook(signature: StripeSignature = None):  # read from the raw event, as it arrived
    try:  # every answer counted by its status, as a 200 is; the errors are answered by the resolver's handler
        webhooks = wiring.payment_webhooks()
        if webhooks is None:
            raise errors.NotFound("payments are off")
        received = receive_webhook(app.current_event.raw_event, webhooks=webhooks, apply=payment_rules.apply_event)
    except errors.DomainError as error:
        count(f"Webhook{status_for(error)}")
        raise
    except Exception:  # answered 500 INTERNAL_ERROR
        count("Webhook500")
        raise
    count("Webhook200")
    return json_response(200, received)


# What Stripe posts: an Event object, read as it arrived (its signature covers these bytes).
STRIPE_EVENT = {
    "type": "object",
    "required": ["id", "type", "created", "data"],
    "properties": {
        "id": {"type": "string", "description": "evt_..."},
        "type": {"type": "string", "description": "payment_intent.succeeded, payment_intent.payment_failed, ..."},
        "created": {"type": "integer", "description": "unix seconds"},
        "data": {
            "type": "object",
            "required": ["object"],
            "properties": {"object": {"type": "object", "description": "the PaymentIntent as it was when sent"}},
        },
    },
}
app.raw_body("POST", "/webhooks/stripe", STRIPE_EVENT, "a Stripe Event, verified byte for byte before it is read")

handler = lambda_handler(app.resolve)
lean_init.done()
