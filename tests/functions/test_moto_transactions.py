"""tests/support/moto_transactions.py: moto backs up a table once per transaction, and still restores it."""

from __future__ import annotations

import copy
import inspect
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.conftest import Store


def test_moto_still_backs_up_each_table_by_deep_copy_before_it_writes() -> None:
    from moto.dynamodb import models

    source = inspect.getsource(inspect.unwrap(models.DynamoDBBackend.transact_write_items))
    assert "original_table_state[table_name] = copy.deepcopy(" in source
    assert "self.tables[table_name]" in source


def _put(store: Store, pk: str) -> dict[str, Any]:
    return {"Put": {"TableName": store.table_name, "Item": {"PK": {"S": pk}, "SK": {"S": "A"}}}}


def test_a_transaction_of_six_items_copies_the_table_once(moto_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.dynamodb.models.table import Table

    tables_copied: list[object] = []
    real_deepcopy = copy.deepcopy

    def counting(obj: Any, memo: Any = None) -> Any:
        if isinstance(obj, Table):
            tables_copied.append(obj)
        return real_deepcopy(obj, memo)

    monkeypatch.setattr(copy, "deepcopy", counting)
    moto_store.client.transact_write_items(TransactItems=[_put(moto_store, f"ITEM#{n}") for n in range(6)])
    assert len(tables_copied) == 1


def test_a_cancelled_transaction_leaves_the_table_as_it_was(moto_store: Store) -> None:
    client, table = moto_store.client, moto_store.table_name
    client.put_item(TableName=table, Item={"PK": {"S": "KEPT"}, "SK": {"S": "A"}, "n": {"N": "1"}})
    failing = {
        "Update": {
            "TableName": table,
            "Key": {"PK": {"S": "KEPT"}, "SK": {"S": "A"}},
            "UpdateExpression": "SET n = :two",
            "ConditionExpression": "n = :zero",
            "ExpressionAttributeValues": {":two": {"N": "2"}, ":zero": {"N": "0"}},
        }
    }
    with pytest.raises(ClientError) as refused:
        client.transact_write_items(TransactItems=[_put(moto_store, "NEW#1"), _put(moto_store, "NEW#2"), failing])
    assert refused.value.response["Error"]["Code"] == "TransactionCanceledException"
    for pk in ("NEW#1", "NEW#2"):
        assert "Item" not in client.get_item(TableName=table, Key={"PK": {"S": pk}, "SK": {"S": "A"}})
    kept = client.get_item(TableName=table, Key={"PK": {"S": "KEPT"}, "SK": {"S": "A"}})["Item"]
    assert kept["n"] == {"N": "1"}
