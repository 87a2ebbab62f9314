"""What the shop uses of Powertools' private shape (shop.runtime.powertools_private) keeps the shape it relies on.

Each override and each private call is pinned by its signature in Powertools and by Powertools still calling
it; a release that renames, reshapes or stops calling one fails here, naming which.
"""

from __future__ import annotations

import inspect
import logging

import pytest
from aws_lambda_powertools.event_handler import api_gateway
from aws_lambda_powertools.event_handler.api_gateway import (
    APIGatewayHttpResolver,
    ApiGatewayResolver,
    MiddlewareFrame,
    ResponseBuilder,
    Route,
)
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

from shop.http_api.resolver import create_app
from shop.runtime import powertools_private

CLASSES = {
    cls.__name__: cls
    for cls in (ApiGatewayResolver, APIGatewayHttpResolver, Route, DynamoDBPersistenceLayer, ResponseBuilder)
}
CLASSES["api_gateway"] = api_gateway  # the module whose functions are called (its `_registered_api_adapter`)
PINNED = {**powertools_private.OVERRIDDEN, **powertools_private.CALLED}
# where Powertools calls each override: the class whose source must still call it
CALLERS = {
    "_compile_regex": [ApiGatewayResolver],
    "_convert_matches_into_route_keys": [ApiGatewayResolver],
    "_get_key": [BasePersistenceLayer, DynamoDBPersistenceLayer],
    "_to_proxy_event": [ApiGatewayResolver],
    "_has_compression_enabled": [ResponseBuilder],
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_each_private_method_has_the_pinned_signature(name):
    owner, signature = PINNED[name]
    method = getattr(CLASSES[owner], name, None)
    assert method is not None, f"Powertools' {owner} has no {name} any more"
    assert str(inspect.signature(method)) == signature, f"{owner}.{name} changed shape"


@pytest.mark.parametrize("name", sorted(powertools_private.OVERRIDDEN))
def test_powertools_still_calls_each_overridden_method(name):
    sources = "".join(inspect.getsource(cls) for cls in CALLERS[name])
    assert f"self.{name}(" in sources, f"Powertools no longer calls {name}: the override would be dead code"


def test_the_shop_overrides_keep_powertools_parameters():
    from shop.http_api.resolver import ShopResolver, ShopResponseBuilder
    from shop.repository.idempotency_records import _RecordPerKey

    ours = {
        "_compile_regex": ShopResolver._compile_regex,
        "_convert_matches_into_route_keys": ShopResolver._convert_matches_into_route_keys,
        "_get_key": _RecordPerKey._get_key,
        "_to_proxy_event": ShopResolver._to_proxy_event,
        "_has_compression_enabled": ShopResponseBuilder._has_compression_enabled,
    }
    for name, method in ours.items():
        theirs = getattr(CLASSES[powertools_private.OVERRIDDEN[name][0]], name)
        assert list(inspect.signature(method).parameters) == list(inspect.signature(theirs).parameters), name


def test_the_private_attributes_read_are_there_and_the_stacks_get_built():
    app = create_app("customers")

    @app.get("/customers/<customer_id>")
    def probe(customer_id: str) -> dict:  # pragma: no cover - never called, only routed
        return {}

    for attribute in powertools_private.RESOLVER_ATTRIBUTES:
        assert hasattr(app, attribute), attribute
    routes = [*app._static_routes, *app._dynamic_routes]
    assert routes
    assert all(hasattr(route, attribute) for route in routes for attribute in powertools_private.ROUTE_ATTRIBUTES)
    powertools_private.build_middleware_stacks(app)
    assert all(route._middleware_stack_built for route in routes)
    event = {
        "rawPath": "/customers/alice",
        "requestContext": {"http": {"method": "GET"}, "stage": "$default"},
        "headers": {},
    }
    assert powertools_private.proxy_event(app, event).path == "/customers/alice"


@pytest.mark.parametrize("name", sorted(powertools_private.VALIDATION_FUNCTIONS))
def test_the_validation_functions_called_have_the_pinned_signature(name):
    from aws_lambda_powertools.event_handler.middlewares import openapi_validation

    function = getattr(openapi_validation, name, None)
    assert function is not None, f"Powertools' openapi_validation has no {name} any more"
    assert str(inspect.signature(function)) == powertools_private.VALIDATION_FUNCTIONS[name], f"{name} changed shape"
    assert f"{name}(" in inspect.getsource(openapi_validation.OpenAPIRequestValidationMiddleware.handler), name
    assert function in powertools_private.validation_functions()


def _probed_app():
    """The customers' resolver with one validated route, ``probe``, its stack built."""
    app = create_app("customers")

    @app.get("/customers/<customer_id>")
    def probe(customer_id: str) -> dict:  # pragma: no cover - never called, only routed
        return {}

    powertools_private.build_middleware_stacks(app)
    return app, next(r for r in [*app._static_routes, *app._dynamic_routes] if r.func is probe)


def test_a_validation_only_stack_is_the_shape_direct_middleware_stacks_replaces():
    from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
        OpenAPIResponseValidationMiddleware,
    )

    app, route = _probed_app()
    request = getattr(app, powertools_private.REQUEST_VALIDATION)
    response = getattr(app, powertools_private.RESPONSE_VALIDATION, None)
    assert isinstance(response, OpenAPIResponseValidationMiddleware), (
        f"Powertools' resolver no longer holds its response validation in {powertools_private.RESPONSE_VALIDATION}"
    )
    stack, called = route._middleware_stack, []
    while isinstance(stack, MiddlewareFrame):
        missing = [name for name in powertools_private.FRAME_ATTRIBUTES if not hasattr(stack, name)]
        assert not missing, f"Powertools' MiddlewareFrame has no {missing} any more: stacks cannot be walked"
        called.append(stack.current_middleware)
        stack = stack.next_middleware
    assert (called, stack) == ([request, response, api_gateway._registered_api_adapter], route.func), (
        "Powertools builds a validation-only stack otherwise than [request validation, response validation, "
        f"_registered_api_adapter] around the route: {called}; direct_middleware_stacks would replace none"
    )
    assert powertools_private.direct_middleware_stacks(app) == 1
    assert not isinstance(route._middleware_stack, MiddlewareFrame)


def test_the_stack_assigned_is_the_one_a_route_calls():
    assert "self._middleware_stack(app)" in inspect.getsource(Route.__call__), (
        "Powertools' Route.__call__ no longer calls Route._middleware_stack: the stacks direct_middleware_stacks "
        "assigns would be dead code"
    )


def test_a_validation_only_stack_of_another_shape_keeps_its_frames_and_is_logged(caplog):
    app, route = _probed_app()

    def added(app, next_middleware):  # pragma: no cover - never called: a middleware a release might add
        return next_middleware(app)

    route._middleware_stack = MiddlewareFrame(current_middleware=added, next_middleware=route._middleware_stack)
    with caplog.at_level(logging.WARNING, logger=powertools_private.__name__):
        assert powertools_private.direct_middleware_stacks(app) == 0
    assert isinstance(route._middleware_stack, MiddlewareFrame)
    assert "GET /customers/<customer_id>" in caplog.text


def test_the_request_validation_middleware_replaced_is_the_one_every_stack_starts_with():
    from aws_lambda_powertools.event_handler.middlewares.openapi_validation import OpenAPIRequestValidationMiddleware

    from shop.http_api.resolver import PathOnlyRequestValidation

    app = create_app("customers")
    replaced = getattr(app, powertools_private.REQUEST_VALIDATION)
    assert type(replaced) is PathOnlyRequestValidation
    assert isinstance(replaced, OpenAPIRequestValidationMiddleware)

    @app.get("/customers/<customer_id>")
    def probe(customer_id: str) -> dict:  # pragma: no cover - never called, only routed
        return {}

    powertools_private.build_middleware_stacks(app)
    route = next(r for r in [*app._static_routes, *app._dynamic_routes] if r.func is probe)
    assert route._middleware_stack.current_middleware is replaced  # the outermost frame: validation first


def test_the_response_builder_replaced_is_the_one_powertools_builds_with():
    from shop.http_api.resolver import ShopResponseBuilder

    app = create_app("customers")
    assert getattr(app, powertools_private.RESPONSE_BUILDER) is ShopResponseBuilder
    assert "self._response_builder_class(" in inspect.getsource(ApiGatewayResolver)


@pytest.mark.parametrize("route", [False, True, None])
@pytest.mark.parametrize("response", [None, False, True])
@pytest.mark.parametrize("accept", ["", "gzip, br", "br"])
def test_compression_is_decided_as_powertools_decides_it(route, response, accept):
    from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

    from shop.http_api.resolver import ShopResponseBuilder

    event = APIGatewayProxyEventV2({"headers": {"Accept-Encoding": accept} if accept else {}})
    assert ShopResponseBuilder._has_compression_enabled(
        route, response, event
    ) is ResponseBuilder._has_compression_enabled(route, response, event)
