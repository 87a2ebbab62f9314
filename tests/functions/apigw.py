"""API Gateway HTTP API (payload format 2.0) events and in-process invocation of the API functions."""

from __future__ import annotations

import base64
import importlib.util
import json
import pathlib
import re
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from shop.http_api.routes import ROUTES, Route

REPO = pathlib.Path(__file__).resolve().parents[2]
FUNCTIONS = ("customers", "products", "orders", "sessions")

ALICE = {"sub": "alice"}
BOB = {"sub": "bob"}
ADMIN = {"sub": "admin-1", "cognito:groups": "[admin]"}


def load_handler(function: str) -> Any:
    """functions/<function>/handler.py as its own module (every function's module is called `handler`)."""
    name = f"shop_function_{function}_handler"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "functions" / function / "handler.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def routes_on(path: str) -> list[Route]:
    """The routes of shop.http_api.routes whose path template the concrete path matches, as API Gateway's would."""
    return [route for route in ROUTES if re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", route.path), path)]


def route_function(path: str) -> str:
    """The function serving the path's routes; a path of no route goes to its first segment's function."""
    for route in routes_on(path):
        return route.function
    parts = path.strip("/").split("/")
    return parts[0] if parts[0] in FUNCTIONS else "customers"


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
    """A payload-format-2.0 event as API Gateway sends it (headers lower-case, claims from the JWT authorizer)."""
    now = time.time()
    text = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
    all_headers = {
        "accept": "application/json",
        "host": "api.example.com",
        "user-agent": "pytest",
        "x-forwarded-proto": "https",
    }
    if text is not None:
        all_headers["content-type"] = "application/json"
    if claims:
        all_headers["authorization"] = "Bearer eyJ.test.token"
    all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
    request_context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "api1234567",
        "domainName": "api1234567.execute-api.us-east-1.amazonaws.com",
        "domainPrefix": "api1234567",
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": "203.0.113.7",
            "userAgent": "pytest",
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": route_key or f"{method} {path}",
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }
    if claims:
        full = {"iss": "https://issuer.example.com", "aud": "shop", "token_use": "access", **claims}
        request_context["authorizer"] = {"jwt": {"claims": full, "scopes": None}}
    result: dict[str, Any] = {
        "version": "2.0",
        "routeKey": request_context["routeKey"],
        "rawPath": path,
        "rawQueryString": urlencode(query or {}),
        "headers": all_headers,
        "requestContext": request_context,
        "isBase64Encoded": False,
    }
    if query:
        result["queryStringParameters"] = {k: str(v) for k, v in query.items()}
    if text is not None:
        if base64_body:
            text = base64.b64encode(text.encode()).decode()
            result["isBase64Encoded"] = True
        result["body"] = text
    return result


class FakeContext:
    function_name = "shop-api-test"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:shop-api-test"

    def __init__(self) -> None:
        self.aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any

    @property
    def code(self) -> str | None:
        return self.body.get("error", {}).get("code") if isinstance(self.body, dict) else None


def invoke(function: str, evt: dict[str, Any]) -> Reply:
    raw = load_handler(function).handler(evt, FakeContext())
    text = raw.get("body") or ""
    if raw.get("isBase64Encoded"):
        text = base64.b64decode(text).decode()
    headers = {k.lower(): v for k, v in (raw.get("headers") or {}).items()}
    body = json.loads(text) if text and headers.get("content-type", "").startswith("application/json") else text
    return Reply(raw["statusCode"], headers, body)


def call(method: str, path: str, **kwargs: Any) -> Reply:
    """Route the request to the function that owns the path (as API Gateway would) and invoke it."""
    return invoke(route_function(path), event(method, path, **kwargs))
