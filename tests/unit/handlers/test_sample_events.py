"""Every sample event of the API functions (events/<function>/*.json: API Gateway HTTP API payload 2.0, each
route's success and its 4xx answers) answers on the in-memory store the status its file name promises, as it
does on moto and DynamoDB Local (tests/functions/test_sample_events.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from shop.http_api.routes import ROUTES
from shop.limits import MAX_ID_LENGTH
from tests.functions.apigw import ALICE, BOB, routes_on
from tests.functions.test_sample_events import EVENT_FILES, STATUS

# The refusals of the routes whose samples are all successes (POST /sessions takes no input: nothing to refuse).
REFUSALS: list[tuple[str, str, dict[str, Any], int, str]] = [
    ("DELETE", "/customers/alice/cart", {"claims": BOB}, 403, "FORBIDDEN"),
    ("DELETE", f"/sessions/{'s' * (MAX_ID_LENGTH + 1)}", {}, 422, "VALIDATION_ERROR"),
    ("GET", "/categories", {"query": {"limit": "0"}}, 422, "VALIDATION_ERROR"),
    ("GET", "/products", {"query": {"category": "computers", "sort": "newest"}}, 422, "VALIDATION_ERROR"),
    ("GET", "/products", {"query": {"sort": "price_asc"}}, 422, "VALIDATION_ERROR"),
    (
        "GET",
        "/customers/alice/reviews",
        {"query": {"next_token": "forged"}, "claims": ALICE},
        400,
        "INVALID_NEXT_TOKEN",
    ),
]
# issue 25's routes: an order placed with payments off has no payment; with payments off the webhook is not there.
REFUSALS += [
    ("GET", "/orders/00-alice-pending/payment", {"claims": ALICE}, 404, "PAYMENT_NOT_FOUND"),
    ("POST", "/webhooks/stripe", {"raw_body": "{}", "headers": {"Stripe-Signature": "t=1,v1=00"}}, 404, "NOT_FOUND"),
]
# Their successes need PAYMENTS=stripe and an order placed under it (the `paying` fixture):
# (method, path with {order_id}, what answers 200).
PAID_SUCCESSES = [
    ("GET", "/orders/{order_id}/payment", "the owner reads the payment"),
    ("POST", "/webhooks/stripe", "a signed authorisation of the order's intent"),
]
TAKES_NO_INPUT = {"POST /sessions"}


@pytest.mark.parametrize("path", EVENT_FILES, ids=[f"{p.parent.name}/{p.stem}" for p in EVENT_FILES])
def test_sample_event(handlers, path):
    expected = int(STATUS.search(path.name).group(1))  # type: ignore[union-attr]
    reply = handlers.call_event(path.parent.name, json.loads(path.read_text()))
    assert reply.status == expected, reply.body
    if expected >= 400:
        assert set(reply.body) == {"error"}
        assert re.fullmatch(r"[A-Z_]+", reply.body["error"]["code"])


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"), REFUSALS, ids=[f"{m} {p[:40]}" for m, p, *_ in REFUSALS]
)
def test_a_refusal(handlers, method, path, kwargs, status, code):  # noqa: PLR0917
    reply = handlers.call(method, path, **kwargs)
    assert (reply.status, reply.code) == (status, code), reply.body


@pytest.mark.parametrize(("method", "path", "what"), PAID_SUCCESSES, ids=[f"{m} {p}" for m, p, _ in PAID_SUCCESSES])
def test_a_paid_success(paying, method, path, what):
    from tests.unit.handlers.test_payment_handlers import deliver, place

    order = place(paying, f"paid-success-{method}")
    if method == "GET":
        reply = paying.call(method, path.format(order_id=order["order_id"]), claims=ALICE)
    else:
        intent = order["payment"]["intent_id"]
        reply = deliver(paying, "evt_paid_success", "payment_intent.succeeded", intent, order["order_id"])
    assert reply.status == 200, (what, reply.body)


def test_every_route_is_answered_with_a_success_and_a_refusal():
    answered: dict[str, set[int]] = {route: {400} for route in TAKES_NO_INPUT}
    for method, url, _ in PAID_SUCCESSES:
        (route,) = [route for route in routes_on(url.format(order_id="o-1")) if route.method == method]
        answered.setdefault(route.route_key, set()).add(200)
    for path in EVENT_FILES:
        event = json.loads(path.read_text())
        answered.setdefault(event["routeKey"], set()).add(int(STATUS.search(path.name).group(1)))  # type: ignore[union-attr]
    for method, url, _, status, _ in REFUSALS:
        (route,) = [route for route in routes_on(url) if route.method == method]
        answered.setdefault(route.route_key, set()).add(status)
    missing = {
        route.route_key: sorted(answered.get(route.route_key, set()))
        for route in ROUTES
        if not any(status < 300 for status in answered.get(route.route_key, ()))
        or not any(400 <= status < 500 for status in answered.get(route.route_key, ()))
    }
    assert missing == {}
