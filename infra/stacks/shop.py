"""The four stacks: data, API, event processing, monitoring."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack, Tags
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.constructs.api import Auth, HttpApi
from infra.constructs.data import OrderArchive, PaginationSecret, ShopTable, StripeSecret
from infra.constructs.edge import Edge
from infra.constructs.events import OrderEventsProcessing, PaymentSteps
from infra.constructs.functions import Layers, build_function, live_alias
from infra.constructs.monitoring import Monitoring
from infra.settings import API_FUNCTIONS, DeployConfig, EdgeSettings


class DataStack(Stack):
    """Stateful resources: the table and the pagination secret."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.table = ShopTable(self, "Table", config=config)
        self.secret = PaginationSecret(self, "PaginationSecret", config=config)
        self.archive = OrderArchive(self, "OrderArchive", config=config)
        self.stripe = StripeSecret(self, "StripeSecret", config=config) if config.payments == "stripe" else None
        CfnOutput(self, "TableName", value=self.table.table.table_name, description="the single table")
        CfnOutput(
            self,
            "OrderArchiveBucket",
            value=self.archive.bucket.bucket_name,
            description="archived orders, one JSON line each under orders/year=/month=/day= (Athena)",
        )
        if self.stripe is not None:
            # Named (the cross-stack export's name is CDK's): the secret the operator fills after the first deploy
            CfnOutput(
                self,
                "StripeSecretArn",
                value=self.stripe.secret.secret_arn,
                description='the Stripe keys\' secret, created with placeholders: put {"secret_key": "sk_...", '
                '"webhook_secret": "whsec_..."} in it (docs/deploy.md, "Taking payments with Stripe")',
            )


class ApiStack(Stack):
    """The HTTP API, its authorizer and the four API functions."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, data: DataStack, **kwargs: object
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        layers = Layers(self, "Layers", config=config, payments=True)
        secret = data.secret.secret
        self.functions: dict[str, lambda_.IFunction] = {}
        self.aliases: dict[str, lambda_.IFunction] = {}  # what the routes invoke
        for spec in API_FUNCTIONS:
            function = build_function(
                self,
                spec,
                config=config,
                table=data.table.table,
                layers=layers,
                pagination_secret=secret,
                stripe_secret=data.stripe.secret if data.stripe is not None else None,
                archive=True,
            )
            self.functions[spec.name] = function
            self.aliases[spec.name] = live_alias(self, function, config=config)
        self.auth = Auth(self, "Auth", config=config)
        self.http = HttpApi(self, "Http", config=config, functions=self.aliases, auth=self.auth)
        if self.http.origin_domain is None:
            CfnOutput(self, "ApiUrl", value=self.http.url, description="base URL of the HTTP API")
        else:
            CfnOutput(
                self,
                "OriginDnsTarget",
                value=self.http.origin_domain.regional_domain_name,
                description="CNAME target of the API's custom domain (CloudFront's origin)",
            )
        if self.auth.user_pool is not None and self.auth.client is not None:
            CfnOutput(self, "UserPoolId", value=self.auth.user_pool.user_pool_id)
            CfnOutput(self, "UserPoolClientId", value=self.auth.client.user_pool_client_id)


class EventsStack(Stack):
    """The stream processor, its failure queue and the event bus."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, data: DataStack, **kwargs: object
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.processing = OrderEventsProcessing(
            self,
            "OrderEvents",
            config=config,
            table=data.table.table,
        )
        self.payment_steps: PaymentSteps | None = None
        if data.stripe is not None:  # -c payments=stripe: the stream's second consumer
            self.payment_steps = PaymentSteps(
                self,
                "PaymentSteps",
                config=config,
                table=data.table.table,
                stripe_secret=data.stripe.secret,
                bus=self.processing.bus,
            )
        CfnOutput(self, "EventBusName", value=self.processing.bus.event_bus_name)
        CfnOutput(
            self,
            "StreamFailureBucket",
            value=self.processing.failures.bucket_name,
            description="given-up stream batches, whole (make replay)",
        )
        CfnOutput(self, "OrderEventsFunction", value=self.processing.function.function_name)


class MonitoringStack(Stack):
    """Alarms and the dashboard over the other three stacks."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        data: DataStack,
        api: ApiStack,
        events: EventsStack,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            functions=api.functions,
            stream_function=events.processing.function,
            stream_mapping_id=events.processing.mapping_id,
            payment_steps=events.payment_steps,
            api=api.http.api,
            access_logs=api.http.access_logs,
            table=data.table.table,
        )


class EdgeStack(Stack):
    """`-c edge=true`: CloudFront and its WAF web ACL, in us-east-1 where CloudFront's ACLs live."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, edge: EdgeSettings, **kwargs: object
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        self.edge = Edge(self, "Edge", config=config, edge=edge)
        domain = edge.domain if self.edge.custom_domain else self.edge.distribution.distribution_domain_name
        CfnOutput(self, "ApiUrl", value=f"https://{domain}/", description="base URL of the API (through WAF)")
        CfnOutput(self, "DistributionDomainName", value=self.edge.distribution.distribution_domain_name)


def tag_all(scope: Construct, config: DeployConfig) -> None:
    Tags.of(scope).add("project", "serverless-shop")
    Tags.of(scope).add("stage", config.stage)
