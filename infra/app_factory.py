"""Build the CDK app: used by app.py (the CLI) and by the infrastructure tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Environment, Validations
from cdk_nag import AwsSolutionsChecks

from infra.nag import suppress_findings
from infra.settings import ROOT, DeployConfig
from infra.stacks.operations import ArchiveQueriesStack, MigrationsStack
from infra.stacks.shop import ApiStack, DataStack, EdgeStack, EventsStack, MonitoringStack, tag_all

# Construct ids: stable, they name the templates (cdk.out/<id>.template.json).
STACK_IDS = {"data": "ShopData", "api": "ShopApi", "events": "ShopEvents", "monitoring": "ShopMonitoring"}
OPERATIONS_STACK_IDS = {"migrations": "ShopMigrations", "archive_queries": "ShopArchiveQueries"}
EDGE_STACK_ID = "ShopEdge"  # only with -c edge=true
# CloudFront reads web ACLs (scope CLOUDFRONT) and certificates from this region only.
CLOUDFRONT_REGION = "us-east-1"


@dataclass
class ShopApp:
    app: App
    config: DeployConfig
    data: DataStack
    api: ApiStack
    events: EventsStack
    monitoring: MonitoringStack
    edge: EdgeStack | None = None
    migrations: MigrationsStack | None = None
    archive_queries: ArchiveQueriesStack | None = None

    @property
    def stacks(self) -> list[Any]:
        operations = [stack for stack in (self.migrations, self.archive_queries) if stack is not None]
        return [self.data, self.api, self.events, self.monitoring, *([self.edge] if self.edge else []), *operations]


def build_app(app: App | None = None, *, context: dict[str, Any] | None = None, outdir: str | None = None) -> ShopApp:
    """Create every stack, apply cdk-nag AwsSolutions and the acknowledged findings."""
    if app is None:
        # outside the CLI, cdk.json's context (feature flags, defaults) is not injected: read it
        defaults = json.loads((ROOT / "cdk.json").read_text()).get("context", {})
        # what the CLI turns on: aws:asset:path metadata (the local runtime and the tests read it)
        cli_like = {"aws:cdk:enable-asset-metadata": True, "aws:cdk:enable-path-metadata": True}
        app = App(context={**defaults, **cli_like, **(context or {})}, outdir=outdir)
    config = DeployConfig.from_context(app.node.try_get_context)
    name = config.name
    # protected stages are pinned (DeployConfig.require_protected_settings); the CLI then refuses
    # credentials of another account. Ephemeral stages stay environment-agnostic.
    env = Environment(account=config.account, region=config.region) if config.account else None

    data = DataStack(
        app,
        STACK_IDS["data"],
        config=config,
        env=env,
        stack_name=name("data"),
        description="Serverless shop: table and pagination secret",
    )
    api = ApiStack(
        app,
        STACK_IDS["api"],
        config=config,
        data=data,
        env=env,
        stack_name=name("api"),
        description="Serverless shop: HTTP API, authorizer, API functions",
    )
    events = EventsStack(
        app,
        STACK_IDS["events"],
        config=config,
        data=data,
        env=env,
        stack_name=name("events"),
        description="Serverless shop: stream processing and event bus",
    )
    monitoring = MonitoringStack(
        app,
        STACK_IDS["monitoring"],
        config=config,
        data=data,
        api=api,
        events=events,
        env=env,
        stack_name=name("monitoring"),
        description="Serverless shop: alarms and dashboard",
    )
    edge = None
    if config.edge is not None:
        edge = EdgeStack(
            app,
            EDGE_STACK_ID,
            config=config,
            edge=config.edge,
            env=Environment(account=config.account, region=CLOUDFRONT_REGION),
            stack_name=name("edge"),
            description="Serverless shop: CloudFront and AWS WAF in front of the HTTP API",
        )
    migrations = MigrationsStack(
        app,
        OPERATIONS_STACK_IDS["migrations"],
        config=config,
        table_arn=data.table.table.table_arn,
        table_name=data.table.table.table_name,
        env=env,
        stack_name=name("migrations"),
        description="Serverless shop: online table migrations (Step Functions)",
    )
    archive_queries = ArchiveQueriesStack(
        app,
        OPERATIONS_STACK_IDS["archive_queries"],
        config=config,
        env=env,
        stack_name=name("archive-queries"),
        description="Serverless shop: the order archive as a Glue table, Athena workgroup and named queries",
    )
    tag_all(app, config)
    shop = ShopApp(app, config, data, api, events, monitoring, edge, migrations, archive_queries)
    suppress_findings(shop)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True, write_suppressions_to_cloud_formation=True))
    return shop
