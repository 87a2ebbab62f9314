"""The single table and the pagination secret (with its rotation)."""

from __future__ import annotations

from aws_cdk import Aws, Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.archive_names import archive_bucket_name
from infra.constructs.functions import tool_function
from infra.constructs.protection import removal_policy
from infra.settings import (
    ARCHIVE_NONCURRENT_DAYS,
    ARCHIVE_PREFIX,
    PAGINATION_KEY_ROTATION_DAYS,
    TABLE_INDEX,
    DeployConfig,
)


class ShopTable(Construct):
    """One DynamoDB table (PK/SK), one overloaded index GSI1, the stream and TTL."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        removal = removal_policy(config)
        string = dynamodb.AttributeType.STRING
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="PK", type=string),
            sort_key=dynamodb.Attribute(name="SK", type=string),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            time_to_live_attribute="expires_at",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            deletion_protection=config.protected,
            # who reads and writes the hottest keys (and who gets throttled): a cost, so protected stages only
            contributor_insights_specification=dynamodb.ContributorInsightsSpecification(enabled=config.protected),
            removal_policy=removal,
        )
        # Projection ALL: every list route (products by category, orders by status)
        # returns whole items from ONE Query; KEYS_ONLY/INCLUDE would force a
        # BatchGetItem per page (more round trips, more RCUs than the extra storage).
        self.table.add_global_secondary_index(
            index_name=TABLE_INDEX,
            partition_key=dynamodb.Attribute(name="GSI1PK", type=string),
            sort_key=dynamodb.Attribute(name="GSI1SK", type=string),
            projection_type=dynamodb.ProjectionType.ALL,
            contributor_insights_specification=dynamodb.ContributorInsightsSpecification(enabled=config.protected),
        )


class OrderArchive(Construct):
    """The archive of finished orders: one JSON object per order under orders/year=/month=/day= (Athena).

    Encrypted (SSE-S3), private (public access blocked, bucket-owner objects), TLS only. Objects stay in
    S3 Standard: an archived order is a few KB and S3 lifecycle does not move objects under 128 KB to another
    storage class (nor would it pay: Glacier Instant Retrieval bills 128 KB at least), so a transition rule
    would never apply. Kept with the data: RETAIN in protected stages, as the table; an overwritten or deleted
    version of a protected stage's object is kept ARCHIVE_NONCURRENT_DAYS.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            bucket_name=archive_bucket_name(config),
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=config.protected,  # an overwritten or deleted archive object can be recovered
            lifecycle_rules=(
                [
                    s3.LifecycleRule(
                        id="archive-noncurrent-versions",
                        prefix=ARCHIVE_PREFIX,
                        noncurrent_version_expiration=Duration.days(ARCHIVE_NONCURRENT_DAYS),
                    )
                ]
                if config.protected
                else None
            ),
            removal_policy=removal_policy(config),
        )


class StripeSecret(Construct):
    """`-c payments=stripe`: the Stripe API secret key and the webhook endpoint's signing secret, one JSON secret.

    Created with placeholders (a template never holds a key); the operator puts the real values in after the first
    deploy and at each rotation (docs/operations.md, "Rotating the Stripe keys"). Only the functions that call
    Stripe may read it (infra.constructs.functions.build_function).
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            description='Stripe keys: {"secret_key": "sk_...", "webhook_secret": "whsec_..."} (docs/operations.md)',
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template='{"secret_key": "unset"}',  # noqa: S106 - a placeholder the operator replaces
                generate_string_key="webhook_secret",
                exclude_punctuation=True,
            ),
            removal_policy=removal_policy(config),
        )


class PaginationSecret(Construct):
    """HMAC key for opaque next tokens, generated by CloudFormation (never in a template) and rotated on schedule.

    Functions get its ARN and read it at run time (shop.pagination_keys): a rotation reaches them within
    the cache's max age, and tokens signed with the previous key keep reading.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        removal = removal_policy(config)
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            description="HMAC key signing the API's pagination tokens",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True, include_space=False
            ),
            removal_policy=removal,
        )
        self.rotation, _ = tool_function(
            self,
            ("RotationLogs", "RotationRole", "Rotation"),
            config=config,
            folder="rotation",
            handler="pagination_key.handler",
            description="Rotates the pagination key: a new random key becomes AWSCURRENT",
            role_description="pagination key rotation: this secret only (the schedule adds the secretsmanager actions)",
            timeout=Duration.seconds(30),
        )
        # Grants the function DescribeSecret/GetSecretValue/PutSecretValue/UpdateSecretVersionStage on this
        # secret and GetRandomPassword, and Secrets Manager the right to invoke it.
        self.schedule = self.secret.add_rotation_schedule(
            "Schedule",
            rotation_lambda=self.rotation,
            automatically_after=Duration.days(PAGINATION_KEY_ROTATION_DAYS),
            rotate_immediately_on_update=False,
        )
        # Secrets Manager may invoke it for this secret of this account only (the confused deputy): CDK's
        # grant names the service principal and nothing else.
        for permission in self.rotation.node.children:
            if isinstance(permission, lambda_.CfnPermission) and permission.principal == "secretsmanager.amazonaws.com":
                permission.source_account = Aws.ACCOUNT_ID
                permission.source_arn = self.secret.secret_arn
