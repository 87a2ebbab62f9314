"""Writes events/<function>/*.json: API Gateway HTTP API (2.0) sample events, named <what>_<status>.json.

Run ``python -m tests.functions.generate_events`` after changing the list; the events rely on
``events/seed.json`` (load it with ``local_runtime.sample_data.load_seed``). ``test_sample_events.py`` invokes
every file against a freshly seeded table and checks the status its name promises.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.functions.apigw import ADMIN, ALICE, BOB, REPO, event

DAVE = {"sub": "dave"}
ADDRESS = {
    "name": "Alice Example",
    "line1": "1 Main Street",
    "city": "Springfield",
    "postal_code": "12345",
    "country": "US",
}
SESSION = "sess-demo-cart-0123456789abcdef"
EMPTY_SESSION = "sess-empty-cart-0123456789abcdef"
# Each event gets its own Idempotency-Key (`sample` puts the event's name in place of this marker): events run
# one after another on one table (`sam local invoke`, a deployed stage) must not replay each other's placement.
KEY_MARKER = "<one key per event>"
KEY = {"Idempotency-Key": KEY_MARKER}
FIXED_EPOCH_MS = 1767225600000  # 2026-01-01T00:00:00Z


def order_lines(product: str, quantity: int = 1) -> dict[str, Any]:
    return {"lines": [{"product_id": product, "quantity": quantity}], "shipping_address": ADDRESS}


# name -> (method, path, keyword arguments of apigw.event); the route key is API Gateway's template form.
SAMPLES: dict[str, dict[str, tuple[str, str, str, dict[str, Any]]]] = {
    "customers": {
        "post_customer_201": (
            "POST",
            "/customers",
            "/customers",
            {"claims": DAVE, "body": {"email": "dave@example.com", "name": "Dave"}},
        ),
        "post_customer_exists_409": (
            "POST",
            "/customers",
            "/customers",
            {"claims": ALICE, "body": {"email": "alice.new@example.com", "name": "Alice"}},
        ),
        "post_customer_email_taken_409": (
            "POST",
            "/customers",
            "/customers",
            {"claims": DAVE, "body": {"email": "ALICE@example.com", "name": "Dave"}},
        ),
        "post_customer_malformed_json_400": (
            "POST",
            "/customers",
            "/customers",
            {"claims": DAVE, "raw_body": '{"email": '},
        ),
        "post_customer_invalid_email_422": (
            "POST",
            "/customers",
            "/customers",
            {"claims": DAVE, "body": {"email": "not-an-email", "name": "Dave"}},
        ),
        "post_customer_anonymous_401": (
            "POST",
            "/customers",
            "/customers",
            {"body": {"email": "x@example.com", "name": "X"}},
        ),
        "get_customer_200": ("GET", "/customers/alice", "/customers/{customer_id}", {"claims": ALICE}),
        "get_customer_as_admin_200": ("GET", "/customers/alice", "/customers/{customer_id}", {"claims": ADMIN}),
        "get_customer_other_customer_403": ("GET", "/customers/alice", "/customers/{customer_id}", {"claims": BOB}),
        "get_customer_missing_404": ("GET", "/customers/nobody", "/customers/{customer_id}", {"claims": ADMIN}),
        "patch_customer_if_match_200": (
            "PATCH",
            "/customers/alice",
            "/customers/{customer_id}",
            {"claims": ALICE, "headers": {"If-Match": '"1"'}, "body": {"email": "alice.b@example.com"}},
        ),
        "patch_customer_200": (
            "PATCH",
            "/customers/alice",
            "/customers/{customer_id}",
            {"claims": ALICE, "body": {"name": "Alice B. Example"}},
        ),
        "patch_customer_version_mismatch_412": (
            "PATCH",
            "/customers/alice",
            "/customers/{customer_id}",
            {"claims": ALICE, "headers": {"If-Match": '"7"'}, "body": {"name": "Alice B. Example"}},
        ),
        "patch_customer_email_taken_409": (
            "PATCH",
            "/customers/alice",
            "/customers/{customer_id}",
            {"claims": ALICE, "body": {"email": "bob@example.com"}},
        ),
        "patch_customer_empty_422": (
            "PATCH",
            "/customers/alice",
            "/customers/{customer_id}",
            {"claims": ALICE, "body": {}},
        ),
        "find_customer_by_email_200": (
            "GET",
            "/customers",
            "/customers",
            {"claims": ADMIN, "query": {"email": "Bob@Example.com"}},
        ),
        "find_customer_by_email_not_admin_403": (
            "GET",
            "/customers",
            "/customers",
            {"claims": ALICE, "query": {"email": "bob@example.com"}},
        ),
        "find_customer_by_email_unknown_404": (
            "GET",
            "/customers",
            "/customers",
            {"claims": ADMIN, "query": {"email": "nobody@example.com"}},
        ),
        "list_notifications_200": (
            "GET",
            "/customers/alice/notifications",
            "/customers/{customer_id}/notifications",
            {"claims": ALICE, "query": {"limit": "10"}},
        ),
        "list_notifications_tampered_token_400": (
            "GET",
            "/customers/alice/notifications",
            "/customers/{customer_id}/notifications",
            {"claims": ALICE, "query": {"next_token": "eyJzIjoieCJ9.forged"}},
        ),
        "list_notifications_limit_too_big_422": (
            "GET",
            "/customers/alice/notifications",
            "/customers/{customer_id}/notifications",
            {"claims": ALICE, "query": {"limit": "1000"}},
        ),
        "list_notifications_other_customer_403": (
            "GET",
            "/customers/alice/notifications",
            "/customers/{customer_id}/notifications",
            {"claims": BOB},
        ),
    },
    "products": {
        "list_products_200": ("GET", "/products", "/products", {"query": {"category": "peripherals", "limit": "2"}}),
        "list_products_newest_200": ("GET", "/products", "/products", {"query": {"sort": "newest", "limit": "2"}}),
        "list_products_by_price_desc_200": (
            "GET",
            "/products",
            "/products",
            {"query": {"category": "computers", "sort": "price_desc"}},
        ),
        "list_products_unknown_category_404": ("GET", "/products", "/products", {"query": {"category": "nowhere"}}),
        "list_products_newest_in_category_422": (
            "GET",
            "/products",
            "/products",
            {"query": {"category": "computers", "sort": "newest"}},
        ),
        "delete_product_200": ("DELETE", "/products/prod-soldout", "/products/{product_id}", {"claims": ADMIN}),
        "delete_product_404": ("DELETE", "/products/prod-missing", "/products/{product_id}", {"claims": ADMIN}),
        "delete_product_not_admin_403": (
            "DELETE",
            "/products/prod-soldout",
            "/products/{product_id}",
            {"claims": ALICE},
        ),
        "patch_product_categories_200": (
            "PATCH",
            "/products/prod-cable",
            "/products/{product_id}",
            {"claims": ADMIN, "body": {"categories": ["audio", "peripherals"], "low_stock_threshold": 10}},
        ),
        "patch_product_unknown_category_404": (
            "PATCH",
            "/products/prod-cable",
            "/products/{product_id}",
            {"claims": ADMIN, "body": {"categories": ["nowhere"]}},
        ),
        "post_category_201": (
            "POST",
            "/categories",
            "/categories",
            {"claims": ADMIN, "body": {"slug": "keyboards", "name": "Keyboards", "parent": "peripherals"}},
        ),
        "post_category_exists_409": (
            "POST",
            "/categories",
            "/categories",
            {"claims": ADMIN, "body": {"slug": "cables", "name": "Cables"}},
        ),
        "post_category_unknown_parent_404": (
            "POST",
            "/categories",
            "/categories",
            {"claims": ADMIN, "body": {"slug": "keyboards", "name": "Keyboards", "parent": "nowhere"}},
        ),
        "post_category_bad_slug_422": (
            "POST",
            "/categories",
            "/categories",
            {"claims": ADMIN, "body": {"slug": "Not A Slug", "name": "Keyboards"}},
        ),
        "post_category_not_admin_403": (
            "POST",
            "/categories",
            "/categories",
            {"claims": ALICE, "body": {"slug": "keyboards", "name": "Keyboards"}},
        ),
        "list_categories_200": ("GET", "/categories", "/categories", {}),
        "get_category_200": ("GET", "/categories/peripherals", "/categories/{slug}", {}),
        "get_category_404": ("GET", "/categories/nowhere", "/categories/{slug}", {}),
        "patch_category_rename_200": (
            "PATCH",
            "/categories/cables",
            "/categories/{slug}",
            {"claims": ADMIN, "body": {"name": "Cables and adapters"}},
        ),
        "patch_category_move_200": (
            "PATCH",
            "/categories/cables",
            "/categories/{slug}",
            {"claims": ADMIN, "body": {"parent": "audio"}},
        ),
        "patch_category_into_own_subtree_409": (
            "PATCH",
            "/categories/computers",
            "/categories/{slug}",
            {"claims": ADMIN, "body": {"parent": "peripherals"}},
        ),
        "get_product_200": ("GET", "/products/prod-keyboard", "/products/{product_id}", {}),
        "get_product_404": ("GET", "/products/prod-missing", "/products/{product_id}", {}),
        "post_product_201": (
            "POST",
            "/products",
            "/products",
            {
                "claims": ADMIN,
                "body": {
                    "name": "Webcam",
                    "category": "peripherals",
                    "price_cents": 4900,
                    "stock": 12,
                    "description": "1080p",
                },
            },
        ),
        "post_product_not_admin_403": (
            "POST",
            "/products",
            "/products",
            {"claims": ALICE, "body": {"name": "Webcam", "category": "peripherals", "price_cents": 4900}},
        ),
        "post_product_string_price_422": (
            "POST",
            "/products",
            "/products",
            {"claims": ADMIN, "body": {"name": "Webcam", "category": "peripherals", "price_cents": "4900"}},
        ),
        "post_product_anonymous_401": (
            "POST",
            "/products",
            "/products",
            {"body": {"name": "Webcam", "category": "peripherals", "price_cents": 4900}},
        ),
        "patch_product_200": (
            "PATCH",
            "/products/prod-cable",
            "/products/{product_id}",
            {"claims": ADMIN, "body": {"price_cents": 990, "description": None}},
        ),
        "patch_product_404": (
            "PATCH",
            "/products/prod-missing",
            "/products/{product_id}",
            {"claims": ADMIN, "body": {"price_cents": 990}},
        ),
        "patch_product_stock_field_422": (
            "PATCH",
            "/products/prod-cable",
            "/products/{product_id}",
            {"claims": ADMIN, "body": {"stock": 5}},
        ),
        "post_stock_200": (
            "POST",
            "/products/prod-soldout/stock",
            "/products/{product_id}/stock",
            {"claims": ADMIN, "body": {"delta": 10}},
        ),
        "post_stock_insufficient_409": (
            "POST",
            "/products/prod-keyboard/stock",
            "/products/{product_id}/stock",
            {"claims": ADMIN, "body": {"delta": -1000}},
        ),
        "post_stock_non_integer_422": (
            "POST",
            "/products/prod-keyboard/stock",
            "/products/{product_id}/stock",
            {"claims": ADMIN, "body": {"delta": 1.5}},
        ),
        "list_product_reviews_200": ("GET", "/products/prod-mouse/reviews", "/products/{product_id}/reviews", {}),
        "list_product_reviews_404": ("GET", "/products/prod-missing/reviews", "/products/{product_id}/reviews", {}),
        "post_review_201": (
            "POST",
            "/products/prod-mouse/reviews",
            "/products/{product_id}/reviews",
            {"claims": BOB, "body": {"rating": 4, "title": "Good", "body": "Battery lasts."}},
        ),
        "post_review_already_reviewed_409": (
            "POST",
            "/products/prod-mouse/reviews",
            "/products/{product_id}/reviews",
            {"claims": ALICE, "body": {"rating": 1, "title": "Again", "body": "Second try."}},
        ),
        "post_review_unknown_product_404": (
            "POST",
            "/products/prod-missing/reviews",
            "/products/{product_id}/reviews",
            {"claims": BOB, "body": {"rating": 4, "title": "Good", "body": "Fine."}},
        ),
        "post_review_rating_out_of_range_422": (
            "POST",
            "/products/prod-mouse/reviews",
            "/products/{product_id}/reviews",
            {"claims": BOB, "body": {"rating": 6, "title": "Wow", "body": "Six stars."}},
        ),
        "list_customer_reviews_200": ("GET", "/customers/alice/reviews", "/customers/{customer_id}/reviews", {}),
        "list_alerts_200": ("GET", "/admin/alerts", "/admin/alerts", {"claims": ADMIN, "query": {"limit": "10"}}),
        "list_alerts_not_admin_403": ("GET", "/admin/alerts", "/admin/alerts", {"claims": ALICE}),
    },
    "sessions": {
        "post_session_201": ("POST", "/sessions", "/sessions", {}),
        "get_session_200": ("GET", f"/sessions/{SESSION}", "/sessions/{session_id}", {}),
        "get_session_unknown_404": ("GET", "/sessions/sess-unknown", "/sessions/{session_id}", {}),
        "put_cart_line_200": (
            "PUT",
            f"/sessions/{SESSION}/cart/prod-mouse",
            "/sessions/{session_id}/cart/{product_id}",
            {"body": {"quantity": 3}},
        ),
        "put_cart_line_remove_200": (
            "PUT",
            f"/sessions/{SESSION}/cart/prod-keyboard",
            "/sessions/{session_id}/cart/{product_id}",
            {"body": {"quantity": 0}},
        ),
        "put_cart_line_unknown_product_404": (
            "PUT",
            f"/sessions/{SESSION}/cart/prod-missing",
            "/sessions/{session_id}/cart/{product_id}",
            {"body": {"quantity": 1}},
        ),
        "put_cart_line_unknown_session_404": (
            "PUT",
            "/sessions/sess-unknown/cart/prod-mouse",
            "/sessions/{session_id}/cart/{product_id}",
            {"body": {"quantity": 1}},
        ),
        "put_cart_line_quantity_too_big_422": (
            "PUT",
            f"/sessions/{SESSION}/cart/prod-mouse",
            "/sessions/{session_id}/cart/{product_id}",
            {"body": {"quantity": 100}},
        ),
        "delete_session_204": ("DELETE", f"/sessions/{EMPTY_SESSION}", "/sessions/{session_id}", {}),
        # Customer carts (served by sessions): alice's holds one prod-mouse (events/seed.json).
        "get_customer_cart_200": ("GET", "/customers/alice/cart", "/customers/{customer_id}/cart", {"claims": ALICE}),
        "get_customer_cart_as_admin_200": (
            "GET",
            "/customers/alice/cart",
            "/customers/{customer_id}/cart",
            {"claims": ADMIN},
        ),
        "get_customer_cart_no_profile_404": (
            "GET",
            "/customers/dave/cart",
            "/customers/{customer_id}/cart",
            {"claims": DAVE},
        ),
        "get_customer_cart_other_customer_403": (
            "GET",
            "/customers/alice/cart",
            "/customers/{customer_id}/cart",
            {"claims": BOB},
        ),
        "put_customer_cart_line_200": (
            "PUT",
            "/customers/alice/cart/prod-cable",
            "/customers/{customer_id}/cart/{product_id}",
            {"claims": ALICE, "body": {"quantity": 2}},
        ),
        "put_customer_cart_line_remove_200": (
            "PUT",
            "/customers/alice/cart/prod-mouse",
            "/customers/{customer_id}/cart/{product_id}",
            {"claims": ALICE, "body": {"quantity": 0}},
        ),
        "put_customer_cart_line_unknown_product_404": (
            "PUT",
            "/customers/alice/cart/prod-missing",
            "/customers/{customer_id}/cart/{product_id}",
            {"claims": ALICE, "body": {"quantity": 1}},
        ),
        "put_customer_cart_line_as_admin_403": (
            "PUT",
            "/customers/alice/cart/prod-cable",
            "/customers/{customer_id}/cart/{product_id}",
            {"claims": ADMIN, "body": {"quantity": 1}},
        ),
        "put_customer_cart_line_quantity_too_big_422": (
            "PUT",
            "/customers/alice/cart/prod-cable",
            "/customers/{customer_id}/cart/{product_id}",
            {"claims": ALICE, "body": {"quantity": 100}},
        ),
        "merge_session_into_cart_200": (
            "POST",
            "/customers/alice/cart/merge",
            "/customers/{customer_id}/cart/merge",
            {"claims": ALICE, "body": {"session_id": SESSION}},
        ),
        "merge_unknown_session_404": (
            "POST",
            "/customers/alice/cart/merge",
            "/customers/{customer_id}/cart/merge",
            {"claims": ALICE, "body": {"session_id": "sess-unknown"}},
        ),
        "delete_customer_cart_204": (
            "DELETE",
            "/customers/alice/cart",
            "/customers/{customer_id}/cart",
            {"claims": ALICE},
        ),
    },
    "orders": {
        "post_order_201": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": order_lines("prod-keyboard", 2)},
        ),
        "post_order_from_session_201": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": {"session_id": SESSION, "shipping_address": ADDRESS}},
        ),
        "post_order_out_of_stock_409": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": order_lines("prod-soldout")},
        ),
        "post_order_unknown_product_404": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": order_lines("prod-missing")},
        ),
        "post_order_unknown_session_404": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": {"session_id": "sess-unknown", "shipping_address": ADDRESS}},
        ),
        "post_order_empty_session_409": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": {"session_id": EMPTY_SESSION, "shipping_address": ADDRESS}},
        ),
        "post_order_from_customer_cart_201": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": {"cart": "customer", "shipping_address": ADDRESS}},
        ),
        "post_order_from_empty_customer_cart_409": (
            "POST",
            "/orders",
            "/orders",
            {"claims": BOB, "headers": KEY, "body": {"cart": "customer", "shipping_address": ADDRESS}},
        ),
        "post_order_without_idempotency_key_422": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "body": order_lines("prod-keyboard")},
        ),
        "post_order_both_sources_422": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": {**order_lines("prod-keyboard"), "session_id": SESSION}},
        ),
        "post_order_client_price_422": (
            "POST",
            "/orders",
            "/orders",
            {
                "claims": ALICE,
                "headers": KEY,
                "body": {
                    "lines": [{"product_id": "prod-keyboard", "quantity": 1, "unit_price_cents": 1}],
                    "shipping_address": ADDRESS,
                },
            },
        ),
        "post_order_anonymous_401": (
            "POST",
            "/orders",
            "/orders",
            {"headers": KEY, "body": order_lines("prod-keyboard")},
        ),
        "get_order_200": ("GET", "/orders/00-alice-pending", "/orders/{order_id}", {"claims": ALICE}),
        "get_order_as_admin_200": ("GET", "/orders/00-alice-pending", "/orders/{order_id}", {"claims": ADMIN}),
        "get_order_other_customer_404": ("GET", "/orders/00-alice-pending", "/orders/{order_id}", {"claims": BOB}),
        "get_order_unknown_404": ("GET", "/orders/00-missing", "/orders/{order_id}", {"claims": ADMIN}),
        "list_orders_by_status_200": ("GET", "/orders", "/orders", {"claims": ADMIN, "query": {"status": "PENDING"}}),
        "list_orders_unknown_status_422": ("GET", "/orders", "/orders", {"claims": ADMIN, "query": {"status": "LOST"}}),
        "list_orders_not_admin_403": ("GET", "/orders", "/orders", {"claims": ALICE, "query": {"status": "PENDING"}}),
        "patch_order_200": (
            "PATCH",
            "/orders/00-alice-pending",
            "/orders/{order_id}",
            {"claims": ADMIN, "headers": {"If-Match": '"1"'}, "body": {"status": "CONFIRMED"}},
        ),
        "patch_order_without_if_match_428": (
            "PATCH",
            "/orders/00-alice-pending",
            "/orders/{order_id}",
            {"claims": ADMIN, "body": {"status": "CONFIRMED"}},
        ),
        "patch_order_version_mismatch_412": (
            "PATCH",
            "/orders/00-alice-pending",
            "/orders/{order_id}",
            {"claims": ADMIN, "headers": {"If-Match": '"7"'}, "body": {"status": "CONFIRMED"}},
        ),
        "patch_order_invalid_transition_409": (
            "PATCH",
            "/orders/00-alice-shipped",
            "/orders/{order_id}",
            {"claims": ADMIN, "headers": {"If-Match": 'W/"3"'}, "body": {"status": "CANCELLED"}},
        ),
        "patch_order_not_admin_403": (
            "PATCH",
            "/orders/00-alice-pending",
            "/orders/{order_id}",
            {"claims": ALICE, "headers": {"If-Match": '"1"'}, "body": {"status": "CONFIRMED"}},
        ),
        "cancel_order_200": (
            "POST",
            "/orders/00-alice-pending/cancel",
            "/orders/{order_id}/cancel",
            {"claims": ALICE},
        ),
        "cancel_order_invalid_transition_409": (
            "POST",
            "/orders/00-alice-shipped/cancel",
            "/orders/{order_id}/cancel",
            {"claims": ALICE},
        ),
        "cancel_order_other_customer_404": (
            "POST",
            "/orders/00-alice-pending/cancel",
            "/orders/{order_id}/cancel",
            {"claims": BOB},
        ),
        # issue 13: shipments, returns, sales by date
        "patch_order_ship_without_tracking_422": (
            "PATCH",
            "/orders/00-alice-pending",
            "/orders/{order_id}",
            {"claims": ADMIN, "headers": {"If-Match": '"1"'}, "body": {"status": "SHIPPED", "carrier": "DHL"}},
        ),
        "patch_order_return_accepted_200": (
            "PATCH",
            "/orders/00-bob-return",
            "/orders/{order_id}",
            {"claims": ADMIN, "headers": {"If-Match": '"5"'}, "body": {"status": "RETURNED"}},
        ),
        "patch_order_return_rejected_without_reason_422": (
            "PATCH",
            "/orders/00-bob-return-2",
            "/orders/{order_id}",
            {"claims": ADMIN, "headers": {"If-Match": '"5"'}, "body": {"status": "DELIVERED"}},
        ),
        "patch_order_return_rejected_200": (
            "PATCH",
            "/orders/00-bob-return-2",
            "/orders/{order_id}",
            {
                "claims": ADMIN,
                "headers": {"If-Match": '"5"'},
                "body": {"status": "DELIVERED", "reason": "The cable shows wear."},
            },
        ),
        "post_return_200": (
            "POST",
            "/orders/00-bob-delivered/return",
            "/orders/{order_id}/return",
            {"claims": BOB, "body": {"reason": "Too short."}},
        ),
        "post_return_more_units_than_bought_409": (
            "POST",
            "/orders/00-bob-delivered-2/return",
            "/orders/{order_id}/return",
            {"claims": BOB, "body": {"reason": "All of them.", "lines": [{"variant_id": "prod-cable", "quantity": 4}]}},
        ),
        "post_return_lines_unknown_422": (
            "POST",
            "/orders/00-bob-delivered-2/return",
            "/orders/{order_id}/return",
            {
                "claims": BOB,
                "body": {"reason": "Wrong thing.", "lines": [{"variant_id": "prod-keyboard", "quantity": 1}]},
            },
        ),
        "post_return_some_units_200": (
            "POST",
            "/orders/00-bob-delivered-2/return",
            "/orders/{order_id}/return",
            {
                "claims": BOB,
                "body": {"reason": "Two are enough.", "lines": [{"variant_id": "prod-cable", "quantity": 1}]},
            },
        ),
        "post_return_not_delivered_409": (
            "POST",
            "/orders/00-alice-shipped/return",
            "/orders/{order_id}/return",
            {"claims": ALICE, "body": {"reason": "Changed my mind."}},
        ),
        "post_return_other_customer_404": (
            "POST",
            "/orders/00-bob-delivered/return",
            "/orders/{order_id}/return",
            {"claims": ALICE, "body": {"reason": "Not mine."}},
        ),
        "post_return_without_reason_422": (
            "POST",
            "/orders/00-bob-delivered/return",
            "/orders/{order_id}/return",
            {"claims": BOB, "body": {}},
        ),
        "get_product_sales_200": (
            "GET",
            "/products/prod-mouse/sales",
            "/products/{product_id}/sales",
            {"claims": ADMIN, "query": {"from": "2026-01-01", "to": "2026-01-07"}},
        ),
        "get_product_sales_over_366_days_422": (
            "GET",
            "/products/prod-mouse/sales",
            "/products/{product_id}/sales",
            {"claims": ADMIN, "query": {"from": "2025-01-01", "to": "2026-01-02"}},
        ),
        "get_product_sales_not_admin_403": (
            "GET",
            "/products/prod-mouse/sales",
            "/products/{product_id}/sales",
            {"claims": ALICE, "query": {"from": "2026-01-01", "to": "2026-01-07"}},
        ),
        "get_top_sales_200": ("GET", "/sales/top", "/sales/top", {"claims": ADMIN, "query": {"date": "2026-01-01"}}),
        "get_top_sales_bad_date_422": (
            "GET",
            "/sales/top",
            "/sales/top",
            {"claims": ADMIN, "query": {"date": "2026-02-30"}},
        ),
        # The order's total (issue 37): a zone that ships to the placements' country, so that placements run after
        # it on one table still ship (by its first option); a rate of 0 for the US with California's own.
        "put_shipping_zone_200": (
            "PUT",
            "/shipping/zones/zone-north-america",
            "/shipping/zones/{zone_id}",
            {
                "claims": ADMIN,
                "body": {
                    "name": "North America",
                    "countries": ["US", "CA"],
                    "options": [
                        {"option_id": "standard", "name": "Standard", "price_cents": 499, "free_over_cents": 5000},
                        {"option_id": "express", "name": "Express", "price_cents": 1499},
                    ],
                },
            },
        ),
        "put_shipping_zone_not_admin_403": (
            "PUT",
            "/shipping/zones/zone-north-america",
            "/shipping/zones/{zone_id}",
            {
                "claims": ALICE,
                "body": {
                    "name": "N",
                    "countries": ["US"],
                    "options": [{"option_id": "s", "name": "S", "price_cents": 0}],
                },
            },
        ),
        "put_tax_rate_200": (
            "PUT",
            "/tax/rates/US",
            "/tax/rates/{country}",
            {"claims": ADMIN, "body": {"rate_bps": 0, "regions": {"US-CA": 725}}},
        ),
        "put_tax_rate_foreign_region_422": (
            "PUT",
            "/tax/rates/US",
            "/tax/rates/{country}",
            {"claims": ADMIN, "body": {"rate_bps": 0, "regions": {"CA-ON": 1300}}},
        ),
        "quote_checkout_200": ("POST", "/checkout/quote", "/checkout/quote", {"body": order_lines("prod-keyboard", 2)}),
        "quote_checkout_shipping_unavailable_422": (
            "POST",
            "/checkout/quote",
            "/checkout/quote",
            {"body": {**order_lines("prod-keyboard"), "shipping_option_id": "teleport"}},
        ),
        "post_promotion_201": (
            "POST",
            "/promotions",
            "/promotions",
            {
                "claims": ADMIN,
                "body": {"code": "SPRING5", "kind": "fixed", "value": 500, "min_subtotal_cents": 2000},
            },
        ),
        "post_promotion_percent_over_100_422": (
            "POST",
            "/promotions",
            "/promotions",
            {"claims": ADMIN, "body": {"code": "TOOMUCH", "kind": "percent", "value": 150}},
        ),
        "list_promotions_200": ("GET", "/promotions", "/promotions", {"claims": ADMIN}),
        "list_promotions_not_admin_403": ("GET", "/promotions", "/promotions", {"claims": ALICE}),
        "get_promotion_200": ("GET", "/promotions/promo-welcome10", "/promotions/{promotion_id}", {"claims": ADMIN}),
        "get_promotion_unknown_404": ("GET", "/promotions/unknown", "/promotions/{promotion_id}", {"claims": ADMIN}),
        "patch_promotion_200": (
            "PATCH",
            "/promotions/promo-welcome10",
            "/promotions/{promotion_id}",
            {"claims": ADMIN, "body": {"min_subtotal_cents": 2500}},
        ),
        "patch_promotion_unknown_404": (
            "PATCH",
            "/promotions/unknown",
            "/promotions/{promotion_id}",
            {"claims": ADMIN, "body": {"end": True}},
        ),
        "quote_checkout_with_code_200": (
            "POST",
            "/checkout/quote",
            "/checkout/quote",
            {"body": {**order_lines("prod-keyboard"), "promo_code": "welcome10"}},
        ),
        "quote_checkout_unknown_code_409": (
            "POST",
            "/checkout/quote",
            "/checkout/quote",
            {"body": {**order_lines("prod-keyboard"), "promo_code": "NOSUCHCODE"}},
        ),
        "list_shipping_options_200": ("GET", "/shipping/options", "/shipping/options", {"query": {"country": "US"}}),
        "list_shipping_options_unknown_country_422": (
            "GET",
            "/shipping/options",
            "/shipping/options",
            {"query": {"country": "ZZ"}},
        ),
        "list_customer_orders_200": (
            "GET",
            "/customers/alice/orders",
            "/customers/{customer_id}/orders",
            {"claims": ALICE},
        ),
        "list_customer_orders_other_customer_403": (
            "GET",
            "/customers/alice/orders",
            "/customers/{customer_id}/orders",
            {"claims": BOB},
        ),
    },
}


def sample(name: str, method: str, path: str, route: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    if kwargs.get("headers", {}).get("Idempotency-Key") == KEY_MARKER:
        kwargs = {**kwargs, "headers": {**kwargs["headers"], "Idempotency-Key": f"sample-{name.replace('_', '-')}"}}
    evt = event(method, path, route_key=f"{method} {route}", **kwargs)
    request_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"shop-sample/{name}"))
    evt["requestContext"].update(requestId=request_id, time="01/Jan/2026:00:00:00 +0000", timeEpoch=FIXED_EPOCH_MS)
    evt["headers"]["x-amzn-trace-id"] = f"Root=1-{FIXED_EPOCH_MS // 1000:08x}-{request_id.replace('-', '')[:24]}"
    if "authorizer" in evt["requestContext"]:
        claims = evt["requestContext"]["authorizer"]["jwt"]["claims"]
        claims.update(iat=str(FIXED_EPOCH_MS // 1000), exp=str(FIXED_EPOCH_MS // 1000 + 3600))
    # Path parameters as API Gateway extracts them from the route key.
    names = [part[1:-1] for part in route.split("/") if part.startswith("{")]
    values = [value for part, value in zip(route.split("/"), path.split("/"), strict=True) if part.startswith("{")]
    if names:
        evt["pathParameters"] = dict(zip(names, values, strict=True))
    return evt


# Flash-sale stock shards (issue 11): prod-flash has its 40 units over 4 shards in the seed.
STOCK_SHARDS_ROUTE = "/products/{product_id}/stock-shards"
SAMPLES["products"].update(
    {
        "post_stock_shards_200": (
            "POST",
            "/products/prod-keyboard/stock-shards",
            STOCK_SHARDS_ROUTE,
            {"claims": ADMIN, "body": {"shards": 8}},
        ),
        "post_stock_shards_unmark_200": (
            "POST",
            "/products/prod-flash/stock-shards",
            STOCK_SHARDS_ROUTE,
            {"claims": ADMIN, "body": {"shards": 1}},
        ),
        "post_stock_shards_not_admin_403": (
            "POST",
            "/products/prod-keyboard/stock-shards",
            STOCK_SHARDS_ROUTE,
            {"claims": ALICE, "body": {"shards": 8}},
        ),
        "post_stock_shards_unknown_product_404": (
            "POST",
            "/products/prod-missing/stock-shards",
            STOCK_SHARDS_ROUTE,
            {"claims": ADMIN, "body": {"shards": 8}},
        ),
        "post_stock_shards_too_many_422": (
            "POST",
            "/products/prod-keyboard/stock-shards",
            STOCK_SHARDS_ROUTE,
            {"claims": ADMIN, "body": {"shards": 33}},
        ),
        "get_flash_sale_product_200": ("GET", "/products/prod-flash", "/products/{product_id}", {}),
    }
)
SAMPLES["orders"].update(
    {
        "post_order_flash_sale_product_201": (
            "POST",
            "/orders",
            "/orders",
            {"claims": ALICE, "headers": KEY, "body": order_lines("prod-flash", 2)},
        ),
    }
)


def write_all() -> int:
    written = 0
    for function, samples in SAMPLES.items():
        folder = REPO / "events" / function
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):
            old.unlink()
        for name, (method, path, route, kwargs) in samples.items():
            (folder / f"{name}.json").write_text(json.dumps(sample(name, method, path, route, kwargs), indent=2) + "\n")
            written += 1
    return written


if __name__ == "__main__":
    print(f"wrote {write_all()} events")
