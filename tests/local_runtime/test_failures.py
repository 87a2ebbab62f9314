"""The failure store (Lambda's S3 on-failure objects) and replay, without a stack: a directory and moto's S3."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local_runtime import cli, failures

EVENT = {"Records": [{"eventID": "1", "dynamodb": {"SequenceNumber": "100"}}]}


def ok(event: dict[str, Any]) -> failures.Outcome:
    return failures.Outcome(ok=True, payload={"batchItemFailures": []})


def test_a_batch_that_fails_again_stays_for_the_next_replay(tmp_path):
    store = failures.DirectoryStore(tmp_path)
    key = failures.object_key("Mapping", "shard-1", dt.datetime(2026, 1, 2, 3, 4, 5))
    store.write(key, {"payload": json.dumps({"Records": [{"eventID": "1"}]})})

    def fails(event: dict[str, Any]) -> failures.Outcome:
        return failures.Outcome(ok=True, payload={"batchItemFailures": [{"itemIdentifier": "1"}]})

    report = failures.replay(store, fails)
    assert (report.replayed, report.failed) == ([], [key])
    assert list(store.object_keys()) == [key]
    assert key.startswith("aws/lambda/Mapping/shard-1/2026/01/02/2026-01-02T03.04.05-")


def test_the_deployed_bucket_is_replayed_and_emptied_of_what_succeeded():
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="failures")
        store = failures.BucketStore(s3, "failures")
        key = failures.object_key("0f1e2d3c-uuid", "shardId-1", dt.datetime(2026, 5, 6, 7, 8, 9))
        # Lambda's object: the invocation record, the event as JSON text in payload
        store.write(key, {"version": "1.0", "DDBStreamBatchInfo": {"batchSize": 1}, "payload": json.dumps(EVENT)})
        seen: list[dict[str, Any]] = []
        report = failures.replay(store, lambda event: seen.append(event) or ok(event))
        assert (report.replayed, report.failed, seen) == ([key], [], [EVENT])
        assert list(store.object_keys()) == []
        assert s3.list_objects_v2(Bucket="failures", Prefix="replayed/")["Contents"][0]["Key"] == f"replayed/{key}"
        again = failures.replay(store, ok)
        assert (again.replayed, again.failed) == ([], [])


def test_a_function_error_keeps_the_object(tmp_path):
    store = failures.DirectoryStore(tmp_path)
    key = failures.object_key("Mapping", "shard-1", dt.datetime(2026, 1, 2, 3, 4, 5))
    store.write(key, {"payload": EVENT})  # an event object is read as well as its JSON text
    report = failures.replay(store, lambda event: failures.Outcome(ok=False, payload={"errorType": "Boom"}))
    assert report.failed == [key]


def test_an_object_without_an_event_is_refused_not_invoked(tmp_path):
    with pytest.raises(ValueError, match="no event payload"):
        failures.event_of({"version": "1.0"})


def test_replay_needs_the_bucket_and_the_function_together(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["replay", "--bucket", "failures"])
    assert exited.value.code == 2
    assert "--bucket and --function go together" in capsys.readouterr().err


def test_each_kept_batch_is_replayed_through_the_consumer_that_gave_it_up(tmp_path):
    """Two consumers of one stream (order_events, payment_steps) share the local failure store: the mapping in
    each object's key routes its batch; a mapping without a route goes to the default consumer."""
    store = failures.DirectoryStore(tmp_path)
    when = dt.datetime(2026, 1, 2, 3, 4, 5)
    keys = {name: failures.object_key(name, "shard-1", when) for name in ("OrderEvents", "PaymentSteps", "Other")}
    for key in keys.values():
        store.write(key, {"payload": json.dumps(EVENT)})
    seen: list[str] = []

    def consumer(name: str) -> Any:
        def invoke(event: dict[str, Any]) -> failures.Outcome:
            seen.append(name)
            return ok(event)

        return invoke

    report = failures.replay(
        store, consumer("default"), routes={"OrderEvents": consumer("order_events"), "PaymentSteps": consumer("steps")}
    )

    assert sorted(report.replayed) == sorted(keys.values())
    assert sorted(seen) == ["default", "order_events", "steps"]
    assert failures.mapping_of(keys["PaymentSteps"]) == "PaymentSteps"
