"""The shop's request validation answers exactly as Powertools' own: a route whose parameters are all in its path
is validated on its path alone (shop.http_api.resolver.PathOnlyRequestValidation), any other by Powertools."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import OpenAPIRequestValidationMiddleware

from shop.http_api.params import DEFAULT_LIMIT, Limit, ProductId, Request
from shop.http_api.resolver import PathOnlyRequestValidation, ShopResolver, create_app, json_response
from shop.limits import MAX_ID_LENGTH
from shop.runtime import powertools_private


def _app(validation: OpenAPIRequestValidationMiddleware) -> ShopResolver:
    app = create_app("products")
    setattr(app, powertools_private.REQUEST_VALIDATION, validation)

    @app.get("/products/<product_id>")
    def get_product(product_id: ProductId, request: Request):
        return json_response(200, {"product_id": product_id, "path": request.resolved_event.path})

    @app.get("/products/<product_id>/reviews")
    def list_product_reviews(product_id: ProductId, limit: Limit = DEFAULT_LIMIT):
        return json_response(200, {"product_id": product_id, "limit": limit})

    return app


def _event(
    path: str,
    query: str = "",
    headers: dict[str, str] | None = None,
    *,
    path_parameters: dict[str, str] | None = None,
    body: str | None = None,
    cookies: list[str] | None = None,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "queryStringParameters": dict(p.split("=", 1) for p in query.split("&")) if query else None,
        "headers": {"host": "shop.test", **(headers or {})},
        "cookies": ["a=b"] if cookies is None else cookies,
        "requestContext": {"http": {"method": "GET", "path": path}, "stage": "$default", "requestId": "r"},
        "isBase64Encoded": False,
    }
    if path_parameters is not None:
        event["pathParameters"] = path_parameters
    if body is not None:
        event["body"] = body
    return event


CASES = [
    _event("/products/p1"),
    _event("/products/" + "x" * (MAX_ID_LENGTH + 1)),  # too long: 422 naming path.product_id
    _event("/products/p1", query="limit=3&unknown=1", headers={"x-extra": "1"}),  # extra query and headers: ignored
    _event("/products/p1/reviews", query="limit=3"),  # a query parameter: Powertools' own handler
    _event("/products/p1/reviews", query="limit=0"),  # 422 naming query.limit
    _event("/products/" + "x" * (MAX_ID_LENGTH + 1) + "/reviews", query="limit=0"),  # both fields
    # worst cases (the review of issue 26's cuts): astral characters at the length limit and one past it, a lone
    # surrogate, what API Gateway decoded beside a raw path still encoded, a repeated key (joined by a comma), a
    # body on a path-only route, malformed cookies, comma-joined and upper-case header names
    _event("/products/" + "\U0001d518" * MAX_ID_LENGTH),
    _event("/products/" + "\U0001d518" * (MAX_ID_LENGTH + 1)),
    _event("/products/a%ZZ\udcff", path_parameters={"product_id": "a%ZZ\udcff"}),
    _event("/products/%C3%A9%FF", path_parameters={"product_id": "\u00e9\ufffd"}),
    _event("/products/p1", query="limit=1,2", headers={"X-Multi": "a,b", "ACCEPT": "*/*", "Cookie": "c; =d"}),
    _event("/products/p1/reviews", query="limit=1,2", headers={"LIMIT": "3"}),
    _event("/products/p1", body="{", cookies=["c", "=d", "e=f=g"]),
    _event("/products/p1/reviews", query="limit=2", body="[]", cookies=[]),
]


@pytest.mark.parametrize("event", CASES, ids=lambda e: f"{e['rawPath'][:24]}?{e['rawQueryString']}")
def test_the_answer_is_powertools_own(event: dict[str, Any]) -> None:
    ours = _app(PathOnlyRequestValidation()).resolve(dict(event), None)
    theirs = _app(OpenAPIRequestValidationMiddleware()).resolve(dict(event), None)
    assert ours == theirs
    assert ours["statusCode"] in (200, 422)


def test_a_path_only_route_does_not_read_the_query_headers_or_cookies(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app(PathOnlyRequestValidation())

    def unexpected(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Powertools' handler ran for a path-only route")

    monkeypatch.setattr(OpenAPIRequestValidationMiddleware, "handler", unexpected)
    assert app.resolve(_event("/products/p1"), None)["statusCode"] == 200
    assert app.resolve(_event("/products/p1/reviews"), None)["statusCode"] == 500  # a query parameter: it ran


def test_every_route_calls_its_validation_without_frames_and_answers_the_same() -> None:
    framed = _app(PathOnlyRequestValidation())
    powertools_private.build_middleware_stacks(framed)
    direct = _app(PathOnlyRequestValidation())
    direct._prepare()
    routes = [*direct._static_routes, *direct._dynamic_routes]
    assert all(not hasattr(route._middleware_stack, "current_middleware") for route in routes)  # no frame left
    for event in CASES:
        assert direct.resolve(dict(event), None) == framed.resolve(dict(event), None)


def test_a_stack_with_a_user_middleware_keeps_its_frames() -> None:
    app = _app(PathOnlyRequestValidation())
    seen: list[str] = []

    def middleware(app: ShopResolver, next_middleware: Any) -> Any:
        seen.append(app.current_event.path)
        return next_middleware(app)

    app.use([middleware])
    app._prepare()
    assert powertools_private.direct_middleware_stacks(app) == 0
    assert app.resolve(_event("/products/p1"), None)["statusCode"] == 200
    assert seen == ["/products/p1"]


def test_concurrent_requests_on_one_resolver_keep_their_own_event_and_arguments() -> None:
    """Per-request state is per thread (ShopResolver): requests interleaved at a barrier each see their own."""
    import threading

    app = create_app("products")
    barrier = threading.Barrier(8, timeout=10)

    @app.get("/products/<product_id>")
    def get_product(product_id: ProductId, request: Request):
        barrier.wait()  # every request is inside its route before any answers
        return json_response(200, {"product_id": product_id, "path": request.resolved_event.path})

    answers: dict[str, Any] = {}

    def call(n: int) -> None:
        answers[f"p{n}"] = app.resolve(_event(f"/products/p{n}"), None)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert sorted(answers) == [f"p{n}" for n in range(8)]
    for product_id, answer in answers.items():
        assert answer["statusCode"] == 200
        assert answer["body"] == f'{{"product_id":"{product_id}","path":"/products/{product_id}"}}'


def test_an_answer_refused_before_routing_has_the_shape_of_every_other_error() -> None:
    """415 and a bad base64 body are refused before routing, yet rendered by the one error handler: the same
    headers and the same compact JSON as an error a route raises (here 404 for no such route)."""
    app = _app(PathOnlyRequestValidation())
    not_json = _event("/products/p1", headers={"content-type": "text/plain"}, body="x")
    bad_base64 = {**_event("/products/p1", body="%%%"), "isBase64Encoded": True}
    routed = app.resolve(_event("/nowhere"), None)

    for event, status, code in ((not_json, 415, "UNSUPPORTED_MEDIA_TYPE"), (bad_base64, 400, "BAD_REQUEST")):
        answer = app.resolve(event, None)
        assert (answer["statusCode"], json.loads(answer["body"])["error"]["code"]) == (status, code)
        assert answer["body"] == json.dumps(json.loads(answer["body"]), separators=(",", ":"))
        assert answer.keys() == routed.keys()
        assert answer["headers"] == routed["headers"]
        assert answer["isBase64Encoded"] is False
