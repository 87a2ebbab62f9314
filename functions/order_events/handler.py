"""order_events: the table stream -> OrderEventsService, with partial batch responses.

Each record is adapted and handed to the service; the events the batch produced are published
together afterwards (PutEvents, 10 per call), and a record whose event was not accepted is reported
failed like a record that raised, so Lambda redelivers it (its table writes are no-ops then).
"""

from __future__ import annotations

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop import startup

startup.begin()  # lean init: lazy Powertools packages, no cyclic GC (shop.startup)

# isort: split
import os
import sys
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from shop.aws_config import invocation_deadline
from shop.publishing import EventPublisher, Outbox
from shop.repository import Table
from shop.repository.stream_records import StreamRecord
from shop.services.order_events import Action, OrderEventsService, Outcome

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "Shop")


class PublishFailed(RuntimeError):
    """EventBridge did not accept an event of this record."""


class PublishingBatchProcessor(BatchProcessor):
    """Powertools' DynamoDB Streams processor that publishes the batch's events once, after its records."""

    def __init__(self, outbox: Outbox) -> None:
        super().__init__(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)
        self.outbox = outbox

    def process(self) -> list[tuple[Any, ...]]:
        self.outbox.clear()  # nothing left over from an invocation that died mid-batch
        results = super().process()
        failed = self.outbox.flush()
        if failed:
            self._fail_unpublished(failed)
        return results

    def _fail_unpublished(self, failed: set[str]) -> None:
        """Move the records whose events were not accepted from the successes to the failures."""
        succeeded: list[Any] = list(self.success_messages)  # Powertools keeps the raw record dicts here
        for raw in succeeded:
            sequence_number = raw["dynamodb"]["SequenceNumber"]
            if sequence_number not in failed:
                continue
            self.success_messages.remove(raw)
            logger.warning("event not published; record reported failed", sequence_number=sequence_number)
            try:
                raise PublishFailed(f"EventBridge did not accept the event of record {sequence_number}")
            except PublishFailed:
                self.failure_handler(DynamoDBRecord(raw), sys.exc_info())


def count(outcome: Outcome) -> None:
    if outcome.action is Action.CONFIRMED:
        metrics.add_metric(name="OrdersConfirmed", unit=MetricUnit.Count, value=1)
    if outcome.history_written:
        metrics.add_metric(name="StatusChanges", unit=MetricUnit.Count, value=1)
    if outcome.action is Action.CART_ABANDONED:
        metrics.add_metric(name="CartsAbandoned", unit=MetricUnit.Count, value=1)


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    service = OrderEventsService(Table())
    outbox = Outbox(EventPublisher.from_settings())

    def record_handler(record: DynamoDBRecord) -> str:
        try:
            parsed = StreamRecord.from_lambda(record.raw_event)
        except Exception:
            logger.exception("record failed: not a stream record", event_id=record.raw_event.get("eventID"))
            raise
        with logger.append_context_keys(**parsed.log_keys):
            try:
                outcome = service.handle(parsed)
            except Exception:
                logger.exception("record failed", event_name=parsed.event_name, entity=parsed.entity)
                raise
            count(outcome)
            outbox.add(parsed.sequence_number, outcome.events)
            if outcome.action is not Action.SKIPPED:
                if outcome.order_id is not None:
                    logger.info(outcome.action.value, status=outcome.status, new_history=outcome.history_written)
                else:
                    logger.info(outcome.action.value, events=len(outcome.events))
        return outcome.action.value

    with invocation_deadline(context):  # a record the store cannot serve in time fails, and is retried
        response = process_partial_response(
            event=event, record_handler=record_handler, processor=PublishingBatchProcessor(outbox), context=context
        )
    failures = len(response.get("batchItemFailures", []))
    if failures:
        metrics.add_metric(name="RecordsFailed", unit=MetricUnit.Count, value=failures)
    return dict(response)


if os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() != "true":
    from aws_lambda_powertools import Tracer

    handler = Tracer().capture_lambda_handler(handler)

handler = startup.paused_first_call(handler)
startup.done()
