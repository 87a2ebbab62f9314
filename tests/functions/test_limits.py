"""Inputs at their limits through the handlers: 201 and 422, never a 500."""

from __future__ import annotations

import pytest

from shop import limits
from tests.functions.apigw import ADMIN, ALICE, call

ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}
LONGEST_FOLD = "ΐ" * limits.MAX_PRODUCT_NAME_LENGTH


def new_product(name: str = "Widget", category: str = "limits", stock: int = 0) -> str:
    created = call(
        "POST", "/products", claims=ADMIN, body={"name": name, "category": category, "price_cents": 1, "stock": stock}
    )
    assert created.status == 201, created.body
    return str(created.body["product_id"])


def order(lines: list[dict], address: dict | None = None, key: str = "limits-1"):
    body = {"lines": lines, "shipping_address": address or ADDRESS}
    return call("POST", "/orders", claims=ALICE, headers={"Idempotency-Key": key}, body=body)


def assert_invalid(reply, field: str) -> None:
    assert (reply.status, reply.code) == (422, "VALIDATION_ERROR"), reply.body
    assert [d["field"] for d in reply.body["error"]["details"]] == [field]


@pytest.mark.dynamodb_semantics
def test_a_name_whose_fold_outgrows_a_sort_key_is_201_and_listed(api):
    created = call("POST", "/products", claims=ADMIN, body={"name": LONGEST_FOLD, "category": "x", "price_cents": 1})
    assert created.status == 201, created.body
    new_product(LONGEST_FOLD, category="x")
    first = call("GET", "/products", query={"category": "x", "limit": 1})
    assert first.status == 200
    assert first.body["items"][0]["name"] == LONGEST_FOLD
    second = call("GET", "/products", query={"category": "x", "limit": 1, "next_token": first.body["next_token"]})
    assert second.status == 200, second.body
    assert second.body["items"][0]["name"] == LONGEST_FOLD
    plain = new_product("plain", category="x")
    renamed = call("PATCH", f"/products/{plain}", claims=ADMIN, body={"name": LONGEST_FOLD})
    assert (renamed.status, renamed.body["name"]) == (200, LONGEST_FOLD)


@pytest.mark.dynamodb_semantics
def test_stock_past_its_maximum_is_422(api):
    pid = new_product(stock=limits.MAX_STOCK)
    assert_invalid(call("POST", f"/products/{pid}/stock", claims=ADMIN, body={"delta": 1}), "delta")
    assert call("GET", f"/products/{pid}").body["stock"] == limits.MAX_STOCK
    assert (
        call("POST", f"/products/{pid}/stock", claims=ADMIN, body={"delta": -1}).body["stock"] == limits.MAX_STOCK - 1
    )


@pytest.mark.dynamodb_semantics
def test_duplicate_lines_past_the_line_maximum_are_422(api):
    pid = new_product(stock=500)
    half = {"product_id": pid, "quantity": 50}
    assert_invalid(order([half, half]), "lines.1.quantity")
    assert call("GET", f"/products/{pid}").body["stock"] == 500
    placed = order([half, {"product_id": pid, "quantity": limits.MAX_QUANTITY - 50}], key="limits-2")
    assert placed.status == 201, placed.body
    assert [line["quantity"] for line in placed.body["lines"]] == [limits.MAX_QUANTITY]


def test_country_must_be_an_iso_3166_code(moto_api):
    pid = new_product(stock=5)
    line = [{"product_id": pid, "quantity": 1}]
    for code in ("XX", "UK", "us", "USA"):
        assert_invalid(order(line, {**ADDRESS, "country": code}, key=f"limits-{code}"), "shipping_address.country")
    assert order(line, {**ADDRESS, "country": "GB"}, key="limits-GB").status == 201
