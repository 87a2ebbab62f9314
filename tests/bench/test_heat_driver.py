"""The partition-heat driver delivers stream batches as the event source mapping does."""

from __future__ import annotations

from typing import Any

import pytest

from bench import heat
from bench.hooks import Measurement, Recorder


def record(sequence: str) -> dict[str, Any]:
    return {"dynamodb": {"SequenceNumber": sequence}}


class FlakyProcessor:
    """order_events that fails the records it is told to, the given number of times."""

    def __init__(self, failing: set[str], times: int) -> None:
        self.failing, self.times = failing, times
        self.events: list[list[str]] = []

    def invoke(self, function: str, event: dict[str, Any]) -> dict[str, Any]:
        assert function == "order_events"
        sequences = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
        self.events.append(sequences)
        if self.times == 0:
            return {"batchItemFailures": []}
        self.times -= 1
        return {"batchItemFailures": [{"itemIdentifier": s} for s in sequences if s in self.failing]}


def driver(functions: FlakyProcessor) -> heat.Driver:
    built = heat.Driver.__new__(heat.Driver)
    built.functions, built.recorder, built.problems = functions, Recorder(), []
    return built


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heat.time, "sleep", lambda _: None)


def test_a_failed_batch_is_sent_again_from_its_first_failure() -> None:
    processor = FlakyProcessor({"2", "4"}, times=1)
    shop = driver(processor)

    shop._deliver({"Records": [record(s) for s in ("1", "2", "3", "4")]}, Measurement())

    assert processor.events == [["1", "2", "3", "4"], ["2", "3", "4"]]
    assert shop.problems == []


def test_records_that_keep_failing_make_the_sample_a_problem() -> None:
    processor = FlakyProcessor({"3"}, times=heat.TRANSIENT_RETRIES)
    shop = driver(processor)

    shop._deliver({"Records": [record(s) for s in ("1", "2", "3")]}, Measurement())

    assert processor.events == [["1", "2", "3"]] + [["3"]] * (heat.TRANSIENT_RETRIES - 1)
    assert shop.problems == [f"order_events still failed after {heat.TRANSIENT_RETRIES} deliveries: ['3']"]
