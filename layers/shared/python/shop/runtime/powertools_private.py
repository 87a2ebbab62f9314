"""Every use the shop makes of Powertools' private shape, in one place (pinned: aws_lambda_powertools 3.37.0).

Powertools has no documented hook for these. tests/unit/test_powertools_private.py pins each one's signature
and checks that Powertools still calls it, so a release that renames or reshapes one fails there, before a
deployment does.

Overridden (subclass methods Powertools calls):
- ``ApiGatewayResolver._compile_regex`` (shop.http_api.resolver): a path variable matches one decoded
  segment, whatever its characters (Powertools' own pattern refuses some that API Gateway passes).
- ``ApiGatewayResolver._convert_matches_into_route_keys`` (shop.http_api.resolver): the values API Gateway
  decoded in ``pathParameters`` rather than the raw path's.
- ``ResponseBuilder._has_compression_enabled`` (shop.http_api.resolver.ShopResponseBuilder, installed as the
  resolver's ``_response_builder_class``): no look at the request's headers when nothing enables compression.
- ``APIGatewayHttpResolver._to_proxy_event`` (shop.http_api.resolver): the proxy event the shop's ``resolve``
  already made of the same event, instead of a second one.
- ``DynamoDBPersistenceLayer._get_key`` (shop.repository.idempotency_records): each idempotency record in its
  own partition of the single table (Powertools' ``static_pk_value`` would put them all under one key).

Replaced (an attribute Powertools reads):
- ``APIGatewayHttpResolver._request_validation_middleware`` (shop.http_api.resolver): the request validation
  middleware every validated route's stack starts with, replaced by a subclass of Powertools' own that reads
  only the path of a route whose parameters are all in its path.

Called (the functions below):
- ``build_middleware_stacks``: Route._build_middleware_stack with the resolver's routes and middlewares,
  built once before threads race to build a stack twice.
- ``proxy_event``: the resolver's ``_to_proxy_event``, so handlers' error paths see the event before routing.
- ``build_response``: the resolver's ``_response_builder_class`` and ``_serializer`` building the answer to a
  request refused before routing, as Powertools builds its own answer outside a route (``_handle_not_found``).
- ``direct_middleware_stacks``: each route whose stack Powertools built as its validation alone (the resolver's
  request validation, its ``_response_validation_middleware``, ``api_gateway._registered_api_adapter``, the
  route's function; the stack walked through each ``MiddlewareFrame``'s ``current_middleware`` and
  ``next_middleware``) gets the same three called directly, without the frames' per-call bookkeeping: it assigns
  ``Route._middleware_stack``, the callable ``Route.__call__`` calls. A route with no middleware of its own whose
  stack has another shape (a Powertools release that builds stacks otherwise) keeps its frames, and one warning
  is logged naming each such route.
- ``validation_functions``: the validation middleware's module functions that validate a route's parameters
  and shape their errors (``_request_params_to_args``, ``_normalize_errors``).

Documented hooks, used instead of private ones: BasePartialProcessor's ``_prepare``, ``_clean``,
``success_handler`` and ``failure_handler`` (Powertools' "create your own partial processor") in
shop.stream_batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

# name -> the Powertools class (or module: api_gateway) it belongs to and its signature there (the test compares
# them)
OVERRIDDEN = {
    "_compile_regex": ("ApiGatewayResolver", "(rule: 'str', base_regex: 'str' = '^{}$')"),
    "_convert_matches_into_route_keys": ("ApiGatewayResolver", "(self, match: 'Match') -> 'dict[str, str]'"),
    "_get_key": ("DynamoDBPersistenceLayer", "(self, idempotency_key: 'str') -> 'dict'"),
    "_to_proxy_event": ("APIGatewayHttpResolver", "(self, event: 'dict') -> 'BaseProxyEvent'"),
    "_has_compression_enabled": (
        "ResponseBuilder",
        "(route_compression: 'bool', response_compression: 'bool | None', event: 'ResponseEventT') -> 'bool'",
    ),
}
CALLED = {
    # the adapter every stack ends with, called by a stack without frames (direct_middleware_stacks)
    "_registered_api_adapter": (
        "api_gateway",
        "(app: 'ApiGatewayResolver', next_middleware: 'Callable[..., Any]') -> "
        "'dict | tuple | Response | BedrockResponse'",
    ),
    "_build_middleware_stack": ("Route", "(self, router_middlewares: 'list[Callable[..., Any]]', app) -> 'None'"),
    "_to_proxy_event": ("APIGatewayHttpResolver", "(self, event: 'dict') -> 'BaseProxyEvent'"),
    "build": (
        "ResponseBuilder",
        "(self, event: 'ResponseEventT', cors: 'CORSConfig | None' = None) -> 'dict[str, Any]'",
    ),
}
# module functions of aws_lambda_powertools.event_handler.middlewares.openapi_validation called, by signature
VALIDATION_FUNCTIONS = {
    "_request_params_to_args": (
        "(required_params: 'Sequence[ModelField]', received_params: 'Mapping[str, Any]') -> "
        "'tuple[dict[str, Any], list[dict[str, Any]]]'"
    ),
    "_normalize_errors": "(errors: 'Sequence[Any]') -> 'list[dict[str, Any]]'",
}
# the attributes that hold the resolver's validation middlewares: the request one replaced (read when stacks are
# built), both read to recognise a validation-only stack
REQUEST_VALIDATION = "_request_validation_middleware"
RESPONSE_VALIDATION = "_response_validation_middleware"
# the attribute that holds the class the resolver builds every response with (replaced by a subclass)
RESPONSE_BUILDER = "_response_builder_class"
# attributes read: the resolver's (below); a route's "stack built" flag, its stack (replaced by
# direct_middleware_stacks), its own middlewares and its validation switch
RESOLVER_ATTRIBUTES = ("_static_routes", "_dynamic_routes", "_router_middlewares", "_debug", "_serializer")
ROUTE_ATTRIBUTES = ("_middleware_stack_built", "_middleware_stack", "middlewares", "enable_validation")
# a built stack's frame (MiddlewareFrame), walked to recognise its shape: the middleware it calls, what it calls next
FRAME_ATTRIBUTES = ("current_middleware", "next_middleware")


def build_middleware_stacks(app: Any) -> None:
    """Build every route's middleware stack that is not built yet."""
    for route in [*app._static_routes, *app._dynamic_routes]:
        if not route._middleware_stack_built:
            route._build_middleware_stack(router_middlewares=app._router_middlewares, app=app)


def validation_functions() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Powertools' validation of a route's parameters of one kind (``(params, received) -> (values, errors)``) and
    its shaping of the errors it raises in ``RequestValidationError``."""
    from aws_lambda_powertools.event_handler.middlewares import openapi_validation

    return openapi_validation._request_params_to_args, openapi_validation._normalize_errors


def _frames(stack: Any) -> list[tuple[Any, Any]]:
    """A built stack as (middleware, what it calls next), outermost first, down to the route's function."""
    frames = []
    while all(hasattr(stack, attribute) for attribute in FRAME_ATTRIBUTES):
        frames.append((stack.current_middleware, stack.next_middleware))
        stack = stack.next_middleware
    return frames


def direct_middleware_stacks(app: Any) -> int:
    """Replace each built stack that is exactly [request validation, response validation, Powertools' adapter, the
    route's function] by the same calls without frames; how many were replaced.

    A frame adds, per middleware and request, a debug log line, an entry in the processed-stack list (printed in
    debug mode only) and the keyword arguments a function middleware may ask for (``Request``, ``Depends``), which
    these class-based middlewares and the adapter never take: the middlewares, their order and what each is given
    are unchanged. A stack of any other shape (a user middleware, a future Powertools layout) keeps its frames; one
    of a route that has no middleware of its own is logged as a warning: Powertools changed how it builds them.
    """
    from aws_lambda_powertools.event_handler.api_gateway import _registered_api_adapter

    request = getattr(app, REQUEST_VALIDATION, None)
    response = getattr(app, RESPONSE_VALIDATION, None)
    if request is None or response is None or getattr(app, "_debug", True):
        return 0
    replaced = 0
    unknown = []
    expected = [request, response, _registered_api_adapter]
    for route in [*app._static_routes, *app._dynamic_routes]:
        frames = _frames(route._middleware_stack)
        if [middleware for middleware, _ in frames] != expected or frames[-1][1] is not route.func:
            if not app._router_middlewares and not route.middlewares and route.enable_validation is not False:
                unknown.append(f"{route.method} {route.path}")
            continue
        route._middleware_stack = _direct(request, response, _registered_api_adapter, route.func)
        replaced += 1
    if unknown:
        logger.warning(
            "Powertools built the validation-only middleware stacks of %s in a shape shop.runtime.powertools_private "
            "does not know: they keep their frames (tests/unit/test_powertools_private.py names what changed)",
            ", ".join(unknown),
        )
    return replaced


def _direct(request: Any, response: Any, adapter: Any, func: Any) -> Callable[[Any], Any]:
    def call_route(app: Any) -> Any:
        return adapter(app, func)

    def validate_response(app: Any) -> Any:
        return response.handler(app, call_route)

    def validate_request(app: Any) -> Any:
        return request.handler(app, validate_response)

    return validate_request


def proxy_event(app: Any, event: dict[str, Any]) -> Any:
    """The event as the resolver's proxy-event class reads it."""
    return app._to_proxy_event(event)


def build_response(app: Any, response: Any) -> dict[str, Any]:
    """The proxy result of ``response`` given outside any route, built with the resolver's builder and serializer."""
    builder = getattr(app, RESPONSE_BUILDER)
    return builder(response=response, serializer=app._serializer, route=None).build(app.current_event)
