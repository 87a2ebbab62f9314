"""Alarms and one dashboard for the whole service.

Every alarm fires on a sustained breach (DATAPOINTS of EVALUATION_PERIODS one-minute periods), not on
one datapoint, and its description links its runbook section in docs/operations.md.
"""

from __future__ import annotations

from typing import Protocol

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.constructs.functions import metrics_namespace
from infra.settings import ALL_FUNCTIONS, PAYMENT_STEPS_FUNCTION, STREAM_FUNCTION, DeployConfig, runbook_anchor
from shop.payment_secrets import CREDENTIALS_UNUSABLE_METRIC

PERIOD = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)
EVALUATION_PERIODS = 5
DATAPOINTS = 3
TABLE_OPERATIONS = [
    dynamodb.Operation.GET_ITEM,
    dynamodb.Operation.QUERY,
    dynamodb.Operation.PUT_ITEM,
    dynamodb.Operation.UPDATE_ITEM,
    dynamodb.Operation.DELETE_ITEM,
    dynamodb.Operation.TRANSACT_WRITE_ITEMS,
    dynamodb.Operation.BATCH_GET_ITEM,
]
# Thresholds (docs/decisions.md, "Production infrastructure: alarms").
API_5XX_PERCENT = 1
API_5XX_PER_MINUTE = 1  # whatever the traffic (the rate ignores minutes under API_RATE_MIN_REQUESTS)
SERVER_ERRORS_PER_MINUTE = 1
API_429_PERCENT = 5
API_4XX_PERCENT = 25
API_RATE_MIN_REQUESTS = 20  # per minute: below it, one bad request is not a rate
API_LATENCY_P99_MS = 1000
NEAR_TIMEOUT = 0.8
STREAM_BEHIND = Duration.minutes(5)
TRANSACTION_CONFLICTS_PER_MINUTE = 10
STORE_UNAVAILABLE_PER_MINUTE = 5
# order_events' EMF count of the lapsed authorisations it records (functions/order_events/handler.py)
AUTHORISATIONS_LAPSED_METRIC = "AuthorisationsLapsed"
API_STATUS_FIELD = "$.status"


class PaymentStepsTarget(Protocol):
    """What Monitoring watches of payment_steps (infra.constructs.events.PaymentSteps)."""

    @property
    def function(self) -> lambda_.IFunction: ...

    @property
    def mapping_id(self) -> str: ...

    @property
    def sweep_rule(self) -> events.IRule: ...


class Monitoring(Construct):
    """Alarms on what pages someone, a dashboard for what explains it."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        functions: dict[str, lambda_.IFunction],
        stream_function: lambda_.IFunction,
        stream_mapping_id: str,
        api: apigw.IHttpApi,
        access_logs: logs.ILogGroup,
        table: dynamodb.ITable,
        payment_steps: PaymentStepsTarget | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        namespace = metrics_namespace(config)
        self.topic: sns.ITopic
        if config.alarm_topic_arn:
            self.topic = sns.Topic.from_topic_arn(self, "AlarmTopic", config.alarm_topic_arn)
        else:
            topic = sns.Topic(self, "AlarmTopic", display_name=f"shop-{config.stage} alarms", enforce_ssl=True)
            if config.alarm_email:
                topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
            self.topic = topic
        action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cw.Alarm] = []

        def alarm(
            alarm_id: str,
            metric: cw.IMetric,
            threshold: float,
            runbook: str,
            description: str,
            *,
            once: bool = False,  # one datapoint: for events that are never noise (a record given up)
        ) -> cw.Alarm:
            created = cw.Alarm(
                self,
                alarm_id,
                metric=metric,
                threshold=threshold,
                evaluation_periods=1 if once else EVALUATION_PERIODS,
                datapoints_to_alarm=1 if once else DATAPOINTS,
                comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
                alarm_description=f"{description}. Runbook: {config.runbook_url}#{runbook_anchor(runbook)}",
            )
            created.add_alarm_action(action)
            created.add_ok_action(action)
            self.alarms.append(created)
            return created

        # Functions: errors, duration near the timeout; throttles only where no reserved
        # concurrency caps the function on purpose (-c order_events_concurrency=N protects the table).
        every = {**functions, STREAM_FUNCTION.name: stream_function}
        if payment_steps is not None:
            every[PAYMENT_STEPS_FUNCTION.name] = payment_steps.function
        consumers = {STREAM_FUNCTION.name, PAYMENT_STEPS_FUNCTION.name}  # stream consumers answer no request
        timeouts = {spec.name: spec.timeout_s for spec in ALL_FUNCTIONS}
        for name, function in sorted(every.items()):
            label = "".join(part.title() for part in name.split("_"))
            alarm(
                f"{label}Errors",
                function.metric_errors(period=PERIOD, statistic="Sum"),
                1,
                "Function errors",
                f"{name}: invocations failed (unhandled errors, timeouts)",
            )
            near_timeout_ms = Duration.seconds(timeouts[name]).to_milliseconds() * NEAR_TIMEOUT
            alarm(
                f"{label}NearTimeout",
                function.metric_duration(period=PERIOD, statistic="p99"),
                near_timeout_ms,
                "Duration near timeout",
                f"{name}: p99 duration above {int(NEAR_TIMEOUT * 100)}% of its {timeouts[name]} s timeout",
            )
            if name not in consumers:
                # answered 500 (handled: Lambda's Errors misses it), every version (shop.version_metrics)
                alarm(
                    f"{label}ServerErrors",
                    shop_metric(namespace, "ServerErrors", name, PERIOD),
                    SERVER_ERRORS_PER_MINUTE,
                    "Function server errors",
                    f"{name}: requests answered 5xx other than the store's 503 (unexpected exceptions)",
                )
            if name != STREAM_FUNCTION.name or not config.order_events_concurrency:
                alarm(
                    f"{label}Throttles",
                    function.metric_throttles(period=PERIOD, statistic="Sum"),
                    1,
                    "Function throttles",
                    f"{name}: invocations throttled (account or regional concurrency exhausted)",
                )

        # The stream: behind, records failing, records given up.
        iterator_age = stream_function.metric("IteratorAge", period=PERIOD, statistic="Maximum")
        alarm(
            "StreamIteratorAge",
            iterator_age,
            STREAM_BEHIND.to_milliseconds(),
            "Stream iterator age",
            "order_events is more than 5 minutes behind the table stream",
        )
        records_failed = shop_metric(namespace, "RecordsFailed", STREAM_FUNCTION.name, PERIOD)
        alarm(
            "StreamRecordsFailed",
            records_failed,
            1,
            "Stream records failed",
            "order_events keeps reporting failed stream records (they are retried, then given up)",
        )
        # The mapping's own metrics (MetricsConfig EventCount): batches given up, archived or not.
        dropped = _mapping_metric("DroppedEventCount", stream_mapping_id)
        alarm(
            "StreamRecordsDropped",
            dropped,
            1,
            "Stream records dropped",
            "stream records were given up after retries or age: replay them from the failure bucket",
            once=True,
        )
        alarm(
            "StreamFailuresNotArchived",
            stream_function.metric("DestinationDeliveryFailures", period=PERIOD, statistic="Sum"),
            1,
            "Stream failures not archived",
            "given-up stream records could not be written to the failure bucket",
            once=True,
        )

        if payment_steps is not None:
            # payment_steps' own mapping (-c payments=stripe): its records behind, failing (Stripe down, a cancel
            # Stripe refuses on a captured intent), given up into its failure bucket (make replay).
            steps = PAYMENT_STEPS_FUNCTION.name
            alarm(
                "PaymentStepsIteratorAge",
                payment_steps.function.metric("IteratorAge", period=PERIOD, statistic="Maximum"),
                STREAM_BEHIND.to_milliseconds(),
                "Stream iterator age",
                "payment_steps is more than 5 minutes behind the table stream (captures, cancels, refunds, expiries)",
            )
            alarm(
                "PaymentStepsRecordsFailed",
                shop_metric(namespace, "RecordsFailed", steps, PERIOD),
                1,
                "Stream records failed",
                "payment_steps keeps reporting failed records (the payment provider down, or a step it refuses)",
            )
            alarm(
                "PaymentStepsStreamRecordsDropped",
                _mapping_metric("DroppedEventCount", payment_steps.mapping_id),
                1,
                "Stream records dropped",
                "payment step records were given up after retries or age: replay them from payment_steps' "
                "failure bucket",
                once=True,
            )
            alarm(
                "PaymentStepsStreamFailuresNotArchived",
                payment_steps.function.metric("DestinationDeliveryFailures", period=PERIOD, statistic="Sum"),
                1,
                "Stream failures not archived",
                "given-up payment step records could not be written to payment_steps' failure bucket",
                once=True,
            )
            # The windows' sweep: a run that fails is payment_steps' Errors above (some order's provider call
            # failed; the next run retries). A run that never started is EventBridge's: deliveries it gave up.
            alarm(
                "PaymentSweepNotDelivered",
                cw.Metric(
                    namespace="AWS/Events",
                    metric_name="FailedInvocations",
                    dimensions_map={"RuleName": payment_steps.sweep_rule.rule_name},
                    statistic="Sum",
                    period=PERIOD,
                ),
                1,
                "Payment sweep not delivered",
                "EventBridge could not invoke payment_steps for the payment windows' sweep: unpaid orders whose "
                "window's TTL removal is late keep their stock",
            )
        if config.payments == "stripe":
            # The shop's own Stripe credentials cannot be used (the secret still holds its placeholder, cannot be
            # read, or holds a key Stripe refuses): checkouts answer 503 and webhook deliveries 503 until someone
            # fixes the secret, so one datapoint pages (shop.payment_secrets counts it where it is found).
            callers = sorted(spec.name for spec in ALL_FUNCTIONS if spec.calls_stripe)
            alarm(
                "PaymentCredentialsUnusable",
                cw.MathExpression(
                    expression=" + ".join(f"FILL(c{i}, 0)" for i in range(len(callers))),
                    using_metrics={
                        f"c{i}": shop_metric(namespace, CREDENTIALS_UNUSABLE_METRIC, name, PERIOD)
                        for i, name in enumerate(callers)
                    },
                    period=PERIOD,
                    label=f"{CREDENTIALS_UNUSABLE_METRIC} ({', '.join(callers)})",
                ),
                1,
                "Payment credentials unusable",
                "the Stripe secret holds its placeholder, cannot be read, or holds a key Stripe refuses: "
                "checkouts and webhook deliveries answer 503 PAYMENT_PROVIDER_UNAVAILABLE",
                once=True,
            )
            # Stripe cancelled a confirmed order's uncaptured card authorisation (about 7 days after it was made):
            # the order's payment is LAPSED, no money is held. order_events counts it from the order's record.
            alarm(
                "PaymentAuthorisationLapsed",
                shop_metric(namespace, AUTHORISATIONS_LAPSED_METRIC, STREAM_FUNCTION.name, PERIOD),
                1,
                "Payment authorisation lapsed",
                "a confirmed order's card authorisation lapsed before its capture: its payment is LAPSED and no "
                "money is held for it",
                once=True,
            )

        # The API: rates over the requests of the minute (ignored below API_RATE_MIN_REQUESTS), latency.
        requests = api.metric_count(period=PERIOD, statistic="Sum")
        throttled_filter = logs.MetricFilter(
            self,
            "Api429Filter",
            log_group=access_logs,
            filter_pattern=logs.FilterPattern.string_value(API_STATUS_FIELD, "=", "429"),
            metric_namespace=namespace,
            metric_name="Api429",
            metric_value="1",
        )
        api_429 = throttled_filter.metric(period=PERIOD, statistic="Sum", label="429")

        def rate(name: str, errors: cw.IMetric) -> cw.MathExpression:
            return cw.MathExpression(
                expression=f"IF(requests >= {API_RATE_MIN_REQUESTS}, 100 * FILL(errors, 0) / requests, 0)",
                using_metrics={"requests": requests, "errors": errors},
                period=PERIOD,
                label=f"{name} (% of requests)",
            )

        api_5xx = api.metric_server_error(period=PERIOD, statistic="Sum")
        api_4xx = api.metric_client_error(period=PERIOD, statistic="Sum")
        alarm("Api5xxRate", rate("5xx", api_5xx), API_5XX_PERCENT, "API 5xx rate", "the API answers 5xx")
        # The gateway's 5xx metric cannot leave out the store's transient 503 (StoreUnavailableAnswers has
        # those); the access log can, and still sees what the functions cannot count (a timeout, a crash).
        lasting_5xx_filter = logs.MetricFilter(
            self,
            "Api5xxNot503Filter",
            log_group=access_logs,
            filter_pattern=logs.FilterPattern.all(
                logs.FilterPattern.string_value(API_STATUS_FIELD, "=", "5*"),
                logs.FilterPattern.string_value(API_STATUS_FIELD, "!=", "503"),
            ),
            metric_namespace=namespace,
            metric_name="Api5xxNot503",
            metric_value="1",
        )
        alarm(
            "Api5xxCount",
            lasting_5xx_filter.metric(period=PERIOD, statistic="Sum"),
            API_5XX_PER_MINUTE,
            "API 5xx rate",
            f"the API answered {API_5XX_PER_MINUTE}+ requests a minute with a 5xx other than 503, at any traffic",
        )
        alarm(
            "Api429Rate",
            rate("429", api_429),
            API_429_PERCENT,
            "API 429 rate",
            "the API stage or a route throttles clients (429)",
        )
        alarm(
            "Api4xxRate",
            rate("4xx", api_4xx),
            API_4XX_PERCENT,
            "API 4xx rate",
            "an unusual share of requests is refused (4xx): a broken client, probing or abuse",
        )
        latency = api.metric_latency(period=PERIOD, statistic="p99")
        alarm("ApiLatencyP99", latency, API_LATENCY_P99_MS, "API latency", "API p99 latency above 1 s")

        # The table.
        throttled = table.metric_throttled_requests_for_operations(operations=TABLE_OPERATIONS, period=PERIOD)
        alarm("TableThrottles", throttled, 1, "DynamoDB throttles", "DynamoDB throttled requests")
        # What clients saw of it: answers 503 because the store throttled, stalled or failed (the
        # functions' StoreUnavailable EMF metric; it also counts what DynamoDB's metrics do not: timeouts).
        unavailable = cw.MathExpression(
            expression=" + ".join(f"FILL(u{i}, 0)" for i in range(len(functions))),
            using_metrics={
                f"u{i}": shop_metric(namespace, "StoreUnavailable", name, PERIOD)
                for i, name in enumerate(sorted(functions))
            },
            period=PERIOD,
            label="StoreUnavailable (503s)",
        )
        alarm(
            "StoreUnavailableAnswers",
            unavailable,
            STORE_UNAVAILABLE_PER_MINUTE,
            "Store unavailable",
            f"the API answered {STORE_UNAVAILABLE_PER_MINUTE}+ requests a minute with 503: the store throttled, "
            "stalled or failed",
        )
        system_errors = table.metric_system_errors_for_operations(operations=TABLE_OPERATIONS, period=PERIOD)
        alarm("TableSystemErrors", system_errors, 1, "DynamoDB system errors", "DynamoDB returned system (5xx) errors")
        conflicts = table.metric("TransactionConflict", period=PERIOD, statistic="Sum")
        alarm(
            "TableTransactionConflicts",
            conflicts,
            TRANSACTION_CONFLICTS_PER_MINUTE,
            "DynamoDB transaction conflicts",
            f"DynamoDB rejected {TRANSACTION_CONFLICTS_PER_MINUTE}+ transactions a minute on contended items",
        )

        self.dashboard = _dashboard(
            self,
            config=config,
            namespace=namespace,
            every=every,
            api=api,
            api_429=api_429,
            table=table,
            stream=(iterator_age, dropped),
            throttled=throttled,
            system_errors=system_errors,
            conflicts=conflicts,
        )


def _mapping_metric(name: str, mapping_id: str) -> cw.Metric:
    return cw.Metric(
        namespace="AWS/Lambda",
        metric_name=name,
        dimensions_map={"EventSourceMappingUUID": mapping_id},
        statistic="Sum",
        period=PERIOD,
    )


def shop_metric(namespace: str, name: str, service: str, period: Duration = FIVE_MINUTES) -> cw.Metric:
    """One of the shop's EMF metrics: Powertools puts the service name in the `service` dimension."""
    return cw.Metric(
        namespace=namespace,
        metric_name=name,
        dimensions_map={"service": service},
        statistic="Sum",
        period=period,
        label=f"{name} ({service})",
    )


def _dashboard(
    scope: Construct,
    *,
    config: DeployConfig,
    namespace: str,
    every: dict[str, lambda_.IFunction],
    api: apigw.IHttpApi,
    api_429: cw.IMetric,
    table: dynamodb.ITable,
    stream: tuple[cw.IMetric, cw.IMetric],
    throttled: cw.IMetric,
    system_errors: cw.IMetric,
    conflicts: cw.IMetric,
) -> cw.Dashboard:
    def business(service: str, *names: str) -> list[cw.IMetric]:
        return [shop_metric(namespace, name, service) for name in names]

    dashboard = cw.Dashboard(
        scope, "Dashboard", dashboard_name=f"shop-{config.stage}", default_interval=Duration.hours(3)
    )
    dashboard.add_widgets(
        cw.GraphWidget(
            title="Orders",
            left=[*business("orders", "OrdersPlaced"), *business(STREAM_FUNCTION.name, "OrdersConfirmed")],
            right=business("orders", "OrderValueCents"),
            width=8,
        ),
        cw.GraphWidget(
            title="Rejected requests",
            left=[
                *business("orders", "OutOfStockRejections"),
                *(
                    m
                    for name in sorted(every)
                    if name != STREAM_FUNCTION.name
                    for m in business(name, "ValidationFailures")
                ),
            ],
            width=8,
        ),
        cw.GraphWidget(
            title="Stream outcomes",
            left=business(STREAM_FUNCTION.name, "StatusChanges", "CartsAbandoned", "RecordsFailed"),
            width=8,
        ),
    )
    dashboard.add_widgets(
        cw.GraphWidget(
            title="API requests and errors",
            left=[api.metric_count(period=FIVE_MINUTES)],
            right=[api.metric_client_error(period=FIVE_MINUTES), api.metric_server_error(period=FIVE_MINUTES), api_429],
            width=12,
        ),
        cw.GraphWidget(
            title="API latency p99 (ms)",
            left=[api.metric_latency(period=FIVE_MINUTES, statistic="p99")],
            width=12,
        ),
    )
    names = sorted(every)
    dashboard.add_widgets(
        cw.GraphWidget(
            title="Function errors",
            left=[every[n].metric_errors(period=FIVE_MINUTES, label=n) for n in names],
            width=8,
        ),
        cw.GraphWidget(
            title="Function duration p99 (ms)",
            left=[every[n].metric_duration(period=FIVE_MINUTES, statistic="p99", label=n) for n in names],
            width=8,
        ),
        cw.GraphWidget(
            title="Function throttles",
            left=[every[n].metric_throttles(period=FIVE_MINUTES, label=n) for n in names],
            width=8,
        ),
    )
    iterator_age, dropped = stream
    dashboard.add_widgets(
        cw.GraphWidget(title="Stream iterator age (ms)", left=[iterator_age], width=8),
        cw.GraphWidget(title="Stream records dropped (to the failure bucket)", left=[dropped], width=8),
        cw.GraphWidget(
            title="DynamoDB consumed capacity",
            left=[
                table.metric_consumed_read_capacity_units(period=FIVE_MINUTES),
                table.metric_consumed_write_capacity_units(period=FIVE_MINUTES),
            ],
            width=8,
        ),
    )
    # separate widgets: both math expressions name their per-operation metrics alike
    dashboard.add_widgets(
        cw.GraphWidget(title="DynamoDB throttled requests", left=[throttled], width=8),
        cw.GraphWidget(title="DynamoDB system errors", left=[system_errors], width=8),
        cw.GraphWidget(title="DynamoDB transaction conflicts", left=[conflicts], width=8),
    )
    return dashboard
