"""Operations stacks: the migration state machine, and the archive as an Athena table."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Aws, CfnOutput, Duration, Stack, Token, Validations
from aws_cdk import aws_athena as athena
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct, IConstruct

from infra import archive_queries
from infra.constructs.data import archive_bucket_name
from infra.constructs.functions import (
    ASSET_EXCLUDES,
    RUNTIME,
    Layers,
    architecture,
    depend_on_policy_only,
    status_shard_env,
)
from infra.constructs.protection import removal_policy
from infra.settings import ARCHIVE_PREFIX, LOG_LEVEL, ROOT, RUNTIME_NAME, SYSTEM_LOG_LEVEL, DeployConfig

# The partitions the registered migrations write (0001: products and their listing entries; 0002: order
# items, their GSI1PK) and the runner's own items: the worker's writes are held to them
# (dynamodb:LeadingKeys). A migration writing elsewhere adds its prefix here; tests/infra/test_operations.py
# checks each migration's plan against it.
MIGRATION_WRITE_PARTITIONS = ("PRODUCT#*", "ORDER#*", "MIGRATION#*")
MIGRATION_READ_ACTIONS = ("dynamodb:Scan", "dynamodb:GetItem", "dynamodb:BatchGetItem")
MIGRATION_WRITE_ACTIONS = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
# Segments migrated at once: each worker takes rate/segments, so this bounds Lambda concurrency, not writes.
MAP_CONCURRENCY = 100
ATHENA_BYTES_SCANNED_CUTOFF = 10 * 1024**3  # 10 GiB a query: a runaway query costs at most ~0.05 USD


def _ack(scope: IConstruct, rule: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=f"AwsSolutions::AwsSolutions-{rule}", reason=reason))


class MigrationsStack(Stack):
    """`start` -> a distributed map over the Scan segments (a child execution per segment invoking the
    worker until its segment is done) -> `finish` (the migration's record)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig, table_arn: str,
                 table_name: str, **kwargs: object) -> None:  # fmt: skip
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        removal = removal_policy(config)
        layers = Layers(self, "Layers", config=config)
        log_group = logs.LogGroup(self, "WorkerLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=removal)
        role = iam.Role(
            self,
            "WorkerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="migration worker: Scan the table, write only the partitions migrations write",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
            )
        )
        role.add_to_policy(iam.PolicyStatement(actions=list(MIGRATION_READ_ACTIONS), resources=[table_arn]))
        role.add_to_policy(
            iam.PolicyStatement(
                actions=list(MIGRATION_WRITE_ACTIONS),
                resources=[table_arn],
                conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(MIGRATION_WRITE_PARTITIONS)}},
            )
        )
        self.worker = lambda_.Function(
            self,
            "Worker",
            description="shop migrations: start, one Scan segment from its checkpoint, finish",
            runtime=RUNTIME,
            architecture=architecture(config),
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(ROOT / "functions" / "migrations"), exclude=ASSET_EXCLUDES),
            layers=layers.all,
            memory_size=512,
            timeout=Duration.minutes(15),
            role=role,
            log_group=log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel[LOG_LEVEL],
            system_log_level_v2=lambda_.SystemLogLevel[SYSTEM_LOG_LEVEL],
            # 0002 moves orders to the switch's next count: the worker reads the switch as the functions do
            environment={"TABLE_NAME": table_name, **status_shard_env(config), "POWERTOOLS_SERVICE_NAME": "migrations"},
        )
        depend_on_policy_only(self.worker, role).add_metadata("shop:local", False)  # not run by make dev

        def invoke(state_id: str, action: str, **extra: str) -> tasks.LambdaInvoke:
            return tasks.LambdaInvoke(
                self,
                state_id,
                lambda_function=self.worker,
                payload=sfn.TaskInput.from_object({"action": action, **extra}),
                payload_response_only=True,
                retry_on_service_exceptions=True,
            )

        start = invoke(
            "Start",
            "start",
            **{
                "migration.$": "$.migration",
                "segments.$": "$.segments",
                "rate.$": "$.rate",
                "dry_run.$": "$.dry_run",
            },
        )
        segment = invoke(
            "MigrateSegment",
            "segment",
            **{
                "migration.$": "$.migration",
                "segments.$": "$.segments",
                "segment.$": "$.segment",
                "rate.$": "$.rate",
                "dry_run.$": "$.dry_run",
            },
        )
        segment_done = sfn.Choice(self, "SegmentDone")
        segment_done.when(sfn.Condition.boolean_equals("$.done", True), sfn.Succeed(self, "SegmentMigrated"))
        segment_done.otherwise(segment)  # the next invocation resumes at the checkpoint
        segments = sfn.DistributedMap(
            self,
            "Segments",
            items_path="$.items",
            max_concurrency=MAP_CONCURRENCY,
            result_path="$.results",
            tolerated_failure_percentage=0,
            map_execution_type=sfn.StateMachineType.STANDARD,
        )
        # a failed invocation (the store unavailable for longer than the client's retries) is tried again;
        # its segment resumes at the checkpoint either way
        segment.add_retry(errors=["States.ALL"], interval=Duration.seconds(10), max_attempts=3, backoff_rate=2)
        segments.item_processor(segment.next(segment_done))
        finish = invoke(
            "Finish",
            "finish",
            **{
                "migration.$": "$.migration",
                "segments.$": "$.segments",
                "rate.$": "$.rate",
                "dry_run.$": "$.dry_run",
                "results.$": "$.results",
            },
        )
        applied = sfn.Choice(self, "AlreadyApplied")
        applied.when(sfn.Condition.boolean_equals("$.applied", True), sfn.Succeed(self, "NothingToDo"))
        applied.otherwise(segments.next(finish))
        machine_logs = logs.LogGroup(
            self, "StateMachineLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=removal
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=config.name("migrations"),
            definition_body=sfn.DefinitionBody.from_chainable(start.next(applied)),
            state_machine_type=sfn.StateMachineType.STANDARD,
            logs=sfn.LogOptions(destination=machine_logs, level=sfn.LogLevel.ALL),
            tracing_enabled=True,
            removal_policy=removal,  # a protected stage keeps its execution history with the stack gone
        )
        # the role is a GetAtt dependency already (cfn-lint W3005); its policy is the one that matters (the
        # distributed map's policy names the machine's ARN: it follows the machine)
        cfn_machine = self.state_machine.node.default_child
        assert isinstance(cfn_machine, sfn.CfnStateMachine)
        policy = self.state_machine.role.node.find_child("DefaultPolicy").node.default_child
        cfn_machine.add_override("DependsOn", [self.get_logical_id(policy)])  # type: ignore[arg-type]
        CfnOutput(self, "MigrationStateMachine", value=self.state_machine.state_machine_arn)
        self._acknowledge(role)

    def _acknowledge(self, worker_role: iam.Role) -> None:
        _ack(
            self.worker,
            "L1",
            f"{RUNTIME_NAME}, the runtime of every function of the shop (one interpreter to build and test for).",
        )
        policy = self.state_machine.role.node.try_find_child("DefaultPolicy")
        assert policy is not None
        worker = self.get_logical_id(self.worker.node.default_child)  # type: ignore[arg-type]
        _ack(
            policy,
            f"IAM5[Resource::<{worker}.Arn>:*]",
            "Step Functions invokes the worker's versions (ARN:*): the one function, lambda:InvokeFunction only.",
        )
        _ack(
            policy,
            "IAM5[Resource::*]",
            "X-Ray (tracing) and CloudWatch Logs delivery (logging) actions support no resource-level permissions.",
        )
        map_policy = self.state_machine.node.try_find_child("DistributedMapPolicy")
        assert map_policy is not None
        machine = self.get_logical_id(self.state_machine.node.default_child)  # type: ignore[arg-type]
        # a pinned stage's ARN carries its account and region (cdk-nag reports them resolved)
        where = (
            "<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>"
            if Token.is_unresolved(self.region)
            else f"aws:states:{self.region}:{self.account}"
        )
        executions = f'arn:{where}:execution:{{"Fn::Select":[6,{{"Fn::Split":[":",{{"Ref":"{machine}"}}]}}]}}'

        for suffix in (":*", "/*:*"):
            _ack(
                map_policy,
                f"IAM5[Resource::{executions}{suffix}]",
                "The distributed map starts, describes and stops the child executions of this state machine only.",
            )


class ArchiveQueriesStack(Stack):
    """The archive bucket as a Glue table with partition projection (no crawler), an Athena workgroup
    (its own encrypted results bucket, a bytes-scanned limit per query) and the named queries."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        database_name = config.name("archive").replace("-", "_")
        archive = f"s3://{archive_bucket_name(config)}/{ARCHIVE_PREFIX}"
        self.database = glue.CfnDatabase(
            self,
            "Database",
            catalog_id=Aws.ACCOUNT_ID,
            database_input=glue.CfnDatabase.DatabaseInputProperty(
                name=database_name, description="the shop's order archive"
            ),
        )
        partitions = {
            "projection.enabled": "true",
            "projection.year.type": "integer",
            "projection.year.range": f"{archive_queries.FIRST_YEAR},{archive_queries.LAST_YEAR}",
            "projection.month.type": "integer",
            "projection.month.range": "1,12",
            "projection.month.digits": "2",
            "projection.day.type": "integer",
            "projection.day.range": "1,31",
            "projection.day.digits": "2",
            "storage.location.template": archive + "year=${year}/month=${month}/day=${day}/",
        }
        self.table = glue.CfnTable(
            self,
            "OrdersTable",
            catalog_id=Aws.ACCOUNT_ID,
            database_name=database_name,
            table_input=glue.CfnTable.TableInputProperty(
                name=archive_queries.TABLE_NAME,
                description="archived orders: one JSON object per line, by the day the order was placed",
                table_type="EXTERNAL_TABLE",
                parameters={"classification": "json", "EXTERNAL": "TRUE", **partitions},
                partition_keys=[
                    glue.CfnTable.ColumnProperty(name=key, type="string") for key in archive_queries.PARTITION_KEYS
                ],
                storage_descriptor=glue.CfnTable.StorageDescriptorProperty(
                    location=archive,
                    input_format="org.apache.hadoop.mapred.TextInputFormat",
                    output_format="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                    serde_info=glue.CfnTable.SerdeInfoProperty(
                        serialization_library="org.openx.data.jsonserde.JsonSerDe",
                        parameters={"ignore.malformed.json": "FALSE", "case.insensitive": "FALSE"},
                    ),
                    columns=[glue.CfnTable.ColumnProperty(name=n, type=t) for n, t in archive_queries.COLUMNS],
                ),
            ),
        )
        self.table.node.add_dependency(self.database)
        self.results = s3.Bucket(
            self,
            "Results",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-results", expiration=Duration.days(30))],
            removal_policy=removal_policy(config),
            auto_delete_objects=False,
        )
        self.workgroup = athena.CfnWorkGroup(
            self,
            "WorkGroup",
            name=config.name("archive"),
            description="queries of the order archive",
            state="ENABLED",
            recursive_delete_option=not config.protected,
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                enforce_work_group_configuration=True,
                publish_cloud_watch_metrics_enabled=True,
                bytes_scanned_cutoff_per_query=ATHENA_BYTES_SCANNED_CUTOFF,
                engine_version=athena.CfnWorkGroup.EngineVersionProperty(
                    selected_engine_version="Athena engine version 3"
                ),
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=f"s3://{self.results.bucket_name}/results/",
                    encryption_configuration=athena.CfnWorkGroup.EncryptionConfigurationProperty(
                        encryption_option="SSE_S3"
                    ),
                ),
            ),
        )
        self.queries: dict[str, athena.CfnNamedQuery] = {}
        for name, (description, _sql) in archive_queries.QUERIES.items():
            query = athena.CfnNamedQuery(
                self,
                "Query" + "".join(part.capitalize() for part in name.split("-")),
                name=config.name(name),  # the stage's: `shop-<stage>-revenue-by-day`
                description=description,
                database=database_name,
                work_group=self.workgroup.ref,
                query_string=archive_queries.query(name, archive_queries.athena_sources(database_name)),
            )
            self.queries[name] = query
        CfnOutput(self, "ArchiveWorkGroup", value=self.workgroup.ref)
        CfnOutput(self, "ArchiveDatabase", value=database_name)
        _ack(
            self.results,
            "S1",
            "Athena is the only writer (query results, expired after 30 days); the queries themselves are "
            "in Athena's history and CloudTrail, an access-log bucket would log nothing else.",
        )
