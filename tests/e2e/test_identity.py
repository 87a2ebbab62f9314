"""Identities over HTTP: subs that need percent-encoding, subs over the limit, and group names with commas."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.e2e.conftest import Api, Stack, create_product, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


@pytest.mark.parametrize("prefix", ["auth0|", "josé-", "a b "])
def test_a_customer_whose_sub_needs_encoding_reads_its_profile_as_self_and_admin(
    stack: Stack, stack_api: Api, uid: str, prefix: str
) -> None:
    sub = f"{prefix}{uid}"
    customer = stack.token(sub)
    created = expect(
        stack_api.post("/customers", token=customer, json={"email": f"{uid}@example.com", "name": "E"}), 201
    )
    assert created["customer_id"] == sub
    path = f"/customers/{quote(sub, safe='')}"
    for token in (customer, stack.admin_token()):
        assert expect(stack_api.get(path, token=token), 200)["customer_id"] == sub
    renamed = expect(stack_api.patch(path, token=customer, json={"name": "F"}), 200)
    assert renamed["name"] == "F"


def test_a_sub_over_the_limit_is_403_invalid_subject_not_503(stack: Stack, stack_api: Api, uid: str) -> None:
    product = create_product(stack_api, stack.admin_token(), category=f"c{uid}", name="P", price_cents=100, stock=1)
    long_sub = stack.token("s" * 1100)
    created = stack_api.post("/customers", token=long_sub, json={"email": f"long-{uid}@example.com", "name": "L"})
    expect(created, 403, "INVALID_SUBJECT")
    review = {"rating": 5, "title": "t", "body": "b"}
    expect(
        stack_api.post(f"/products/{product['product_id']}/reviews", token=long_sub, json=review),
        403,
        "INVALID_SUBJECT",
    )
    assert expect(stack_api.get(f"/products/{product['product_id']}/reviews"), 200)["items"] == []


def test_a_group_named_ops_comma_admin_is_not_admin(stack: Stack, stack_api: Api, uid: str) -> None:
    body = {"name": "N", "category": f"c{uid}", "price_cents": 1}
    expect(stack_api.post("/categories", token=stack.admin_token(), json={"slug": f"c{uid}", "name": "C"}), 201)
    expect(
        stack_api.post("/products", token=stack.token(f"ops-{uid}", groups=("ops,admin",)), json=body), 403, "FORBIDDEN"
    )
    expect(stack_api.post("/products", token=stack.token(f"ops-{uid}", groups=("ops", "admin")), json=body), 201)
