"""The authorization matrix: every route as anonymous, customer A (alice), customer B (bob) and admin.

Each cell runs on a fresh seeded table (events/seed.json), on moto only: who may call a route is decided
before the store is touched, and the store semantics the routes rely on are proved on DynamoDB Local by
the handler, repository and stream tests (docs/testing.md). The
status is what the contract names for that caller with that data: e.g. POST /customers is allowed
for anyone signed in, and alice and bob already have profiles, so they get 409 (not 401/403).
"""

from __future__ import annotations

from typing import Any

import pytest

from shop.http_api.routes import ROUTES, Route
from tests.functions.apigw import ADMIN, ALICE, BOB, call, routes_on

ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}
CALLERS = {"anonymous": None, "alice": ALICE, "bob": BOB, "admin": ADMIN}
SESSION = "sess-demo-cart-0123456789abcdef"

# (method, path, request kwargs) -> expected status for anonymous, alice, bob, admin
MATRIX: list[tuple[str, str, dict[str, Any], tuple[int, int, int, int]]] = [
    ("POST", "/customers", {"body": {"email": "new@example.com", "name": "N"}}, (401, 409, 409, 201)),
    ("GET", "/customers/alice", {}, (401, 200, 403, 200)),
    ("PATCH", "/customers/alice", {"body": {"name": "Alice 2"}}, (401, 200, 403, 200)),
    ("GET", "/customers", {"query": {"email": "alice@example.com"}}, (401, 403, 403, 200)),
    ("GET", "/customers/alice/orders", {}, (401, 200, 403, 200)),
    ("GET", "/customers/alice/notifications", {}, (401, 200, 403, 200)),
    ("GET", "/customers/alice/reviews", {}, (200, 200, 200, 200)),
    ("POST", "/products", {"body": {"name": "P", "category": "c", "price_cents": 1}}, (401, 403, 403, 201)),
    ("GET", "/products", {"query": {"category": "peripherals"}}, (200, 200, 200, 200)),
    ("GET", "/products/prod-keyboard", {}, (200, 200, 200, 200)),
    ("PATCH", "/products/prod-keyboard", {"body": {"name": "K2"}}, (401, 403, 403, 200)),
    ("POST", "/products/prod-keyboard/stock", {"body": {"delta": 1}}, (401, 403, 403, 200)),
    ("GET", "/products/prod-mouse/reviews", {}, (200, 200, 200, 200)),
    (
        "POST",
        "/products/prod-keyboard/reviews",
        {"body": {"rating": 5, "title": "t", "body": "b"}},
        (401, 201, 201, 201),
    ),
    ("POST", "/sessions", {}, (201, 201, 201, 201)),
    ("GET", f"/sessions/{SESSION}", {}, (200, 200, 200, 200)),
    ("PUT", f"/sessions/{SESSION}/cart/prod-mouse", {"body": {"quantity": 1}}, (200, 200, 200, 200)),
    ("DELETE", f"/sessions/{SESSION}", {}, (204, 204, 204, 204)),
    (
        "POST",
        "/orders",
        {
            "body": {"lines": [{"product_id": "prod-cable", "quantity": 1}], "shipping_address": ADDRESS},
            "headers": {"Idempotency-Key": "k"},
        },
        (401, 201, 201, 201),
    ),
    ("GET", "/orders/00-alice-pending", {}, (401, 200, 404, 200)),
    ("GET", "/orders", {"query": {"status": "PENDING"}}, (401, 403, 403, 200)),
    (
        "PATCH",
        "/orders/00-alice-pending",
        {"body": {"status": "CONFIRMED"}, "headers": {"If-Match": '"1"'}},
        (401, 403, 403, 200),
    ),
    ("POST", "/orders/00-alice-pending/cancel", {}, (401, 200, 404, 200)),
    ("GET", "/admin/alerts", {}, (401, 403, 403, 200)),
    # Customer carts: self or admin reads, only self writes; alice's cart holds a mouse (events/seed.json).
    ("GET", "/customers/alice/cart", {}, (401, 200, 403, 200)),
    ("PUT", "/customers/alice/cart/prod-cable", {"body": {"quantity": 1}}, (401, 200, 403, 403)),
    ("POST", "/customers/alice/cart/merge", {"body": {"session_id": SESSION}}, (401, 200, 403, 403)),
    ("DELETE", "/customers/alice/cart", {}, (401, 204, 403, 403)),
    (  # each caller checks out their own cart: bob's and the admin's are empty
        "POST",
        "/orders",
        {"body": {"cart": "customer", "shipping_address": ADDRESS}, "headers": {"Idempotency-Key": "k"}},
        (401, 201, 409, 409),
    ),
    # Flash-sale stock shards (issue 11).
    ("POST", "/products/prod-keyboard/stock-shards", {"body": {"shards": 4}}, (401, 403, 403, 200)),
    # issue 12: the catalogue tree, listings and archive
    (
        "POST",
        "/categories",
        {"body": {"slug": "keyboards", "name": "K", "parent": "peripherals"}},
        (401, 403, 403, 201),
    ),
    ("GET", "/categories", {}, (200, 200, 200, 200)),
    ("GET", "/categories/peripherals", {}, (200, 200, 200, 200)),
    ("PATCH", "/categories/cables", {"body": {"name": "Leads"}}, (401, 403, 403, 200)),
    ("GET", "/products", {"query": {"sort": "newest"}}, (200, 200, 200, 200)),
    ("GET", "/products", {"query": {"category": "computers", "sort": "price_asc"}}, (200, 200, 200, 200)),
    ("DELETE", "/products/prod-soldout", {}, (401, 403, 403, 200)),
    # issue 13: the owner returns (bob's delivered order; an admin is not its owner); sales are admins'
    ("POST", "/orders/00-bob-delivered/return", {"body": {"reason": "Too short."}}, (401, 404, 200, 403)),
    (
        "GET",
        "/products/prod-mouse/sales",
        {"query": {"from": "2026-01-01", "to": "2026-01-31"}},
        (401, 403, 403, 200),
    ),
    ("GET", "/sales/top", {"query": {"date": "2026-01-01"}}, (401, 403, 403, 200)),
    # issue 25: an order's payment is its owner's or an admin's (the seed's orders are version 2's, placed without
    # one: they say so; to anyone else the order does not exist); Stripe's webhook is public and, with payments
    # off (the default), not there. The paid cases: tests/functions/test_payment_checkout.py, test_payment_webhook.py.
    ("GET", "/orders/00-alice-pending/payment", {}, (401, 404, 404, 404)),
    (
        "POST",
        "/webhooks/stripe",
        {"raw_body": '{"id": "evt_1"}', "headers": {"Stripe-Signature": "t=1,v1=00"}},
        (404, 404, 404, 404),
    ),
    # issue 39: ship_without_payment is an admin's (a PENDING order cannot ship: 409 INVALID_TRANSITION for them)
    (
        "PATCH",
        "/orders/00-alice-pending",
        {
            "body": {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "T1", "ship_without_payment": True},
            "headers": {"If-Match": '"1"'},
        },
        (401, 403, 403, 409),
    ),
    # issue 39: the confirmed orders whose card authorisation will soon lapse are listed for admins only
    ("GET", "/orders", {"query": {"payment": "expiring"}}, (401, 403, 403, 200)),
    # issue 37: the quote and a destination's options are anyone's (a session's checkout starts before sign-in);
    # shipping zones and tax rates are the admins'
    (
        "POST",
        "/checkout/quote",
        {"body": {"lines": [{"product_id": "prod-cable", "quantity": 1}], "shipping_address": ADDRESS}},
        (200, 200, 200, 200),
    ),
    ("GET", "/shipping/options", {"query": {"country": "US"}}, (200, 200, 200, 200)),
    (
        "PUT",
        "/shipping/zones/zone-auth",
        {
            "body": {
                "name": "Z",
                "countries": ["NZ"],
                "options": [{"option_id": "std", "name": "S", "price_cents": 500}],
            }
        },
        (401, 403, 403, 200),
    ),
    ("PUT", "/tax/rates/NZ", {"body": {"rate_bps": 1500}}, (401, 403, 403, 200)),
    # promotions are the admins' (a customer gives a code at checkout; POST /orders and the quote take it)
    ("POST", "/promotions", {"body": {"code": "AUTH10", "kind": "percent", "value": 10}}, (401, 403, 403, 201)),
    ("GET", "/promotions", {}, (401, 403, 403, 200)),
    ("GET", "/promotions/unknown", {}, (401, 403, 403, 404)),
    ("PATCH", "/promotions/unknown", {"body": {"end": True}}, (401, 403, 403, 404)),
]
# The error code of a 404 where it is not ORDER_NOT_FOUND: (method, path) -> caller -> code.
NOT_FOUND_CODES = {
    ("GET", "/orders/00-alice-pending/payment"): {"alice": "PAYMENT_NOT_FOUND", "admin": "PAYMENT_NOT_FOUND"},
    ("POST", "/webhooks/stripe"): dict.fromkeys(CALLERS, "NOT_FOUND"),
    ("GET", "/promotions/unknown"): {"admin": "PROMOTION_NOT_FOUND"},
    ("PATCH", "/promotions/unknown"): {"admin": "PROMOTION_NOT_FOUND"},
}

CASES = [
    pytest.param(method, path, kwargs, caller, expected[index], id=f"{method} {path} as {caller}")
    for method, path, kwargs, expected in MATRIX
    for index, caller in enumerate(CALLERS)
]


@pytest.mark.parametrize(("method", "path", "kwargs", "caller", "expected"), CASES)
def test_authorization_matrix(moto_api, method, path, kwargs, caller, expected):  # noqa: PLR0917
    reply = call(method, path, claims=CALLERS[caller], **kwargs)
    assert reply.status == expected, reply.body
    codes = {401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "ORDER_NOT_FOUND"}
    codes[404] = NOT_FOUND_CODES.get((method, path), {}).get(caller, codes[404])
    if expected in codes:
        assert reply.code == codes[expected]


def _route_of(method: str, path: str) -> Route:
    (route,) = [route for route in routes_on(path) if route.method == method]
    return route


def test_matrix_covers_every_route_of_the_table():
    assert {_route_of(method, path) for method, path, _, _ in MATRIX} == set(ROUTES)


@pytest.mark.parametrize(
    ("method", "path", "anonymous"), [pytest.param(m, p, e[0], id=f"{m} {p}") for m, p, _, e in MATRIX]
)
def test_anonymous_callers_pass_exactly_the_public_routes(method, path, anonymous):
    """The matrix's anonymous column agrees with the table's public flag, which API Gateway enforces."""
    assert (anonymous != 401) == _route_of(method, path).public


@pytest.mark.parametrize(
    ("groups", "is_admin"),
    [
        ("[admin]", True),
        ("[customer admin]", True),
        ("[admin,customer]", False),  # one group named "admin,customer": API Gateway separates with spaces
        ('["admin"]', False),  # a JSON string is not a form API Gateway sends
        ("ops,admin", False),
        (["admin", "customer"], True),
        ("[customer]", False),
        ("[administrators]", False),
        ("", False),
        ([], False),
    ],
)
def test_groups_claim_forms(moto_api, groups, is_admin):
    reply = call("GET", "/orders", claims={"sub": "someone", "cognito:groups": groups}, query={"status": "PENDING"})
    assert reply.status == (200 if is_admin else 403)


def test_claims_without_sub_are_anonymous(moto_api):
    assert call("GET", "/customers/alice", claims={"cognito:groups": "[admin]"}).status == 401
