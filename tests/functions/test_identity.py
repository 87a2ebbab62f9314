"""Who the functions think is calling: the token's `sub` limits, the groups claim, and path ids as API Gateway passes them.

Every case runs on moto and on DynamoDB Local (the `api` fixture), on a fresh seeded table.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.functions.apigw import ADMIN, call, event, invoke

LONG_SUB = "s" * 1100
REVIEW = {"rating": 5, "title": "t", "body": "b"}
ADDRESS = {"name": "A", "line1": "1 Main", "city": "X", "postal_code": "1", "country": "US"}


def _item_count(api: Any) -> int:
    return int(api.client.scan(TableName=api.table_name, Select="COUNT")["Count"])


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/customers", {"email": "long@example.com", "name": "L"}),
        ("POST", "/products/prod-keyboard/reviews", REVIEW),
        ("GET", f"/customers/{'s' * 100}", None),
        ("POST", "/orders", {"lines": [{"product_id": "prod-cable", "quantity": 1}], "shipping_address": ADDRESS}),
    ],
)
def test_a_sub_over_the_limit_is_403_before_anything_is_written(api, method, path, body):
    before = _item_count(api)
    headers = {"Idempotency-Key": "k-long-sub"} if path == "/orders" else None
    reply = call(method, path, body=body, claims={"sub": LONG_SUB}, headers=headers)
    assert reply.status == 403, reply.body
    assert reply.code == "INVALID_SUBJECT"
    assert "retry-after" not in reply.headers
    assert _item_count(api) == before


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("sub", ["a/b", "a?b", "100%", "tab\there", "\ud800", "a\ud83db"])
def test_a_sub_that_no_path_can_carry_is_403(api, sub):
    reply = call("POST", "/customers", body={"email": "odd@example.com", "name": "O"}, claims={"sub": sub})
    assert reply.status == 403, reply.body
    assert reply.code == "INVALID_SUBJECT"


@pytest.mark.dynamodb_semantics
def test_a_sub_at_the_limit_creates_and_reads_its_profile(api):
    sub = "é" * 128
    created = call("POST", "/customers", body={"email": "max@example.com", "name": "M"}, claims={"sub": sub})
    assert created.status == 201, created.body
    assert call("GET", f"/customers/{sub}", claims={"sub": sub}).status == 200


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize(
    ("groups", "status"),
    [("ops,admin", 403), ("[ops,admin]", 403), ("[ops admin]", 201), (["ops", "admin"], 201)],
)
def test_the_groups_claim_is_read_in_api_gateways_forms_only(api, groups, status):
    claims = {"sub": "ops-1", "cognito:groups": groups}
    reply = call("POST", "/products", body={"name": "P", "category": "c", "price_cents": 1}, claims=claims)
    assert reply.status == status, reply.body


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("sub", ["auth0|123", "josé", "a b", "a+b", "a#b", "€ [x] ^{y}"])
@pytest.mark.parametrize("raw_path", ["decoded", "encoded"])
def test_a_customer_reads_its_profile_whatever_characters_its_sub_has(api, sub, raw_path):
    created = call("POST", "/customers", body={"email": "odd@example.com", "name": "O"}, claims={"sub": sub})
    assert created.status == 201, created.body
    # API Gateway passes the decoded segment in pathParameters; rawPath is decoded too, but
    # the handler must not depend on it.
    path = f"/customers/{quote(sub, safe='') if raw_path == 'encoded' else sub}"
    for claims in ({"sub": sub}, ADMIN):
        evt = event("GET", path, claims=claims, route_key="GET /customers/{customer_id}")
        evt["pathParameters"] = {"customer_id": sub}
        reply = invoke("customers", evt)
        assert reply.status == 200, reply.body
        assert reply.body["customer_id"] == sub
