"""The table: keys, GSI1, billing, stream, TTL, PITR, encryption, stage-dependent protection; the pagination key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]
PAGINATING = {"customers", "products", "orders"}  # list routes with next tokens


def test_table_definition(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopData"])
    template.resource_count_is("AWS::DynamoDB::Table", 1)
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": Match.array_with(
                [
                    {"AttributeName": "PK", "AttributeType": "S"},
                    {"AttributeName": "SK", "AttributeType": "S"},
                    {"AttributeName": "GSI1PK", "AttributeType": "S"},
                    {"AttributeName": "GSI1SK", "AttributeType": "S"},
                ]
            ),
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "GSI1",
                    "KeySchema": [
                        {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                        {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True},
        },
    )


def test_dev_stage_tears_down(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopData"])
    template.has_resource("AWS::DynamoDB::Table", {"DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete"})
    (table,) = template.find_resources("AWS::DynamoDB::Table").values()
    assert not table["Properties"].get("DeletionProtectionEnabled", False)


def test_prod_stage_retains_and_protects(prod_external) -> None:
    template = Template.from_json(prod_external.templates["ShopData"])
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": Match.object_like({"DeletionProtectionEnabled": True}),
        },
    )
    template.has_resource("AWS::SecretsManager::Secret", {"DeletionPolicy": "Retain"})


def test_pagination_secret_is_generated_and_never_in_a_template(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopData"])
    template.has_resource_properties(
        "AWS::SecretsManager::Secret",
        {"GenerateSecretString": Match.object_like({"PasswordLength": 64})},
    )
    for name, (_, _, function) in arm64.functions().items():
        env = function["Properties"]["Environment"]["Variables"]
        assert "PAGINATION_SECRET" not in env, name  # neither the key nor a dynamic reference to it
        if name in PAGINATING:
            assert "secret" in json.dumps(env["PAGINATION_SECRET_ARN"]).lower(), name


def _secret_statements(assembly: Any) -> dict[str, list[dict[str, Any]]]:
    """{function name: its role's statements on Secrets Manager}."""
    found: dict[str, list[dict[str, Any]]] = {}
    for name, (stack_id, _, function) in assembly.functions().items():
        role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
        resources = assembly.templates[stack_id]["Resources"]
        found[name] = [
            statement
            for resource in resources.values()
            if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]
            if "secretsmanager" in json.dumps(statement["Action"])
        ]
    return found


def test_only_functions_that_paginate_may_read_the_key(arm64) -> None:
    granted = _secret_statements(arm64)
    assert {name for name, statements in granted.items() if statements} == PAGINATING
    for name in PAGINATING:
        (statement,) = granted[name]
        assert statement["Action"] == "secretsmanager:GetSecretValue", name
        assert "PaginationSecret" in json.dumps(statement["Resource"]), name
        function = arm64.functions()[name][2]
        assert statement["Resource"] == function["Properties"]["Environment"]["Variables"]["PAGINATION_SECRET_ARN"]


def test_the_key_rotates_on_schedule_with_its_own_function(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopData"])
    (secret_id,) = template.find_resources("AWS::SecretsManager::Secret")
    template.has_resource_properties(
        "AWS::SecretsManager::RotationSchedule",
        {
            "SecretId": {"Ref": secret_id},
            "RotationRules": {"ScheduleExpression": "rate(30 days)"},
            "RotateImmediatelyOnUpdate": False,
        },
    )
    (rotation_id,) = template.find_resources("AWS::Lambda::Function")
    rotation = template.to_json()["Resources"][rotation_id]
    assert rotation["Properties"]["Handler"] == "pagination_key.handler"
    assert rotation["Metadata"]["shop:local"] is False
    # Secrets Manager may invoke it for this secret of this account only (no confused deputy)
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Principal": "secretsmanager.amazonaws.com",
            "FunctionName": {"Fn::GetAtt": [rotation_id, "Arn"]},
            "SourceAccount": {"Ref": "AWS::AccountId"},
            "SourceArn": {"Ref": secret_id},
        },
    )
    (policy,) = template.find_resources("AWS::IAM::Policy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    on_secret = [s for s in statements if s.get("Resource") == {"Ref": secret_id}]
    assert {a for s in on_secret for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])} == {
        "secretsmanager:DescribeSecret",
        "secretsmanager:GetSecretValue",
        "secretsmanager:PutSecretValue",
        "secretsmanager:UpdateSecretVersionStage",
    }
    wildcard = [s for s in statements if s.get("Resource") == "*"]
    assert [s["Action"] for s in wildcard] == ["secretsmanager:GetRandomPassword"]


# -- the order archive ------------------------------------------------------------------------------


def _archive_bucket(templates: dict[str, Any]) -> dict[str, Any]:
    return templates["ShopData"]["Resources"][_archive_id(templates)]  # type: ignore[no-any-return]


def _archive_id(templates: dict[str, Any]) -> str:
    buckets = Template.from_json(templates["ShopData"]).find_resources("AWS::S3::Bucket")
    (found,) = [lid for lid, b in buckets.items() if "order-archive" in json.dumps(b["Properties"].get("BucketName"))]
    return found


def test_the_order_archive_is_private_encrypted_tls_only_and_kept_in_standard_storage(arm64) -> None:
    bucket = _archive_bucket(arm64.templates)
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    # An archived order is a few KB: S3 lifecycle moves no object under 128 KB to another storage class, so a
    # transition rule would never apply (issue 23); objects stay in S3 Standard and are kept (no expiration).
    assert "LifecycleConfiguration" not in props
    policies = Template.from_json(arm64.templates["ShopData"]).find_resources("AWS::S3::BucketPolicy")
    denies = [
        s
        for p in policies.values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert any(_archive_id(arm64.templates) in json.dumps(s["Resource"]) for s in denies)


def test_the_order_archive_is_kept_and_versioned_in_protected_stages(arm64, prod_external) -> None:
    assert _archive_bucket(arm64.templates)["DeletionPolicy"] == "Delete"
    protected = _archive_bucket(prod_external.templates)
    assert protected["DeletionPolicy"] == "Retain"
    assert protected["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = protected["Properties"]["LifecycleConfiguration"]["Rules"]
    assert rule == {
        "Id": "archive-noncurrent-versions",
        "Prefix": "orders/",
        "NoncurrentVersionExpiration": {"NoncurrentDays": 90},
        "Status": "Enabled",
    }  # no transition (objects under 128 KB never move), no expiration of current objects


def _statements(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    policies = Template.from_json(template).find_resources("AWS::IAM::Policy")
    return [
        s
        for lid, p in policies.items()
        if lid.startswith(role_prefix)
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_archive_grants_are_one_action_each_under_the_orders_prefix(arm64) -> None:
    def archive_grants(template: dict[str, Any], role_prefix: str) -> list[tuple[Any, str]]:
        return [
            (s["Action"], json.dumps(s["Resource"]))
            for s in _statements(template, role_prefix)
            if "order-archive" in json.dumps(s["Resource"]) and "s3:" in json.dumps(s["Action"])
        ]

    (orders,) = archive_grants(arm64.templates["ShopApi"], "OrdersRole")
    (events,) = archive_grants(arm64.templates["ShopEvents"], "OrderEventsOrderEventsRole")
    assert orders[0] == "s3:GetObject"
    assert events[0] == "s3:PutObject"
    for _, resource in (orders, events):
        assert '"/orders/*"]]}' in resource
    for name in ("Customers", "Products", "Sessions"):
        assert archive_grants(arm64.templates["ShopApi"], f"{name}Role") == []


def test_functions_that_use_the_archive_are_told_where_it_is_and_when_orders_expire(arm64) -> None:
    functions = Template.from_json(arm64.templates["ShopApi"]).find_resources("AWS::Lambda::Function")
    for lid, function in functions.items():
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        if "TABLE_NAME" not in env:
            continue
        assert env["ARCHIVE_AFTER_DAYS"] == "365", lid
        assert env["ARCHIVE_GRACE_SECONDS"] == "86400", lid
        assert ("ARCHIVE_BUCKET" in env) == lid.startswith("Orders"), lid
