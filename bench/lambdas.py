"""Drive the functions in-process as Lambda would: API Gateway HTTP API (payload 2.0) events, a context.

Every function's module is called ``handler``; each is loaded under its own alias, and the sibling
modules it imported from its folder are moved out of ``sys.modules`` afterwards so the next
function's same-named modules do not collide.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import pathlib
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = REPO_ROOT / "functions"
SHARED_LAYER = REPO_ROOT / "layers" / "shared" / "python"
HTTP_FUNCTIONS = ("customers", "products", "orders", "sessions")
ALL_FUNCTIONS = (*HTTP_FUNCTIONS, "order_events")

# api.md's routes and the function serving each (docs/conventions.md).
ROUTES: list[tuple[str, str, str]] = [
    ("POST", "/customers", "customers"),
    ("GET", "/customers", "customers"),
    ("GET", "/customers/{customer_id}", "customers"),
    ("PATCH", "/customers/{customer_id}", "customers"),
    ("GET", "/customers/{customer_id}/orders", "orders"),
    ("GET", "/customers/{customer_id}/notifications", "customers"),
    ("GET", "/customers/{customer_id}/reviews", "products"),
    ("POST", "/products", "products"),
    ("GET", "/products", "products"),
    ("GET", "/products/{product_id}", "products"),
    ("PATCH", "/products/{product_id}", "products"),
    ("POST", "/products/{product_id}/stock", "products"),
    ("GET", "/products/{product_id}/reviews", "products"),
    ("POST", "/products/{product_id}/reviews", "products"),
    ("POST", "/sessions", "sessions"),
    ("GET", "/sessions/{session_id}", "sessions"),
    ("PUT", "/sessions/{session_id}/cart/{product_id}", "sessions"),
    ("DELETE", "/sessions/{session_id}", "sessions"),
    ("POST", "/orders", "orders"),
    ("GET", "/orders", "orders"),
    ("GET", "/orders/{order_id}", "orders"),
    ("PATCH", "/orders/{order_id}", "orders"),
    ("POST", "/orders/{order_id}/cancel", "orders"),
    ("POST", "/orders/{order_id}/return", "orders"),
    ("GET", "/products/{product_id}/sales", "orders"),
    ("GET", "/sales/top", "orders"),
]


class LambdaContext:
    def __init__(self, function_name: str, memory_mb: int = 512, timeout_s: float = 10.0) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "bench"
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def match_route(method: str, path: str) -> tuple[str, str, dict[str, str]] | None:
    """(route key, function, path parameters) for a concrete path, or None."""
    parts = path.strip("/").split("/")
    for route_method, template, function in ROUTES:
        if route_method != method:
            continue
        tparts = template.strip("/").split("/")
        if len(tparts) != len(parts):
            continue
        params: dict[str, str] = {}
        for tpart, part in zip(tparts, parts, strict=True):
            if tpart.startswith("{"):
                params[tpart[1:-1]] = part
            elif tpart != part:
                break
        else:
            return f"{method} {template}", function, params
    return None


def http_event(
    method: str,
    path: str,
    *,
    query: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    sub: str | None = None,
    groups: list[str] | None = None,
) -> dict[str, Any]:
    """A payload format 2.0 event as the HTTP API sends it after its JWT authorizer accepted the token."""
    matched = match_route(method, path)
    if matched is None:
        raise ValueError(f"no route for {method} {path}")
    route_key, _, params = matched
    raw_query = "&".join(f"{k}={v}" for k, v in (query or {}).items())
    all_headers = {"host": "bench.local", "user-agent": "bench", "accept": "application/json"}
    if body is not None:
        all_headers["content-type"] = "application/json"
    all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
    now = time.time()
    context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "bench",
        "domainName": "bench.local",
        "domainPrefix": "bench",
        "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "bench"},
        "requestId": base64.b64encode(os.urandom(9)).decode(),
        "routeKey": route_key,
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }
    if sub is not None:
        claims = {"sub": sub, "iss": "https://bench.local", "token_use": "access"}
        if groups:
            claims["cognito:groups"] = "[" + " ".join(groups) + "]"
        context["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": all_headers,
        "requestContext": context,
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = dict(query)
    if params:
        event["pathParameters"] = params
    if body is not None:
        event["body"] = body if isinstance(body, str) else json.dumps(body)
    return event


@dataclass
class Response:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, result: Any) -> Response:
        raw = result.get("body") if isinstance(result, dict) else None
        if isinstance(result, dict) and result.get("isBase64Encoded") and raw:
            raw = base64.b64decode(raw).decode()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        headers = {str(k).lower(): str(v) for k, v in (result.get("headers") or {}).items()}
        return cls(int(result.get("statusCode", 200)), body, headers)


def handler_path(function: str) -> pathlib.Path:
    return FUNCTIONS_DIR / function / "handler.py"


def available(function: str) -> bool:
    return handler_path(function).is_file()


def load_handler(function: str) -> Callable[..., Any]:
    """Import functions/<function>/handler.py under a private alias, as its own Lambda would."""
    code_dir = str(FUNCTIONS_DIR / function)
    if str(SHARED_LAYER) not in sys.path:
        sys.path.append(str(SHARED_LAYER))
    before = set(sys.modules)
    sys.path.insert(0, code_dir)
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_fn_{function}", handler_path(function))
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {handler_path(function)}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(code_dir)
        for name in set(sys.modules) - before:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file.startswith(code_dir + os.sep) and name != f"_bench_fn_{function}":
                sys.modules[f"_bench_fn_{function}.{name}"] = sys.modules.pop(name)
    fn = module.handler
    if not callable(fn):
        raise TypeError(f"{handler_path(function)} has no callable handler")
    return fn


class Functions:
    """The functions that exist in the tree, loaded once; invoke by route or by name."""

    def __init__(self) -> None:
        self.handlers: dict[str, Callable[..., Any]] = {}
        self.errors: dict[str, str] = {}
        for function in ALL_FUNCTIONS:
            if not available(function):
                self.errors[function] = f"missing: functions/{function}/handler.py"
                continue
            try:
                self.handlers[function] = load_handler(function)
            except Exception as exc:
                self.errors[function] = f"import failed: {type(exc).__name__}: {exc}"

    def has(self, function: str) -> bool:
        return function in self.handlers

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        return self.handlers[function](event, LambdaContext(function))

    def request(self, method: str, path: str, **kwargs: Any) -> Response:
        matched = match_route(method, path)
        if matched is None:
            raise ValueError(f"no route for {method} {path}")
        return Response.of(self.invoke(matched[1], http_event(method, path, **kwargs)))
