"""Over HTTP, without fault injection: what the store can never accept is a 4xx, never a retryable 503.

A `sub` of 1,100 two-byte characters builds keys over DynamoDB's limits (2,048 bytes for a partition
key, 1,024 for a sort key) in the profile and review transactions. Whichever layer refuses it
(the authorizer's `sub` limit, input validation, or the store itself), the client must not be told
to retry.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Api, Stack, create_product, eventually, expect, order_lines, place_order

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def test_a_sub_too_long_for_a_key_is_a_4xx_without_retry_after(stack: Stack, stack_api: Api, uid: str) -> None:
    product = create_product(
        stack_api, stack.admin_token(), category=f"e2e-limits-{uid}", name="Limits", price_cents=100, stock=1
    )
    token = stack.token("é" * 1100)
    replies = [
        stack_api.post("/customers", token=token, json={"email": f"long-{uid}@example.com", "name": "Long"}),
        stack_api.post(
            f"/products/{product['product_id']}/reviews", token=token, json={"rating": 4, "title": "t", "body": "b"}
        ),
    ]
    for reply in replies:
        detail = f"{reply.request.method} {reply.request.url} -> {reply.status_code} {reply.text[:300]}"
        assert 400 <= reply.status_code < 500, detail
        assert "Retry-After" not in reply.headers, detail
    assert expect(stack_api.get(f"/products/{product['product_id']}"), 200)["rating_count"] == 0


def test_an_order_over_four_products_spread_over_32_shards_is_placed(stack: Stack, stack_api: Api, uid: str) -> None:
    """Four products, 96 each over 32 shards (3 a shard); one order of 4 x 96, 131 transaction items as the
    stock lies: 201, the stock is sold out, and a cancel puts every unit back."""
    admin = stack.admin_token()
    pids = []
    for i in range(4):
        pid = create_product(
            stack_api, admin, category=f"e2e-scatter-{uid}", name=f"Hot {i}", price_cents=100, stock=96
        )["product_id"]
        expect(stack_api.post(f"/products/{pid}/stock-shards", token=admin, json={"shards": 32}), 200)
        pids.append(pid)
    customer = stack.token(f"e2e-scatter-{uid}")
    body = {
        "lines": [{"product_id": pid, "quantity": 96} for pid in pids],
        "shipping_address": order_lines(pids[0])["shipping_address"],
    }
    order = expect(place_order(stack_api, customer, f"scatter-{uid}", body), 201)
    assert sorted((line["product_id"], line["quantity"]) for line in order["lines"]) == sorted(
        (pid, 96) for pid in pids
    )
    assert [expect(stack_api.get(f"/products/{pid}", token=admin), 200)["stock"] for pid in pids] == [0, 0, 0, 0]
    expect(stack_api.post(f"/orders/{order['order_id']}/cancel", token=customer), 200)

    def restocked() -> bool:  # a hot product's GET may be up to HOT_PRODUCT_CACHE_SECONDS (1 s) late
        return [expect(stack_api.get(f"/products/{pid}", token=admin), 200)["stock"] for pid in pids] == [96] * 4

    eventually(restocked, timeout=10, what="every unit back after the cancel")
