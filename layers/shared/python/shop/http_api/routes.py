"""Every route of the HTTP API, declared once: method, path, the function serving it, public or not.

The API functions' resolvers (``shop.http_api.resolver.create_app``) accept only their own routes
from this table and declare the bearer token from it; infra (``infra.settings``) wires API Gateway's
routes, integrations, JWT authorizer and throttles from it. Plain data: every API function imports
it at cold start, and so does the CDK app.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # API Gateway's form: /products/{product_id}
    function: str
    public: bool  # False: API Gateway's JWT authorizer, and the route declares the bearer token

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"


def _r(method: str, path: str, function: str, *, public: bool = False) -> Route:
    return Route(method, path, function, public)


# Every route of docs/http-api.md (version 1), served per docs/conventions.md.
# Query-string variants (GET /customers?email=, GET /orders?status=) share the path.
ROUTES: tuple[Route, ...] = (
    _r("POST", "/customers", "customers"),
    _r("GET", "/customers", "customers"),
    _r("GET", "/customers/{customer_id}", "customers"),
    _r("PATCH", "/customers/{customer_id}", "customers"),
    _r("GET", "/customers/{customer_id}/notifications", "customers"),
    _r("GET", "/customers/{customer_id}/orders", "orders"),
    _r("GET", "/customers/{customer_id}/reviews", "products", public=True),
    _r("POST", "/products", "products"),
    _r("GET", "/products", "products", public=True),
    _r("GET", "/products/{product_id}", "products", public=True),
    _r("PATCH", "/products/{product_id}", "products"),
    _r("POST", "/products/{product_id}/stock", "products"),
    _r("GET", "/products/{product_id}/reviews", "products", public=True),
    _r("POST", "/products/{product_id}/reviews", "products"),
    _r("POST", "/sessions", "sessions", public=True),
    _r("GET", "/sessions/{session_id}", "sessions", public=True),
    _r("PUT", "/sessions/{session_id}/cart/{product_id}", "sessions", public=True),
    _r("DELETE", "/sessions/{session_id}", "sessions", public=True),
    _r("POST", "/orders", "orders"),
    _r("GET", "/orders", "orders"),
    _r("GET", "/orders/{order_id}", "orders"),
    _r("PATCH", "/orders/{order_id}", "orders"),
    _r("POST", "/orders/{order_id}/cancel", "orders"),
    # issue 13: returns and sales by date (the orders function: sales are counted from orders)
    _r("POST", "/orders/{order_id}/return", "orders"),
    _r("GET", "/products/{product_id}/sales", "orders"),
    _r("GET", "/sales/top", "orders"),
)
