"""store.batch_get: one BatchGetItem per 100 keys, and the keys DynamoDB left unprocessed asked again."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from shop.repository import store
from shop.repository.store import Table, batch_get, to_item

TABLE = "shop"


def key(n: int) -> dict[str, str]:
    return {"PK": f"P#{n}", "SK": "S"}


def request(numbers: list[int]) -> dict[str, Any]:
    return {"RequestItems": {TABLE: {"Keys": [to_item(key(n)) for n in numbers], "ConsistentRead": True}}}


def answer(found: list[int], unprocessed: list[int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"Responses": {TABLE: [to_item({**key(n), "n": n}) for n in found]}}
    if unprocessed:
        out["UnprocessedKeys"] = {TABLE: {"Keys": [to_item(key(n)) for n in unprocessed], "ConsistentRead": True}}
    return out


def test_keys_go_100_a_request_and_unprocessed_ones_are_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(store.time, "sleep", pauses.append)
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x", endpoint_url="http://x"
    )
    wanted = [key(n) for n in range(120)] + [key(5)]  # a repeated key is asked once
    with Stubber(client) as stub:
        stub.add_response("batch_get_item", answer(list(range(99)), unprocessed=[99]), request(list(range(100))))
        stub.add_response("batch_get_item", answer([99]), request([99]))
        stub.add_response("batch_get_item", answer(list(range(100, 119))), request(list(range(100, 120))))
        found = batch_get(Table(client, TABLE), wanted)
        stub.assert_no_pending_responses()
    assert sorted(item["n"] for item in found.values()) == [n for n in range(120) if n != 119]
    assert found[("P#7", "S")]["n"] == 7
    assert len(pauses) == 1  # a pause only before asking for unprocessed keys again
