"""The API functions called in-process for the tests: local_runtime's harness, with test callers and test knobs.

`call` sends a request the way API Gateway would (`local_runtime.in_process`); `event` builds the
payload 2.0 event with what a test may want beyond a client's reach: claims as given (forms the
authorizer never sends), a path as written (encoded, though API Gateway decodes it), a body
verbatim (even a lone surrogate) or base64-encoded.
"""

from __future__ import annotations

import base64
import json
import pathlib
import re
from typing import Any

from local_runtime.in_process import InProcessFunctions, Reply, declared_routes
from shop.http_api.routes import ROUTES, Route

REPO = pathlib.Path(__file__).resolve().parents[2]
FUNCTIONS = ("customers", "products", "orders", "sessions", "payments")

ALICE = {"sub": "alice"}
BOB = {"sub": "bob"}
ADMIN = {"sub": "admin-1", "cognito:groups": "[admin]"}

API = InProcessFunctions(
    headers={
        "accept": "application/json",
        "host": "api.example.com",
        "user-agent": "pytest",
        "x-forwarded-proto": "https",
    },
    source_ip="203.0.113.7",
)


def routes_on(path: str) -> list[Route]:
    """The routes of shop.http_api.routes whose path template the concrete path matches, as API Gateway's would."""
    return [route for route in ROUTES if re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", route.path), path)]


def route_function(method: str, path: str) -> str:
    """The function the request's route names; for a path no route has, the function serving its first
    segment (customers for `/`), so that the function's own router answers it."""
    match = API.route(method, path)
    if match is not None:
        return match.route.function
    first = path.strip("/").split("/")[0]
    return next((route.function for route in declared_routes() if route.path.split("/")[1] == first), "customers")


def event(
    method: str,
    path: str,
    *,
    body: Any = None,
    raw_body: str | None = None,
    claims: dict[str, Any] | None = None,
    query: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    route_key: str | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    """A payload-format-2.0 event as API Gateway sends it, claims from the JWT authorizer (iss, aud, token_use
    added); `route_key` overrides the matched route's."""
    text = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
    all_headers = {"content-type": "application/json"} if text is not None else {}
    if claims:
        all_headers["authorization"] = "Bearer eyJ.test.token"
    all_headers.update(headers or {})
    full_claims = (
        {"iss": "https://issuer.example.com", "aud": "shop", "token_use": "access", **claims} if claims else None
    )
    evt = API.http_event(method, path, query=query, headers=all_headers, claims=full_claims)
    context = evt["requestContext"]
    evt["rawPath"] = context["http"]["path"] = path
    if route_key is not None:
        evt["routeKey"] = context["routeKey"] = route_key
    if full_claims is not None:
        context["authorizer"]["jwt"]["claims"] = full_claims
    if text is not None:
        evt["body"] = base64.b64encode(text.encode()).decode() if base64_body else text
        evt["isBase64Encoded"] = base64_body
    return evt


def invoke(function: str, evt: dict[str, Any]) -> Reply:
    return Reply.of(API.invoke(function, evt))


def call(method: str, path: str, **kwargs: Any) -> Reply:
    """Route the request to the function that owns the path (as API Gateway would) and invoke it."""
    return invoke(route_function(method, path), event(method, path, **kwargs))
