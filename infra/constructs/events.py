"""Stream processing: the event bus, the failure queue, order_events and its mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.functions import Layers, build_function, live_alias
from infra.constructs.protection import removal_policy
from infra.settings import EVENT_ARCHIVE_RETENTION_DAYS, STREAM, STREAM_FILTERS, STREAM_FUNCTION, DeployConfig


class OrderEventsProcessing(Construct):
    """order_events consumes the table stream: only the records it handles, failures to SQS."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        table: dynamodb.ITable,
        pagination_secret: str,
    ) -> None:
        super().__init__(scope, construct_id)
        removal = removal_policy(config)
        self.bus = events.EventBus(
            self,
            "Bus",
            event_bus_name=config.name("domain-events"),
            description="Shop domain events (OrderConfirmed, ...)",
        )
        self.archive = self.bus.archive(
            "Archive",
            archive_name=config.name("domain-events"),
            description="every shop event, replayable (docs/operations.md#replay-domain-events)",
            event_pattern=events.EventPattern(account=[Stack.of(self).account]),
            retention=Duration.days(EVENT_ARCHIVE_RETENTION_DAYS),
        )
        self.failures = sqs.Queue(
            self,
            "StreamFailures",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=removal,
        )
        layers = Layers(self, "Layers", config=config)
        concurrency = config.order_events_concurrency or None
        self.function = build_function(
            self,
            STREAM_FUNCTION,
            config=config,
            table=table,
            layers=layers,
            pagination_secret=pagination_secret,
            environment={"EVENT_BUS_NAME": self.bus.event_bus_name},
            # Caps the write rate the stream can drive into the table while a backlog drains.
            reserved_concurrency=concurrency,
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["events:PutEvents"], resources=[self.bus.event_bus_arn])
        )
        self.alias = live_alias(self, self.function, config=config)
        starting = lambda_.StartingPosition[STREAM.starting_position]
        self.alias.add_event_source(
            sources.DynamoEventSource(
                table,
                starting_position=starting,
                batch_size=STREAM.batch_size,
                max_batching_window=Duration.seconds(STREAM.max_batching_window_s),
                report_batch_item_failures=STREAM.report_batch_item_failures,
                bisect_batch_on_error=STREAM.bisect_batch_on_error,
                retry_attempts=STREAM.retry_attempts,
                max_record_age=Duration.seconds(STREAM.max_record_age_s),
                on_failure=sources.SqsDlq(self.failures),
                filters=[_pattern(f) for f in STREAM_FILTERS],
            )
        )


def _pattern(pattern: Mapping[str, Any]) -> Mapping[str, Any]:
    """A filter as CDK wants it: {"pattern": "<json>"} (the template carries the JSON text)."""
    return lambda_.FilterCriteria.filter(pattern)
