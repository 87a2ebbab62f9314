"""order_events: the table stream -> OrderEventsService (orders, sessions, products), with partial batch responses.

Each record is read (shop.repository.stream_records) and handed to the service; the batch processor
(shop.stream_batch) publishes the batch's events and fails a record whose event was not accepted.
"""

from __future__ import annotations

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop.runtime import lean_init

lean_init.begin()  # lazy Powertools packages, no cyclic GC until lean_init.done() below

# isort: split
import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from shop import wiring
from shop.aws_config import invocation_deadline
from shop.publishing import Event
from shop.repository.stream_records import StreamRecord
from shop.services.order_events import Action, Outcome
from shop.stream_batch import PublishingBatchProcessor
from shop.tracing import tracing_disabled
from shop.version_metrics import count_for_version

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "Shop")
rules = wiring.order_events_service()  # on the function's table (shop.wiring); the rarer records' rules on first use
publisher = wiring.event_publisher()  # EVENT_BUS_NAME read at each batch


def count(outcome: Outcome) -> None:
    if outcome.action is Action.CONFIRMED:
        metrics.add_metric(name="OrdersConfirmed", unit=MetricUnit.Count, value=1)
    if outcome.history_written:
        metrics.add_metric(name="StatusChanges", unit=MetricUnit.Count, value=1)
    if outcome.sales_counted:
        metrics.add_metric(name="SalesCounted", unit=MetricUnit.Count, value=1)
    if outcome.action is Action.CART_ABANDONED:
        metrics.add_metric(name="CartsAbandoned", unit=MetricUnit.Count, value=1)
    if outcome.alert_written:
        metrics.add_metric(name="StockLowAlerts", unit=MetricUnit.Count, value=1)
    if outcome.action is Action.ARCHIVED:
        metrics.add_metric(name="OrdersArchived", unit=MetricUnit.Count, value=1)
    if outcome.action is Action.PAYMENT_LAPSED:  # its alarm: infra.constructs.monitoring
        metrics.add_metric(name="AuthorisationsLapsed", unit=MetricUnit.Count, value=1)


def log(outcome: Outcome) -> None:
    if outcome.action is Action.SKIPPED:
        return
    if outcome.order_id is not None:
        logger.info(outcome.action.value, status=outcome.status, new_history=outcome.history_written)
    elif outcome.product_id is not None:
        kinds = [event.detail_type for event in outcome.events]
        logger.info(outcome.action.value, events=kinds, new_alert=outcome.alert_written)
    else:
        logger.info(outcome.action.value, events=len(outcome.events))


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    def record_handler(record: DynamoDBRecord) -> tuple[Event, ...]:
        """One record through the rules; the events it produced, for the processor to publish."""
        try:
            parsed = StreamRecord.from_lambda(record.raw_event)
        except Exception:
            logger.exception("record failed: not a stream record", event_id=record.raw_event.get("eventID"))
            raise
        with logger.append_context_keys(**parsed.log_keys):
            try:
                outcome = rules.handle(parsed)
            except Exception:
                logger.exception("record failed", event_name=parsed.event_name, entity=parsed.entity)
                raise
            count(outcome)
            log(outcome)
        return outcome.events

    processor = PublishingBatchProcessor(publisher, logger, batch=rules)
    with invocation_deadline(context):  # a record the store cannot serve in time fails, and is retried
        response = process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    failures = len(response.get("batchItemFailures", []))
    if failures:
        metrics.add_metric(name="RecordsFailed", unit=MetricUnit.Count, value=failures)
    lasting = processor.lasting_failures()
    if lasting:  # the canary's alarm on the version being deployed: not the store's throttling or stalls
        count_for_version("RecordsFailed", lasting)
    return dict(response)


if not tracing_disabled():
    from aws_lambda_powertools import Tracer

    handler = Tracer().capture_lambda_handler(handler)

handler = lean_init.paused_first_call(handler)
lean_init.done()
