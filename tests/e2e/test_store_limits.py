"""Over HTTP, without fault injection: what the store can never accept is a 4xx, never a retryable 503.

A `sub` of 1,100 two-byte characters builds keys over DynamoDB's limits (2,048 bytes for a partition
key, 1,024 for a sort key) in the profile and review transactions. Whichever layer refuses it
(the authorizer's `sub` limit, input validation, or the store itself), the client must not be told
to retry.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Api, Stack, create_product, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def test_a_sub_too_long_for_a_key_is_a_4xx_without_retry_after(stack: Stack, api: Api, uid: str) -> None:
    product = create_product(
        api, stack.admin_token(), category=f"e2e-limits-{uid}", name="Limits", price_cents=100, stock=1
    )
    token = stack.token("é" * 1100)
    replies = [
        api.post("/customers", token=token, json={"email": f"long-{uid}@example.com", "name": "Long"}),
        api.post(
            f"/products/{product['product_id']}/reviews", token=token, json={"rating": 4, "title": "t", "body": "b"}
        ),
    ]
    for reply in replies:
        detail = f"{reply.request.method} {reply.request.url} -> {reply.status_code} {reply.text[:300]}"
        assert 400 <= reply.status_code < 500, detail
        assert "Retry-After" not in reply.headers, detail
    assert expect(api.get(f"/products/{product['product_id']}"), 200)["rating_count"] == 0
