"""Every route of the HTTP API, declared once: method, path, the function serving it, public or not.

The API functions' resolvers and the CDK app (``infra.settings``) both read this table, so it stays plain data:
every API function imports it at cold start. docs/decisions.md, "HTTP API".
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
    # Customer carts (issue 14): served with the session carts they merge from and price alike.
    _r("GET", "/customers/{customer_id}/cart", "sessions"),
    _r("PUT", "/customers/{customer_id}/cart/{product_id}", "sessions"),
    _r("POST", "/customers/{customer_id}/cart/merge", "sessions"),
    _r("DELETE", "/customers/{customer_id}/cart", "sessions"),
    _r("POST", "/orders", "orders"),
    _r("GET", "/orders", "orders"),
    _r("GET", "/orders/{order_id}", "orders"),
    _r("PATCH", "/orders/{order_id}", "orders"),
    _r("POST", "/orders/{order_id}/cancel", "orders"),
    # Version 2 (issue 12): StockLow alerts. products serves it: its grants (Query on the table) already
    # cover the read, and stock is its concern; customers would need nothing new either, but holds no stock.
    _r("GET", "/admin/alerts", "products"),
    # Flash-sale stock shards (issue 11).
    _r("POST", "/products/{product_id}/stock-shards", "products"),
    # issue 12: the catalogue tree, browse-all and subtree listings (GET /products), archive
    _r("POST", "/categories", "products"),
    _r("GET", "/categories", "products", public=True),
    _r("GET", "/categories/{slug}", "products", public=True),
    _r("PATCH", "/categories/{slug}", "products"),
    _r("DELETE", "/products/{product_id}", "products"),
    # issue 13: returns and sales by date (the orders function: sales are counted from orders)
    _r("POST", "/orders/{order_id}/return", "orders"),
    _r("GET", "/products/{product_id}/sales", "orders"),
    _r("GET", "/sales/top", "orders"),
)
