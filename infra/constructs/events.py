"""Stream processing: the event bus, the failure archive, order_events and its mapping."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.functions import Layers, build_function, live_alias
from infra.constructs.protection import removal_policy
from infra.settings import (
    EVENT_ARCHIVE_RETENTION_DAYS,
    PAYMENT_STEPS_FUNCTION,
    PAYMENT_SWEEP_DELIVERY_RETRIES,
    PAYMENT_SWEEP_MAX_AGE_S,
    PAYMENT_SWEEP_MINUTES,
    PAYMENT_SWEEP_RUN_RETRIES,
    STREAM,
    STREAM_FAILURE_PREFIX,
    STREAM_FAILURE_RETENTION_DAYS,
    STREAM_FILTERS,
    STREAM_FUNCTION,
    DeployConfig,
    payment_step_filters,
)


class OrderEventsProcessing(Construct):
    """order_events consumes the table stream: only the records it handles, given-up batches to S3.

    Lambda writes the whole invocation record (the stream records themselves, not only their shard
    and sequence numbers) to the failure bucket, so `make replay` can re-drive it after the stream
    has trimmed the records (docs/operations.md).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        table: dynamodb.ITable,
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
        self.failures = _failure_bucket(self, "StreamFailures", removal)
        layers = Layers(self, "Layers", config=config)
        concurrency = config.order_events_concurrency or None
        self.function = build_function(
            self,
            STREAM_FUNCTION,
            config=config,
            table=table,
            layers=layers,
            archive=True,
            environment={"EVENT_BUS_NAME": self.bus.event_bus_name},
            # Caps the write rate the stream can drive into the table while a backlog drains.
            reserved_concurrency=concurrency,
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["events:PutEvents"], resources=[self.bus.event_bus_arn])
        )
        self.alias = live_alias(self, self.function, config=config)
        self.mapping_id = _consume_stream(self.alias, table, self.failures, STREAM_FILTERS)


class PaymentSteps(Construct):
    """`-c payments=stripe`: payment_steps, a second consumer of the table stream (capture, cancel, refund, expiry),
    and the payment windows' sweep on a schedule.

    Its own mapping with its own filters (payment_step_filters: -c capture=on_confirm adds the confirmation),
    failure bucket and alarm (Monitoring): a Stripe outage retries and then parks payment records (`make replay`),
    never order_events' records. The sweep's rule invokes the same live alias every minute (infra.settings,
    PAYMENT_SWEEP_*): no dead-letter queue and no retried run, since the next run does the same work.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        table: dynamodb.ITable,
        stripe_secret: secretsmanager.ISecret,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)
        self.failures = _failure_bucket(self, "StepFailures", removal_policy(config))
        layers = Layers(self, "Layers", config=config, payments=True)
        self.function = build_function(
            self,
            PAYMENT_STEPS_FUNCTION,
            config=config,
            table=table,
            layers=layers,
            stripe_secret=stripe_secret,
            environment={"EVENT_BUS_NAME": bus.event_bus_name},  # OrderRefunded
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["events:PutEvents"], resources=[bus.event_bus_arn])
        )
        self.alias = live_alias(self, self.function, config=config)
        self.mapping_id = _consume_stream(self.alias, table, self.failures, payment_step_filters(config.capture))
        self.sweep_rule = _sweep_schedule(self, self.alias, config)


def _sweep_schedule(scope: Construct, alias: lambda_.Alias, config: DeployConfig) -> events.Rule:
    """The payment windows' sweep: a "Scheduled Event" to payment_steps' live alias every PAYMENT_SWEEP_MINUTES.

    A run that fails is not retried by Lambda (its Errors alarm counts it; the next run, a minute later, retries
    its orders), and a delivery Lambda refused is retried by EventBridge within a minute, then dropped (its
    FailedInvocations alarm): a queued copy would only redo what the next run does.
    """
    alias.configure_async_invoke(
        retry_attempts=PAYMENT_SWEEP_RUN_RETRIES, max_event_age=Duration.seconds(PAYMENT_SWEEP_MAX_AGE_S)
    )
    return events.Rule(
        scope,
        "SweepSchedule",
        rule_name=config.name("payment-window-sweep"),
        description="payment_steps' sweep of the payment windows whose TTL removal has not come (docs/payments.md)",
        schedule=events.Schedule.rate(Duration.minutes(PAYMENT_SWEEP_MINUTES)),
        targets=[
            targets.LambdaFunction(
                alias,
                retry_attempts=PAYMENT_SWEEP_DELIVERY_RETRIES,
                max_event_age=Duration.seconds(PAYMENT_SWEEP_MAX_AGE_S),
            )
        ],
    )


@jsii.implements(lambda_.IEventSourceDlq)
class FailureArchive:
    """The S3 on-failure destination with only what Lambda needs: s3:PutObject under aws/lambda/, s3:ListBucket.

    CDK's S3OnFailureDestination grants read and write on the whole bucket (get, delete, abort as well).
    """

    def __init__(self, bucket: s3.IBucket) -> None:
        self.bucket = bucket

    def bind(
        self, _target: lambda_.IEventSourceMapping, target_handler: lambda_.IFunction
    ) -> lambda_.DlqDestinationConfig:
        target_handler.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[self.bucket.arn_for_objects(f"{STREAM_FAILURE_PREFIX}*")]
            )
        )
        target_handler.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn])
        )
        return lambda_.DlqDestinationConfig(destination=self.bucket.bucket_arn)


def _pattern(pattern: Mapping[str, Any]) -> Mapping[str, Any]:
    """A filter as CDK wants it: {"pattern": "<json>"} (the template carries the JSON text)."""
    return lambda_.FilterCriteria.filter(pattern)


def _failure_bucket(scope: Construct, construct_id: str, removal: RemovalPolicy) -> s3.Bucket:
    """Where Lambda writes a stream consumer's given-up batches (whole invocation records, for `make replay`)."""
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(STREAM_FAILURE_RETENTION_DAYS))],
        removal_policy=removal,
    )


def _consume_stream(
    alias: lambda_.Alias, table: dynamodb.ITable, failures: s3.IBucket, filters: Sequence[Mapping[str, Any]]
) -> str:
    """The alias on the table stream with the shared STREAM settings, only the records `filters` match, its
    given-up batches to `failures`; the mapping's id (what `make replay` and the alarms name)."""
    alias.add_event_source(
        sources.DynamoEventSource(
            table,
            starting_position=lambda_.StartingPosition[STREAM.starting_position],
            batch_size=STREAM.batch_size,
            max_batching_window=Duration.seconds(STREAM.max_batching_window_s),
            report_batch_item_failures=STREAM.report_batch_item_failures,
            bisect_batch_on_error=STREAM.bisect_batch_on_error,
            retry_attempts=STREAM.retry_attempts,
            max_record_age=Duration.seconds(STREAM.max_record_age_s),
            on_failure=FailureArchive(failures),
            filters=[_pattern(f) for f in filters],
            metrics_config=lambda_.MetricsConfig(metrics=[lambda_.MetricType.EVENT_COUNT]),
        )
    )
    mappings = [c for c in alias.node.children if isinstance(c, lambda_.EventSourceMapping)]
    return mappings[0].event_source_mapping_id
