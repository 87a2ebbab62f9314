"""Routes, error codes, validation, pagination, ETag/If-Match and idempotency through real events."""

from __future__ import annotations

import json

import pytest

from tests.functions.apigw import ADMIN, ALICE, BOB, call, event, invoke

ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}


def order_body(product="prod-cable", quantity=1):
    return {"lines": [{"product_id": product, "quantity": quantity}], "shipping_address": ADDRESS}


def place(key="k-1", claims=ALICE, body=None):
    return call("POST", "/orders", claims=claims, headers={"Idempotency-Key": key}, body=body or order_body())


@pytest.mark.dynamodb_semantics
def test_customer_lifecycle_and_email_rules(api):
    created = call("POST", "/customers", claims={"sub": "carol"}, body={"email": "Carol@Example.com", "name": "Carol"})
    assert created.status == 201
    assert set(created.body) >= {"customer_id", "email", "name", "created_at"}
    assert created.body["customer_id"] == "carol"
    assert (
        call("POST", "/customers", claims={"sub": "carol"}, body={"email": "c2@example.com", "name": "C"}).code
        == "CUSTOMER_EXISTS"
    )
    assert (
        call("POST", "/customers", claims={"sub": "dan"}, body={"email": "CAROL@example.com", "name": "D"}).code
        == "EMAIL_TAKEN"
    )
    assert (
        call("PATCH", "/customers/carol", claims={"sub": "carol"}, body={"email": "ALICE@example.com"}).code
        == "EMAIL_TAKEN"
    )
    found = call("GET", "/customers", claims=ADMIN, query={"email": "carol@EXAMPLE.com"})
    assert (found.status, found.body["customer_id"]) == (200, "carol")
    assert call("GET", "/customers/nobody", claims=ADMIN).code == "CUSTOMER_NOT_FOUND"


@pytest.mark.dynamodb_semantics
def test_catalogue_routes(api):
    product = call("POST", "/products", claims=ADMIN, body={"name": "Hub", "category": "cables", "price_cents": 1999})
    assert product.status == 201
    assert (product.body["stock"], product.body["rating_count"], product.body["rating_average"]) == (0, 0, None)
    pid = product.body["product_id"]
    assert call("POST", f"/products/{pid}/stock", claims=ADMIN, body={"delta": 5}).body == {
        "product_id": pid,
        "stock": 5,
    }
    short = call("POST", f"/products/{pid}/stock", claims=ADMIN, body={"delta": -6})
    assert (short.status, short.code) == (409, "INSUFFICIENT_STOCK")
    patched = call("PATCH", f"/products/{pid}", claims=ADMIN, body={"name": "USB hub", "description": "4 ports"})
    assert (patched.status, patched.body["name"], patched.body["stock"]) == (200, "USB hub", 5)
    assert call("PATCH", "/products/nope", claims=ADMIN, body={"name": "x"}).code == "PRODUCT_NOT_FOUND"
    listed = call("GET", "/products", query={"category": "cables"})
    assert [p["name"] for p in listed.body["items"]] == ["USB hub", "USB-C cable"]
    review = call("POST", f"/products/{pid}/reviews", claims=BOB, body={"rating": 4, "title": "ok", "body": "fine"})
    assert review.status == 201
    assert (
        call("POST", f"/products/{pid}/reviews", claims=BOB, body={"rating": 2, "title": "x", "body": "y"}).code
        == "ALREADY_REVIEWED"
    )
    assert call("GET", f"/products/{pid}").body["rating_average"] == 4
    assert call("GET", "/products/nope/reviews").code == "PRODUCT_NOT_FOUND"
    assert (
        call("POST", "/products/nope/reviews", claims=BOB, body={"rating": 4, "title": "t", "body": "b"}).status == 404
    )
    assert call("GET", "/customers/bob/reviews").body["items"][0]["product_id"] == pid


@pytest.mark.dynamodb_semantics
def test_session_cart(api):
    session = call("POST", "/sessions")
    assert session.status == 201
    assert session.body["cart"] == []
    sid = session.body["session_id"]
    assert len(sid) >= 22
    first = call("PUT", f"/sessions/{sid}/cart/prod-keyboard", body={"quantity": 2})
    assert (first.status, first.body["subtotal_cents"]) == (200, 17800)
    assert call("PUT", f"/sessions/{sid}/cart/prod-keyboard", body={"quantity": 0}).body["cart"] == []
    assert call("PUT", f"/sessions/{sid}/cart/prod-missing", body={"quantity": 1}).code == "PRODUCT_NOT_FOUND"
    assert call("DELETE", f"/sessions/{sid}").status == 204
    assert call("GET", f"/sessions/{sid}").code == "SESSION_NOT_FOUND"
    assert call("PUT", f"/sessions/{sid}/cart/prod-mouse", body={"quantity": 1}).code == "SESSION_NOT_FOUND"


@pytest.mark.dynamodb_semantics
def test_cart_shows_the_current_price_after_an_admin_change(api):
    sid = "sess-demo-cart-0123456789abcdef"
    assert call("PATCH", "/products/prod-keyboard", claims=ADMIN, body={"price_cents": 9900}).status == 200
    shown = call("GET", f"/sessions/{sid}")
    assert shown.status == 200
    assert shown.body["cart"] == [
        {
            "product_id": "prod-keyboard",
            "name": "Mechanical keyboard",
            "unit_price_cents": 9900,
            "quantity": 2,
            "added_unit_price_cents": 8900,
            "price_changed": True,
            "unavailable": False,
        }
    ]
    assert shown.body["subtotal_cents"] == 2 * 9900
    after_put = call("PUT", f"/sessions/{sid}/cart/prod-mouse", body={"quantity": 1})
    assert [(line["unit_price_cents"], line["price_changed"]) for line in after_put.body["cart"]] == [
        (9900, True),
        (2900, False),
    ]
    assert after_put.body["subtotal_cents"] == 2 * 9900 + 2900
    placed = place(body={"session_id": sid, "shipping_address": ADDRESS})
    assert (placed.status, placed.body["total_cents"]) == (201, after_put.body["subtotal_cents"])


def test_cart_full_is_422(moto_api):
    sid = call("POST", "/sessions").body["session_id"]
    pids = [
        call("POST", "/products", claims=ADMIN, body={"name": f"p{i}", "category": "bulk", "price_cents": 1}).body[
            "product_id"
        ]
        for i in range(26)
    ]
    for pid in pids[:25]:
        assert call("PUT", f"/sessions/{sid}/cart/{pid}", body={"quantity": 1}).status == 200
    full = call("PUT", f"/sessions/{sid}/cart/{pids[25]}", body={"quantity": 1})
    assert (full.status, full.code) == (422, "CART_FULL")


@pytest.mark.dynamodb_semantics
def test_order_placement_prices_from_catalogue_and_reads_back(api):
    placed = place(
        body={
            "lines": [{"product_id": "prod-keyboard", "quantity": 2}, {"product_id": "prod-cable", "quantity": 3}],
            "shipping_address": ADDRESS,
        }
    )
    assert placed.status == 201
    assert placed.body["status"] == "PENDING"
    assert placed.body["total_cents"] == 2 * 8900 + 3 * 900
    assert {(line["product_id"], line["unit_price_cents"]) for line in placed.body["lines"]} == {
        ("prod-keyboard", 8900),
        ("prod-cable", 900),
    }
    order_id = placed.body["order_id"]
    read = call("GET", f"/orders/{order_id}", claims=ALICE)
    assert (read.status, read.headers["etag"]) == (200, '"1"')
    assert read.body["history"][0]["status"] == "PENDING"
    assert call("GET", f"/orders/{order_id}", claims=BOB).code == "ORDER_NOT_FOUND"
    assert call("GET", "/products/prod-keyboard").body["stock"] == 23
    mine = call("GET", "/customers/alice/orders", claims=ALICE)
    assert mine.body["items"][0]["order_id"] == order_id
    assert "lines" not in mine.body["items"][0]


@pytest.mark.dynamodb_semantics
def test_order_from_session_clears_the_cart(api):
    sid = "sess-demo-cart-0123456789abcdef"
    placed = place(body={"session_id": sid, "shipping_address": ADDRESS})
    assert (placed.status, placed.body["total_cents"]) == (201, 17800)
    assert call("GET", f"/sessions/{sid}").body["cart"] == []
    assert place("k-2", body={"session_id": "sess-unknown", "shipping_address": ADDRESS}).code == "SESSION_NOT_FOUND"
    assert place("k-3", body={"session_id": sid, "shipping_address": ADDRESS}).code == "CART_EMPTY"


@pytest.mark.dynamodb_semantics
def test_order_errors(api):
    out = place(body=order_body("prod-soldout"))
    assert (out.status, out.code, out.body["error"]["details"]) == (
        409,
        "OUT_OF_STOCK",
        {"product_ids": ["prod-soldout"]},
    )
    missing = place("k-2", body=order_body("prod-nope"))
    assert (missing.status, missing.code) == (404, "PRODUCT_NOT_FOUND")
    both = place("k-3", body={**order_body(), "session_id": "sess-demo-cart-0123456789abcdef"})
    assert both.status == 422
    neither = place("k-4", body={"shipping_address": ADDRESS})
    assert neither.status == 422


@pytest.mark.dynamodb_semantics
def test_idempotency_same_key_same_body_returns_the_first_order(api):
    first = place("same")
    again = place("same")
    assert (first.status, again.status) == (201, 201)
    assert again.body == first.body
    assert call("GET", "/customers/alice/orders", claims=ALICE).body["items"][0]["order_id"] == first.body["order_id"]
    assert len(call("GET", "/customers/alice/orders", claims=ALICE).body["items"]) == 3  # 2 seeded + 1
    assert call("GET", "/products/prod-cable").body["stock"] == 99
    reused = place("same", body=order_body(quantity=2))
    assert (reused.status, reused.code) == (409, "IDEMPOTENCY_KEY_REUSED")
    other_customer = place("same", claims=BOB)
    assert other_customer.status == 201
    assert other_customer.body["order_id"] != first.body["order_id"]


@pytest.mark.dynamodb_semantics
def test_each_idempotency_record_is_its_own_partition_and_a_replay_answers_the_same(api):
    import hashlib

    first, second = place("own-1"), place("own-2")
    records = {
        i["PK"]["S"]: i for i in api.client.scan(TableName=api.table_name)["Items"] if "IDEMPOTENCY" in i["PK"]["S"]
    }
    assert len(records) == 2
    for pk, record in records.items():
        assert pk.startswith("IDEMPOTENCY#orders#")
        assert record["SK"]["S"] == "IDEMPOTENCY"
        assert record["idempotency_status"]["S"] == "COMPLETED"
    # Powertools hashes the key it is given (sub + newline + Idempotency-Key) with md5
    digest = hashlib.md5(json.dumps("alice\nown-1").encode(), usedforsecurity=False).hexdigest()
    assert f"IDEMPOTENCY#orders#{digest}" in records
    assert place("own-1").body == first.body
    assert place("own-2").body == second.body


@pytest.mark.dynamodb_semantics
def test_a_key_first_used_under_the_shared_partition_places_no_second_order(api):
    """A deploy moving the records: a repeat finds no record under the new key and runs again; the
    placement claim written with the first order makes that run answer the same order."""
    first = place("moved")
    for item in api.client.scan(TableName=api.table_name)["Items"]:
        if item["PK"]["S"].startswith("IDEMPOTENCY#"):
            api.client.delete_item(TableName=api.table_name, Key={"PK": item["PK"], "SK": item["SK"]})
    again = place("moved")
    assert again.status == 201
    assert again.body["order_id"] == first.body["order_id"]
    assert len(call("GET", "/customers/alice/orders", claims=ALICE).body["items"]) == 3  # 2 seeded + 1
    assert call("GET", "/products/prod-cable").body["stock"] == 99


def test_failed_placement_does_not_burn_the_key(moto_api):
    assert place("retry", body=order_body("prod-soldout")).code == "OUT_OF_STOCK"
    call("POST", "/products/prod-soldout/stock", claims=ADMIN, body={"delta": 1})
    assert place("retry", body=order_body("prod-soldout")).status == 201


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 422, "VALIDATION_ERROR"),
        ({"Idempotency-Key": ""}, 422, "VALIDATION_ERROR"),
        ({"Idempotency-Key": "x" * 129}, 422, "VALIDATION_ERROR"),
        ({"idempotency-key": "x" * 128}, 201, None),
    ],
)
def test_idempotency_key_header(moto_api, headers, status, code):
    reply = call("POST", "/orders", claims=ALICE, headers=headers, body=order_body())
    assert (reply.status, reply.code) == (status, code)
    if status == 422:
        assert reply.body["error"]["details"][0]["location"] == "header"


@pytest.mark.parametrize("if_match", ['"1"', "1", 'W/"1"', ' "1" '])
def test_if_match_forms(moto_api, if_match):
    reply = call(
        "PATCH", "/orders/00-alice-pending", claims=ADMIN, headers={"If-Match": if_match}, body={"status": "CONFIRMED"}
    )
    assert (reply.status, reply.headers["etag"], reply.body["status"], reply.body["version"]) == (
        200,
        '"2"',
        "CONFIRMED",
        2,
    )


@pytest.mark.dynamodb_semantics
def test_status_machine_and_preconditions(api):
    path = "/orders/00-alice-pending"
    assert call("PATCH", path, claims=ADMIN, body={"status": "CONFIRMED"}).code == "PRECONDITION_REQUIRED"
    stale = call("PATCH", path, claims=ADMIN, headers={"If-Match": '"9"'}, body={"status": "CONFIRMED"})
    assert (stale.status, stale.code) == (412, "VERSION_MISMATCH")
    for garbage in ["*", "abc", '"1", "2"', "99999999999999999999"]:
        assert (
            call("PATCH", path, claims=ADMIN, headers={"If-Match": garbage}, body={"status": "CONFIRMED"}).status == 412
        )
    assert (
        call("PATCH", "/orders/nope", claims=ADMIN, headers={"If-Match": '"1"'}, body={"status": "CONFIRMED"}).status
        == 404
    )
    assert call("PATCH", path, claims=ADMIN, headers={"If-Match": '"1"'}, body={"status": "LOST"}).status == 422
    bad = call("PATCH", path, claims=ADMIN, headers={"If-Match": '"1"'}, body={"status": "DELIVERED"})
    assert (bad.status, bad.code) == (409, "INVALID_TRANSITION")
    etag = call("GET", path, claims=ADMIN).headers["etag"]
    confirmed = call("PATCH", path, claims=ADMIN, headers={"If-Match": etag}, body={"status": "CONFIRMED"})
    assert (confirmed.status, confirmed.headers["etag"]) == (200, '"2"')
    assert (
        call(
            "PATCH",
            path,
            claims=ADMIN,
            headers={"If-Match": etag},
            body={"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD1"},
        ).code
        == "VERSION_MISMATCH"
    )
    listed = call("GET", "/orders", claims=ADMIN, query={"status": "CONFIRMED"})
    assert [o["order_id"] for o in listed.body["items"]] == ["00-alice-pending"]


@pytest.mark.dynamodb_semantics
def test_status_patch_sent_again_after_it_was_applied_answers_the_order(api):
    path = "/orders/00-alice-pending"
    first = call("PATCH", path, claims=ADMIN, headers={"If-Match": '"1"'}, body={"status": "CONFIRMED"})
    again = call("PATCH", path, claims=ADMIN, headers={"If-Match": '"1"'}, body={"status": "CONFIRMED"})
    assert (again.status, again.headers["etag"], again.body) == (200, '"2"', first.body)
    other = call("PATCH", path, claims=ADMIN, headers={"If-Match": '"1"'}, body={"status": "CANCELLED"})
    assert (other.status, other.code) == (412, "VERSION_MISMATCH")


@pytest.mark.dynamodb_semantics
def test_cancel_restocks_and_is_owner_or_admin(api):
    stock = call("GET", "/products/prod-keyboard").body["stock"]
    assert call("POST", "/orders/00-alice-pending/cancel", claims=BOB).code == "ORDER_NOT_FOUND"
    cancelled = call("POST", "/orders/00-alice-pending/cancel", claims=ALICE)
    assert (cancelled.status, cancelled.body["status"], cancelled.headers["etag"]) == (200, "CANCELLED", '"2"')
    assert call("GET", "/products/prod-keyboard").body["stock"] == stock + 1
    again = call("POST", "/orders/00-alice-pending/cancel", claims=ADMIN)
    assert (again.status, again.code) == (409, "INVALID_TRANSITION")
    assert call("POST", "/orders/00-alice-shipped/cancel", claims=ALICE).code == "INVALID_TRANSITION"


@pytest.mark.dynamodb_semantics
def test_pagination_tokens(api):
    for i in range(5):
        call("POST", "/products", claims=ADMIN, body={"name": f"item {i}", "category": "paged", "price_cents": 1})
    names, token = [], None
    while True:
        page = call(
            "GET", "/products", query={"category": "paged", "limit": 2, **({"next_token": token} if token else {})}
        )
        assert page.status == 200
        names += [p["name"] for p in page.body["items"]]
        token = page.body["next_token"]
        if token is None:
            break
    assert names == [f"item {i}" for i in range(5)]
    first = call("GET", "/products", query={"category": "paged", "limit": 2}).body["next_token"]
    tampered = first[:-3] + ("AAA" if not first.endswith("AAA") else "BBB")
    for bad in [tampered, "garbage", "a.b"]:
        reply = call("GET", "/products", query={"category": "paged", "next_token": bad})
        assert (reply.status, reply.code) == (400, "INVALID_NEXT_TOKEN")
    foreign = call("GET", "/products", query={"category": "peripherals", "next_token": first})
    assert foreign.code == "INVALID_NEXT_TOKEN"
    assert (
        call("GET", "/customers/alice/orders", claims=ALICE, query={"next_token": first}).code == "INVALID_NEXT_TOKEN"
    )


BAD_INPUTS = [
    ("POST", "/products", {"claims": ADMIN, "body": {"name": "x", "category": "c", "price_cents": 10**40}}),
    ("POST", "/products", {"claims": ADMIN, "body": {"name": "x", "category": "c", "price_cents": True}}),
    ("POST", "/products", {"claims": ADMIN, "body": {"name": "x" * 5000, "category": "c", "price_cents": 1}}),
    ("POST", "/products", {"claims": ADMIN, "body": {"name": None, "category": "c", "price_cents": 1}}),
    ("POST", "/products/prod-keyboard/stock", {"claims": ADMIN, "body": {"delta": "5"}}),
    ("POST", "/products/prod-keyboard/stock", {"claims": ADMIN, "body": {"delta": 10**30}}),
    ("POST", "/products/prod-keyboard/stock", {"claims": ADMIN, "body": {}}),
    ("PUT", "/sessions/sess-demo-cart-0123456789abcdef/cart/prod-mouse", {"body": {"quantity": -1}}),
    ("PUT", "/sessions/sess-demo-cart-0123456789abcdef/cart/prod-mouse", {"body": {"quantity": 1.5}}),
    (
        "POST",
        "/orders",
        {"claims": ALICE, "headers": {"Idempotency-Key": "b"}, "body": {"lines": [], "shipping_address": ADDRESS}},
    ),
    (
        "POST",
        "/orders",
        {
            "claims": ALICE,
            "headers": {"Idempotency-Key": "b"},
            "body": {"lines": [{"product_id": "prod-cable", "quantity": 0}], "shipping_address": ADDRESS},
        },
    ),
    (
        "POST",
        "/orders",
        {
            "claims": ALICE,
            "headers": {"Idempotency-Key": "b"},
            "body": {"lines": [{"product_id": "prod-cable", "quantity": 1}] * 26, "shipping_address": ADDRESS},
        },
    ),
    (
        "POST",
        "/orders",
        {
            "claims": ALICE,
            "headers": {"Idempotency-Key": "b"},
            "body": {**order_body(), "shipping_address": {**ADDRESS, "country": "usa"}},
        },
    ),
    ("GET", "/products", {"query": {"category": "c", "limit": "99999999999999999999999"}}),
    ("GET", "/products", {"query": {"category": "c", "limit": "0"}}),
    ("GET", "/products", {"query": {"category": "c", "limit": "abc"}}),
    ("GET", "/products/" + "x" * 3000, {}),
    ("GET", "/customers", {"claims": ADMIN, "query": {"email": "x" * 1000}}),
    ("POST", "/customers", {"claims": ALICE, "body": {"email": "a@b.co", "name": "n", "admin": True}}),
]


@pytest.mark.parametrize(
    ("method", "path", "kwargs"), BAD_INPUTS, ids=[f"{m} {p[:40]} {i}" for i, (m, p, _) in enumerate(BAD_INPUTS)]
)
def test_bad_input_is_422_with_the_offending_fields(moto_api, method, path, kwargs):
    reply = call(method, path, **kwargs)
    assert (reply.status, reply.code) == (422, "VALIDATION_ERROR"), reply.body
    details = reply.body["error"]["details"]
    assert details
    assert all(set(d) == {"location", "field", "message", "type"} for d in details)


@pytest.mark.parametrize("raw", ['{"name": ', "not json", "[[[[" * 50000, '{"a": 1}}', "\ud800"])
def test_malformed_json_is_400(moto_api, raw):
    reply = call("POST", "/products", claims=ADMIN, raw_body=raw)
    assert (reply.status, reply.code) == (400, "BAD_REQUEST")


def test_body_that_is_not_an_object_is_422(moto_api):
    for raw in ["[1, 2]", '"text"', "42", "null"]:
        assert call("POST", "/products", claims=ADMIN, raw_body=raw).status == 422


def test_base64_bodies(moto_api):
    ok = call("POST", "/products/prod-keyboard/stock", claims=ADMIN, body={"delta": 1}, base64_body=True)
    assert ok.status == 200
    evt = event("POST", "/products/prod-keyboard/stock", claims=ADMIN, body={"delta": 1})
    evt.update(body="%%%not-base64", isBase64Encoded=True)
    assert invoke("products", evt).code == "BAD_REQUEST"


def test_validation_details_name_nested_fields(moto_api):
    body = {"lines": [{"product_id": "prod-cable", "quantity": 100}], "shipping_address": {**ADDRESS, "extra": 1}}
    reply = place(body=body)
    fields = {(d["location"], d["field"], d["type"]) for d in reply.body["error"]["details"]}
    assert ("body", "lines.0.quantity", "less_than_equal") in fields
    assert ("body", "shipping_address.extra", "extra_forbidden") in fields


def test_unknown_route_and_method_are_404(moto_api):
    for method, path in [("GET", "/customers/alice/unknown"), ("DELETE", "/customers/alice"), ("GET", "/")]:
        reply = call(method, path, claims=ADMIN)
        assert (reply.status, reply.code) == (404, "NOT_FOUND")


def test_unsupported_content_type_is_415(moto_api):
    reply = call("POST", "/products", claims=ADMIN, raw_body="<x/>", headers={"content-type": "application/xml"})
    assert (reply.status, reply.code) == (415, "UNSUPPORTED_MEDIA_TYPE")


def test_unexpected_errors_are_500_without_internals(moto_api, monkeypatch):
    from shop.services.catalog import CatalogService

    def broken(self, product_id):
        raise KeyError("secret internal detail /var/task/file.py")

    monkeypatch.setattr(CatalogService, "get", broken)
    reply = call("GET", "/products/prod-keyboard")
    assert (reply.status, reply.code) == (500, "INTERNAL_ERROR")
    assert "secret" not in json.dumps(reply.body)
    assert "Traceback" not in json.dumps(reply.body)
