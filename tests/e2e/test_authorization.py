"""Authorization through the gateway: the JWT authorizer's 401s, then the functions' 403/404 rules.

Every protected route without a token is 401 before any function runs; bad tokens of every kind
are 401; customer B cannot see customer A's things (another customer's order reads as 404, their
profile and lists as 403); a customer on admin routes is 403; public routes need no token.
"""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pytest

from tests.e2e.conftest import ADDRESS, Api, Stack, create_product, expect, order_lines, place_order

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

# (method, path template, body) for every route the contract protects ("signed-in", "self", "admin").
PROTECTED = [
    ("POST", "/customers", {"email": "x@example.com", "name": "X"}),
    ("GET", "/customers?email=x%40example.com", None),
    ("GET", "/customers/{cid}", None),
    ("PATCH", "/customers/{cid}", {"name": "Y"}),
    ("GET", "/customers/{cid}/orders", None),
    ("GET", "/customers/{cid}/notifications", None),
    ("POST", "/products", {"name": "N", "category": "c", "price_cents": 1}),
    ("PATCH", "/products/{pid}", {"name": "N"}),
    ("POST", "/products/{pid}/stock", {"delta": 1}),
    ("POST", "/products/{pid}/reviews", {"rating": 5, "title": "t", "body": "b"}),
    ("POST", "/orders", {"lines": [{"product_id": "{pid}", "quantity": 1}], "shipping_address": ADDRESS}),
    ("GET", "/orders?status=PENDING", None),
    ("GET", "/orders/{oid}", None),
    ("PATCH", "/orders/{oid}", {"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"}),
    ("POST", "/orders/{oid}/cancel", None),
    ("GET", "/admin/alerts", None),
    ("POST", "/categories", {"slug": "nope", "name": "Nope"}),
    ("PATCH", "/categories/nope", {"name": "Nope"}),
    ("DELETE", "/products/{pid}", None),
    ("POST", "/orders/{oid}/return", {"reason": "Too small."}),
    ("GET", "/products/{pid}/sales?from=2026-01-01&to=2026-01-31", None),
    ("GET", "/sales/top?date=2026-01-01", None),
]


@pytest.fixture(scope="module")
def world(stack: Stack) -> dict[str, Any]:
    """Customer A with a profile and an order, customer B with a profile, a product, an admin."""
    api = stack.api
    uid = f"{time.time_ns():x}"
    admin = stack.admin_token()
    a_id, b_id = f"e2e-authz-a-{uid}", f"e2e-authz-b-{uid}"
    a, b = stack.token(a_id), stack.token(b_id)
    expect(api.post("/customers", token=a, json={"email": f"a-{uid}@example.com", "name": "A"}), 201)
    expect(api.post("/customers", token=b, json={"email": f"b-{uid}@example.com", "name": "B"}), 201)
    product = create_product(api, admin, category=f"e2e-authz-{uid}", name="Widget", price_cents=500, stock=50)
    order = expect(place_order(api, a, f"authz-{uid}", order_lines(product["product_id"])), 201)
    return {
        "admin": admin,
        "a": a,
        "b": b,
        "a_id": a_id,
        "b_id": b_id,
        "pid": product["product_id"],
        "oid": order["order_id"],
        "uid": uid,
    }


def fill(template: Any, world: dict[str, Any]) -> Any:
    if isinstance(template, str):
        return template.format(cid=world["a_id"], pid=world["pid"], oid=world["oid"])
    if isinstance(template, dict):
        return {k: fill(v, world) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, world) for v in template]
    return template


def call(api: Api, method: str, path: str, body: Any, world: dict[str, Any], **kw: Any) -> Any:
    headers = kw.pop("headers", {})
    if method == "POST" and path == "/orders":
        headers["Idempotency-Key"] = f"authz-{time.time_ns()}"
    if method == "PATCH" and path.startswith("/orders/"):
        headers["If-Match"] = '"1"'
    return api.request(method, fill(path, world), json=fill(body, world), headers=headers, **kw)


def assert_authorizer_401(resp: Any) -> None:
    detail = f"{resp.request.method} {resp.request.url} -> {resp.status_code} {resp.text[:300]}"
    assert resp.status_code == 401, detail
    assert resp.json() == {"message": "Unauthorized"}, detail  # the gateway's answer, not a function's


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED, ids=[f"{m} {p}" for m, p, _ in PROTECTED])
def test_no_token_is_401_from_the_gateway(
    stack_api: Api, world: dict[str, Any], method: str, path: str, body: Any
) -> None:
    assert_authorizer_401(call(stack_api, method, path, body, world))


def _bad_tokens(stack: Stack, tmp: pathlib.Path) -> dict[str, str]:
    from local_runtime import auth

    now = time.time()
    good = auth.load_or_create_keys(stack.data_dir)
    stranger = auth.load_or_create_keys(tmp)  # another key pair...
    impostor = auth.KeyPair(stranger.private_pem, stranger.public_pem, good.kid)  # ...claiming the real kid
    sub = "e2e-badtoken"
    import jwt

    claims = {"sub": sub, "iss": auth.LOCAL_ISSUER, "aud": auth.LOCAL_AUDIENCE, "exp": int(now) + 600}
    return {
        "garbage": "not-a-jwt",
        "empty-bearer": "",
        "expired": auth.issue_token(good, sub, ttl_s=600, now=now - 3600),
        "not-yet-valid": auth.issue_token(good, sub, now=now + 3600),
        "wrong-issuer": auth.issue_token(good, sub, issuer="https://cognito-idp.example.com/evil"),
        "wrong-audience": auth.issue_token(good, sub, audience="someone-else", extra={"client_id": "someone-else"}),
        "unknown-key": auth.issue_token(stranger, sub),
        "forged-signature": auth.issue_token(impostor, sub, groups=["admin"]),
        "alg-none": jwt.encode({**claims, "cognito:groups": ["admin"]}, None, algorithm="none"),
        "hs256-with-public-key": jwt.encode(claims, "not-the-rsa-key-but-a-shared-secret", algorithm="HS256"),
        "tampered-payload": _tamper(auth.issue_token(good, sub)),
    }


def _tamper(token: str) -> str:
    """Swap the payload for one that claims the admin group, keep the (now wrong) signature."""
    import base64
    import json

    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["cognito:groups"] = ["admin"]
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{header}.{forged}.{signature}"


def test_bad_tokens_are_401(stack: Stack, stack_api: Api, world: dict[str, Any], tmp_path: pathlib.Path) -> None:
    routes = [("GET", "/customers/{cid}", None), ("POST", "/products", PROTECTED[6][2]), ("GET", "/orders/{oid}", None)]
    for name, token in _bad_tokens(stack, tmp_path).items():
        for method, path, body in routes:
            resp = call(stack_api, method, path, body, world, headers={"Authorization": f"Bearer {token}"})
            assert resp.status_code == 401, f"{name}: {method} {path} -> {resp.status_code} {resp.text[:200]}"
            assert resp.json() == {"message": "Unauthorized"}, name


def test_a_valid_token_without_the_bearer_prefix_or_with_odd_case_is_accepted(
    stack_api: Api, world: dict[str, Any]
) -> None:
    """API Gateway's JWT authorizer takes the token with or without `Bearer `; the local one does too."""
    for value in (world["a"], f"bearer {world['a']}", f"Bearer {world['a']}"):
        expect(stack_api.get(f"/customers/{world['a_id']}", headers={"Authorization": value}), 200)


def test_the_cli_token_is_accepted(stack: Stack, stack_api: Api, world: dict[str, Any]) -> None:
    """`python -m local_runtime token` (what `make -s token` runs) prints a token the gateway accepts."""
    admin = stack.cli_token(f"e2e-cli-admin-{world['uid']}", groups="admin")
    create_product(stack_api, admin, category=f"e2e-cli-{world['uid']}", name="Cli", price_cents=1, stock=0)
    customer = stack.cli_token(f"e2e-cli-{world['uid']}")
    expect(stack_api.get(f"/customers/e2e-cli-{world['uid']}/orders", token=customer), 200)
    expect(stack_api.post("/products", token=customer, json=PROTECTED[6][2]), 403)


def test_another_customers_order_is_404_and_their_profile_403(stack_api: Api, world: dict[str, Any]) -> None:
    b, a_id, oid = world["b"], world["a_id"], world["oid"]
    expect(stack_api.get(f"/orders/{oid}", token=b), 404)
    expect(stack_api.post(f"/orders/{oid}/cancel", token=b), 404)
    expect(stack_api.get(f"/customers/{a_id}", token=b), 403)
    expect(stack_api.patch(f"/customers/{a_id}", token=b, json={"name": "Mallory"}), 403)
    expect(stack_api.get(f"/customers/{a_id}/orders", token=b), 403)
    expect(stack_api.get(f"/customers/{a_id}/notifications", token=b), 403)
    # and A (the owner) or an admin can
    assert expect(stack_api.get(f"/orders/{oid}", token=world["a"]), 200)["customer_id"] == a_id
    assert expect(stack_api.get(f"/orders/{oid}", token=world["admin"]), 200)["customer_id"] == a_id
    assert expect(stack_api.get(f"/customers/{a_id}", token=world["admin"]), 200)["name"] == "A"
    assert [
        o["order_id"] for o in expect(stack_api.get(f"/customers/{a_id}/orders", token=world["admin"]), 200)["items"]
    ] == [oid]
    # B's own order list does not show A's order
    assert expect(stack_api.get(f"/customers/{world['b_id']}/orders", token=b), 200)["items"] == []
    # nothing B tried changed A's order
    assert expect(stack_api.get(f"/orders/{oid}", token=world["a"]), 200)["status"] in ("PENDING", "CONFIRMED")


ADMIN_ONLY = [
    ("POST", "/products", {"name": "N", "category": "c", "price_cents": 1}),
    ("PATCH", "/products/{pid}", {"name": "Renamed by a customer"}),
    ("POST", "/products/{pid}/stock", {"delta": 1}),
    ("GET", "/customers?email=x%40example.com", None),
    ("GET", "/orders?status=PENDING", None),
    ("PATCH", "/orders/{oid}", {"status": "CANCELLED"}),
    ("GET", "/admin/alerts", None),
    ("POST", "/categories", {"slug": "nope", "name": "Nope"}),
    ("PATCH", "/categories/nope", {"name": "Nope"}),
    ("DELETE", "/products/{pid}", None),
    ("GET", "/products/{pid}/sales?from=2026-01-01&to=2026-01-31", None),
    ("GET", "/sales/top?date=2026-01-01", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ONLY, ids=[f"{m} {p}" for m, p, _ in ADMIN_ONLY])
def test_customer_on_admin_routes_is_403(
    stack_api: Api, world: dict[str, Any], method: str, path: str, body: Any
) -> None:
    for who in ("a", "b"):  # the order's owner is not an admin either
        expect(call(stack_api, method, path, body, world, token=world[who]), 403)


def test_admin_only_changes_were_not_applied(stack_api: Api, world: dict[str, Any]) -> None:
    product = expect(stack_api.get(f"/products/{world['pid']}"), 200)
    assert product["name"] == "Widget"
    assert product["stock"] == 49  # 50 minus A's order, no +1 from a customer


def test_anonymous_on_public_routes(stack_api: Api, world: dict[str, Any]) -> None:
    pid, a_id = world["pid"], world["a_id"]
    assert expect(stack_api.get("/products", params={"category": f"e2e-authz-{world['uid']}"}), 200)["items"]
    assert expect(stack_api.get(f"/products/{pid}"), 200)["product_id"] == pid
    assert expect(stack_api.get(f"/products/{pid}/reviews"), 200)["items"] == []
    assert expect(stack_api.get(f"/customers/{a_id}/reviews"), 200)["items"] == []
    sid = expect(stack_api.post("/sessions"), 201)["session_id"]
    expect(stack_api.put(f"/sessions/{sid}/cart/{pid}", json={"quantity": 1}), 200)
    assert expect(stack_api.get(f"/sessions/{sid}"), 200)["cart"][0]["product_id"] == pid
    expect(stack_api.delete(f"/sessions/{sid}"), 204)
    expect(stack_api.get(f"/sessions/{sid}"), 404)
    assert stack_api.get("/openapi.json").json()["paths"]
    assert stack_api.get("/docs").status_code == 200
    expect(stack_api.get("/no/such/route"), 404, "NOT_FOUND")


def test_public_route_errors_keep_the_contract(stack_api: Api) -> None:
    expect(
        stack_api.get("/products", params={"sort": "price_asc"}), 422, "VALIDATION_ERROR"
    )  # a price sort needs a category
    expect(stack_api.get("/products", params={"category": "no-such-category"}), 404, "CATEGORY_NOT_FOUND")
    expect(stack_api.get("/products/no-such-product"), 404)
    expect(stack_api.get("/sessions/no-such-session"), 404)
    bad = stack_api.post("/sessions", data="{not json", headers={"Content-Type": "application/json"})
    assert bad.status_code in (201, 400), bad.text  # POST /sessions takes no body; if it reads one, 400
    forged = stack_api.get("/products", params={"category": "x", "next_token": "forged-token"})
    expect(forged, 400, "INVALID_NEXT_TOKEN")


def test_the_banner_prints_the_url_docs_and_working_tokens(stack: Stack, stack_api: Api, world: dict[str, Any]) -> None:
    """`make dev` prints the URL, the docs URL and ready-to-paste tokens for a demo customer and an admin."""
    out = stack.output()
    assert f"{stack.url}/docs" in out
    assert f"{stack.url}/openapi.json" in out
    tokens = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines() if line.startswith("export "))
    assert set(tokens) >= {"CUSTOMER_TOKEN", "ADMIN_TOKEN"}, out
    create_product(
        stack_api, tokens["ADMIN_TOKEN"], category=f"e2e-banner-{world['uid']}", name="B", price_cents=1, stock=0
    )
    expect(stack_api.get("/customers/demo-customer/orders", token=tokens["CUSTOMER_TOKEN"]), 200)
    expect(stack_api.post("/products", token=tokens["CUSTOMER_TOKEN"], json=PROTECTED[6][2]), 403)


def test_swagger_ui_works_offline(stack_api: Api) -> None:
    """GET /docs is a Swagger UI whose assets the gateway serves itself (no CDN)."""
    import re

    page = stack_api.get("/docs")
    assert page.status_code == 200
    assert "text/html" in page.headers["Content-Type"]
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets
    assert not [a for a in assets if a.startswith(("http:", "https:", "//"))], assets
    for asset in assets:
        resp = stack_api.get(asset)
        assert resp.status_code == 200, asset
        assert len(resp.content) > 1000, asset
    assert "/openapi.json" in page.text
