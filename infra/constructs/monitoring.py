"""Alarms and one dashboard for the whole service."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.settings import DeployConfig

FIVE_MINUTES = Duration.minutes(5)
TABLE_OPERATIONS = [
    dynamodb.Operation.GET_ITEM,
    dynamodb.Operation.QUERY,
    dynamodb.Operation.PUT_ITEM,
    dynamodb.Operation.UPDATE_ITEM,
    dynamodb.Operation.DELETE_ITEM,
    dynamodb.Operation.TRANSACT_WRITE_ITEMS,
    dynamodb.Operation.BATCH_GET_ITEM,
]


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
        failure_queue: sqs.IQueue,
        api: apigw.IHttpApi,
        table: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "AlarmTopic", display_name=f"shop-{config.stage} alarms", enforce_ssl=True)
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cw.Alarm] = []

        def alarm(name: str, metric: cw.IMetric, threshold: float, description: str) -> cw.Alarm:
            created = cw.Alarm(
                self,
                name,
                metric=metric,
                threshold=threshold,
                evaluation_periods=1,
                comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
            created.add_alarm_action(action)
            created.add_ok_action(action)
            self.alarms.append(created)
            return created

        every = {**functions, "order_events": stream_function}
        for name, function in sorted(every.items()):
            label = "".join(part.title() for part in name.split("_"))
            alarm(
                f"{label}Errors",
                function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                1,
                f"{name}: invocations failed (unhandled errors, timeouts)",
            )
            alarm(
                f"{label}Throttles",
                function.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
                1,
                f"{name}: invocations throttled",
            )
        iterator_age = stream_function.metric("IteratorAge", period=Duration.minutes(1), statistic="Maximum")
        alarm(
            "StreamIteratorAge",
            iterator_age,
            Duration.minutes(5).to_milliseconds(),
            "order_events is more than 5 minutes behind the table stream",
        )
        dlq_depth = failure_queue.metric_approximate_number_of_messages_visible(
            period=FIVE_MINUTES, statistic="Maximum"
        )
        alarm("StreamFailuresQueued", dlq_depth, 1, "stream records gave up after retries: see the queue")
        api_5xx = api.metric_server_error(period=FIVE_MINUTES, statistic="Sum")
        alarm("Api5xx", api_5xx, 1, "the API answered 5xx (always a bug or an outage)")
        throttled = table.metric_throttled_requests_for_operations(operations=TABLE_OPERATIONS, period=FIVE_MINUTES)
        alarm("TableThrottles", throttled, 1, "DynamoDB throttled requests")
        system_errors = table.metric_system_errors_for_operations(operations=TABLE_OPERATIONS, period=FIVE_MINUTES)
        alarm("TableSystemErrors", system_errors, 1, "DynamoDB returned system (5xx) errors")

        dashboard = cw.Dashboard(
            self, "Dashboard", dashboard_name=f"shop-{config.stage}", default_interval=Duration.hours(3)
        )
        names = sorted(every)
        dashboard.add_widgets(
            cw.GraphWidget(
                title="API requests and errors",
                left=[api.metric_count(period=FIVE_MINUTES)],
                right=[api.metric_client_error(period=FIVE_MINUTES), api_5xx],
                width=12,
            ),
            cw.GraphWidget(
                title="API latency p99 (ms)",
                left=[api.metric_latency(period=FIVE_MINUTES, statistic="p99")],
                width=12,
            ),
        )
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
        dashboard.add_widgets(
            cw.GraphWidget(title="Stream iterator age (ms)", left=[iterator_age], width=8),
            cw.GraphWidget(title="Failed stream records queued", left=[dlq_depth], width=8),
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
            cw.GraphWidget(title="DynamoDB throttled requests", left=[throttled], width=12),
            cw.GraphWidget(title="DynamoDB system errors", left=[system_errors], width=12),
        )
        self.dashboard = dashboard
