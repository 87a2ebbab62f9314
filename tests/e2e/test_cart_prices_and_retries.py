"""Over HTTP: a cart shows the price checkout will charge; a status change sent again after it was applied is 200."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import (
    ADDRESS,
    Api,
    Stack,
    confirmed,
    create_product,
    expect,
    order_lines,
    place_order,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def test_cart_shows_the_new_price_and_checkout_charges_the_shown_subtotal(
    stack: Stack, stack_api: Api, uid: str
) -> None:
    admin = stack.admin_token()
    lamp = create_product(stack_api, admin, category=f"e2e-prices-{uid}", name="Lamp", price_cents=2000, stock=5)
    pid = lamp["product_id"]
    sid = expect(stack_api.post("/sessions"), 201)["session_id"]
    expect(stack_api.put(f"/sessions/{sid}/cart/{pid}", json={"quantity": 2}), 200)

    expect(stack_api.patch(f"/products/{pid}", token=admin, json={"price_cents": 2500}), 200)
    shown = expect(stack_api.get(f"/sessions/{sid}"), 200)
    [line] = shown["cart"]
    assert (line["unit_price_cents"], line["added_unit_price_cents"], line["price_changed"], line["unavailable"]) == (
        2500,
        2000,
        True,
        False,
    )
    assert shown["subtotal_cents"] == 2 * 2500

    customer = stack.token(f"e2e-prices-{uid}")
    placed = expect(
        place_order(stack_api, customer, f"prices-{uid}", {"session_id": sid, "shipping_address": ADDRESS}), 201
    )
    assert placed["total_cents"] == shown["subtotal_cents"]


def test_status_patch_sent_again_after_it_was_applied_answers_200(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    kettle = create_product(stack_api, admin, category=f"e2e-retry-{uid}", name="Kettle", price_cents=4100, stock=5)
    customer = stack.token(f"e2e-retry-{uid}")
    order_id = expect(place_order(stack_api, customer, f"retry-{uid}", order_lines(kettle["product_id"])), 201)[
        "order_id"
    ]
    read = confirmed(stack_api, admin, order_id).json()
    if_match = {"If-Match": f'"{read["version"]}"'}
    first = expect(
        stack_api.patch(
            f"/orders/{order_id}",
            token=admin,
            headers=if_match,
            json={"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"},
        ),
        200,
    )
    again = stack_api.patch(
        f"/orders/{order_id}",
        token=admin,
        headers=if_match,
        json={"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"},
    )
    assert (expect(again, 200)["status"], again.headers["ETag"]) == ("SHIPPED", f'"{first["version"]}"')
    expect(
        stack_api.patch(f"/orders/{order_id}", token=admin, headers=if_match, json={"status": "DELIVERED"}),
        412,
        "VERSION_MISMATCH",
    )
