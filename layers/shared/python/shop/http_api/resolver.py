"""The resolver every API function uses: Powertools' HTTP API resolver with validation and our errors.

``create_app(function)`` accepts only that function's routes of ``shop.http_api.routes`` and answers every error
the one way; ``ShopResolver`` keeps per-request state per thread. Why: docs/decisions.md, "HTTP API".
"""

from __future__ import annotations

import base64
import binascii
import inspect
import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import ResponseBuilder
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import OpenAPIRequestValidationMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestUnsupportedContentType, RequestValidationError
from pydantic import BaseModel

from shop import errors
from shop.http_api import errors as http_errors
from shop.http_api import observability
from shop.http_api.routes import ROUTES, Route
from shop.http_api.schemas import ErrorResponse, UnauthorizedResponse, ValidationErrorResponse
from shop.runtime import powertools_private

JSON = content_types.APPLICATION_JSON

ERROR_DESCRIPTIONS = {
    400: "BAD_REQUEST (malformed JSON) or INVALID_NEXT_TOKEN",
    401: "UNAUTHORIZED: no valid bearer token",
    403: "FORBIDDEN: signed in but not allowed; INVALID_SUBJECT: the token's sub cannot name a customer",
    404: "not found",
    409: "conflict with the current state",
    412: "VERSION_MISMATCH: If-Match names an old version",
    415: "UNSUPPORTED_MEDIA_TYPE: send application/json",
    422: "VALIDATION_ERROR: the offending fields are in details",
    428: "PRECONDITION_REQUIRED: send If-Match",
    500: "INTERNAL_ERROR",
    503: "SERVICE_UNAVAILABLE: the store is throttled or down; see Retry-After",
}
ALWAYS = (400, 422, 500, 503)
ERROR_MODELS: dict[int, type[BaseModel]] = {401: UnauthorizedResponse, 422: ValidationErrorResponse}
WITH_BODY = (415,)
API_TITLE = "Serverless Shop API"
API_VERSION = "1"
SECURITY_SCHEME = "bearerAuth"
# Declared on every route the table does not make public; API Gateway's JWT authorizer enforces it.
BEARER: list[dict[str, list[str]]] = [{SECURITY_SCHEME: []}]
# A route that reads the caller can refuse any token with 403 INVALID_SUBJECT (shop.http_api.auth).
SIGNED_IN = {401: 403}
_params_to_args, _normalize_errors = powertools_private.validation_functions()
_PATH_VARIABLE = re.compile(r"<(\w+)>")
# Powertools' get/post/... pass route()'s arguments by position: bind them to read and set security by name.
_ROUTE_SIGNATURE = inspect.signature(APIGatewayHttpResolver.route)


def security_schemes() -> dict[str, Any]:
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    return {SECURITY_SCHEME: HTTPBearer(bearerFormat="JWT", description="the JWT API Gateway's authorizer verifies")}


def declare(
    success: int,
    model: type[BaseModel] | None,
    *error_statuses: int,
    description: str = "success",
    headers: Mapping[str, str] | None = None,
    errors_described: Mapping[int, str] | None = None,
    body: bool = False,
    links: Mapping[str, Any] | None = None,
) -> dict[int, Any]:
    """The OpenAPI ``responses`` of a route: its success (with its links) and every error status it can answer."""
    # No model, no body: an empty content map, or Powertools would declare a JSON body.
    ok: dict[str, Any] = {"description": description, "content": {JSON: {"model": model}} if model else {}}
    if links:
        ok["links"] = dict(links)
    if headers:
        ok["headers"] = {name: {"description": text, "schema": {"type": "string"}} for name, text in headers.items()}
    declared: dict[int, Any] = {success: ok}
    described = {**ERROR_DESCRIPTIONS, **(errors_described or {})}
    implied = {SIGNED_IN[status] for status in error_statuses if status in SIGNED_IN}
    for status in sorted({*error_statuses, *implied, *ALWAYS, *(WITH_BODY if body else ())}):
        entry: dict[str, Any] = {
            "description": described[status],
            "content": {JSON: {"model": ERROR_MODELS.get(status, ErrorResponse)}},
        }
        if status == 503:
            entry["headers"] = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "string"}}}
        declared[status] = entry
    return declared


def json_response(
    status: int,
    body: BaseModel | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None = None,
    *,
    include: set[str] | None = None,
) -> Response:
    """A success response whose body is serialised here, once.

    Powertools passes a ``str`` body through as it is; given a dict it would first walk it with its
    ``jsonable_encoder`` and then ``json.dumps`` it, twice the work for a body that is already plain
    JSON data. A model is serialised by pydantic's own (compiled) serialiser; ``include``: only these of its
    fields (what the narrower model the route declares would write, when it has these fields in this order).
    """
    if body is None:
        return Response(status_code=status, content_type=None, body="", headers=dict(headers or {}))
    if isinstance(body, BaseModel):
        text = body.model_dump_json(include=include)
    else:
        text = json.dumps(body, separators=(",", ":"))
    return Response(status_code=status, content_type=JSON, body=text, headers=dict(headers or {}))


def _error_response(status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> Response:
    return Response(status_code=status, content_type=JSON, body=body, headers=dict(headers or {}))


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("JSON nested too deeply", text, 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # e.g. an integer of more digits than int() converts
        raise json.JSONDecodeError("a number too large to read", text, 0) from None


def _field_errors(exc: RequestValidationError) -> list[dict[str, str]]:
    details = []
    for error in exc.errors():
        loc = [str(part) for part in error.get("loc", ())]
        location = loc[0] if loc else "body"
        field = ".".join(loc[1:]) if len(loc) > 1 else ""
        details.append(
            {
                "location": location,
                "field": field,
                "message": str(error.get("msg", "invalid value")),
                "type": str(error.get("type", "invalid")),
            }
        )
    return details


class PathOnlyRequestValidation(OpenAPIRequestValidationMiddleware):
    """Powertools' request validation, which reads only the path of a route whose parameters are all in its path.

    Powertools' own handler resolves the query string, the headers (twice, case-insensitively) and the cookies
    for every request and then validates none of them when the route declares none: about a fifth of a
    ``GET /products/{id}``'s own work (docs/performance.md, "Overhead"). For such a route this validates the path
    parameters with Powertools' own function and raises the same error; any other route goes through
    Powertools' handler unchanged.
    """

    def handler(self, app: Any, next_middleware: Any) -> Response:
        route = app.context["_route"]
        dependant = route.dependant
        if dependant.query_params or dependant.header_params or dependant.cookie_params or dependant.body_params:
            return super().handler(app, next_middleware)
        values, errors = _params_to_args(dependant.path_params, app.context["_route_args"])
        if errors:
            raise RequestValidationError(_normalize_errors(errors))
        app.context["_route_args"] = values
        return next_middleware(app)


class ShopResponseBuilder(ResponseBuilder[Any]):
    """Powertools' response builder, which asks the request's headers for gzip only when the route or the response
    enables compression: Powertools builds the case-insensitive map of every header to find ``Accept-Encoding``
    on every response, and then compresses nothing unless one of them does. No shop route compresses."""

    @staticmethod  # private in Powertools: shop.runtime.powertools_private
    def _has_compression_enabled(route_compression: bool, response_compression: bool | None, event: Any) -> bool:
        if not route_compression and not response_compression:
            return False  # what Powertools answers for these, whatever the headers say
        return ResponseBuilder._has_compression_enabled(route_compression, response_compression, event)


class ShopResolver(APIGatewayHttpResolver):
    """APIGatewayHttpResolver whose per-request state lives in thread-locals.

    Powertools keeps the current event on the class ``BaseRouter`` and the routing context on the
    instance; both are replaced here by thread-local storage so concurrent ``resolve`` calls on one
    instance do not see each other's requests.

    It serves one function's routes of ``shop.http_api.routes``: registering any other fails, and each
    route declares the bearer token (OpenAPI ``security``) exactly when the table says it is not public.
    """

    def __init__(self, function: str, **kwargs: Any) -> None:
        self._state = threading.local()  # this resolver's, so the context needs no per-instance key
        self.function = function
        self._own_routes = {(route.method, route.path): route for route in ROUTES if route.function == function}
        self._raw_bodies: dict[tuple[str, str], dict[str, Any]] = {}
        if not self._own_routes:
            raise ValueError(f"shop.http_api.routes names no route of a function {function!r}")
        super().__init__(**kwargs)
        if getattr(self, powertools_private.REQUEST_VALIDATION, None) is not None:
            setattr(self, powertools_private.REQUEST_VALIDATION, PathOnlyRequestValidation())
        setattr(self, powertools_private.RESPONSE_BUILDER, ShopResponseBuilder)

    def route(self, *args: Any, **kwargs: Any) -> Any:
        """Register one of this function's routes in the table, with the table's security (never the caller's)."""
        call = _ROUTE_SIGNATURE.bind(self, *args, **kwargs)
        given = call.arguments
        path = _PATH_VARIABLE.sub(r"{\1}", given["rule"])
        methods = [given["method"]] if isinstance(given["method"], str) else list(given["method"])
        if given.get("security") is not None:
            raise TypeError(f"{path}: security comes from the route's public flag in shop.http_api.routes")
        if given.get("operation_id") is not None:
            raise TypeError(f"{path}: the operation id comes from shop.http_api.routes")
        if len(methods) != 1:
            raise ValueError(f"{path}: one registration per method, each with its operation id ({', '.join(methods)})")
        route = self._declared(methods[0].upper(), path)
        given["security"] = None if route.public else BEARER
        given["operation_id"] = route.operation
        return super().route(*call.args[1:], **call.kwargs)

    def _declared(self, method: str, path: str) -> Route:
        route = self._own_routes.get((method, path))
        if route is None:
            others = [r.function for r in ROUTES if (r.method, r.path) == (method, path)]
            if others:
                raise LookupError(
                    f"{method} {path} is served by {others[0]} (shop.http_api.routes), not {self.function}"
                )
            raise LookupError(f"{method} {path} is not in shop.http_api.routes: declare it there first")
        return route

    @property
    def current_event(self) -> Any:
        return getattr(self._state, "event", None)

    @current_event.setter
    def current_event(self, value: Any) -> None:
        self._state.event = value

    @property
    def lambda_context(self) -> Any:
        return getattr(self._state, "lambda_context", None)

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._state.lambda_context = value

    @property
    def context(self) -> dict[str, Any]:
        try:
            return self._state.context
        except AttributeError:
            context: dict[str, Any] = {}
            self._state.context = context
            return context

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self.context.clear()
        self.context.update(value)

    _build_lock = threading.Lock()

    def _prepare(self) -> None:
        """Build every route's middleware stack once, before threads race to build it twice; a route whose stack
        is Powertools' validation alone calls it without Powertools' frames (shop.runtime.powertools_private)."""
        if getattr(self, "_prepared", False):
            return
        with self._build_lock:
            if getattr(self, "_prepared", False):
                return
            powertools_private.build_middleware_stacks(self)
            powertools_private.direct_middleware_stacks(self)  # the same middlewares, called without frames
            self._prepared = True

    def raw_body(self, method: str, path: str, schema: dict[str, Any], description: str) -> None:
        """Document the JSON body a route reads itself, unparsed (a webhook verifies its bytes before anything:
        a body parameter would be validated first, and a forged body answered 422 instead of 400)."""
        self._declared(method, path)
        self._raw_bodies[method.lower(), path] = {
            "required": True,
            "description": description,
            "content": {JSON: {"schema": schema}},
        }

    def get_openapi_schema(self, **kwargs: Any) -> Any:
        """This function's part of the API document (``local_runtime.openapi`` merges the four)."""
        if not kwargs.get("security_schemes"):
            kwargs["security_schemes"] = security_schemes()
        kwargs.setdefault("title", API_TITLE)
        kwargs.setdefault("version", API_VERSION)
        schema = super().get_openapi_schema(**kwargs)
        for path, item in (schema.paths or {}).items():
            for operation in (item.get, item.put, item.post, item.delete, item.patch):
                if operation is not None:
                    _require_if_match_where_428(operation)
            for (method, raw_path), body in self._raw_bodies.items():
                operation = getattr(item, method, None) if raw_path == path else None
                if operation is not None:
                    from aws_lambda_powertools.event_handler.openapi.models import RequestBody

                    operation.requestBody = RequestBody.model_validate(body)
        return schema

    @staticmethod  # private in Powertools: shop.runtime.powertools_private
    def _compile_regex(rule: str, base_regex: str = "^{}$") -> re.Pattern[str]:
        """A route's regex whose variables match one decoded path segment, whatever its characters."""
        return re.compile(base_regex.format(_PATH_VARIABLE.sub(r"(?P<\1>[^/]+)", rule)))

    # private in Powertools: shop.runtime.powertools_private
    def _convert_matches_into_route_keys(self, match: re.Match[str]) -> dict[str, str]:
        """The decoded values API Gateway put in ``pathParameters``, else the values in the path."""
        given = self.current_event.get("pathParameters") or {}
        return {name: str(given.get(name, value)) for name, value in match.groupdict().items()}

    def _to_proxy_event(self, event: dict[str, Any]) -> Any:  # private in Powertools: shop.runtime.powertools_private
        """The proxy event ``resolve`` made of this very event already (Powertools would make it again)."""
        current = self.current_event
        if current is not None and current.raw_event is event:
            return current
        return super()._to_proxy_event(event)

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        self._prepare()
        event = dict(event)
        refused = _refused_before_routing(event)
        self.current_event = powertools_private.proxy_event(self, event)
        self.lambda_context = context
        if refused is not None:  # answered by the one error handler, built as Powertools builds every answer
            return powertools_private.build_response(self, _on_domain_error(refused))
        return super().resolve(event, context)


def _require_if_match_where_428(operation: Any) -> None:
    """A route that answers 428 without If-Match requires it: the handler takes it as optional only to answer
    428 PRECONDITION_REQUIRED (not 422) when it is missing, and the document says it is required."""
    if not any(str(status) == "428" for status in operation.responses or {}):
        return
    for parameter in operation.parameters or []:
        if getattr(parameter, "name", "").lower() == "if-match":
            parameter.required = True
            schema = parameter.schema_
            not_null = [s for s in (schema.anyOf or []) if getattr(s, "type", None) != "null"]
            if len(not_null) == 1:  # `str | None` in the signature: a required header is never null
                not_null[0].title, not_null[0].description = schema.title, schema.description
                parameter.schema_ = not_null[0]


def _is_json(headers: Mapping[str, str]) -> bool:
    """A body is JSON unless its Content-Type names another media type (forms, text, multipart...)."""
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type in ("", JSON) or (media_type.startswith("application/") and media_type.endswith("+json"))


def _refused_before_routing(event: dict[str, Any]) -> errors.DomainError | None:
    """What refuses the request before routing (Powertools' validation would otherwise parse a non-JSON body);
    else None, a base64 body decoded in ``event`` (the routes read text)."""
    if event.get("body") and not _is_json(event.get("headers") or {}):
        return http_errors.UnsupportedMediaType("send the body as application/json")
    if event.get("isBase64Encoded") and event.get("body"):
        try:
            event["body"] = base64.b64decode(str(event["body"]), validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return http_errors.BadRequest("the body is not valid base64 UTF-8")
        event["isBase64Encoded"] = False
    return None


def _on_domain_error(error: errors.DomainError) -> Response:
    status, body, headers = http_errors.describe(error)
    if isinstance(error, errors.StoreRejected):
        # Validation bounds every value, so this is a bug to fix: the cause names the key or item the store refused.
        observability.logger.error("the store refused the request as invalid", exc_info=error)
    elif status >= 500:
        observability.logger.warning(
            "store unavailable" if status == 503 else "unmapped domain error",
            extra={"error_code": error.code},
            exc_info=error,
        )
    return _error_response(status, body, headers)


def _on_validation_error(exc: RequestValidationError) -> Response:
    if any(error.get("type") == "json_invalid" for error in exc.errors()):
        return _on_domain_error(http_errors.BadRequest("the body is not valid JSON"))
    details = _field_errors(exc)
    observability.count("ValidationFailures")
    fields = ", ".join(f"{d['location']}.{d['field']}".rstrip(".") for d in details)
    return _error_response(
        422, http_errors.error_body(errors.InvalidRequest.code, f"invalid request: {fields}", details)
    )


def _on_unsupported_media(exc: RequestUnsupportedContentType) -> Response:
    return _on_domain_error(http_errors.UnsupportedMediaType("send the body as application/json"))


def _on_not_found(exc: NotFoundError) -> Response:
    return _on_domain_error(errors.NotFound("no such route"))


def _on_unexpected(exc: Exception) -> Response:
    observability.logger.exception("unhandled error")
    return _on_domain_error(http_errors.InternalError("internal error"))


def create_app(function: str, **kwargs: Any) -> ShopResolver:
    """The resolver of the API function ``function`` (its name in shop.http_api.routes)."""
    app = ShopResolver(function, enable_validation=True, json_body_deserializer=_loads, **kwargs)
    handlers: list[tuple[type[Exception], Callable[[Any], Response]]] = [
        (errors.DomainError, _on_domain_error),
        (RequestValidationError, _on_validation_error),
        (RequestUnsupportedContentType, _on_unsupported_media),
        (NotFoundError, _on_not_found),
        (Exception, _on_unexpected),
    ]
    for exc_class, handle in handlers:
        app.exception_handler(exc_class)(handle)
    return app
