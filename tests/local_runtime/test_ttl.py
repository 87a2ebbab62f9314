"""The local TTL emulator on moto and DynamoDB Local: what it deletes, when it does not, how its REMOVEs look."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from infra.settings import STREAM_FILTERS
from local_runtime import streams
from local_runtime.dynamodb_local import create_table
from local_runtime.filters import matches_any
from local_runtime.ttl import TTL_IDENTITY, TtlDeletions, TtlEmulator
from tests.support.streams import StreamReader, only

NOW = int(time.time())


def put(store: Any, pk: str, **attributes: Any) -> None:
    item = {"PK": {"S": pk}, "SK": {"S": "X"}, "entity": {"S": "THING"}}
    item.update(attributes)
    store.client.put_item(TableName=store.table_name, Item=item)


def keys(store: Any) -> set[str]:
    return {i["PK"]["S"] for i in store.client.scan(TableName=store.table_name)["Items"]}


def emulator(store: Any, deletions: TtlDeletions, now: float = NOW) -> TtlEmulator:
    return TtlEmulator(
        store.client,
        store.table_name,
        attribute="expires_at",
        key_names=("PK", "SK"),
        deletions=deletions,
        now=lambda: now,
    )


@pytest.mark.dynamodb_semantics
def test_only_items_whose_numeric_ttl_passed_are_deleted(store):
    put(store, "past", expires_at={"N": str(NOW - 10)})
    put(store, "now", expires_at={"N": str(NOW)})
    put(store, "future", expires_at={"N": str(NOW + 60)})
    put(store, "no-ttl")
    put(store, "text-ttl", expires_at={"S": str(NOW - 10)})  # TTL ignores attributes that are not Numbers
    put(store, "ancient", expires_at={"N": str(NOW - 6 * 365 * 86_400)})  # over five years old: ignored too
    assert emulator(store, TtlDeletions()).sweep() == 2
    assert keys(store) == {"future", "no-ttl", "text-ttl", "ancient"}


@pytest.mark.dynamodb_semantics
def test_an_item_whose_ttl_moved_meanwhile_is_kept(store, monkeypatch):
    put(store, "renewed", expires_at={"N": str(NOW - 10)})
    deletions = TtlDeletions()
    ttl = emulator(store, deletions)
    found = ttl.expired()
    put(store, "renewed", expires_at={"N": str(NOW + 3600)})  # the holder extended it after the scan
    monkeypatch.setattr(ttl, "expired", lambda **_: found)
    assert ttl.sweep() == 0
    assert keys(store) == {"renewed"}
    assert len(deletions) == 0


@pytest.mark.dynamodb_semantics
def test_the_emulators_removes_carry_the_ttl_service_identity_and_a_holders_do_not(store):
    deletions = TtlDeletions()
    reader = StreamReader(store, ttl_deletions=deletions)
    put(store, "expired", expires_at={"N": str(NOW - 1)})
    put(store, "deleted-by-holder", expires_at={"N": str(NOW + 3600)})
    reader.skip_to_now()
    emulator(store, deletions).sweep()
    store.client.delete_item(TableName=store.table_name, Key={"PK": {"S": "deleted-by-holder"}, "SK": {"S": "X"}})
    removes = {r["dynamodb"]["Keys"]["PK"]["S"]: r for r in only(reader.read(), event_name="REMOVE")}
    assert removes["expired"]["userIdentity"] == TTL_IDENTITY
    assert "userIdentity" not in removes["deleted-by-holder"]
    assert len(deletions) == 0  # each delete marks one REMOVE, once


@pytest.mark.dynamodb_semantics
def test_a_later_holders_delete_of_the_same_key_is_not_taken_for_ttl(store):
    deletions = TtlDeletions()
    reader = StreamReader(store, ttl_deletions=deletions)
    put(store, "reused", expires_at={"N": str(NOW - 1)})
    emulator(store, deletions).sweep()
    put(store, "reused", expires_at={"N": str(NOW + 60)})
    store.client.delete_item(TableName=store.table_name, Key={"PK": {"S": "reused"}, "SK": {"S": "X"}})
    removes = only(reader.read(), event_name="REMOVE")
    assert ["userIdentity" in r for r in removes] == [True, False]


def test_dynamodb_locals_own_ttl_delete_is_shaped_as_the_ttl_services_remove():
    """DynamoDB Local names its own TTL delete UNKNOWN_TO_SDK_VERSION, without userIdentity, GSI keys in Keys."""
    from local_runtime.events import stream_record

    old = {"PK": {"S": "ORDER#o1"}, "SK": {"S": "ORDER"}, "GSI1PK": {"S": "x"}, "expires_at": {"N": "100"}}
    raw = {
        "eventID": "e1",
        "eventName": "UNKNOWN_TO_SDK_VERSION",
        "dynamodb": {
            "Keys": {"PK": old["PK"], "SK": old["SK"], "GSI1PK": old["GSI1PK"]},
            "OldImage": old,
            "SequenceNumber": "000000000000000000019",
            "SizeBytes": 10,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }
    record = stream_record(raw, "arn:stream")
    assert (record["eventName"], record["userIdentity"]) == ("REMOVE", TTL_IDENTITY)
    deletions = TtlDeletions("expires_at", ("PK", "SK"))
    deletions.add({"PK": old["PK"], "SK": old["SK"]}, "100")
    assert deletions.mark([record])[0]["userIdentity"] == TTL_IDENTITY
    again = stream_record(raw, "arn:stream")  # the poller read it again after an error
    assert deletions.mark([again])[0]["userIdentity"] == TTL_IDENTITY


@pytest.mark.integration
def test_an_item_dynamodb_local_expires_by_itself_reaches_order_events_as_a_ttl_remove(dynamodb_local):
    """With TTL on (what `make dev` creates), DynamoDB Local deletes expired items itself, about every 10 s,
    before or instead of the emulator: its record must pass the mapping's TTL filter as on AWS. (It deletes
    only while every expired item of the table holds the index keys, as a finished order's header does.)"""
    client = dynamodb_local.client("dynamodb")
    name = f"native-ttl-{uuid.uuid4().hex[:8]}"
    create_table(client, name)
    try:
        reader = streams.StreamReader(client, dynamodb_local.client("dynamodbstreams"), name)
        order = {
            "PK": {"S": "ORDER#o1"},
            "SK": {"S": "ORDER"},
            "GSI1PK": {"S": "STATUS#CANCELLED#00"},
            "GSI1SK": {"S": "2026-01-01T00:00:00Z#o1"},
            "entity": {"S": "ORDER"},
        }
        client.put_item(TableName=name, Item={**order, "expires_at": {"N": str(int(time.time()) - 1)}})
        removes: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60
        while not removes and time.monotonic() < deadline:
            time.sleep(0.5)
            removes = [r for r in reader.read() if r["eventName"] == "REMOVE"]
        [remove] = removes
        assert remove["userIdentity"] == TTL_IDENTITY
        assert remove["dynamodb"]["OldImage"]["entity"] == {"S": "ORDER"}
        assert matches_any(STREAM_FILTERS, remove)
        key = {"PK": order["PK"], "SK": order["SK"]}
        assert "Item" not in client.get_item(TableName=name, Key=key, ConsistentRead=True)
    finally:
        client.delete_table(TableName=name)


def scans_during(store: Any, action: Any) -> int:
    made: list[str] = []

    def record(model, **_):
        made.append(model.name)

    store.client.meta.events.register("before-call.dynamodb.Scan", record)
    try:
        action()
    finally:
        store.client.meta.events.unregister("before-call.dynamodb.Scan", record)
    return len(made)


def fed(store: Any, reader: StreamReader) -> TtlEmulator:
    """An emulator that has seen every record of the table's stream so far."""
    ttl = emulator(store, TtlDeletions())
    ttl.observe(reader.read())
    return ttl


@pytest.mark.dynamodb_semantics
def test_fed_by_the_stream_it_deletes_what_came_due_without_a_scan(store):
    reader = StreamReader(store)
    put(store, "past", expires_at={"N": str(NOW - 10)})
    put(store, "future", expires_at={"N": str(NOW + 60)})
    put(store, "text-ttl", expires_at={"S": str(NOW - 10)})
    put(store, "no-ttl")
    ttl = fed(store, reader)
    assert scans_during(store, ttl.sweep_due) == 0
    assert keys(store) == {"future", "text-ttl", "no-ttl"}
    ttl.now = lambda: NOW + 60
    assert ttl.sweep_due() == 1
    assert keys(store) == {"text-ttl", "no-ttl"}


@pytest.mark.dynamodb_semantics
def test_a_ttl_changed_before_the_watch_saw_it_is_read_again_and_kept_until_its_new_time(store):
    reader = StreamReader(store)
    put(store, "renewed", expires_at={"N": str(NOW - 10)})
    ttl = fed(store, reader)
    put(store, "renewed", expires_at={"N": str(NOW + 3600)})  # its record not yet read
    assert ttl.sweep_due() == 0
    assert keys(store) == {"renewed"}
    ttl.now = lambda: NOW + 3600
    assert ttl.sweep_due() == 1  # watched at the TTL it was read with
    assert keys(store) == set()


@pytest.mark.dynamodb_semantics
def test_a_later_record_of_the_same_key_replaces_the_ttl_watched_and_a_remove_ends_it(store):
    reader = StreamReader(store)
    put(store, "extended", expires_at={"N": str(NOW - 10)})
    put(store, "extended", expires_at={"N": str(NOW + 60)})
    put(store, "gone", expires_at={"N": str(NOW - 10)})
    store.client.delete_item(TableName=store.table_name, Key={"PK": {"S": "gone"}, "SK": {"S": "X"}})
    assert fed(store, reader).came_due() == []


@pytest.mark.dynamodb_semantics
def test_the_seed_watches_every_ttl_already_in_the_table(store):
    put(store, "past", expires_at={"N": str(NOW - 10)})
    put(store, "future", expires_at={"N": str(NOW + 60)})
    put(store, "ancient", expires_at={"N": str(NOW - 6 * 365 * 86_400)})  # over five years old: ignored
    ttl = emulator(store, TtlDeletions())
    ttl.seed()
    assert ttl.sweep_due() == 1
    assert keys(store) == {"future", "ancient"}


@pytest.mark.dynamodb_semantics
def test_a_sweep_that_fails_is_followed_by_a_scan_so_what_came_due_is_not_lost(store, monkeypatch):
    reader = StreamReader(store)
    put(store, "due", expires_at={"N": str(NOW - 10)})
    ttl = fed(store, reader)
    ttl.fed_by_stream, ttl.interval, ttl.rescan_s = True, 0.05, 3600.0
    delete = store.client.delete_item
    failures = iter([RuntimeError("the store went away")])

    def flaky_delete(**kwargs):
        for failure in failures:
            raise failure
        return delete(**kwargs)

    monkeypatch.setattr(store.client, "delete_item", flaky_delete)
    ttl.start()
    try:
        deadline = time.monotonic() + 10
        while "due" in keys(store) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        ttl.stop()
    assert keys(store) == set()


def test_a_record_without_the_new_image_leaves_the_watched_ttl_as_it_was():
    """A stream view without new images (KEYS_ONLY, OLD_IMAGE) cannot tell a TTL: such records change nothing."""
    ttl = TtlEmulator(
        None, "t", attribute="expires_at", key_names=("PK", "SK"), deletions=TtlDeletions(), now=lambda: NOW
    )
    key = {"PK": {"S": "watched"}, "SK": {"S": "X"}}

    def record(view: str, image: dict[str, Any] | None) -> dict[str, Any]:
        data: dict[str, Any] = {"Keys": key, "StreamViewType": view}
        if image is not None:
            data["NewImage"] = image
        return {"eventName": "MODIFY", "dynamodb": data}

    ttl.observe([record("NEW_AND_OLD_IMAGES", {**key, "expires_at": {"N": str(NOW - 1)}})])
    ttl.observe([record("KEYS_ONLY", None), record("OLD_IMAGE", None)])
    assert ttl.came_due() == [(key, str(NOW - 1))]
