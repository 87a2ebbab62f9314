"""Promotions over HTTP in the fast lane (issue 37; docs/decisions.md, 077): percent, fixed and free-shipping codes,
case-insensitive, automatic promotions, their dates and minimum subtotal; the quote and the order placed from the
same body equal to the cent with each; PROMO_CODE_INVALID, PROMO_MIN_SUBTOTAL, PROMO_CODE_TAKEN; the admin's list,
read and edits, an edit charged at once. Over HTTP on `make dev`: tests/e2e/test_order_total.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.apigw import ADMIN, ALICE, BOB
from tests.support.checkout import BERLIN, LINES, assert_order_is_the_quote, place, quote
from tests.support.memory_wiring import Handlers

PAST, FUTURE = "2020-01-01T00:00:00Z", "2999-01-01T00:00:00Z"


def create(handlers: Handlers, body: dict[str, Any], status: int = 201) -> Any:
    reply = handlers.call("POST", "/promotions", claims=ADMIN, body=body)
    assert reply.status == status, reply.body
    return reply.body


def error(reply: Any) -> str:
    return reply.body["error"]["code"]


def test_a_percent_code_in_any_case_is_shared_among_the_lines_and_taxed_after(europe):
    create(europe, {"code": "Summer10", "kind": "percent", "value": 10})
    body = {"lines": LINES, "shipping_address": BERLIN, "shipping_option_id": "express", "promo_code": "SUMMER10"}
    quoted = quote(europe, body)
    # 10 % of 20,500 = 2,050, shared by the lines' totals: 17,800 -> 1,780, 2,700 -> 270
    assert quoted["discount_cents"] == 2050
    assert [line["discount_cents"] for line in quoted["lines"]] == [1780, 270]
    assert [line["tax_cents"] for line in quoted["lines"]] == [3044, 462]  # 19 % of 16,020 and of 2,430
    assert quoted["promotions"] == [
        {
            "promotion_id": quoted["promotions"][0]["promotion_id"],
            "code": "Summer10",
            "kind": "percent",
            "discount_cents": 2050,
        }
    ]
    assert quoted["total_cents"] == 20500 - 2050 + 1299 + 3044 + 462 + 247
    order = place(europe, body, "percent-code")
    assert_order_is_the_quote(order, quoted)
    assert order["promotions"] == quoted["promotions"]
    assert europe.call("GET", f"/orders/{order['order_id']}", claims=ALICE).body["promotions"] == quoted["promotions"]


def test_a_fixed_code_with_prices_that_include_tax(europe, inclusive):
    create(europe, {"code": "FIVE", "kind": "fixed", "value": 500})
    body = {"lines": LINES, "shipping_address": BERLIN, "promo_code": "five"}
    quoted = quote(europe, body)
    assert quoted["discount_cents"] == 500
    assert sum(line["discount_cents"] for line in quoted["lines"]) == 500
    assert quoted["total_cents"] == 20500 - 500 + quoted["shipping_cents"]  # tax included, not added
    assert_order_is_the_quote(place(europe, body, "fixed-inclusive"), quoted)


def test_free_shipping_waives_the_options_price(europe):
    promotion = create(europe, {"code": "SHIPFREE", "kind": "free_shipping"})
    body = {"lines": LINES, "shipping_address": BERLIN, "shipping_option_id": "express", "promo_code": "shipfree"}
    quoted = quote(europe, body)
    assert (quoted["shipping_cents"], quoted["shipping_tax_cents"], quoted["discount_cents"]) == (0, 0, 0)
    assert quoted["promotions"] == [
        {"promotion_id": promotion["promotion_id"], "code": "SHIPFREE", "kind": "free_shipping", "discount_cents": 1299}
    ]
    assert_order_is_the_quote(place(europe, body, "free-shipping"), quoted)


def test_an_automatic_promotion_applies_without_a_code_and_before_one(europe):
    automatic = create(europe, {"automatic": True, "kind": "fixed", "value": 1000, "min_subtotal_cents": 5000})
    create(europe, {"code": "TEN", "kind": "percent", "value": 10})
    small = {"lines": [{"product_id": "prod-cable", "quantity": 1}], "shipping_address": BERLIN}
    assert quote(europe, small)["promotions"] == []  # 900 does not reach its 5,000
    body = {"lines": LINES, "shipping_address": BERLIN}
    alone = quote(europe, body)
    assert [(p["promotion_id"], p["discount_cents"]) for p in alone["promotions"]] == [
        (automatic["promotion_id"], 1000)
    ]
    both = quote(europe, {**body, "promo_code": "ten"})
    # the automatic one first, then the code's: 10 % of the subtotal (2,050), within what the first left
    assert [p["discount_cents"] for p in both["promotions"]] == [1000, 2050]
    assert both["discount_cents"] == 3050
    assert_order_is_the_quote(place(europe, {**body, "promo_code": "ten"}, "automatic-and-code"), both)


@pytest.mark.parametrize(
    "promotion",
    [
        {"code": "LATER", "kind": "percent", "value": 10, "starts_at": FUTURE},
        {"code": "OVER", "kind": "percent", "value": 10, "starts_at": PAST, "ends_at": "2021-01-01T00:00:00+02:00"},
    ],
)
def test_a_code_outside_its_dates_is_invalid(europe, promotion):
    create(europe, promotion)
    body = {"lines": LINES, "shipping_address": BERLIN, "promo_code": promotion["code"]}
    assert quote(europe, body, 409)["error"]["code"] == "PROMO_CODE_INVALID"


def test_refused_codes_write_nothing(europe):
    create(europe, {"code": "BIG", "kind": "fixed", "value": 100, "min_subtotal_cents": 50000})
    stock_before = europe.call("GET", "/products/prod-cable").body["stock"]
    for code, expected in (("NOPE", "PROMO_CODE_INVALID"), ("big", "PROMO_MIN_SUBTOTAL")):
        body = {"lines": LINES, "shipping_address": BERLIN, "promo_code": code}
        assert quote(europe, body, 409)["error"]["code"] == expected
        reply = europe.call("POST", "/orders", claims=ALICE, headers={"Idempotency-Key": f"refused-{code}"}, body=body)
        assert (reply.status, error(reply)) == (409, expected)
    details = quote(europe, {"lines": LINES, "shipping_address": BERLIN, "promo_code": "big"}, 409)["error"]["details"]
    assert details == {"promo_code": "big", "min_subtotal_cents": 50000, "subtotal_cents": 20500}
    assert europe.call("GET", "/products/prod-cable").body["stock"] == stock_before


def test_a_promotion_ended_by_its_admin_no_longer_applies_and_an_edit_is_charged_at_once(europe):
    promotion = create(europe, {"code": "EDIT", "kind": "percent", "value": 10})
    body = {"lines": LINES, "shipping_address": BERLIN, "promo_code": "EDIT"}
    assert quote(europe, body)["discount_cents"] == 2050
    path = f"/promotions/{promotion['promotion_id']}"
    edited = europe.call("PATCH", path, claims=ADMIN, body={"value": 20})
    assert (edited.status, edited.body["value"]) == (200, 20)
    assert quote(europe, body)["discount_cents"] == 4100
    ended = europe.call("PATCH", path, claims=ADMIN, body={"end": True})
    assert ended.status == 200
    assert ended.body["ends_at"] is not None
    assert quote(europe, body, 409)["error"]["code"] == "PROMO_CODE_INVALID"
    assert europe.call("GET", path, claims=ADMIN).body == ended.body


def test_codes_are_unique_in_any_case_and_listed_newest_first(handlers):
    first = create(handlers, {"code": "ONCE", "kind": "percent", "value": 5})
    taken = handlers.call("POST", "/promotions", claims=ADMIN, body={"code": "once", "kind": "fixed", "value": 1})
    assert (taken.status, error(taken)) == (409, "PROMO_CODE_TAKEN")
    second = create(handlers, {"automatic": True, "kind": "free_shipping"})
    listed = handlers.call("GET", "/promotions", claims=ADMIN).body
    made = [p["promotion_id"] for p in listed["items"] if p["promotion_id"] != "promo-welcome10"]  # the seed's
    assert made == [second["promotion_id"], first["promotion_id"]]
    missing = handlers.call("GET", "/promotions/nope", claims=ADMIN)
    assert (missing.status, error(missing)) == (404, "PROMOTION_NOT_FOUND")


@pytest.mark.parametrize(
    "body",
    [
        {"code": "P", "kind": "percent", "value": 101},
        {"code": "P", "kind": "percent"},
        {"code": "P", "kind": "fixed"},
        {"code": "P", "kind": "free_shipping", "value": 5},
        {"code": "P", "kind": "fixed", "value": 5, "automatic": True},
        {"kind": "fixed", "value": 5},
        {"code": "has space", "kind": "fixed", "value": 5},
        {"code": "P", "kind": "fixed", "value": 5, "starts_at": FUTURE, "ends_at": PAST},
        {"code": "P", "kind": "fixed", "value": 5, "ends_at": "2030-01-01T00:00:00"},  # no offset
        {"code": "P", "kind": "fixed", "value": 5, "starts_at": 0},  # a number is not an instant
        {"code": "P", "kind": "fixed", "value": 5, "ends_at": "0405-05-23T07:28:27.15-13:04"},  # before 1970
        {"code": "P", "kind": "fixed", "value": 5, "ends_at": "2030-01-01T00:00:60Z"},  # a leap second
    ],
)
def test_a_promotion_the_contract_refuses_is_422(handlers, body):
    reply = handlers.call("POST", "/promotions", claims=ADMIN, body=body)
    assert (reply.status, error(reply)) == (422, "VALIDATION_ERROR")


def test_an_edit_keeps_the_value_its_kind_takes(handlers):
    promotion = create(handlers, {"code": "PCT", "kind": "percent", "value": 5})
    reply = handlers.call("PATCH", f"/promotions/{promotion['promotion_id']}", claims=ADMIN, body={"value": 150})
    assert (reply.status, error(reply)) == (422, "VALIDATION_ERROR")


def test_instants_are_kept_in_utc_as_every_time_of_an_answer(handlers):
    made = create(handlers, {"code": "TZ", "kind": "fixed", "value": 5, "starts_at": "2027-06-01T02:00:00.5+02:00"})
    assert made["starts_at"] == "2027-06-01T00:00:00.500000Z"


def order(handlers: Handlers, code: str, key: str, claims: dict[str, Any] = ALICE) -> Any:
    body = {"lines": LINES, "shipping_address": BERLIN, "promo_code": code}
    return handlers.call("POST", "/orders", claims=claims, headers={"Idempotency-Key": key}, body=body)


def test_a_code_is_used_at_most_its_limit_and_a_cancel_gives_its_use_back(europe):
    made = create(europe, {"code": "THREE", "kind": "fixed", "value": 100, "usage_limit": 3})
    assert made["use_shards"] == 3
    placed = [order(europe, "three", f"limit-{n}") for n in range(3)]
    assert [reply.status for reply in placed] == [201, 201, 201]
    fourth = order(europe, "three", "limit-3")
    assert (fourth.status, error(fourth)) == (409, "PROMO_CODE_EXHAUSTED")
    body = {"lines": LINES, "shipping_address": BERLIN, "promo_code": "THREE"}
    assert quote(europe, body, 409)["error"]["code"] == "PROMO_CODE_EXHAUSTED"
    path = f"/promotions/{made['promotion_id']}"
    assert europe.call("GET", path, claims=ADMIN).body["used_count"] == 3

    cancelled = europe.call("POST", f"/orders/{placed[0].body['order_id']}/cancel", claims=ALICE)
    assert cancelled.status == 200
    assert europe.call("GET", path, claims=ADMIN).body["used_count"] == 2
    assert order(europe, "three", "limit-4").status == 201
    assert europe.call("GET", path, claims=ADMIN).body["used_count"] == 3


def test_a_customer_uses_a_code_at_most_their_limit(europe):
    create(europe, {"code": "ONCEEACH", "kind": "fixed", "value": 100, "per_customer_limit": 1})
    assert order(europe, "onceeach", "mine-1").status == 201
    again = order(europe, "onceeach", "mine-2")
    assert (again.status, error(again)) == (409, "PROMO_CODE_ALREADY_USED")
    assert order(europe, "onceeach", "bobs-1", claims=BOB).status == 201


def test_an_automatic_promotion_past_its_limit_no_longer_applies(europe):
    create(europe, {"automatic": True, "kind": "fixed", "value": 250, "usage_limit": 1})
    body = {"lines": LINES, "shipping_address": BERLIN}
    first = place(europe, body, "automatic-1")
    assert first["discount_cents"] == 250
    assert quote(europe, body)["promotions"] == []  # its one use is taken
    assert place(europe, body, "automatic-2")["discount_cents"] == 0


@pytest.mark.parametrize(
    "body",
    [
        {"code": "L", "kind": "fixed", "value": 5, "usage_limit": 0},
        {"code": "L", "kind": "fixed", "value": 5, "per_customer_limit": 0},
        {"code": "L", "kind": "fixed", "value": 5, "usage_limit": 1_000_001},
    ],
)
def test_limits_out_of_bounds_are_422(handlers, body):
    reply = handlers.call("POST", "/promotions", claims=ADMIN, body=body)
    assert (reply.status, error(reply)) == (422, "VALIDATION_ERROR")
