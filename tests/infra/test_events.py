"""The order_events mapping: exactly the records it handles, bounded retries, failures to SQS."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

EXPECTED_FILTERS = [
    {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["ORDER"]}}}},
    {"eventName": ["MODIFY"], "dynamodb": {"NewImage": {"entity": {"S": ["ORDER"]}}}},
    {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
        "dynamodb": {"OldImage": {"entity": {"S": ["SESSION"]}}},
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
    assert props["MaximumRecordAgeInSeconds"] == 86400
    assert props["StartingPosition"] == "TRIM_HORIZON"
    assert "StreamArn" in json.dumps(props["EventSourceArn"])
    queue = props["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert template.to_json()["Resources"][queue]["Type"] == "AWS::SQS::Queue"


def test_mapping_filters_select_exactly_the_handled_records(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopEvents"])
    (mapping,) = template.find_resources("AWS::Lambda::EventSourceMapping").values()
    patterns = [json.loads(f["Pattern"]) for f in mapping["Properties"]["FilterCriteria"]["Filters"]]
    assert patterns == EXPECTED_FILTERS


def test_failure_queue_is_encrypted_and_tls_only(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopEvents"])
    template.has_resource_properties(
        "AWS::SQS::Queue", {"SqsManagedSseEnabled": True, "MessageRetentionPeriod": 1209600}
    )
    template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
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
    assert function["Properties"]["ReservedConcurrentExecutions"] == 5


def _find(value: Any, key: str) -> list[dict[str, Any]]:
    """Every dict holding ``key`` inside a template value."""
    found = [value] if isinstance(value, dict) and key in value else []
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        found += _find(child, key)
    return found
