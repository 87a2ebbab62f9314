"""store.batch_get: one BatchGetItem per 100 keys, and the keys DynamoDB left unprocessed asked again."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from shop import errors
from shop.repository import store
from shop.repository.store import BATCH_GET_ATTEMPTS, Table, batch_get, to_item

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


def stubbed_client() -> Any:
    return boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x", endpoint_url="http://x"
    )


def test_keys_go_100_a_request_and_unprocessed_ones_are_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(store.time, "sleep", pauses.append)
    client = stubbed_client()
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


def test_keys_left_unprocessed_every_time_answer_service_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table throttled throughout is a transient 503, not a loop until the function's timeout."""
    pauses: list[float] = []
    monkeypatch.setattr(store.time, "sleep", pauses.append)
    client = stubbed_client()
    with Stubber(client) as stub:
        stub.add_response("batch_get_item", answer([0], unprocessed=[1]), request([0, 1]))
        for _ in range(BATCH_GET_ATTEMPTS - 1):
            stub.add_response("batch_get_item", answer([], unprocessed=[1]), request([1]))
        with pytest.raises(errors.ServiceUnavailable):
            batch_get(Table(client, TABLE), [key(0), key(1)])
        stub.assert_no_pending_responses()
    assert len(pauses) == BATCH_GET_ATTEMPTS - 1
    assert max(pauses) <= 0.5
