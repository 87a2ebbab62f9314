"""The whole shopping flow over HTTP only, including the stream processor's asynchronous confirmation.

admin creates products -> anonymous browses and fills a session cart -> customer signs in, creates the
profile, checks the session out -> the order is PENDING, then CONFIRMED by the stream processor
(ORDER_CONFIRMED notification) -> admin ships it with If-Match -> ORDER_STATUS_CHANGED notification,
the customer's list shows SHIPPED -> stock went down by what was bought -> a shipped order cannot be
cancelled.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import (
    ADDRESS,
    Api,
    Stack,
    confirmed,
    create_product,
    eventually,
    expect,
    order_lines,
    place_order,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]

CONFIRM_WAIT_S = 30.0


def notifications_of(api: Api, token: str, customer_id: str) -> list[dict[str, Any]]:
    return expect(api.get(f"/customers/{customer_id}/notifications", token=token), 200)["items"]


def test_the_whole_shopping_flow(stack: Stack, stack_api: Api, uid: str) -> None:
    admin = stack.admin_token()
    category = f"e2e-flow-{uid}"

    # --- admin fills the catalogue
    lamp = create_product(stack_api, admin, category=category, name="Lamp", price_cents=2599, stock=10)
    kettle = create_product(stack_api, admin, category=category, name="Kettle", price_cents=4100, stock=5)
    for product, stock in ((lamp, 10), (kettle, 5)):
        assert product["stock"] == stock
        assert product["rating_count"] == 0
        assert product["product_id"]
        assert product["created_at"]
        assert product["updated_at"]

    # --- anonymous browses: by category (sorted by name), then one product
    page = expect(stack_api.get("/products", params={"category": category}), 200)
    assert [p["name"] for p in page["items"]] == ["Kettle", "Lamp"]
    assert page["next_token"] is None
    one = expect(stack_api.get(f"/products/{lamp['product_id']}"), 200)
    assert one["price_cents"] == 2599
    assert one["stock"] == 10
    assert "rating_average" in one

    # --- anonymous session and cart
    session = expect(stack_api.post("/sessions"), 201)
    sid = session["session_id"]
    assert session["cart"] == []
    assert len(sid) >= 22  # at least 128 random bits, URL-safe
    s1 = expect(stack_api.put(f"/sessions/{sid}/cart/{lamp['product_id']}", json={"quantity": 2}), 200)
    s2 = expect(stack_api.put(f"/sessions/{sid}/cart/{kettle['product_id']}", json={"quantity": 1}), 200)
    assert s2["expires_at"] >= s1["expires_at"] >= session["expires_at"]  # every change slides expiry
    cart = expect(stack_api.get(f"/sessions/{sid}"), 200)
    assert {line["product_id"]: line["quantity"] for line in cart["cart"]} == {
        lamp["product_id"]: 2,
        kettle["product_id"]: 1,
    }
    assert cart["subtotal_cents"] == 2 * 2599 + 4100

    # --- the customer signs in and creates the profile
    customer_id = f"e2e-cust-{uid}"
    customer = stack.token(customer_id)
    profile = expect(
        stack_api.post("/customers", token=customer, json={"email": f"Flow.{uid}@Example.com", "name": "Flow Tester"}),
        201,
    )
    assert profile["customer_id"] == customer_id
    assert profile["email"].lower() == f"flow.{uid}@example.com"
    expect(stack_api.get(f"/customers/{customer_id}", token=customer), 200)

    # --- checkout
    placed = expect(
        place_order(stack_api, customer, f"flow-{uid}", {"session_id": sid, "shipping_address": ADDRESS}), 201
    )
    order_id = placed["order_id"]
    assert placed["customer_id"] == customer_id
    assert placed["status"] in ("PENDING", "CONFIRMED")  # the stream processor may already have run
    lines = {line["product_id"]: line for line in placed["lines"]}
    assert lines[lamp["product_id"]]["unit_price_cents"] == 2599
    assert lines[lamp["product_id"]]["quantity"] == 2
    assert lines[lamp["product_id"]]["line_total_cents"] == 5198
    assert lines[kettle["product_id"]]["line_total_cents"] == 4100
    assert placed["total_cents"] == 5198 + 4100
    assert placed["shipping_address"]["country"] == "GB"
    # Checked at the very end (see there) so that the rest of the flow still runs if this one fails.
    placed_history = [h["status"] for h in placed["history"]]

    # GET with ETag
    got = stack_api.get(f"/orders/{order_id}", token=customer)
    body = expect(got, 200)
    assert got.headers["ETag"] == f'"{body["version"]}"'

    # the session's cart was cleared by checkout (same transaction)
    assert expect(stack_api.get(f"/sessions/{sid}"), 200)["cart"] == []

    # --- the stream processor confirms it (bounded wait)
    order = confirmed(stack_api, customer, order_id, timeout=CONFIRM_WAIT_S).json()
    assert [h["status"] for h in order["history"]] == ["PENDING", "CONFIRMED"]

    def confirmation() -> list[dict[str, Any]]:
        return [
            n
            for n in notifications_of(stack_api, customer, customer_id)
            if n["type"] == "ORDER_CONFIRMED" and n["order_id"] == order_id
        ]

    [note] = eventually(confirmation, timeout=CONFIRM_WAIT_S, what="ORDER_CONFIRMED notification")
    assert note["message"]
    assert note["notification_id"]

    # --- admin ships it: If-Match is required, a stale one is refused, the right one moves it on
    read = stack_api.get(f"/orders/{order_id}", token=admin)
    expect(read, 200)
    etag = read.headers["ETag"]
    expect(
        stack_api.patch(
            f"/orders/{order_id}",
            token=admin,
            json={"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"},
        ),
        428,
    )
    stale = f'"{int(etag.strip(chr(34))) + 7}"'
    expect(
        stack_api.patch(
            f"/orders/{order_id}",
            token=admin,
            headers={"If-Match": stale},
            json={"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"},
        ),
        412,
        "VERSION_MISMATCH",
    )
    shipped = stack_api.patch(
        f"/orders/{order_id}",
        token=admin,
        headers={"If-Match": etag},
        json={"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"},
    )
    shipped_body = expect(shipped, 200)
    assert shipped_body["status"] == "SHIPPED"
    assert shipped.headers["ETag"] != etag
    assert shipped.headers["ETag"] == f'"{shipped_body["version"]}"'
    # the old ETag is now stale
    expect(
        stack_api.patch(f"/orders/{order_id}", token=admin, headers={"If-Match": etag}, json={"status": "DELIVERED"}),
        412,
        "VERSION_MISMATCH",
    )

    # --- the customer is told, and sees SHIPPED in the list (eventually)
    def status_changed() -> list[dict[str, Any]]:
        return [
            n
            for n in notifications_of(stack_api, customer, customer_id)
            if n["type"] == "ORDER_STATUS_CHANGED" and n["order_id"] == order_id
        ]

    eventually(status_changed, timeout=CONFIRM_WAIT_S, what="ORDER_STATUS_CHANGED notification")
    notes = notifications_of(stack_api, customer, customer_id)
    assert [n["type"] for n in notes if n["order_id"] == order_id] == ["ORDER_STATUS_CHANGED", "ORDER_CONFIRMED"]

    def listed_shipped() -> bool:
        items = expect(stack_api.get(f"/customers/{customer_id}/orders", token=customer), 200)["items"]
        return [(o["order_id"], o["status"]) for o in items] == [(order_id, "SHIPPED")]

    eventually(listed_shipped, timeout=CONFIRM_WAIT_S, what="customer order list shows SHIPPED")

    def history_complete() -> bool:
        order = expect(stack_api.get(f"/orders/{order_id}", token=customer), 200)
        return [h["status"] for h in order["history"]] == ["PENDING", "CONFIRMED", "SHIPPED"]

    eventually(history_complete, timeout=CONFIRM_WAIT_S, what="history PENDING, CONFIRMED, SHIPPED")

    # --- stock went down by what was bought
    assert expect(stack_api.get(f"/products/{lamp['product_id']}"), 200)["stock"] == 8
    assert expect(stack_api.get(f"/products/{kettle['product_id']}"), 200)["stock"] == 4

    # --- a shipped order cannot be cancelled (and nothing is restocked)
    expect(stack_api.post(f"/orders/{order_id}/cancel", token=customer), 409, "INVALID_TRANSITION")
    expect(stack_api.post(f"/orders/{order_id}/cancel", token=admin), 409, "INVALID_TRANSITION")
    assert expect(stack_api.get(f"/products/{lamp['product_id']}"), 200)["stock"] == 8
    assert expect(stack_api.get(f"/orders/{order_id}", token=customer), 200)["status"] == "SHIPPED"

    # The 201 body is the same order version a GET returns, whose history starts with PENDING.
    assert placed_history == ["PENDING"]


def test_cancel_before_shipping_restocks(stack: Stack, stack_api: Api, uid: str) -> None:
    """PENDING/CONFIRMED -> CANCELLED restocks every line; the change is notified."""
    admin = stack.admin_token()
    product = create_product(stack_api, admin, category=f"e2e-cancel-{uid}", name="Mug", price_cents=900, stock=4)
    pid = product["product_id"]
    customer_id = f"e2e-cancel-{uid}"
    customer = stack.token(customer_id)
    order = expect(place_order(stack_api, customer, f"cancel-{uid}", order_lines(pid, 3)), 201)
    assert expect(stack_api.get(f"/products/{pid}"), 200)["stock"] == 1
    cancelled = expect(stack_api.post(f"/orders/{order['order_id']}/cancel", token=customer), 200)
    assert cancelled["status"] == "CANCELLED"
    assert expect(stack_api.get(f"/products/{pid}"), 200)["stock"] == 4
    expect(stack_api.post(f"/orders/{order['order_id']}/cancel", token=customer), 409, "INVALID_TRANSITION")

    def cancelled_notice() -> bool:
        return any(
            n["type"] == "ORDER_STATUS_CHANGED" and n["order_id"] == order["order_id"]
            for n in notifications_of(stack_api, customer, customer_id)
        )

    eventually(cancelled_notice, timeout=CONFIRM_WAIT_S, what="ORDER_STATUS_CHANGED for the cancellation")
    # whatever the processor saw (maybe PENDING -> CANCELLED before confirming), the order stays cancelled
    final = expect(stack_api.get(f"/orders/{order['order_id']}", token=customer), 200)
    assert final["status"] == "CANCELLED"
    assert final["history"][-1]["status"] == "CANCELLED"
