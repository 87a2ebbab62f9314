"""Every sample event of the API functions (events/<function>/*.json: API Gateway HTTP API payload 2.0, each
route's success and its 4xx answers) answers on the in-memory store the status its file name promises, as it
does on moto and DynamoDB Local (tests/functions/test_sample_events.py)."""

from __future__ import annotations

import json
import re

import pytest

from shop.http_api.routes import ROUTES
from shop.limits import MAX_ID_LENGTH
from tests.functions.apigw import ALICE, BOB, routes_on
from tests.functions.test_sample_events import EVENT_FILES, STATUS

# The refusals of the routes whose samples are all successes (POST /sessions takes no input: nothing to refuse).
REFUSALS = [
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


def test_every_route_is_answered_with_a_success_and_a_refusal():
    answered: dict[str, set[int]] = {route: {400} for route in TAKES_NO_INPUT}
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
