"""The functions called in this interpreter as the HTTP API and Lambda call them: the tests' and the bench's harness.

Functions and routes come from infra.settings (no `cdk.out` needed); no token is checked, the caller passes the
claims (docs/local-runtime.md, "Execution").
"""

from __future__ import annotations

import json
import pathlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from infra.settings import ALL_FUNCTIONS, ROUTES
from local_runtime import events, worker
from local_runtime.functions import SHARED_LAYER, lambda_context
from local_runtime.gateway import Match, Router
from local_runtime.template import REPO_ROOT, FunctionDef, RouteDef

HANDLER = "handler.handler"
JSON = "application/json"


def declared_functions(root: pathlib.Path = REPO_ROOT) -> dict[str, FunctionDef]:
    """Every function of infra.settings, from its source folder `functions/<name>/`."""
    return {
        spec.name: FunctionDef(
            logical_id=spec.name,
            name=spec.name,
            handler=HANDLER,
            code_dir=root / "functions" / spec.name,
            environment={},
            memory_mb=spec.memory_mb,
            timeout_s=spec.timeout_s,
        )
        for spec in ALL_FUNCTIONS
    }


def declared_routes() -> list[RouteDef]:
    """Every route of infra.settings (JWT-authorized unless public)."""
    return [RouteDef(route.route_key, route.function, "NONE" if route.public else "JWT") for route in ROUTES]


@dataclass
class Reply:
    """An HTTP response as API Gateway sends it: lower-case header names, a JSON body parsed."""

    status: int
    headers: dict[str, str]
    body: Any  # the parsed JSON for a JSON content type, else the text

    @classmethod
    def of(cls, result: Any) -> Reply:
        response = events.http_response(result)
        headers = dict(response.headers)
        text = response.body.decode()
        is_json = headers.get("content-type", "").startswith(JSON)
        return cls(response.status, headers, json.loads(text) if text and is_json else text)

    @property
    def code(self) -> str | None:
        """The error envelope's code (`{"error": {"code": ...}}`), if any."""
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error.get("code") if isinstance(error, dict) else None


class InProcessFunctions:
    """The declared functions, each imported on first use and then kept, like a warm Lambda."""

    def __init__(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        source_ip: str = "127.0.0.1",
        root: pathlib.Path = REPO_ROOT,
    ) -> None:
        self.root = root
        self.functions = declared_functions(root)
        self.router = Router(declared_routes())
        self.headers = {name.lower(): value for name, value in (headers or {}).items()}
        self.source_ip = source_ip
        self._handlers: dict[str, Callable[..., Any]] = {}
        if str(SHARED_LAYER) not in sys.path:  # /opt/python: what the handlers import, now and at call time
            sys.path.append(str(SHARED_LAYER))

    def handler(self, name: str) -> Callable[..., Any]:
        if name not in self._handlers:
            fn = self.functions[name]
            alias = f"_in_process_{name}_handler"
            self._handlers[name] = worker.load_handler(str(fn.code_dir), fn.handler, alias, isolated=True)
        return self._handlers[name]

    def load(self) -> dict[str, str]:
        """Import every function now; why each one that cannot be called is missing, by name."""
        errors: dict[str, str] = {}
        for name, fn in self.functions.items():
            source = fn.code_dir / (fn.handler.rpartition(".")[0] + ".py")
            if not source.is_file():
                errors[name] = f"missing: {source.relative_to(self.root)}"
                continue
            try:
                self.handler(name)
            except Exception as exc:
                errors[name] = f"import failed: {type(exc).__name__}: {exc}"
        return errors

    def invoke(self, name: str, event: Any) -> Any:
        """The handler's result for one event, called with a fresh context."""
        return self.handler(name)(event, lambda_context(self.functions[name]))

    def route(self, method: str, path: str) -> Match | None:
        return self.router.match(method, events.decode_path(path))

    def http_event(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """The event the gateway sends for a request; keyword arguments as for `request`.

        Route key and path parameters come from the route the request matches (`$default` for none).
        """
        return self._event(self.route(method, path), method, path, **kwargs)

    def request(self, method: str, path: str, **kwargs: Any) -> Reply:
        """Send a request to the function its route names: `query` (a mapping), `body` (any JSON value),
        `headers`, `claims` (what the JWT authorizer passes)."""
        match = self.route(method, path)
        if match is None:
            raise LookupError(f"no route for {method} {path}")
        return Reply.of(self.invoke(match.route.function, self._event(match, method, path, **kwargs)))

    def _event(
        self,
        match: Match | None,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        claims: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        all_headers = dict(self.headers)
        if body is not None:
            all_headers["content-type"] = JSON
        all_headers.update({name.lower(): value for name, value in (headers or {}).items()})
        request = events.HttpRequest(
            method=method,
            raw_path=path,
            raw_query=urlencode(query or {}),
            headers=list(all_headers.items()),
            body=b"" if body is None else json.dumps(body).encode(),
            source_ip=self.source_ip,
        )
        return events.http_api_event(
            request,
            route_key=match.route.route_key if match else "$default",
            path_parameters=match.path_parameters if match else None,
            claims=claims,
        )
