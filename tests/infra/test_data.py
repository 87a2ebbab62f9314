"""The table: keys, GSI1, billing, stream, TTL, PITR, encryption, stage-dependent protection."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match, Template

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


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
        value = function["Properties"]["Environment"]["Variables"]["PAGINATION_SECRET"]
        joined = "".join(part if isinstance(part, str) else "<ref>" for part in value["Fn::Join"][1])
        assert joined.startswith("{{resolve:secretsmanager:"), name
