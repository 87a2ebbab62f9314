"""The order's total over HTTP in the fast lane (issue 37; docs/decisions.md, 076): shipping zones and tax rates set by
an admin, the quote, and the order placed from the same body storing exactly the quote's lines and breakdown, with
exclusive and inclusive tax, a subdivision's own rate, an option's free-over threshold; SHIPPING_UNAVAILABLE and
SHIPPING_COUNTRY_TAKEN; an edit charged from the moment it is answered. On DynamoDB Local:
tests/repository/test_checkout_settings.py; over HTTP on `make dev`: tests/e2e/test_order_total.py."""

from __future__ import annotations

import pytest

from tests.functions.apigw import ADMIN, ALICE
from tests.support.checkout import (
    BERLIN,
    EUROPE,
    LINES,
    LOS_ANGELES,
    admin_put,
    assert_order_is_the_quote,
    place,
    quote,
)


def test_a_shop_without_zones_or_rates_charges_the_lines_alone(handlers):
    body = {"lines": LINES, "shipping_address": BERLIN}
    quoted = quote(handlers, body)
    assert (quoted["subtotal_cents"], quoted["shipping_cents"], quoted["tax_cents"], quoted["total_cents"]) == (
        20500,
        0,
        0,
        20500,
    )
    assert quoted["tax_rate_bps"] is None
    assert quoted["shipping_option"] is None
    assert quoted["shipping_options"] == []
    assert_order_is_the_quote(place(handlers, body, "no-settings"), quoted)


def test_exclusive_tax_a_quote_and_its_order_are_equal_to_the_cent(europe):
    body = {"lines": LINES, "shipping_address": BERLIN, "shipping_option_id": "express"}
    quoted = quote(europe, body)
    # 19 % of each line and of the shipping, rounded once each, half up: 3382 + 513 + 247 (1299 x 0.19 = 246.81)
    assert [line["tax_cents"] for line in quoted["lines"]] == [3382, 513]
    assert (quoted["shipping_cents"], quoted["shipping_tax_cents"], quoted["tax_cents"]) == (1299, 247, 4142)
    assert quoted["total_cents"] == 20500 + 1299 + 4142
    assert quoted["shipping_option"] == {
        "zone_id": "zone-europe",
        "option_id": "express",
        "name": "Express",
        "price_cents": 1299,
    }
    # standard is free past 20,000 cents of goods: this order's 20,500 are
    assert [(option["option_id"], option["price_cents"]) for option in quoted["shipping_options"]] == [
        ("standard", 0),
        ("express", 1299),
    ]
    order = place(europe, body, "exclusive")
    assert_order_is_the_quote(order, quoted)
    assert europe.call("GET", f"/orders/{order['order_id']}", claims=ALICE).body["total_cents"] == quoted["total_cents"]


def test_inclusive_tax_is_stated_and_not_added(europe, inclusive):
    body = {"lines": LINES, "shipping_address": BERLIN, "shipping_option_id": "express"}
    quoted = quote(europe, body)
    # the tax in a gross amount: gross - round(gross / 1.19): 17800 -> 2842, 2700 -> 431, shipping 1299 -> 207
    assert [line["tax_cents"] for line in quoted["lines"]] == [2842, 431]
    assert (quoted["shipping_tax_cents"], quoted["tax_cents"]) == (207, 3480)
    assert quoted["total_cents"] == 20500 + 1299
    assert quoted["prices_include_tax"] is True
    assert_order_is_the_quote(place(europe, body, "inclusive"), quoted)


def test_an_order_naming_no_option_ships_by_its_zones_first(europe):
    small = {"lines": [{"product_id": "prod-cable", "quantity": 1}], "shipping_address": BERLIN}
    quoted = quote(europe, small)
    assert quoted["shipping_option"]["option_id"] == "standard"
    assert quoted["shipping_cents"] == 499
    assert quoted["total_cents"] == 900 + 499 + 171 + 95
    assert_order_is_the_quote(place(europe, small, "default-option"), quoted)


def test_a_subdivision_is_taxed_at_its_own_rate_and_the_rest_of_its_country_at_the_countrys(handlers):
    admin_put(handlers, "/tax/rates/US", {"rate_bps": 0, "regions": {"US-CA": 725}})
    california = quote(handlers, {"lines": LINES, "shipping_address": LOS_ANGELES})
    assert california["tax_rate_bps"] == 725
    assert california["tax_cents"] == 1291 + 196
    elsewhere = quote(handlers, {"lines": LINES, "shipping_address": {**LOS_ANGELES, "region": "US-NY"}})
    assert elsewhere["tax_rate_bps"] == 0
    assert elsewhere["tax_cents"] == 0


def test_shipping_unavailable_writes_nothing(europe):
    stock_before = europe.call("GET", "/products/prod-cable").body["stock"]
    tokyo = {**BERLIN, "country": "JP"}
    cases = [
        {"lines": LINES, "shipping_address": tokyo},  # no zone ships to JP
        {"lines": LINES, "shipping_address": BERLIN, "shipping_option_id": "teleport"},  # not the zone's option
    ]
    for index, body in enumerate(cases):
        for reply in (
            europe.call("POST", "/checkout/quote", body=body),
            europe.call(
                "POST", "/orders", claims=ALICE, headers={"Idempotency-Key": f"unavailable-{index}"}, body=body
            ),
        ):
            assert reply.status == 422, reply.body
            assert reply.body["error"]["code"] == "SHIPPING_UNAVAILABLE"
    assert europe.call("GET", "/products/prod-cable").body["stock"] == stock_before
    assert europe.call("GET", "/shipping/options", query={"country": "JP"}).body == {
        "country": "JP",
        "zone_id": None,
        "options": [],
    }


def test_an_option_named_where_the_shop_has_no_zones_is_unavailable(handlers):
    body = {"lines": LINES, "shipping_address": BERLIN, "shipping_option_id": "standard"}
    assert quote(handlers, body, 422)["error"]["code"] == "SHIPPING_UNAVAILABLE"


def test_an_edit_is_charged_from_the_moment_it_is_answered(europe):
    body = {"lines": [{"product_id": "prod-cable", "quantity": 1}], "shipping_address": BERLIN}
    assert quote(europe, body)["shipping_cents"] == 499  # the orders function now keeps this snapshot
    cheaper = {**EUROPE, "options": [{**EUROPE["options"][0], "price_cents": 299}]}
    admin_put(europe, "/shipping/zones/zone-europe", cheaper)
    assert quote(europe, body)["shipping_cents"] == 299
    admin_put(europe, "/tax/rates/DE", {"rate_bps": 700})
    quoted = quote(europe, body)
    assert quoted["tax_rate_bps"] == 700
    assert_order_is_the_quote(place(europe, body, "after-the-edit"), quoted)


def test_a_country_ships_from_one_zone(europe):
    reply = europe.call(
        "PUT",
        "/shipping/zones/zone-dach",
        claims=ADMIN,
        body={**EUROPE, "countries": ["CH", "AT"]},
    )
    assert reply.status == 409
    assert reply.body["error"]["code"] == "SHIPPING_COUNTRY_TAKEN"
    assert reply.body["error"]["details"] == {"countries": {"AT": "zone-europe"}}
    # the zone itself may be replaced with the countries it holds
    admin_put(europe, "/shipping/zones/zone-europe", {**EUROPE, "countries": ["AT", "CH"]})
    assert europe.call("GET", "/shipping/options", query={"country": "CH"}).body["zone_id"] == "zone-europe"
    assert europe.call("GET", "/shipping/options", query={"country": "DE"}).body["zone_id"] is None


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/shipping/zones/z", {**EUROPE, "countries": ["DE", "DE"]}),
        ("/shipping/zones/z", {**EUROPE, "options": [EUROPE["options"][0], EUROPE["options"][0]]}),
        ("/shipping/zones/z", {**EUROPE, "countries": ["ZZ"]}),
        ("/shipping/zones/z", {**EUROPE, "options": []}),
        ("/tax/rates/US", {"rate_bps": 0, "regions": {"CA-ON": 1300}}),
        ("/tax/rates/US", {"rate_bps": 10001}),
        ("/tax/rates/US", {"rate_bps": 0, "regions": {"us-ca": 725}}),
        ("/tax/rates/ZZ", {"rate_bps": 100}),
    ],
)
def test_settings_the_contract_refuses_are_422(handlers, path, body):
    reply = handlers.call("PUT", path, claims=ADMIN, body=body)
    assert reply.status == 422, reply.body
    assert reply.body["error"]["code"] == "VALIDATION_ERROR"


def test_a_region_that_is_not_of_the_address_country_is_taxed_at_the_countrys_rate(europe):
    admin_put(europe, "/tax/rates/AT", {"rate_bps": 2000, "regions": {"AT-9": 1000}})
    body = {"lines": LINES, "shipping_address": {**BERLIN, "region": "AT-9"}}
    assert quote(europe, body)["tax_rate_bps"] == 1900


def test_a_sessions_cart_is_quoted_as_its_checkout_places_it(europe):
    session = europe.call("POST", "/sessions").body["session_id"]
    assert europe.call("PUT", f"/sessions/{session}/cart/prod-mouse", body={"quantity": 3}).status == 200
    body = {"session_id": session, "shipping_address": BERLIN}
    quoted = quote(europe, body)
    assert quoted["subtotal_cents"] == 8700
    assert quoted["shipping_cents"] == 499
    assert_order_is_the_quote(place(europe, body, "session-quote"), quoted)


def test_the_card_is_asked_for_the_total_with_shipping_and_tax(paying):
    admin_put(paying, "/shipping/zones/zone-europe", EUROPE)
    admin_put(paying, "/tax/rates/DE", {"rate_bps": 1900})
    body = {"lines": [{"product_id": "prod-cable", "quantity": 1}], "shipping_address": BERLIN}
    quoted = quote(paying, body)
    order = place(paying, body, "paid-total")
    assert_order_is_the_quote(order, quoted)
    assert order["payment"]["amount_cents"] == quoted["total_cents"] == 900 + 499 + 171 + 95
    assert paying.wiring.payments.intents[order["payment"]["intent_id"]].intent.amount_cents == quoted["total_cents"]


def test_a_placements_record_keeps_less_and_answers_the_same(europe, paying):
    from shop.http_api.idempotency import compact
    from shop.http_api.placement_records import answer_of, kept

    body = {"lines": LINES, "shipping_address": BERLIN, "shipping_option_id": "express"}
    for answer in (
        place(europe, body, "record-europe"),
        place(europe, {**body, "shipping_address": {**BERLIN, "country": "AT"}}, "record-at"),
    ):
        assert answer_of(kept(answer)) == answer
        assert answer_of(answer) == answer  # a record kept whole, by an earlier release
        assert len(compact(kept(answer))["z"]) < len(compact(answer)["z"])
