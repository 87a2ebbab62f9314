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
    operation: str  # the OpenAPI operationId: short, stable, part of the contract (docs/http-api.md)
    public: bool  # False: API Gateway's JWT authorizer, and the route declares the bearer token

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"


def _r(method: str, path: str, function: str, operation: str, *, public: bool = False) -> Route:
    return Route(method, path, function, operation, public)


# Every route of docs/http-api.md (version 1), served per docs/conventions.md.
# Query-string variants (GET /customers?email=, GET /orders?status=) share the path.
ROUTES: tuple[Route, ...] = (
    _r("POST", "/customers", "customers", "createCustomer"),
    _r("GET", "/customers", "customers", "findCustomer"),
    _r("GET", "/customers/{customer_id}", "customers", "getCustomer"),
    _r("PATCH", "/customers/{customer_id}", "customers", "updateCustomer"),
    _r("GET", "/customers/{customer_id}/notifications", "customers", "listNotifications"),
    _r("GET", "/customers/{customer_id}/orders", "orders", "listCustomerOrders"),
    _r("GET", "/customers/{customer_id}/reviews", "products", "listCustomerReviews", public=True),
    _r("POST", "/products", "products", "createProduct"),
    _r("GET", "/products", "products", "listProducts", public=True),
    _r("GET", "/products/{product_id}", "products", "getProduct", public=True),
    _r("PATCH", "/products/{product_id}", "products", "updateProduct"),
    _r("POST", "/products/{product_id}/stock", "products", "adjustStock"),
    _r("GET", "/products/{product_id}/reviews", "products", "listProductReviews", public=True),
    _r("POST", "/products/{product_id}/reviews", "products", "createReview"),
    _r("POST", "/sessions", "sessions", "createSession", public=True),
    _r("GET", "/sessions/{session_id}", "sessions", "getSession", public=True),
    _r("PUT", "/sessions/{session_id}/cart/{product_id}", "sessions", "setCartLine", public=True),
    _r("DELETE", "/sessions/{session_id}", "sessions", "deleteSession", public=True),
    # Customer carts: served with the session carts they merge from and price alike.
    _r("GET", "/customers/{customer_id}/cart", "sessions", "getCustomerCart"),
    _r("PUT", "/customers/{customer_id}/cart/{product_id}", "sessions", "setCustomerCartLine"),
    _r("POST", "/customers/{customer_id}/cart/merge", "sessions", "mergeSessionIntoCart"),
    _r("DELETE", "/customers/{customer_id}/cart", "sessions", "emptyCustomerCart"),
    _r("POST", "/orders", "orders", "placeOrder"),
    _r("GET", "/orders", "orders", "listOrders"),
    _r("GET", "/orders/{order_id}", "orders", "getOrder"),
    _r("PATCH", "/orders/{order_id}", "orders", "changeOrderStatus"),
    _r("POST", "/orders/{order_id}/cancel", "orders", "cancelOrder"),
    # Version 2: StockLow alerts. products serves it: its grants (Query on the table) already
    # cover the read, and stock is its concern; customers would need nothing new either, but holds no stock.
    _r("GET", "/admin/alerts", "products", "listAlerts"),
    # Flash-sale stock shards.
    _r("POST", "/products/{product_id}/stock-shards", "products", "setStockShards"),
    # The catalogue tree, browse-all and subtree listings (GET /products), archive
    _r("POST", "/categories", "products", "createCategory"),
    _r("GET", "/categories", "products", "listCategories", public=True),
    _r("GET", "/categories/{slug}", "products", "getCategory", public=True),
    _r("PATCH", "/categories/{slug}", "products", "updateCategory"),
    _r("DELETE", "/products/{product_id}", "products", "archiveProduct"),
    # Returns and sales by date (the orders function: sales are counted from orders)
    _r("POST", "/orders/{order_id}/return", "orders", "requestReturn"),
    _r("GET", "/products/{product_id}/sales", "orders", "getProductSales"),
    _r("GET", "/sales/top", "orders", "listTopSellers"),
    # Payments. The order's payment (owner or admin); Stripe's webhook, public: the handler verifies
    # the Stripe-Signature (no JWT), served by the one HTTP function that loads Stripe's library.
    _r("GET", "/orders/{order_id}/payment", "orders", "getOrderPayment"),
    _r("POST", "/webhooks/stripe", "payments", "receiveStripeWebhook", public=True),
    # Version 4, the order's total: the quote (public, as a session's checkout starts), shipping zones and tax rates
    # (the admin's), the options a destination ships by (public). The orders function prices orders.
    _r("POST", "/checkout/quote", "orders", "quoteCheckout", public=True),
    _r("GET", "/shipping/options", "orders", "listShippingOptions", public=True),
    _r("PUT", "/shipping/zones/{zone_id}", "orders", "putShippingZone"),
    _r("PUT", "/tax/rates/{country}", "orders", "putTaxRate"),
    _r("POST", "/promotions", "orders", "createPromotion"),
    _r("GET", "/promotions", "orders", "listPromotions"),
    _r("GET", "/promotions/{promotion_id}", "orders", "getPromotion"),
    _r("PATCH", "/promotions/{promotion_id}", "orders", "updatePromotion"),
)
