"""Inputs at their limits over HTTP: a name whose case fold outgrows a sort key is created and paged."""

from __future__ import annotations

import pytest

from shop import limits
from tests.e2e.conftest import ADDRESS, Api, Stack, create_product, expect, place_order

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

LONGEST_FOLD = "ΐ" * limits.MAX_PRODUCT_NAME_LENGTH


def test_a_name_whose_fold_outgrows_a_sort_key_is_created_and_paged(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    category = f"e2e-limits-{uid}"[:40]  # a slug: the name carries the worst characters
    made = [
        create_product(stack_api, admin, category=category, name=LONGEST_FOLD, price_cents=1, stock=1) for _ in "ab"
    ]
    assert [p["name"] for p in made] == [LONGEST_FOLD, LONGEST_FOLD]
    seen, token = [], None
    while True:
        params = {"category": category, "limit": 1, **({"next_token": token} if token else {})}
        page = expect(stack_api.get("/products", params=params), 200)
        seen += [p["product_id"] for p in page["items"]]
        token = page["next_token"]
        if token is None:
            break
    assert seen == sorted(p["product_id"] for p in made)


def test_quantities_and_countries_past_their_limits_are_422(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    product = create_product(stack_api, admin, category=f"e2e-limits-{uid}", name="Bolt", price_cents=5, stock=10)
    pid = product["product_id"]
    expect(
        stack_api.post(f"/products/{pid}/stock", token=admin, json={"delta": limits.MAX_STOCK}), 422, "VALIDATION_ERROR"
    )
    customer = stack.token(f"e2e-limits-{uid}")
    half = {"product_id": pid, "quantity": 50}
    for body in (
        {"lines": [half, half], "shipping_address": ADDRESS},
        {"lines": [half], "shipping_address": {**ADDRESS, "country": "XX"}},
    ):
        expect(place_order(stack_api, customer, f"{uid}-{len(body['lines'])}", body), 422, "VALIDATION_ERROR")
    assert expect(stack_api.get(f"/products/{pid}"), 200)["stock"] == 10
