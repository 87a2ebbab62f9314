"""payment_steps: the table's stream -> PaymentService's steps (capture, cancel, refund, expiry), partial batches;
and, on its schedule, the sweep of closed payment windows (the only way an unpaid order expires).

Its event source mapping's filter sends only the records a step needs (an order with a payment whose status
changed to SHIPPED, CANCELLED, PAYMENT_FAILED, EXPIRED or RETURNED); the rules
check again, so an unfiltered batch (local replays) changes nothing more. A step that fails (the provider down)
fails its record alone: the stream retries it, then the on-failure destination keeps it for `make replay`.
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
from shop.services.payments import StepAction, StepOutcome
from shop.stream_batch import PublishingBatchProcessor
from shop.tracing import tracing_disabled

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "Shop")
payment_rules = wiring.payment_service()  # on the function's table (shop.wiring); the provider built when called
publisher = wiring.event_publisher()  # EVENT_BUS_NAME read at each batch

METRIC_NAMES = {
    StepAction.CAPTURED: "PaymentsCaptured",
    StepAction.CANCELLED: "PaymentIntentsCancelled",
    StepAction.REFUNDED: "PaymentsRefunded",
    StepAction.CONFIRMED: "OrdersConfirmedAtExpiry",
    StepAction.EXPIRED: "OrdersExpired",
}


def count(outcome: StepOutcome) -> None:
    name = METRIC_NAMES.get(outcome.action)
    if name is not None:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)


SCHEDULED = "Scheduled Event"  # an EventBridge schedule's detail-type: the payment windows' sweep


def sweep(service: Any) -> dict[str, Any]:
    """The windows whose TTL removal did not come (late, or lost): expired as it would have expired them."""
    outcomes = service.sweep()
    for outcome in outcomes:
        count(outcome)
        if outcome.action is not StepAction.SKIPPED:
            logger.info(outcome.action.value, order_id=outcome.order_id, by="sweep")
    swept = sum(outcome.action is not StepAction.SKIPPED for outcome in outcomes)
    metrics.add_metric(name="OrdersSwept", unit=MetricUnit.Count, value=swept)
    return {"swept": swept}


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("detail-type") == SCHEDULED:
        with invocation_deadline(context):
            return sweep(payment_rules)

    def record_handler(record: DynamoDBRecord) -> tuple[Event, ...]:
        try:
            parsed = StreamRecord.from_lambda(record.raw_event)
        except Exception:
            logger.exception("record failed: not a stream record", event_id=record.raw_event.get("eventID"))
            raise
        with logger.append_context_keys(**parsed.log_keys):
            try:
                outcome = payment_rules.handle(parsed)
            except Exception:
                logger.exception("payment step failed", event_name=parsed.event_name, entity=parsed.entity)
                raise
            count(outcome)
            if outcome.action is not StepAction.SKIPPED:
                logger.info(outcome.action.value, order_id=outcome.order_id)
        return outcome.events

    processor = PublishingBatchProcessor(publisher, logger)
    with invocation_deadline(context):
        response = process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    failures = len(response.get("batchItemFailures", []))
    if failures:
        metrics.add_metric(name="RecordsFailed", unit=MetricUnit.Count, value=failures)  # its alarm: Monitoring
    return dict(response)


if not tracing_disabled():
    from aws_lambda_powertools import Tracer

    handler = Tracer().capture_lambda_handler(handler)

handler = lean_init.paused_first_call(handler)
lean_init.done()
