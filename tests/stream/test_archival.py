"""Archival on real stream records, on moto and DynamoDB Local: a finished order's TTL passes (the local TTL
emulator deletes it as the TTL service does), order_events writes it to S3 and removes what is left.

S3 is moto's: in-process with the moto table, moto's server (local_runtime.local_aws, what `make dev` runs)
beside DynamoDB Local.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from local_runtime.events import stream_event as lambda_event
from local_runtime.ttl import TtlDeletions, TtlEmulator
from shop import errors, wiring
from shop.models import OrderStatus
from shop.repository import order_archive
from shop.services.orders import RequestedLine
from tests.stream.conftest import dump
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB, product
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def order_removals(reader: StreamReader) -> list[dict[str, Any]]:
    """The order REMOVEs of the stream; DynamoDB Local can show a delete's record a moment after the delete."""
    for _ in range(50):
        removals = only(reader.read(), entity="ORDER", event_name="REMOVE")
        if removals:
            return removals
        time.sleep(0.1)
    return []


def expire(store: Any, deletions: TtlDeletions, *, later_s: int = 1) -> int:
    """One sweep of the local TTL emulator, `later_s` seconds from now."""
    emulator = TtlEmulator(
        store.client,
        store.table_name,
        attribute="expires_at",
        key_names=("PK", "SK"),
        deletions=deletions,
        now=lambda: time.time() + later_s,
    )
    return emulator.sweep()


def cancelled_order(store: Any, invoke: Any, reader: StreamReader, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    monkeypatch.setenv("ARCHIVE_GRACE_SECONDS", "0")
    from shop.config import settings

    settings.cache_clear()  # the setting is read once per process otherwise
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    service = wiring.order_service(store.table)
    order_id = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 2)]).order_id
    assert invoke(lambda_event(reader.read())) == {"batchItemFailures": []}  # confirmed
    service.cancel(ALICE, order_id)
    assert invoke(lambda_event(reader.read())) == {"batchItemFailures": []}  # history, notification
    return order_id


@pytest.mark.dynamodb_semantics
def test_a_finished_order_removed_by_ttl_is_archived_whole_and_its_remains_removed(
    store, s3, invoke, deletions, monkeypatch
):
    reader = StreamReader(store, ttl_deletions=deletions)
    order_id = cancelled_order(store, invoke, reader, monkeypatch)
    before = wiring.order_service(store.table).get(ALICE, order_id)

    assert expire(store, deletions) == 1  # the order only: the placement claim's TTL is a day away
    removals = order_removals(reader)
    assert [r["userIdentity"] for r in removals] == [{"type": "Service", "principalId": "dynamodb.amazonaws.com"}]
    assert invoke(lambda_event(removals)) == {"batchItemFailures": []}

    created = before.created_at
    key = f"orders/year={created[:4]}/month={created[5:7]}/day={created[8:10]}/{order_id}.json"
    stored = s3.objects()
    assert list(stored) == [key]
    assert stored[key].endswith("\n")
    assert stored[key].count("\n") == 1
    document = json.loads(stored[key])
    assert document["order_id"] == order_id
    assert "archived_at" in document
    assert [h["status"] for h in document["history"]] == ["PENDING", "CONFIRMED", "CANCELLED"]

    items = {(i["PK"], i["SK"]) for i in dump(store)}
    assert (f"ORDER#{order_id}", "ARCHIVED") in items
    assert not any(pk == f"ORDER#{order_id}" and sk != "ARCHIVED" for pk, sk in items)
    assert ("CUSTOMER#alice", f"ORDER#{order_id}") in items  # the customer's list keeps its entry

    read = wiring.order_service(store.table).get(ALICE, order_id)
    assert read.archived is True
    assert read.model_dump(exclude={"archived"}) == before.model_dump(exclude={"archived"})
    [listed] = wiring.order_service(store.table).list_for_customer(ALICE, "alice", limit=10, next_token=None).items
    assert (listed.order_id, listed.status) == (order_id, OrderStatus.CANCELLED)
    with pytest.raises(errors.OrderNotFound):
        wiring.order_service(store.table).get(BOB, order_id)
    assert wiring.order_service(store.table).get(ADMIN, order_id).archived is True


@pytest.mark.dynamodb_semantics
def test_a_replayed_removal_changes_nothing(store, s3, invoke, deletions, monkeypatch):
    reader = StreamReader(store, ttl_deletions=deletions)
    cancelled_order(store, invoke, reader, monkeypatch)
    assert expire(store, deletions) == 1
    removals = order_removals(reader)
    assert invoke(lambda_event(removals)) == {"batchItemFailures": []}
    table, archived = dump(store), s3.objects()
    assert invoke(lambda_event(removals)) == {"batchItemFailures": []}
    assert (dump(store), s3.objects()) == (table, archived)


@pytest.mark.dynamodb_semantics
def test_when_s3_fails_the_record_fails_and_nothing_is_lost(store, s3, invoke, deletions, monkeypatch):
    reader = StreamReader(store, ttl_deletions=deletions)
    order_id = cancelled_order(store, invoke, reader, monkeypatch)
    assert expire(store, deletions) == 1
    removals = order_removals(reader)
    table = dump(store)
    monkeypatch.setenv("ARCHIVE_BUCKET", "no-such-archive-bucket")
    from shop.config import settings

    settings.cache_clear()
    failed = invoke(lambda_event(removals))
    assert failed == {"batchItemFailures": [{"itemIdentifier": removals[0]["dynamodb"]["SequenceNumber"]}]}
    assert dump(store) == table  # history still there, no marker: the retry finds everything
    monkeypatch.setenv("ARCHIVE_BUCKET", s3.name)
    settings.cache_clear()
    assert invoke(lambda_event(removals)) == {"batchItemFailures": []}
    assert wiring.order_service(store.table).get(ALICE, order_id).archived is True


@pytest.mark.dynamodb_semantics
def test_a_crash_after_the_marker_finishes_the_deletes_on_retry(store, s3, invoke, deletions, monkeypatch):
    reader = StreamReader(store, ttl_deletions=deletions)
    order_id = cancelled_order(store, invoke, reader, monkeypatch)
    assert expire(store, deletions) == 1
    removals = order_removals(reader)
    calls = {"n": 0}
    real = order_archive.OrderArchivalRepository.delete_history

    def crash(self: Any, oid: str, history: list[dict[str, Any]]) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("the invocation died after the marker")
        return real(self, oid, history)

    monkeypatch.setattr(order_archive.OrderArchivalRepository, "delete_history", crash)
    assert invoke(lambda_event(removals))["batchItemFailures"]
    written = s3.objects()
    assert invoke(lambda_event(removals)) == {"batchItemFailures": []}
    assert s3.objects() == written  # the object was complete: the retry did not write it again from less
    assert not [i for i in dump(store) if i["PK"] == f"ORDER#{order_id}" and i["SK"].startswith("HISTORY#")]


@pytest.mark.dynamodb_semantics
def test_a_holders_delete_of_an_order_is_not_archived(store, s3, invoke, deletions, monkeypatch):
    reader = StreamReader(store, ttl_deletions=deletions)
    order_id = cancelled_order(store, invoke, reader, monkeypatch)
    store.client.delete_item(TableName=store.table_name, Key={"PK": {"S": f"ORDER#{order_id}"}, "SK": {"S": "ORDER"}})
    removals = order_removals(reader)
    assert "userIdentity" not in removals[0]
    assert invoke(lambda_event(removals)) == {"batchItemFailures": []}
    assert s3.objects() == {}
