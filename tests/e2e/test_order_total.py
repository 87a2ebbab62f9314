"""The order's total over HTTP on `make dev`'s stack (issue 37; docs/decisions.md, 076): a quote and the order placed
from the same body are equal to the cent, with tax added (the paying stack, whose checkout conftest's set_checkout
sets: Stripe is asked for exactly the order's total) and with prices that include it (a stack of its own started as
`make dev PRICES_INCLUDE_TAX=true` starts it); SHIPPING_UNAVAILABLE writes nothing; an edit is charged at once."""

from __future__ import annotations

import pathlib
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.e2e.conftest import Stack, create_product, error_code, expect, place_order

pytestmark = [pytest.mark.e2e]

BERLIN = {"name": "E2E", "line1": "1 Hauptstr.", "city": "Berlin", "postal_code": "10115", "country": "DE"}
BREAKDOWN = (
    "subtotal_cents",
    "discount_cents",
    "shipping_cents",
    "shipping_tax_cents",
    "tax_cents",
    "total_cents",
    "prices_include_tax",
    "tax_rate_bps",
    "shipping_option",
    "currency",
    "lines",
)


def key() -> str:
    return f"e2e-total-{uuid.uuid4().hex}"


def quote_and_order(stack: Stack, customer: str, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    quoted = expect(stack.api.post("/checkout/quote", json=body), 200)
    order = expect(place_order(stack.api, customer, key(), body), 201)
    assert {name: order[name] for name in BREAKDOWN} == {name: quoted[name] for name in BREAKDOWN}
    tax_added = 0 if order["prices_include_tax"] else order["tax_cents"]
    assert (
        order["total_cents"] == order["subtotal_cents"] - order["discount_cents"] + order["shipping_cents"] + tax_added
    )
    return quoted, order


def three_lines(stack: Stack, admin: str, category: str) -> list[dict[str, Any]]:
    prices = (1999, 4550, 333)
    products = [
        create_product(stack.api, admin, category=category, name=f"Total {price}", price_cents=price, stock=50)
        for price in prices
    ]
    return [{"product_id": p["product_id"], "quantity": q} for p, q in zip(products, (3, 1, 7), strict=True)]


@pytest.mark.xdist_group("e2e-payments")
def test_with_tax_added_the_quote_is_the_order_and_stripe_is_asked_for_its_total(paying_stack: Stack):
    stack, admin, customer = paying_stack, paying_stack.admin_token(), paying_stack.token("e2e-total-exclusive")
    lines = three_lines(stack, admin, "e2e-total")
    body = {"lines": lines, "shipping_address": BERLIN, "shipping_option_id": "express"}
    quoted, order = quote_and_order(stack, customer, body)
    # 5997 + 4550 + 2331 = 12,878 of goods, under standard's free-over: express at 1299; 19 % on each line and on
    # the shipping, each rounded half up once: 1139 (1139.43) + 865 (864.5) + 443 (442.89) + 247 (246.81)
    assert quoted["subtotal_cents"] == 12878
    assert quoted["shipping_cents"] == 1299
    assert [line["tax_cents"] for line in quoted["lines"]] == [1139, 865, 443]
    assert quoted["tax_cents"] == 1139 + 865 + 443 + 247
    assert quoted["total_cents"] == 12878 + 1299 + 2694
    assert {o["option_id"]: o["price_cents"] for o in quoted["shipping_options"]} == {"standard": 499, "express": 1299}
    assert order["payment"]["amount_cents"] == order["total_cents"]
    assert (
        expect(stack.api.get(f"/orders/{order['order_id']}/payment", token=customer), 200)["amount_cents"]
        == (quoted["total_cents"])
    )

    # with codes (the paying stack's automatic promotions are the fuzz test's, none of which starts before 2999)
    suffix = uuid.uuid4().hex[:8].upper()
    for promotion in (
        {"code": f"PCT{suffix}", "kind": "percent", "value": 12},
        {"code": f"FIX{suffix}", "kind": "fixed", "value": 999},
        {"code": f"SHIP{suffix}", "kind": "free_shipping"},
    ):
        expect(stack.api.post("/promotions", token=admin, json=promotion), 201)
        buyer = stack.token(f"e2e-total-{promotion['kind']}")  # a customer holds at most 3 unpaid orders
        quoted, order = quote_and_order(stack, buyer, {**body, "promo_code": promotion["code"].lower()})
        assert [p["code"] for p in quoted["promotions"]] == [promotion["code"]]
        assert order["payment"]["amount_cents"] == quoted["total_cents"]


@pytest.fixture(scope="module")
def inclusive_stack(e2e_workdir: pathlib.Path, cdk_out: pathlib.Path) -> Iterator[Stack]:
    """`make dev PRICES_INCLUDE_TAX=true PAYMENTS=none`: a stack of its own (its zones are its own too)."""
    stack = Stack(
        data_dir=e2e_workdir / "inclusive",
        cdk_out=cdk_out,
        log_path=e2e_workdir / "inclusive.log",
        options=("--env", "PRICES_INCLUDE_TAX=true"),
    ).start()
    try:
        yield stack
    finally:
        stack.stop_cleanly()


@pytest.mark.xdist_group("e2e-order-total")
def test_with_prices_that_include_tax_the_quote_is_the_order_and_an_edit_is_charged_at_once(inclusive_stack: Stack):
    stack, admin, customer = inclusive_stack, inclusive_stack.admin_token(), inclusive_stack.token("e2e-inclusive")
    zone = {
        "name": "Europe",
        "countries": ["DE", "AT"],
        "options": [{"option_id": "standard", "name": "Standard", "price_cents": 499, "free_over_cents": 20000}],
    }
    expect(stack.api.put("/shipping/zones/europe", token=admin, json=zone), 200)
    expect(stack.api.put("/tax/rates/DE", token=admin, json={"rate_bps": 1900}), 200)
    lines = three_lines(stack, admin, "e2e-inclusive")
    body = {"lines": lines, "shipping_address": BERLIN}
    quoted, _ = quote_and_order(stack, customer, body)
    # the tax in each gross amount, gross - round(gross / 1.19): 5997 -> 958, 4550 -> 726, 2331 -> 372; 499 -> 80
    assert [line["tax_cents"] for line in quoted["lines"]] == [958, 726, 372]
    assert (quoted["shipping_tax_cents"], quoted["tax_cents"]) == (80, 958 + 726 + 372 + 80)
    assert quoted["total_cents"] == 12878 + 499
    assert quoted["prices_include_tax"] is True

    # an edit answered is what the next quote and order charge
    expect(
        stack.api.put(
            "/shipping/zones/europe",
            token=admin,
            json={**zone, "options": [{**zone["options"][0], "price_cents": 699}]},
        ),
        200,
    )
    quoted, _ = quote_and_order(stack, customer, body)
    assert quoted["shipping_cents"] == 699

    # no zone ships to Japan, and `teleport` is not Europe's: 422, nothing written
    stock_before = expect(stack.api.get(f"/products/{lines[0]['product_id']}"), 200)["stock"]
    for refused in (
        {**body, "shipping_address": {**BERLIN, "country": "JP"}},
        {**body, "shipping_option_id": "teleport"},
    ):
        expect(stack.api.post("/checkout/quote", json=refused), 422, "SHIPPING_UNAVAILABLE")
        expect(place_order(stack.api, customer, key(), refused), 422, "SHIPPING_UNAVAILABLE")
    assert expect(stack.api.get(f"/products/{lines[0]['product_id']}"), 200)["stock"] == stock_before


@pytest.mark.xdist_group("e2e-order-total")
def test_codes_and_an_automatic_promotion_the_quote_is_the_order(inclusive_stack: Stack):
    stack, admin, customer = inclusive_stack, inclusive_stack.admin_token(), inclusive_stack.token("e2e-promotions")
    zone = {
        "name": "Europe",
        "countries": ["DE", "AT"],
        "options": [{"option_id": "standard", "name": "Standard", "price_cents": 499}],
    }
    expect(stack.api.put("/shipping/zones/europe", token=admin, json=zone), 200)
    expect(stack.api.put("/tax/rates/DE", token=admin, json={"rate_bps": 1900}), 200)
    suffix = uuid.uuid4().hex[:8].upper()
    new = {
        "percent": {"code": f"PCT{suffix}", "kind": "percent", "value": 15},
        "fixed": {"code": f"FIX{suffix}", "kind": "fixed", "value": 700},
        "free_shipping": {"code": f"SHIP{suffix}", "kind": "free_shipping"},
        "minimum": {"code": f"MIN{suffix}", "kind": "fixed", "value": 100, "min_subtotal_cents": 1_000_000},
    }
    made = {name: expect(stack.api.post("/promotions", token=admin, json=body), 201) for name, body in new.items()}
    automatic = {"automatic": True, "kind": "fixed", "value": 300, "min_subtotal_cents": 10000}
    automatic_id = expect(stack.api.post("/promotions", token=admin, json=automatic), 201)["promotion_id"]
    body = {"lines": three_lines(stack, admin, "e2e-promotions"), "shipping_address": BERLIN}

    quoted, _ = quote_and_order(stack, customer, body)  # the automatic one alone: 12,878 reaches its 10,000
    assert [(p["promotion_id"], p["discount_cents"]) for p in quoted["promotions"]] == [(automatic_id, 300)]
    for name in ("percent", "fixed", "free_shipping"):
        code = new[name]["code"].lower()  # codes compare in any case
        quoted, _ = quote_and_order(stack, customer, {**body, "promo_code": code})
        assert [p["promotion_id"] for p in quoted["promotions"]] == [automatic_id, made[name]["promotion_id"]]
        assert sum(line["discount_cents"] for line in quoted["lines"]) == quoted["discount_cents"]
    assert quoted["shipping_cents"] == 0  # the free-shipping code's

    expect(stack.api.post("/checkout/quote", json={**body, "promo_code": "NOSUCH"}), 409, "PROMO_CODE_INVALID")
    minimum = {**body, "promo_code": new["minimum"]["code"]}
    expect(stack.api.post("/checkout/quote", json=minimum), 409, "PROMO_MIN_SUBTOTAL")
    expect(place_order(stack.api, customer, key(), minimum), 409, "PROMO_MIN_SUBTOTAL")


@pytest.mark.xdist_group("e2e-order-total")
def test_a_code_of_limit_three_is_used_by_three_of_twelve_concurrent_checkouts_and_by_a_fourth_after_a_cancel(
    inclusive_stack: Stack,
):
    stack, admin = inclusive_stack, inclusive_stack.admin_token()
    code = f"THREE{uuid.uuid4().hex[:8].upper()}"
    made = expect(
        stack.api.post(
            "/promotions", token=admin, json={"code": code, "kind": "percent", "value": 5, "usage_limit": 3}
        ),
        201,
    )
    product = create_product(stack.api, admin, category="e2e-limits", name="Limited", price_cents=2000, stock=50)
    body = {
        "lines": [{"product_id": product["product_id"], "quantity": 1}],
        "shipping_address": BERLIN,
        "promo_code": code,
    }
    tokens = [stack.token(f"e2e-limit-{n}") for n in range(12)]
    start = threading.Barrier(len(tokens))

    def checkout(token: str) -> tuple[int, str | None, dict[str, Any]]:
        start.wait()
        idempotency_key = key()
        for _ in range(20):  # a 503 (Retry-After) is tried again with the same key, as a client does
            answer = place_order(stack.api, token, idempotency_key, body)
            if answer.status_code != 503:
                return answer.status_code, error_code(answer), answer.json()
        return 503, None, {}

    with ThreadPoolExecutor(len(tokens)) as pool:
        outcomes = list(pool.map(checkout, tokens))
    assert Counter((status, code) for status, code, _ in outcomes) == {(201, None): 3, (409, "PROMO_CODE_EXHAUSTED"): 9}
    path = f"/promotions/{made['promotion_id']}"
    assert expect(stack.api.get(path, token=admin), 200)["used_count"] == 3

    (index, placed) = next((i, answer) for i, (status, _, answer) in enumerate(outcomes) if status == 201)
    expect(stack.api.post(f"/orders/{placed['order_id']}/cancel", token=tokens[index]), 200)
    assert expect(stack.api.get(path, token=admin), 200)["used_count"] == 2
    fourth = expect(place_order(stack.api, stack.token("e2e-limit-late"), key(), body), 201)
    assert [p["promotion_id"] for p in fourth["promotions"]] == [made["promotion_id"]]
    expect(place_order(stack.api, stack.token("e2e-limit-later"), key(), body), 409, "PROMO_CODE_EXHAUSTED")


@pytest.mark.xdist_group("e2e-order-total")
def test_a_code_of_one_use_per_customer_is_refused_to_the_customer_who_used_it(inclusive_stack: Stack):
    stack, admin = inclusive_stack, inclusive_stack.admin_token()
    code = f"ONCE{uuid.uuid4().hex[:8].upper()}"
    once = {"code": code, "kind": "fixed", "value": 100, "per_customer_limit": 1}
    expect(stack.api.post("/promotions", token=admin, json=once), 201)
    product = create_product(stack.api, admin, category="e2e-once", name="Once", price_cents=2000, stock=10)
    body = {"lines": [{"product_id": product["product_id"], "quantity": 1}], "shipping_address": BERLIN}
    first, other = stack.token("e2e-once-first"), stack.token("e2e-once-other")
    expect(place_order(stack.api, first, key(), {**body, "promo_code": code}), 201)
    expect(place_order(stack.api, first, key(), {**body, "promo_code": code.lower()}), 409, "PROMO_CODE_ALREADY_USED")
    expect(place_order(stack.api, first, key(), body), 201)  # without the code, the same customer orders
    expect(place_order(stack.api, other, key(), {**body, "promo_code": code}), 201)
