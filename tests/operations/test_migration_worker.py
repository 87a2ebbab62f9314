"""The state machine's worker (functions/migrations/handler.py) driven as the state machine drives it:
start names the segments, each segment is invoked again until done (an invocation stops after a page
when its time runs short), finish records the migration; a dry run writes nothing. On DynamoDB Local (moto's transactions are slow) and moto."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from local_runtime.v1_products import load
from local_runtime.worker import import_handler_module
from shop.repository.migrations import MigrationRepository

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAME = "0001-list-version-1-products"


class Context:
    """A Lambda context whose remaining time is what the test says."""

    function_name = "migrations"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:111111111111:function:migrations"
    aws_request_id = "request"

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@pytest.fixture
def worker() -> Any:
    return import_handler_module(str(ROOT / "functions" / "migrations"), "handler", "migrations_handler")


def _drive(worker: Any, started: dict[str, Any], remaining_ms: int) -> tuple[list[dict[str, Any]], int]:
    """The distributed map: each item invoked until done; the results and the number of invocations."""
    results, invocations = [], 0
    for item in started["items"]:
        answer = {"done": False}
        while not answer["done"]:
            answer = worker.handler({"action": "segment", **item}, Context(remaining_ms))
            invocations += 1
        results.append(answer)
    return results, invocations


@pytest.mark.integration
def test_the_worker_migrates_each_segment_over_several_invocations_and_records_once(local_store, worker):
    load(local_store.client, local_store.table_name, 150)
    started = worker.handler(
        {"action": "start", "migration": NAME, "segments": 1, "rate": 10_000, "dry_run": False}, Context(900_000)
    )
    assert started["applied"] is False
    assert [item["segment"] for item in started["items"]] == [0]
    results, invocations = _drive(worker, started, remaining_ms=60_000)  # under the margin: one page each
    assert invocations == 2  # 150 items: two pages of up to 100
    assert sum(result["progress"]["changed"] for result in results) == 150
    finished = worker.handler({"action": "finish", **started, "results": results}, Context(900_000))
    assert finished["changed"] == 150
    assert MigrationRepository(local_store.table).record(NAME) is not None
    again = worker.handler(
        {"action": "start", "migration": NAME, "segments": 1, "rate": 10_000, "dry_run": False}, Context(900_000)
    )
    assert again["applied"] is True
    assert again["items"] == []


def test_a_dry_run_counts_in_one_invocation_per_segment_and_writes_nothing(moto_store, worker):
    load(moto_store.client, moto_store.table_name, 60)
    started = worker.handler(
        {"action": "start", "migration": NAME, "segments": 3, "rate": 100, "dry_run": True}, Context(900_000)
    )
    results, invocations = _drive(worker, started, remaining_ms=60_000)
    assert invocations == 3
    finished = worker.handler({"action": "finish", **started, "results": results}, Context(900_000))
    assert (finished["dry_run"], finished["changed"], finished["seen"]) == (True, 60, 60)
    items = moto_store.client.scan(TableName=moto_store.table_name)["Items"]
    assert len(items) == 60  # the products, nothing else


def test_an_unknown_migration_or_action_fails_the_state(moto_store, worker):
    with pytest.raises(KeyError, match="known"):
        worker.handler(
            {"action": "start", "migration": "9999-x", "segments": 1, "rate": 1, "dry_run": False}, Context(1)
        )
    with pytest.raises(ValueError, match="unknown action"):
        worker.handler({"action": "explode"}, Context(1))


def test_start_refuses_migration_2_before_writers_are_on_the_next_count(moto_store, worker, monkeypatch):
    from shop.config import ConfigurationError

    monkeypatch.setenv("STATUS_SHARDS_NEXT", "16")  # dual read only: writers still on 4
    event = {"action": "start", "migration": "0002-move-status-shards", "segments": 2, "rate": 100, "dry_run": True}
    with pytest.raises(ConfigurationError, match="STATUS_SHARDS_WRITERS=next"):
        worker.handler(event, Context(900_000))
    monkeypatch.setenv("STATUS_SHARDS_WRITERS", "next")
    from shop.config import settings

    settings.cache_clear()
    started = worker.handler(event, Context(900_000))
    assert [item["segment"] for item in started["items"]] == [0, 1]
