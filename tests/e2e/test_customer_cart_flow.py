"""A cart that follows the customer, over HTTP only: browse anonymously, add to a session cart, sign in,
merge the session into the customer's cart, add more, check out from the customer cart.

Also over HTTP: a repeated merge answers the same, what did not fit is reported, the session is gone,
the cart is emptied by checkout and the stock went down by what was bought.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ADDRESS, Api, Stack, create_product, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def test_browse_anonymously_sign_in_merge_add_more_and_check_out(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    category = f"e2e-cart-{uid}"
    lamp = create_product(stack_api, admin, category=category, name="Lamp", price_cents=2599, stock=200)
    kettle = create_product(stack_api, admin, category=category, name="Kettle", price_cents=4100, stock=5)
    lamp_id, kettle_id = lamp["product_id"], kettle["product_id"]

    # --- anonymous: browse, then a session cart
    page = expect(stack_api.get("/products", params={"category": category}), 200)
    assert [p["name"] for p in page["items"]] == ["Kettle", "Lamp"]
    sid = expect(stack_api.post("/sessions"), 201)["session_id"]
    expect(stack_api.put(f"/sessions/{sid}/cart/{lamp_id}", json={"quantity": 60}), 200)

    # --- sign in: a profile, and a cart already holding some lamps (from another device)
    customer_id = f"e2e-cart-{uid}"
    customer = stack.token(customer_id)
    cart_path = f"/customers/{customer_id}/cart"
    expect(stack_api.get(cart_path, token=customer), 404, "CUSTOMER_NOT_FOUND")
    expect(stack_api.post("/customers", token=customer, json={"email": f"cart.{uid}@example.com", "name": "Cart"}), 201)
    empty = expect(stack_api.get(cart_path, token=customer), 200)
    assert (empty["cart"], empty["subtotal_cents"], empty["expires_at"]) == ([], 0, None)
    expect(stack_api.put(f"{cart_path}/{lamp_id}", token=customer, json={"quantity": 45}), 200)

    # --- merge: 45 + 60 lamps stop at 99, the 6 left over are reported; the session is gone
    merged = expect(stack_api.post(f"{cart_path}/merge", token=customer, json={"session_id": sid}), 200)
    assert [(line["product_id"], line["quantity"]) for line in merged["cart"]] == [(lamp_id, 99)]
    assert merged["not_merged"] == [{"product_id": lamp_id, "quantity": 6, "reason": "QUANTITY_LIMIT"}]
    assert merged["expires_at"] is not None
    expect(stack_api.get(f"/sessions/{sid}"), 404, "SESSION_NOT_FOUND")
    again = expect(stack_api.post(f"{cart_path}/merge", token=customer, json={"session_id": sid}), 200)
    assert again == merged, "a repeated merge is a no-op answering the same cart"
    expect(stack_api.post(f"{cart_path}/merge", token=customer, json={"session_id": "no-such-session"}), 404)
    expect(stack_api.post(f"{cart_path}/merge", token=admin, json={"session_id": sid}), 403, "FORBIDDEN")

    # --- add more; the cart shows current prices and slides its expiry
    expect(stack_api.put(f"{cart_path}/{lamp_id}", token=customer, json={"quantity": 2}), 200)
    more = expect(stack_api.put(f"{cart_path}/{kettle_id}", token=customer, json={"quantity": 1}), 200)
    assert more["expires_at"] >= merged["expires_at"]
    cart = expect(stack_api.get(cart_path, token=admin), 200)
    assert [(line["product_id"], line["quantity"]) for line in cart["cart"]] == [(lamp_id, 2), (kettle_id, 1)]
    assert cart["subtotal_cents"] == 2 * 2599 + 4100
    assert not any(line["price_changed"] or line["unavailable"] for line in cart["cart"])

    # --- check out from the customer cart: emptied in the same transaction; the key answers the same order
    order_body = {"cart": "customer", "shipping_address": ADDRESS}
    key = {"Idempotency-Key": f"cart-{uid}"}
    placed = expect(stack_api.post("/orders", token=customer, headers=key, json=order_body), 201)
    assert placed["customer_id"] == customer_id
    assert {line["product_id"]: line["quantity"] for line in placed["lines"]} == {lamp_id: 2, kettle_id: 1}
    assert placed["total_cents"] == 2 * 2599 + 4100
    assert expect(stack_api.get(cart_path, token=customer), 200)["cart"] == []
    repeat = expect(stack_api.post("/orders", token=customer, headers=key, json=order_body), 201)
    assert repeat["order_id"] == placed["order_id"]
    expect(
        stack_api.post("/orders", token=customer, headers={"Idempotency-Key": f"cart-{uid}-2"}, json=order_body),
        409,
        "CART_EMPTY",
    )
    assert expect(stack_api.get(f"/products/{lamp_id}"), 200)["stock"] == 198
    assert expect(stack_api.get(f"/products/{kettle_id}"), 200)["stock"] == 4

    # --- a checkout that cannot be placed leaves the cart as it was
    expect(stack_api.put(f"{cart_path}/{kettle_id}", token=customer, json={"quantity": 9}), 200)
    expect(
        stack_api.post("/orders", token=customer, headers={"Idempotency-Key": f"cart-{uid}-3"}, json=order_body),
        409,
        "OUT_OF_STOCK",
    )
    assert [line["quantity"] for line in expect(stack_api.get(cart_path, token=customer), 200)["cart"]] == [9]
    expect(stack_api.delete(cart_path, token=customer), 204)
    assert expect(stack_api.get(cart_path, token=customer), 200)["cart"] == []
