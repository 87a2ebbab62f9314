"""Layers and the one builder every Lambda function goes through."""

from __future__ import annotations

from aws_cdk import Annotations, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra import build_layers
from infra.constructs.archive_names import archive_bucket_name, archive_objects_arn
from infra.constructs.protection import removal_policy
from infra.settings import (
    ALL_FUNCTIONS,
    ARCHIVE_PREFIX,
    HOT_PRODUCT_CACHE_SECONDS,
    IDEMPOTENCY_TTL_SECONDS,
    LIVE_ALIAS,
    LOCAL_PAGINATION_KEY,
    LOCAL_TABLE_NAME,
    LOG_LEVEL,
    POWERTOOLS_NAMESPACE,
    ROOT,
    RUNTIME_NAME,
    SESSION_TTL_SECONDS,
    SYSTEM_LOG_LEVEL,
    TABLE_INDEX,
    WRITE_IAM_ACTIONS,
    DeployConfig,
    FunctionSpec,
    iam_actions,
    runbook_anchor,
)

RUNTIME = lambda_.Runtime.PYTHON_3_13
assert RUNTIME.name == RUNTIME_NAME, "settings.RUNTIME_NAME and the CDK runtime disagree"
ASSET_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/.pytest_cache", "**/.mypy_cache"]


def architecture(config: DeployConfig) -> lambda_.Architecture:
    return lambda_.Architecture.ARM_64 if config.arch == "arm64" else lambda_.Architecture.X86_64


class Layers(Construct):
    """The shared domain package and the third-party dependencies for one architecture.

    Each consuming stack builds its own LayerVersions from the same assets: a
    layer exported across stacks would block every layer update ("export in use").
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig, payments: bool = False) -> None:
        """`payments`: this stack holds functions that call Stripe (built only with -c payments=stripe)."""
        super().__init__(scope, construct_id)
        arch = architecture(config)
        deps_dir = build_layers.layer_dir(config.arch)
        if not (deps_dir / "python").is_dir():
            raise RuntimeError(
                f"{deps_dir} is missing: run `python -m infra.build_layers --arch {config.arch}` "
                f"(or `make layers ARCH={config.arch}`) before synthesizing"
            )

        def layer(layer_id: str, path: str, description: str) -> lambda_.LayerVersion:
            return lambda_.LayerVersion(
                self,
                layer_id,
                code=lambda_.Code.from_asset(path, exclude=ASSET_EXCLUDES),
                description=description,
                compatible_runtimes=[RUNTIME],
                compatible_architectures=[arch],
                # every code change publishes a new version; the old one is deleted, also in protected
                # stages: a function version that uses it keeps its copy (Lambda DeleteLayerVersion)
                removal_policy=RemovalPolicy.DESTROY,
            )

        self.shared = layer("Shared", str(ROOT / "layers" / "shared"), "shop: models, keys, repository, errors")
        self.deps = layer("Deps", str(deps_dir), f"third-party packages from requirements/runtime.txt ({config.arch})")
        # Stripe's library (19 MB unpacked), only with `-c payments=stripe` and only on the functions that call
        # Stripe (FunctionSpec.calls_stripe): every other function's layers and cold start stay as they were.
        self.payments: lambda_.LayerVersion | None = None
        if payments and config.payments == "stripe":
            payments_dir = build_layers.layer_dir(config.arch, "payments")
            if not (payments_dir / "python").is_dir():
                raise RuntimeError(
                    f"{payments_dir} is missing: run `python -m infra.build_layers --arch {config.arch} --layer "
                    f"payments` (or `make layers ARCH={config.arch}`) before synthesizing with -c payments=stripe"
                )
            self.payments = layer(
                "Payments", str(payments_dir), f"Stripe's library from requirements/payments.txt ({config.arch})"
            )

    @property
    def all(self) -> list[lambda_.ILayerVersion]:
        return [self.deps, self.shared]

    def of(self, spec: FunctionSpec) -> list[lambda_.ILayerVersion]:
        """The layers of one function: the payments layer too when it calls Stripe and payments are on."""
        return [*self.all, self.payments] if spec.calls_stripe and self.payments is not None else self.all


def metrics_namespace(config: DeployConfig) -> str:
    """The shop's own metrics, one namespace per stage: two stages in one account do not add up."""
    return f"{POWERTOOLS_NAMESPACE}/{config.stage}"


def local_environment(env: dict[str, str], config: DeployConfig) -> dict[str, str]:
    """The variables of a `-c local=true` function: literals only, every AWS client on DynamoDB Local.

    `sam local invoke` passes only the variables a function declares, gives an intrinsic it cannot
    resolve (the table's and the secret's cross-stack imports) the value "" and a Ref to a resource
    its logical id. So the table becomes `make dev`'s, the pagination key (functions that paginate) a
    local literal, no bus and no archive bucket are named (nothing is published) and AWS_ENDPOINT_URL sends any other client to
    DynamoDB Local too, where it fails instead of reaching the account whose credentials SAM passes.
    """
    # no archive: archived orders answer 503; no Stripe secret: `make dev` gives localstripe's literal values
    unset = ("EVENT_BUS_NAME", "PAGINATION_SECRET_ARN", "ARCHIVE_BUCKET", "STRIPE_SECRET_ARN")
    local = {name: value for name, value in env.items() if name not in unset}
    if "PAGINATION_SECRET_ARN" in env:
        local["PAGINATION_SECRET"] = LOCAL_PAGINATION_KEY
    local.update(
        {
            "TABLE_NAME": LOCAL_TABLE_NAME,
            "AWS_ENDPOINT_URL_DYNAMODB": config.local_dynamodb_endpoint,
            "AWS_ENDPOINT_URL": config.local_dynamodb_endpoint,
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
    )
    return local


def depend_on_policy_only(function: lambda_.Function, role: iam.Role) -> lambda_.CfnFunction:
    """CDK makes a function depend on its role AND the role's policy; the role is already a GetAtt
    dependency (cfn-lint W3005), the policy is the one that matters."""
    policy = role.node.find_child("DefaultPolicy").node.default_child
    assert isinstance(policy, iam.CfnPolicy)
    cfn_function = function.node.default_child
    assert isinstance(cfn_function, lambda_.CfnFunction)
    cfn_function.add_override("DependsOn", [Stack.of(function).get_logical_id(policy)])
    return cfn_function


def tool_function(
    scope: Construct,
    ids: tuple[str, str, str],
    *,
    config: DeployConfig,
    folder: str,
    handler: str,
    description: str,
    role_description: str,
    timeout: Duration,
) -> tuple[lambda_.Function, iam.Role]:
    """A single-purpose operations function outside the API (rotation, Cognito trigger): its own
    log group and role, JSON logs, and tagged so that `make dev` does not run it.

    ``ids`` are the construct ids of the log group, the role and the function.
    """
    logs_id, role_id, function_id = ids
    log_group = logs.LogGroup(
        scope, logs_id, retention=logs.RetentionDays.ONE_MONTH, removal_policy=removal_policy(config)
    )
    role = iam.Role(
        scope, role_id, assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=role_description
    )
    role.add_to_policy(
        iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn])
    )
    function = lambda_.Function(
        scope,
        function_id,
        description=description,
        runtime=RUNTIME,
        architecture=architecture(config),
        handler=handler,
        code=lambda_.Code.from_asset(str(ROOT / "infra" / folder), exclude=ASSET_EXCLUDES),
        memory_size=128,
        timeout=timeout,
        role=role,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON,
        application_log_level_v2=lambda_.ApplicationLogLevel[LOG_LEVEL],
        system_log_level_v2=lambda_.SystemLogLevel[SYSTEM_LOG_LEVEL],
    )
    depend_on_policy_only(function, role).add_metadata("shop:local", False)  # not run by make dev
    return function, role


def build_function(
    scope: Construct,
    spec: FunctionSpec,
    *,
    config: DeployConfig,
    table: dynamodb.ITable,
    layers: Layers,
    pagination_secret: secretsmanager.ISecret | None = None,
    stripe_secret: secretsmanager.ISecret | None = None,
    archive: bool = False,
    environment: dict[str, str] | None = None,
    reserved_concurrency: int | None = None,
) -> lambda_.Function:
    """Create ``functions/<spec.name>`` with its log group, role and table permissions."""
    construct_id = "".join(part.title() for part in spec.name.split("_"))
    removal = removal_policy(config)
    log_group = logs.LogGroup(
        scope,
        f"{construct_id}Logs",
        retention=logs.RetentionDays.ONE_MONTH,
        removal_policy=removal,
    )
    # Own role instead of the default one: the default attaches the managed
    # AWSLambdaBasicExecutionRole (logs:CreateLogGroup on every group).
    role = iam.Role(
        scope,
        f"{construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{spec.name}: least privilege (infra/settings.py DYNAMODB_ACTIONS)",
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[log_group.log_group_arn],
        )
    )
    for statement in table_statements(spec, table.table_arn, f"{table.table_arn}/index/{TABLE_INDEX}"):
        role.add_to_policy(statement)
    secret_env: dict[str, str] = {}
    if spec.paginates:
        if pagination_secret is None:
            raise ValueError(f"{spec.name} paginates: it needs the pagination secret")
        # Only the ARN: the key is read at run time (shop.pagination_keys), so a rotation reaches it.
        secret_env["PAGINATION_SECRET_ARN"] = pagination_secret.secret_arn
        role.add_to_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[pagination_secret.secret_arn])
        )
    payment_env: dict[str, str] = {}
    if spec.calls_stripe and config.payments == "stripe":
        if stripe_secret is None:
            raise ValueError(f"{spec.name} calls Stripe: it needs the Stripe secret")
        # Only the ARN: the keys are read at the first call that needs them (shop.payment_secrets), cached 5 min.
        payment_env = {
            "PAYMENTS": config.payments,
            "STRIPE_SECRET_ARN": stripe_secret.secret_arn,
            # when the authorised amount is captured (shop.config.payment_settings().capture): every function that
            # reads the payment settings gets the mode payment_steps' filters were built for (-c capture)
            "CAPTURE": config.capture,
        }
        role.add_to_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[stripe_secret.secret_arn])
        )
    archive_env: dict[str, str] = {}
    if spec.archive_actions:
        if not archive:
            raise ValueError(f"{spec.name} uses the order archive: build it with archive=True")
        archive_env["ARCHIVE_BUCKET"] = archive_bucket_name(config)
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[f"s3:{action}" for action in spec.archive_actions],
                resources=[archive_objects_arn(config, ARCHIVE_PREFIX)],
            )
        )
    env = {
        "TABLE_NAME": table.table_name,
        **status_shard_env(config),
        "ARCHIVE_AFTER_DAYS": str(config.archive_after_days),
        "ARCHIVE_GRACE_SECONDS": str(config.archive_grace_seconds),
        **secret_env,
        **payment_env,
        **archive_env,
        "SESSION_TTL_SECONDS": str(SESSION_TTL_SECONDS),
        "IDEMPOTENCY_TTL_SECONDS": str(IDEMPOTENCY_TTL_SECONDS),
        "HOT_PRODUCT_CACHE_SECONDS": str(HOT_PRODUCT_CACHE_SECONDS),
        "PRICES_INCLUDE_TAX": "true" if config.prices_include_tax else "false",
        "SHOP_CURRENCY": config.currency,  # every total is in it, and every payment
        "FUNCTION_TIMEOUT_SECONDS": str(spec.timeout_s),  # the store's budget derives from it (shop.aws_config)
        "POWERTOOLS_SERVICE_NAME": spec.name,
        "POWERTOOLS_METRICS_NAMESPACE": metrics_namespace(config),
        "POWERTOOLS_LOG_LEVEL": LOG_LEVEL,
        "POWERTOOLS_TRACE_DISABLED": "false",
        "PYDANTIC_DISABLE_PLUGINS": "__all__",  # no plugin is used: skip scanning every package's entry points
        **(environment or {}),
    }
    if config.local:
        env = local_environment(env, config)
    function = lambda_.Function(
        scope,
        construct_id,
        description=spec.description,
        runtime=RUNTIME,
        architecture=architecture(config),
        handler="handler.handler",
        code=lambda_.Code.from_asset(str(ROOT / "functions" / spec.name), exclude=ASSET_EXCLUDES),
        layers=layers.of(spec),
        memory_size=spec.memory_mb,
        timeout=Duration.seconds(spec.timeout_s),
        environment=env,
        role=role,
        log_group=log_group,
        tracing=lambda_.Tracing.ACTIVE,
        reserved_concurrent_executions=reserved_concurrency,
        # every caller invokes the `live` alias, i.e. a published version (live_alias)
        snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if config.snapstart else None,
        logging_format=lambda_.LoggingFormat.JSON,
        application_log_level_v2=lambda_.ApplicationLogLevel[LOG_LEVEL],
        system_log_level_v2=lambda_.SystemLogLevel[SYSTEM_LOG_LEVEL],
    )
    cfn_function = depend_on_policy_only(function, role)
    # Lets a local tool find the function by name in the template without guessing logical ids.
    cfn_function.add_metadata("shop:function", spec.name)
    return function


def table_statements(spec: FunctionSpec, table_arn: str, index_arn: str) -> list[iam.PolicyStatement]:
    """The function's DynamoDB grant: on the table (and GSI1 with uses_index); with write_leading_keys, writes go to
    its own partition keys only; its index_only operations on GSI1 alone, in a statement of their own."""
    index_only = iam_actions(spec.index_only) if spec.index_only else []
    if not set(spec.index_only) <= set(spec.dynamodb_actions) or set(index_only) & WRITE_IAM_ACTIONS:
        raise ValueError(f"{spec.name}: index_only must be reads among its dynamodb_actions, got {spec.index_only}")
    actions = [action for action in iam_actions(spec.dynamodb_actions) if action not in index_only]
    resources = [table_arn, index_arn] if spec.uses_index else [table_arn]
    on_index = [iam.PolicyStatement(actions=index_only, resources=[index_arn])] if index_only else []
    if not spec.write_leading_keys:
        return [iam.PolicyStatement(actions=actions, resources=resources), *on_index]
    reads = [action for action in actions if action not in WRITE_IAM_ACTIONS]
    writes = [action for action in actions if action in WRITE_IAM_ACTIONS]
    return [
        iam.PolicyStatement(actions=reads, resources=resources),
        iam.PolicyStatement(
            actions=writes,
            resources=resources,
            conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(spec.write_leading_keys)}},
        ),
        *on_index,
    ]


VERSION_DIMENSION = "function_version"  # shop.version_metrics.VERSION_DIMENSION


def version_failures(function: lambda_.Function, config: DeployConfig) -> cloudwatch.Metric:
    """The function's failures counted by the version being published (shop.version_metrics): an API function's
    5xx answers, order_events' failed records. Lambda's Errors misses both (handled, not raised)."""
    (spec,) = [spec for spec in ALL_FUNCTIONS if spec.construct_id == function.node.id]
    return cloudwatch.Metric(
        namespace=metrics_namespace(config),
        metric_name=spec.failure_metric,
        dimensions_map={"service": spec.name, VERSION_DIMENSION: function.current_version.version},
        statistic="Sum",
        period=Duration.minutes(1),
    )


def live_alias(scope: Construct, function: lambda_.Function, *, config: DeployConfig) -> lambda_.Alias:
    """The `live` alias callers invoke; a protected stage moves it by a CodeDeploy canary.

    The canary sends 10% of the invocations to the new version for 5 minutes, then all; an error
    of the new version meanwhile rolls the alias back: the alias's Errors (unhandled errors, timeouts),
    or the new version's own failures (version_failures: handled 500s, failed stream records).
    """
    alias = lambda_.Alias(
        scope,
        f"{function.node.id}Live",
        alias_name=LIVE_ALIAS,
        version=function.current_version,
        description="what the API and the stream invoke",
    )
    if config.snapstart:
        Annotations.of(function).acknowledge_warning(
            "@aws-cdk/aws-lambda:snapStartRequirePublish",
            "the function is invoked through its live alias only, on the version published here",
        )
    if config.protected:
        errors = cloudwatch.Alarm(
            scope,
            f"{function.node.id}CanaryErrors",
            alarm_description=(
                f"{function.node.id}: the version being deployed fails, the deployment rolls back. "
                f"Runbook: {config.runbook_url}#{runbook_anchor('Deployment rolled back')}"
            ),
            metric=alias.metric_errors(period=Duration.minutes(1), statistic="Sum"),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        failures = cloudwatch.Alarm(
            scope,
            f"{function.node.id}CanaryFailures",
            alarm_description=(
                f"{function.node.id}: the version being deployed answers 5xx or fails records, the deployment "
                f"rolls back. Runbook: {config.runbook_url}#{runbook_anchor('Deployment rolled back')}"
            ),
            metric=version_failures(function, config),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        # the alarm watches the new version before CodeDeploy starts shifting the alias to it
        alias.node.add_dependency(failures)
        codedeploy.LambdaDeploymentGroup(
            scope,
            f"{function.node.id}Deployment",
            alias=alias,
            deployment_config=codedeploy.LambdaDeploymentConfig.CANARY_10_PERCENT_5_MINUTES,
            alarms=[errors, failures],
            auto_rollback=codedeploy.AutoRollbackConfig(
                failed_deployment=True, stopped_deployment=True, deployment_in_alarm=True
            ),
        )
    return alias


def status_shard_env(config: DeployConfig) -> dict[str, str]:
    """The status index's shard count, and during a switch the next count and who writes it (every function
    that reads or writes orders, and the migration worker: shop.config)."""
    env = {"STATUS_SHARDS": str(config.status_shards)}
    if config.status_shards_next is not None:
        env["STATUS_SHARDS_NEXT"] = str(config.status_shards_next)
        env["STATUS_SHARDS_WRITERS"] = config.status_shards_writers
    return env
