"""A local HTTP API: the template's routes, JWT authorizer and Lambda proxy integrations (payload 2.0)."""

from __future__ import annotations

import importlib.util
import json
import logging
import pathlib
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from local_runtime import events
from local_runtime.auth import JwtAuthorizer, Unauthorized
from local_runtime.functions import InvokeResult
from local_runtime.template import RouteDef

log = logging.getLogger("local_runtime.gateway")
JSON = "application/json"
# HTTP APIs accept bodies up to 10 MB; Lambda takes a synchronous invocation's event up to 6 MB.
MAX_HTTP_BODY_BYTES = 10 * 1024 * 1024
MAX_LAMBDA_EVENT_BYTES = 6 * 1024 * 1024


@dataclass(frozen=True)
class Match:
    route: RouteDef
    path_parameters: dict[str, str]


class Router:
    """HTTP API route selection: the most specific path wins (literal segments over variables over
    a greedy `{proxy+}`), an exact method over `ANY`, and `$default` catches the rest."""

    def __init__(self, routes: list[RouteDef]) -> None:
        self.default = next((r for r in routes if r.route_key == "$default"), None)
        self._compiled: list[tuple[tuple[int, int, int], str, re.Pattern[str], list[str], RouteDef]] = []
        for route in routes:
            if route.route_key == "$default":
                continue
            segments = [s for s in route.path.split("/") if s]
            names: list[str] = []
            parts: list[str] = []
            literal = 0
            greedy = 0
            for seg in segments:
                var = re.fullmatch(r"\{([A-Za-z0-9_]+)(\+?)\}", seg)
                if var:
                    names.append(var.group(1))
                    if var.group(2):
                        greedy = 1
                        parts.append(f"(?P<{var.group(1)}>.+)")
                    else:
                        parts.append(f"(?P<{var.group(1)}>[^/]+)")
                else:
                    literal += 1
                    parts.append(re.escape(seg))
            regex = re.compile("^/" + "/".join(parts) + "$")
            any_method = 1 if route.method == "ANY" else 0
            self._compiled.append(((greedy, -literal, any_method), route.method, regex, names, route))
        self._compiled.sort(key=lambda c: c[0])

    def match(self, method: str, path: str) -> Match | None:
        """The route for a decoded path; its variables are the decoded segments they matched."""
        methods = (method.upper(), "ANY")
        for _rank, route_method, regex, names, route in self._compiled:
            if route_method not in methods:
                continue
            found = regex.match(path)
            if found:
                return Match(route, {n: found.group(n) for n in names})
        if self.default is not None:
            return Match(self.default, {})
        return None


Invoker = Callable[[str, dict[str, Any]], InvokeResult]


class Gateway:
    def __init__(
        self,
        routes: list[RouteDef],
        invoke: Invoker,
        authorizer: JwtAuthorizer,
        *,
        openapi: Callable[[], dict[str, Any]] | None = None,
        swagger_dir: pathlib.Path | None = None,
    ) -> None:
        self.router = Router(routes)
        self.invoke = invoke
        self.authorizer = authorizer
        self.openapi = openapi
        self.swagger_dir = swagger_dir
        self._openapi_cache: bytes | None = None
        self._openapi_lock = threading.Lock()

    # -- the request path -------------------------------------------------------------------------
    def handle(self, request: events.HttpRequest) -> events.HttpResponse:
        if (request.method == "GET" and request.raw_path in ("/openapi.json", "/docs", "/docs/")) or (
            request.method == "GET" and request.raw_path.startswith("/docs/")
        ):
            local = self._local_route(request)
            if local is not None:
                return local
        try:
            path = events.decode_path(request.raw_path)
        except ValueError:
            return _json(400, {"message": "Bad Request"})
        match = self.router.match(request.method, path)
        if match is None:
            return _json(
                404, {"error": {"code": "NOT_FOUND", "message": f"no route for {request.method} {request.raw_path}"}}
            )
        claims = None
        scopes: list[str] | None = None
        if match.route.authorization_type == "JWT":
            auth_header = next((v for k, v in request.headers if k.lower() == "authorization"), None)
            try:
                claims, token_scopes = self.authorizer.verify(auth_header, match.route.scopes)
            except Unauthorized as exc:
                log.info("401 %s %s: %s", request.method, request.raw_path, exc)
                return _json(401, {"message": "Unauthorized"}, [("www-authenticate", "Bearer")])
            scopes = token_scopes or None
        event = events.http_api_event(
            request,
            route_key=match.route.route_key,
            path_parameters=match.path_parameters,
            claims=claims,
            scopes=scopes,
        )
        request_id = event["requestContext"]["requestId"]
        if _payload_bytes(event) > MAX_LAMBDA_EVENT_BYTES:
            log.info("413 %s %s: the event exceeds Lambda's request payload limit", request.method, request.raw_path)
            return _json(413, {"message": "Request Too Long"}, [("apigw-requestid", request_id)])
        result = self.invoke(match.route.function, event)
        if not result.ok:
            log.error("%s %s -> %s failed: %s", request.method, request.raw_path, match.route.function, result.payload)
            return _json(500, {"message": "Internal Server Error"}, [("apigw-requestid", request_id)])
        try:
            response = events.http_response(result.payload)
        except (TypeError, ValueError, KeyError) as exc:
            log.error("malformed Lambda response from %s: %s", match.route.function, exc)
            return _json(500, {"message": "Internal Server Error"}, [("apigw-requestid", request_id)])
        response.headers.append(("apigw-requestid", request_id))
        return response

    def _local_route(self, request: events.HttpRequest) -> events.HttpResponse | None:
        if request.raw_path == "/openapi.json" and self.openapi is not None:
            with self._openapi_lock:
                if self._openapi_cache is None:
                    self._openapi_cache = json.dumps(self.openapi(), indent=1).encode()
            return events.HttpResponse(200, [("content-type", JSON)], self._openapi_cache)
        if request.raw_path in ("/docs", "/docs/"):
            return events.HttpResponse(
                200, [("content-type", "text/html; charset=utf-8")], _swagger_page(self.swagger_dir)
            )
        if request.raw_path.startswith("/docs/") and self.swagger_dir is not None:
            name = request.raw_path.removeprefix("/docs/")
            path = (self.swagger_dir / name).resolve()
            if path.parent == self.swagger_dir.resolve() and path.is_file():
                ctype = "text/css" if name.endswith(".css") else "application/javascript"
                return events.HttpResponse(
                    200, [("content-type", ctype), ("cache-control", "max-age=3600")], path.read_bytes()
                )
        return None

    # -- serving ----------------------------------------------------------------------------------
    def server(self, host: str, port: int) -> ThreadingHTTPServer:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "shop-local-gateway"
            # TCP_NODELAY: the head and the body go out as two writes, and with Nagle's algorithm the body waited
            # for the client's delayed ACK of the head, about 40 ms on every request of a keep-alive connection.
            disable_nagle_algorithm = True

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                if length > MAX_HTTP_BODY_BYTES:
                    # Refused before reading: the unread body leaves the connection unusable.
                    self.close_connection = True
                    self._send(_json(413, {"message": "Request Entity Too Large"}))
                    return
                body = self.rfile.read(length) if length else b""
                if len(body) < length:  # the client went away before its body had all come: nothing to answer
                    self.close_connection = True
                    return
                request = events.HttpRequest(
                    method=self.command,
                    raw_path=parts.path or "/",
                    raw_query=parts.query,
                    headers=list(self.headers.items()),
                    body=body,
                    source_ip=self.client_address[0],
                    protocol=self.request_version,
                )
                try:
                    response = gateway.handle(request)
                except Exception:
                    log.exception("gateway error")
                    response = _json(500, {"message": "Internal Server Error"})
                self._send(response)

            def _send(self, response: events.HttpResponse) -> None:
                self.send_response(response.status)
                for key, value in response.headers:
                    self.send_header(key, value)
                self.send_header("content-length", str(len(response.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(response.body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _serve

            def __getattr__(self, name: str) -> Any:
                # Any other method (TRACE, QUERY, ...) reaches the router, which answers
                # 404 NOT_FOUND for it as API Gateway does, instead of http.server's 501 page.
                if name.startswith("do_"):
                    return self._serve
                raise AttributeError(name)

            def log_message(self, format: str, *args: Any) -> None:
                log.info("%s %s", self.address_string(), format % args)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 128

            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that closes its connection before the whole answer is written (a browser tab closed, a
                # curl interrupted, a test's timeout) is no fault of the gateway's: no traceback for it.
                if isinstance(sys.exc_info()[1], ConnectionError):
                    log.info("%s went away before the answer was written", client_address[0])
                    return
                super().handle_error(request, client_address)

        return Server((host, port), Handler)


def _payload_bytes(event: dict[str, Any]) -> int:
    """The size of the event as Lambda's Invoke request carries it (compact UTF-8 JSON)."""
    return len(json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode())


def _json(status: int, body: Any, headers: list[tuple[str, str]] | None = None) -> events.HttpResponse:
    return events.HttpResponse(status, [("content-type", JSON), *(headers or [])], json.dumps(body).encode())


def swagger_assets_dir() -> pathlib.Path | None:
    """Powertools ships the Swagger UI bundle (js + css) for offline use: found in its package's folder, without
    importing Powertools' event handler (a third of a second of `dev`'s start)."""
    spec = importlib.util.find_spec("aws_lambda_powertools")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = pathlib.Path(spec.submodule_search_locations[0]) / "event_handler" / "openapi" / "swagger_ui"
    return folder if (folder / "swagger-ui-bundle.min.js").exists() else None


def _swagger_page(assets: pathlib.Path | None) -> bytes:
    if assets is None:
        return (
            b"<!doctype html><title>Shop API</title><h1>Shop API</h1>"
            b"<p>Swagger UI assets are not installed; the document is at <a href='/openapi.json'>/openapi.json</a>.</p>"
        )
    return b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Shop API (local)</title>
<link rel="stylesheet" href="/docs/swagger-ui.min.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.min.js"></script>
<script>
window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: "BaseLayout", persistAuthorization: true});
</script></body></html>"""


HTTP_REASONS = {s.value: s.phrase for s in HTTPStatus}
