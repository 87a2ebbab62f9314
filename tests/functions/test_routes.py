"""The route table (shop.http_api.routes) is what the handlers serve: each route by exactly its function,
with the bearer token declared exactly when it is not public; a handler cannot register anything else."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from infra.settings import API_FUNCTIONS
from shop.http_api.resolver import BEARER, create_app
from shop.http_api.routes import ROUTES

SERVING = sorted({route.function for route in ROUTES})


def _served(function: str) -> dict[tuple[str, str], Any]:
    """(method, path) -> the security the function's handler declares, read from its OpenAPI document."""
    from local_runtime.openapi import build

    paths = build(names=(function,))["paths"]
    return {
        (method.upper(), path): operation.get("security")
        for path, operations in paths.items()
        for method, operation in operations.items()
    }


def test_the_table_names_each_route_once_and_only_api_functions():
    assert len({route.route_key for route in ROUTES}) == len(ROUTES)
    assert sorted(spec.name for spec in API_FUNCTIONS) == SERVING


def test_every_route_is_registered_by_exactly_one_handler_with_the_tables_security():
    served = {function: _served(function) for function in SERVING}
    registrations = Counter(key for routes in served.values() for key in routes)
    assert registrations == Counter((route.method, route.path) for route in ROUTES)
    for route in ROUTES:
        assert served[route.function][route.method, route.path] == (None if route.public else BEARER), route


def test_a_route_takes_its_security_from_the_table():
    app = create_app("orders")
    app.get("/orders/<order_id>")(lambda order_id: None)
    sessions = create_app("sessions")
    sessions.delete("/sessions/<session_id>")(lambda session_id: None)
    orders_doc = app.get_openapi_schema().model_dump(by_alias=True, exclude_none=True)
    sessions_doc = sessions.get_openapi_schema().model_dump(by_alias=True, exclude_none=True)
    assert orders_doc["paths"]["/orders/{order_id}"]["get"]["security"] == BEARER
    assert "security" not in sessions_doc["paths"]["/sessions/{session_id}"]["delete"]


@pytest.mark.parametrize(
    ("method", "rule", "refusal"),
    [
        ("get", "/nowhere", "GET /nowhere is not in shop.http_api.routes"),
        ("get", "/products", "GET /products is served by products (shop.http_api.routes), not sessions"),
        ("post", "/sessions/<session_id>", "POST /sessions/{session_id} is not in shop.http_api.routes"),
    ],
)
def test_a_handler_cannot_register_a_route_not_its_own(method, rule, refusal):
    app = create_app("sessions")
    with pytest.raises(LookupError, match=re.escape(refusal)):
        getattr(app, method)(rule)


def test_a_handler_cannot_declare_security_itself():
    with pytest.raises(TypeError, match=re.escape("public flag in shop.http_api.routes")):
        create_app("sessions").post("/sessions", security=BEARER)


def test_a_function_of_no_route_has_no_resolver():
    with pytest.raises(ValueError, match="no route of a function 'order_events'"):
        create_app("order_events")
