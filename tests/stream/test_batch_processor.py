"""PublishingBatchProcessor on plain records: one PutEvents pass per batch, unaccepted events fail their records."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from shop.publishing import Event, EventPublisher
from shop.stream_batch import PublishingBatchProcessor
from tests.support.recording_events import RecordingEvents

logger = Logger(service="test-batch")


def batch(*sequence_numbers: str) -> dict[str, Any]:
    return {
        "Records": [
            {"eventID": n, "eventName": "MODIFY", "eventSource": "aws:dynamodb", "dynamodb": {"SequenceNumber": n}}
            for n in sequence_numbers
        ]
    }


def events_of(record: DynamoDBRecord) -> tuple[Event, ...]:
    """Records "1x" raise, records "2x" produce two events, the others one; "0" none."""
    number = record.raw_event["dynamodb"]["SequenceNumber"]
    if number.startswith("1"):
        raise ValueError("unreadable")
    if number == "0":
        return ()
    count = 2 if number.startswith("2") else 1
    return tuple(Event("shop.orders", "OrderStatusChanged", {"id": f"{number}:{i}"}) for i in range(count))


def failures(response: dict[str, Any]) -> list[str]:
    return [item["itemIdentifier"] for item in response["batchItemFailures"]]


def test_the_batch_publishes_once_and_an_unaccepted_event_fails_only_its_record():
    bus = RecordingEvents()
    bus.reject = lambda entry: "ThrottlingException" if json.loads(entry["Detail"])["id"] == "21:1" else None
    processor = PublishingBatchProcessor(EventPublisher("bus", client=bus), logger)

    response = process_partial_response(batch("0", "11", "21", "31", "22"), events_of, processor)

    assert failures(response) == ["11", "21"], "the record that raised, then the one whose event was refused"
    assert [len(call) for call in bus.calls] == [5, 1], "all events in one call, the refused one tried once more"
    assert sorted(r["dynamodb"]["SequenceNumber"] for r in processor.success_messages) == ["0", "22", "31"]


def test_a_processor_is_reusable_across_batches():
    bus = RecordingEvents()
    processor = PublishingBatchProcessor(EventPublisher("bus", client=bus), logger)
    assert failures(process_partial_response(batch("31"), events_of, processor)) == []
    assert failures(process_partial_response(batch("32"), events_of, processor)) == []
    assert [[json.loads(e["Detail"])["id"] for e in call] for call in bus.calls] == [["31:0"], ["32:0"]]


class Crash(BaseException):
    """The function dying mid-batch: not an Exception Powertools catches."""


def test_a_batch_that_dies_midway_publishes_nothing():
    bus = RecordingEvents()
    processor = PublishingBatchProcessor(EventPublisher("bus", client=bus), logger)

    def dying(record: DynamoDBRecord) -> tuple[Event, ...]:
        if record.raw_event["dynamodb"]["SequenceNumber"] == "33":
            raise Crash
        return events_of(record)

    with pytest.raises(Crash):
        process_partial_response(batch("31", "32", "33", "34"), dying, processor)
    assert bus.calls == []


def test_without_a_bus_every_record_with_events_succeeds():
    processor = PublishingBatchProcessor(None, logger)
    response = process_partial_response(batch("21", "31", "0"), events_of, processor)
    assert failures(response) == []
    assert len(processor.success_messages) == 3
