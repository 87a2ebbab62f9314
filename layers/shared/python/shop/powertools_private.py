"""Every use the shop makes of Powertools' private shape, in one place (pinned: aws_lambda_powertools 3.37.0).

Powertools has no documented hook for these. tests/unit/test_powertools_private.py pins each one's signature
and checks that Powertools still calls it, so a release that renames or reshapes one fails there, before a
deployment does.

Overridden (subclass methods Powertools calls):
- ``ApiGatewayResolver._compile_regex`` (shop.http_api.resolver): a path variable matches one decoded
  segment, whatever its characters (Powertools' own pattern refuses some that API Gateway passes).
- ``ApiGatewayResolver._convert_matches_into_route_keys`` (shop.http_api.resolver): the values API Gateway
  decoded in ``pathParameters`` rather than the raw path's.
- ``DynamoDBPersistenceLayer._get_key`` (shop.repository.idempotency_records): each idempotency record in its
  own partition of the single table (Powertools' ``static_pk_value`` would put them all under one key).

Called (the functions below):
- ``build_middleware_stacks``: Route._build_middleware_stack with the resolver's routes and middlewares,
  built once before threads race to build a stack twice.
- ``proxy_event``: the resolver's ``_to_proxy_event``, so handlers' error paths see the event before routing.

Documented hooks, used instead of private ones: BasePartialProcessor's ``_prepare``, ``_clean``,
``success_handler`` and ``failure_handler`` (Powertools' "create your own partial processor") in
shop.stream_batch.
"""

from __future__ import annotations

from typing import Any

# name -> the Powertools class it belongs to and its signature there (the test compares them)
OVERRIDDEN = {
    "_compile_regex": ("ApiGatewayResolver", "(rule: 'str', base_regex: 'str' = '^{}$')"),
    "_convert_matches_into_route_keys": ("ApiGatewayResolver", "(self, match: 'Match') -> 'dict[str, str]'"),
    "_get_key": ("DynamoDBPersistenceLayer", "(self, idempotency_key: 'str') -> 'dict'"),
}
CALLED = {
    "_build_middleware_stack": ("Route", "(self, router_middlewares: 'list[Callable[..., Any]]', app) -> 'None'"),
    "_to_proxy_event": ("APIGatewayHttpResolver", "(self, event: 'dict') -> 'BaseProxyEvent'"),
}
# attributes read: the resolver's route lists and middlewares, a route's "stack built" flag
RESOLVER_ATTRIBUTES = ("_static_routes", "_dynamic_routes", "_router_middlewares")
ROUTE_ATTRIBUTES = ("_middleware_stack_built",)


def build_middleware_stacks(app: Any) -> None:
    """Build every route's middleware stack that is not built yet."""
    for route in [*app._static_routes, *app._dynamic_routes]:
        if not route._middleware_stack_built:
            route._build_middleware_stack(router_middlewares=app._router_middlewares, app=app)


def proxy_event(app: Any, event: dict[str, Any]) -> Any:
    """The event as the resolver's proxy-event class reads it."""
    return app._to_proxy_event(event)
