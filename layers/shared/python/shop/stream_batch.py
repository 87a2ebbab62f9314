"""The stream processor's batch: Powertools' partial-batch processor that publishes a batch's events once.

Records are held back until the batch's events are sent; a record whose event was not accepted fails, so Lambda
redelivers it. The writes a batch's records leave to its end (BatchEffects: the top list's refresh, once per
(product, day)) run before the events are sent; when they fail, the records that wait for them fail with their
error. Powertools' documented hooks only: docs/decisions.md, "Stream processor" and "Sales counted with the
version's history entry".
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Protocol

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.base import SuccessResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from shop.aws_config import DeadlineExceeded
from shop.errors import ServiceUnavailable
from shop.publishing import Event, EventPublisher, Outbox

# The store throttled, stalled or failed: the record is retried and a release is not judged by it.
TRANSIENT_FAILURES = (ServiceUnavailable, DeadlineExceeded)


class PublishFailed(RuntimeError):
    """EventBridge did not accept an event of this record."""


class BatchEffects(Protocol):
    """Writes a batch's records leave to its end (shop.services.order_events: the top list's refresh)."""

    counting_records: set[str]  # the sequence numbers of the records whose effects wait for settle_batch

    def begin_batch(self) -> None: ...

    def settle_batch(self) -> None: ...


class PublishingBatchProcessor(BatchProcessor):
    """DynamoDB Streams partial batches whose records succeed once the events they returned are published."""

    def __init__(self, publisher: EventPublisher | None, logger: Logger, batch: BatchEffects | None = None) -> None:
        super().__init__(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
        self.outbox = Outbox(publisher)
        self.log = logger
        self.batch = batch  # its records' waiting writes run after the last record, before publishing
        self.held: list[tuple[str, dict[str, Any], Sequence[Event]]] = []  # sequence number, record, events

    def lasting_failures(self) -> int:
        """The batch's failed records but those the store failed transiently: what a broken release fails.

        An event EventBridge did not accept (PublishFailed) counts: its cause may be the release (an event it
        builds wrong) as well as a throttled bus.
        """
        return sum(1 for _, error, _ in self.exceptions if not isinstance(error, TRANSIENT_FAILURES))

    def _prepare(self) -> None:
        super()._prepare()
        self.outbox.clear()
        self.held.clear()
        if self.batch is not None:
            self.batch.begin_batch()

    def success_handler(self, record: Any, result: Sequence[Event]) -> SuccessResponse:
        sequence_number = record["dynamodb"]["SequenceNumber"]  # the id batchItemFailures reports
        waits = self.batch is not None and sequence_number in self.batch.counting_records
        publishes = bool(result) and self.outbox.publishes
        if not waits and not publishes:
            return super().success_handler(record, result)
        if publishes:
            self.outbox.add(sequence_number, result)
        self.held.append((sequence_number, record, result))
        return "success", result, record

    def _clean(self) -> None:
        """After the last record: publish, settle the held records, then Powertools builds the response."""
        settled = len(self.success_messages) + len(self.fail_messages) + len(self.held)
        if settled == len(self.records):  # not when the invocation dies mid-batch: Lambda retries it all
            unsettled = self._settle()
            failed = self.outbox.flush()
            for sequence_number, record, events in self.held:
                if sequence_number in unsettled:
                    self.failure_handler(DynamoDBRecord(record), unsettled[sequence_number])
                elif sequence_number in failed:
                    self._fail_unpublished(record, sequence_number)
                else:
                    super().success_handler(record, events)
        super()._clean()

    def _settle(self) -> dict[str, Any]:
        """The batch's waiting writes; when they fail, the records that wait for them, each with the error."""
        if self.batch is None:
            return {}
        try:
            self.batch.settle_batch()
        except Exception:
            self.log.exception("batch effects failed; their records reported failed")
            error = sys.exc_info()
            return dict.fromkeys(self.batch.counting_records, error)
        return {}

    def _fail_unpublished(self, record: dict[str, Any], sequence_number: str) -> None:
        self.log.warning("event not published; record reported failed", sequence_number=sequence_number)
        try:
            raise PublishFailed(f"EventBridge did not accept the event of record {sequence_number}")
        except PublishFailed:
            self.failure_handler(DynamoDBRecord(record), sys.exc_info())
