"""Every cdk-nag AwsSolutions finding we accept, each on the narrowest construct, with the reason.

An unacknowledged finding fails ``cdk synth`` (docs/infrastructure.md, "Guard rails").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

from infra.settings import ARCHIVE_PREFIX, ROUTES, RUNTIME_NAME

if TYPE_CHECKING:
    from infra.app_factory import ShopApp

XRAY = (
    "X-Ray's xray:PutTraceSegments and xray:PutTelemetryRecords (added by Tracing.ACTIVE) "
    "support no resource-level permissions; the actions themselves are explicit."
)
LIST_STREAMS = (
    "dynamodb:ListStreams (granted by the DynamoDB event source) has no resource-level "
    "permissions; reading records is limited to this table's stream ARN."
)


def _ack(scope: IConstruct, rule: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=f"AwsSolutions::AwsSolutions-{rule}", reason=reason))


def _function_findings(function: lambda_.Function, *, streams: bool = False) -> None:
    _ack(
        function,
        "L1",
        f"{RUNTIME_NAME} on purpose: the dependencies layer is built for exactly this CPython ABI and "
        "the packaging test imports every handler with a real interpreter of it; why not 3.14 yet: "
        "infra/settings.py RUNTIME_NAME.",
    )
    policy = function.role.node.try_find_child("DefaultPolicy") if function.role else None
    if policy is not None:
        _ack(policy, "IAM5[Resource::*]", XRAY + (" " + LIST_STREAMS if streams else ""))


def suppress_findings(shop: ShopApp) -> None:
    # Data
    rotation = shop.data.secret.rotation
    _ack(
        rotation,
        "L1",
        f"{RUNTIME_NAME}, the runtime of every function of the shop (one interpreter to build and test for).",
    )
    rotation_policy = rotation.role.node.try_find_child("DefaultPolicy") if rotation.role else None
    if rotation_policy is not None:
        _ack(
            rotation_policy,
            "IAM5[Resource::*]",
            "secretsmanager:GetRandomPassword (generating the new key) supports no resource-level "
            "permissions; every action on the secret itself is limited to its ARN.",
        )
    _ack(
        shop.data.archive.bucket,
        "S1",
        "Written only by order_events (PutObject) and read only by the orders function (GetObject), both "
        "logged per request in their own logs; CloudTrail data events can be enabled for an audit, an "
        "access-log bucket would log nothing else.",
    )
    archive_objects = f"arn:<AWS::Partition>:s3:::{shop.config.name('order-archive')}-<AWS::AccountId>-<AWS::Region>/{ARCHIVE_PREFIX}*"
    archive_reason = (
        "Each archived order is its own object, named by its order id under the day it was placed: "
        "the grant is one action (GetObject for orders, PutObject for order_events) under the orders/ "
        "prefix of the archive bucket only."
    )
    # API functions and routes
    for function in shop.api.functions.values():
        assert isinstance(function, lambda_.Function)
        _function_findings(function)
    orders_policy = shop.api.functions["orders"].role.node.find_child("DefaultPolicy")  # type: ignore[union-attr]
    _ack(orders_policy, f"IAM5[Resource::{archive_objects}]", archive_reason)
    for route in ROUTES:
        if route.public and route.function == "payments":
            _ack(
                shop.api.http.routes[route.route_key],
                "APIG4",
                f"{route.route_key} is Stripe's webhook: Stripe sends no JWT; the payments function verifies "
                "every delivery's Stripe-Signature (HMAC of the raw body with the endpoint's secret, 300 s "
                "tolerance) before reading it (docs/payments.md).",
            )
        elif route.public:
            _ack(
                shop.api.http.routes[route.route_key],
                "APIG4",
                f"{route.route_key} is public by the API contract (docs/http-api.md): catalogue reads and "
                "anonymous sessions whose unguessable id is the capability.",
            )
    pool = shop.api.auth.user_pool
    if pool is not None:
        if not shop.config.auth.threat_protection:
            _ack(
                pool,
                "COG8",
                "Essentials feature plan: threat protection (Plus, -c cognito_threat_protection=true) is a "
                "per-user cost decision for the operator (docs/infrastructure.md#cognito); strong password "
                "policy and optional TOTP MFA are on.",
            )
        admin_mfa = shop.api.auth.admin_mfa
        assert admin_mfa is not None
        _ack(
            admin_mfa.function,
            "L1",
            f"{RUNTIME_NAME}, the runtime of every function of the shop (one interpreter to build and test for).",
        )
        _ack(
            pool,
            "COG2",
            "Shoppers sign up themselves; MFA is optional (TOTP) rather than required so sign-up "
            "does not need a second device.",
        )
    # Events
    _function_findings(shop.events.processing.function, streams=True)
    processing_policy = shop.events.processing.function.role.node.find_child("DefaultPolicy")  # type: ignore[union-attr]
    _ack(
        processing_policy,
        "IAM5[Resource::<OrderEventsStreamFailures3ED0512E.Arn>/aws/lambda/*]",
        "Lambda names each failure object itself (aws/lambda/<mapping>/<shard>/<date>/...): s3:PutObject "
        "only, under that prefix of the stream's own failure bucket.",
    )
    _ack(processing_policy, f"IAM5[Resource::{archive_objects}]", archive_reason)
    _ack(
        shop.events.processing.failures,
        "S1",
        "Lambda is the only writer and `make replay` the only reader of this failure archive; "
        "CloudTrail records both, an access-log bucket would log nothing else.",
    )
    # Payments (-c payments=stripe)
    if shop.data.stripe is not None:
        _ack(
            shop.data.stripe.secret,
            "SMG4",
            "Stripe's keys are rolled in Stripe's dashboard, not generated here: the operator rolls them there and "
            "puts the new values in this secret (docs/operations.md, 'Rotating the Stripe keys'); the functions "
            "read it at most 5 minutes stale.",
        )
    steps = shop.events.payment_steps
    if steps is not None:
        _function_findings(steps.function, streams=True)
        steps_policy = steps.function.role.node.find_child("DefaultPolicy")  # type: ignore[union-attr]
        bucket_id = Stack.of(steps.failures).get_logical_id(steps.failures.node.default_child)  # type: ignore[arg-type]
        _ack(
            steps_policy,
            f"IAM5[Resource::<{bucket_id}.Arn>/aws/lambda/*]",
            "Lambda names each failure object itself: s3:PutObject only, under that prefix of payment_steps' own "
            "failure bucket.",
        )
        _ack(
            steps.failures,
            "S1",
            "Lambda is the only writer and `make replay` the only reader of payment_steps' failure archive; "
            "CloudTrail records both, an access-log bucket would log nothing else.",
        )
    # Gradual deployments (protected stages)
    for stack in (shop.api, shop.events):
        for construct in stack.node.find_all():
            if isinstance(construct, codedeploy.LambdaDeploymentGroup):
                _ack(
                    construct,
                    "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]",
                    "CodeDeploy's own role for Lambda deployments: AWS's 'Limited' managed policy is scoped "
                    "to what a Lambda deployment does (update aliases, read alarms, invoke hooks).",
                )
    # Edge (-c edge=true)
    if shop.edge is not None:
        edge = shop.edge.edge
        _ack(
            edge.logs,
            "S1",
            "This bucket IS the access-log destination of the CloudFront distribution; logging the "
            "log bucket's own accesses would add a second bucket for nothing the shop reads.",
        )
        _ack(
            edge.distribution,
            "CFR1",
            "Who may buy is a business decision (the countries the shop ships to), not a security "
            "default; the WAF rules and the per-IP rate limit apply to every country.",
        )
        if not edge.custom_domain:
            _ack(
                edge.distribution,
                "CFR4",
                "No -c edge_domain/edge_certificate_arn given: CloudFront's default certificate fixes "
                "the viewer policy at TLSv1; with a custom domain TLSv1.2_2021 is enforced (set).",
            )
