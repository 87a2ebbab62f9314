"""Over the API: a next token issued before the pagination key rotates still pages after it.

The products function with its key read at run time from (moto's) Secrets Manager, as deployed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from shop import pagination_keys
from shop.config import settings
from tests.functions.apigw import ADMIN, call
from tests.support.pagination_key import deploy_key, forget_keys, rotate


@pytest.fixture
def deployed_key(moto_api: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    yield deploy_key(monkeypatch)
    forget_keys()


def page(token: str | None) -> Any:
    return call("GET", "/products", query={"category": "paged", "limit": 2, **({"next_token": token} if token else {})})


def test_a_token_survives_one_rotation_not_two(deployed_key):
    client, arn = deployed_key
    for i in range(5):
        call("POST", "/products", claims=ADMIN, body={"name": f"item {i}", "category": "paged", "price_cents": 1})
    first = page(None)
    assert first.status == 200
    token = first.body["next_token"]

    rotate(client, arn)
    pagination_keys.clear()  # a new instance, or the cache's 5 minutes later
    second = page(token)
    assert second.status == 200
    assert [p["name"] for p in second.body["items"]] == ["item 2", "item 3"]

    rotate(client, arn)
    pagination_keys.clear()
    refused = page(token)
    assert (refused.status, refused.code) == (400, "INVALID_NEXT_TOKEN")
    assert page(second.body["next_token"]).status == 200  # signed with the then-current key: one rotation old


def test_a_throttled_key_read_is_a_503_with_retry_after(deployed_key, monkeypatch):
    from aws_lambda_powertools.utilities.parameters import SecretsProvider
    from botocore.exceptions import ClientError

    def throttled(self: Any, name: str, **options: Any) -> str:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "GetSecretValue")

    for i in range(3):
        call("POST", "/products", claims=ADMIN, body={"name": f"item {i}", "category": "paged", "price_cents": 1})
    monkeypatch.setattr(SecretsProvider, "_get", throttled)
    reply = page(None)
    assert (reply.status, reply.code, reply.headers.get("retry-after")) == (503, "SERVICE_UNAVAILABLE", "1")


def test_a_missing_secret_is_a_500_without_detail(deployed_key, monkeypatch):
    """A deployment fault, not a transient one: no Retry-After, and the body names nothing internal."""
    _client, arn = deployed_key
    monkeypatch.setenv("PAGINATION_SECRET_ARN", arn + "-deleted")
    settings.cache_clear()
    pagination_keys.clear()
    for i in range(3):
        call("POST", "/products", claims=ADMIN, body={"name": f"item {i}", "category": "paged", "price_cents": 1})
    reply = page(None)
    assert reply.status == 500
    assert "retry-after" not in reply.headers
    assert "secret" not in json.dumps(reply.body).lower()
