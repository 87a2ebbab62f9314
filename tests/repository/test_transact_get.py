"""store.transact_get: one TransactGetItems, made again when a transaction in progress cancels it."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from shop import errors
from shop.repository.store import Table, to_item, transact_get
from tests.repository.test_batch_get import TABLE, key, stubbed_client


def request(numbers: list[int]) -> dict[str, Any]:
    return {"TransactItems": [{"Get": {"TableName": TABLE, "Key": to_item(key(n))}} for n in numbers]}


def cancel(stub: Stubber) -> None:
    stub.add_client_error(
        "transact_get_items",
        service_error_code="TransactionCanceledException",
        service_message="Transaction cancelled",
        http_status_code=400,
        response_meta={},
        modeled_fields={"CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}]},
    )


def test_a_read_cancelled_by_a_write_in_progress_is_made_again() -> None:
    client = stubbed_client()
    with Stubber(client) as stub:
        cancel(stub)
        stub.add_response(
            "transact_get_items", {"Responses": [{"Item": to_item({**key(1), "n": 1})}, {}]}, request([1, 2])
        )
        found = transact_get(Table(client, TABLE), [key(1), key(2)], attempts=2)
        stub.assert_no_pending_responses()
    assert found == [{**key(1), "n": 1}, None]


def test_a_read_cancelled_every_time_is_a_transient_503() -> None:
    client = stubbed_client()
    with Stubber(client) as stub:
        cancel(stub)
        cancel(stub)
        with pytest.raises(errors.ServiceUnavailable):
            transact_get(Table(client, TABLE), [key(1), key(2)], attempts=2)
        stub.assert_no_pending_responses()
