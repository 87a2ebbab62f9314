"""The order_events mapping: exactly the records it handles, bounded retries, whole failed batches to S3."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

# Lambda takes at most 5 filters per event source mapping by default: grouped by event, two are enough.
EXPECTED_FILTERS = [
    {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {"NewImage": {"entity": {"S": ["ORDER", "PRODUCT", "CATEGORY_MOVE"]}}},
    },
    {"eventName": ["MODIFY"], "dynamodb": {"NewImage": {"entity": {"S": ["STOCK_SHARD"]}}}},
    {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
        "dynamodb": {"OldImage": {"entity": {"S": ["SESSION", "CUSTOMER_CART", "ORDER"]}}},
    },
]


def test_mapping_failure_handling(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopEvents"])
    template.resource_count_is("AWS::Lambda::EventSourceMapping", 1)
    (_, function_id, _) = arm64.functions()["order_events"]
    (mapping,) = template.find_resources("AWS::Lambda::EventSourceMapping").values()
    props = mapping["Properties"]
    # the stream invokes the `live` alias: {Fn::Join: [function name from the alias ARN, ":live"]}
    (alias_id,) = [r["Ref"] for r in _find(props["FunctionName"], "Ref")]
    alias = template.to_json()["Resources"][alias_id]
    assert alias["Type"] == "AWS::Lambda::Alias"
    assert alias["Properties"]["Name"] == "live"
    assert alias["Properties"]["FunctionName"] == {"Ref": function_id}
    assert props["FunctionName"]["Fn::Join"][1][-1] == ":live"
    assert props["BatchSize"] == 25
    assert props["MaximumBatchingWindowInSeconds"] == 1
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BisectBatchOnFunctionError"] is True
    assert props["MaximumRetryAttempts"] == 5
    # well inside the stream's 24 h retention: a given-up record is still there to archive
    assert props["MaximumRecordAgeInSeconds"] == 6 * 3600
    assert props["StartingPosition"] == "TRIM_HORIZON"
    assert props["MetricsConfig"] == {"Metrics": ["EventCount"]}
    assert "StreamArn" in json.dumps(props["EventSourceArn"])
    bucket = props["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert template.to_json()["Resources"][bucket]["Type"] == "AWS::S3::Bucket"


def test_mapping_filters_select_exactly_the_handled_records(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopEvents"])
    (mapping,) = template.find_resources("AWS::Lambda::EventSourceMapping").values()
    patterns = [json.loads(f["Pattern"]) for f in mapping["Properties"]["FilterCriteria"]["Filters"]]
    assert patterns == EXPECTED_FILTERS
    assert len(patterns) <= 5  # Lambda's default quota of filters per event source mapping


def test_failure_bucket_is_private_encrypted_tls_only_and_expires(arm64, prod_external) -> None:
    template = Template.from_json(arm64.templates["ShopEvents"])
    template.resource_count_is("AWS::SQS::Queue", 0)
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            "LifecycleConfiguration": {"Rules": [{"ExpirationInDays": 90, "Status": "Enabled"}]},
        },
    )
    Template.from_json(prod_external.templates["ShopEvents"]).has_resource(
        "AWS::S3::Bucket", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    )
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )


def test_order_events_may_publish_to_the_bus_only(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopEvents"])
    template.resource_count_is("AWS::Events::EventBus", 1)
    (bus_id,) = template.find_resources("AWS::Events::EventBus")
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        {
                            "Action": "events:PutEvents",
                            "Effect": "Allow",
                            "Resource": {"Fn::GetAtt": [bus_id, "Arn"]},
                        }
                    ]
                )
            }
        },
    )
    (_, _, function) = arm64.functions()["order_events"]
    assert function["Properties"]["Environment"]["Variables"]["EVENT_BUS_NAME"] == {"Ref": bus_id}
    # no reservation by default: a new account's concurrency quota (10) leaves none to reserve (issue 23)
    assert "ReservedConcurrentExecutions" not in function["Properties"]


def test_order_events_may_only_write_failure_objects(arm64) -> None:
    """Lambda needs s3:PutObject and s3:ListBucket for an S3 destination; nothing reads or deletes.
    The one other object it may write is an archived order (orders/ of the archive bucket)."""
    template = Template.from_json(arm64.templates["ShopEvents"])
    (bucket_id,) = template.find_resources("AWS::S3::Bucket")
    statements = [
        statement
        for policy in template.find_resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    s3_statements = [s for s in statements if "s3:" in json.dumps(s["Action"])]
    archive_objects = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":s3:::shop-dev-order-archive-",
                {"Ref": "AWS::AccountId"},
                "-",
                {"Ref": "AWS::Region"},
                "/orders/*",
            ],
        ]
    }
    assert s3_statements == [
        {
            "Action": "s3:PutObject",
            "Effect": "Allow",
            "Resource": [archive_objects, {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/aws/lambda/*"]]}],
        },
        {"Action": "s3:ListBucket", "Effect": "Allow", "Resource": {"Fn::GetAtt": [bucket_id, "Arn"]}},
    ]


def test_the_failure_bucket_and_processor_are_outputs_for_replay(arm64) -> None:
    outputs = arm64.templates["ShopEvents"]["Outputs"]
    assert {"StreamFailureBucket", "OrderEventsFunction"} <= set(outputs)


def _find(value: Any, key: str) -> list[dict[str, Any]]:
    """Every dict holding ``key`` inside a template value."""
    found = [value] if isinstance(value, dict) and key in value else []
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        found += _find(child, key)
    return found
