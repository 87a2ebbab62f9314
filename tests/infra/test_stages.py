"""Stages: several in one account and region share no physical name; protected unless listed as ephemeral."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from infra.settings import EPHEMERAL_STAGES, LONGEST_REGION, MAX_STAGE_LENGTH, S3_BUCKET_NAME_MAX, DeployConfig
from tests.infra.conftest import EDGE, PINNED

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

# Names that only need to be unique inside their parent resource, not in the account.
SCOPED_NAMES = {
    ("AWS::Cognito::UserPoolGroup", "GroupName"),  # inside the stage's user pool
    ("AWS::ApiGatewayV2::Stage", "StageName"),  # inside the stage's API
    ("AWS::ApiGatewayV2::Authorizer", "Name"),  # inside the stage's API
    ("AWS::IAM::Policy", "PolicyName"),  # inline policy of the stage's role
    ("AWS::CloudWatch::Alarm", "MetricName"),  # not a name of the alarm
    ("AWS::Lambda::LayerVersion", "LayerName"),  # absent today; a layer name is versioned, not owned
    ("AWS::Lambda::Alias", "Name"),  # `live`, inside the stage's function
    ("AWS::CodeDeploy::DeploymentGroup", "DeploymentConfigName"),  # names AWS's predefined canary
}
# Replaced on every deployment, never kept: a layer version (function versions keep their copy).
RELEASED = {"AWS::Lambda::LayerVersion"}
# Stateful resources a protected stage must keep when its stack goes or a replacement happens.
STATEFUL = {
    "AWS::DynamoDB::Table",
    "AWS::SecretsManager::Secret",
    "AWS::Cognito::UserPool",
    "AWS::Logs::LogGroup",
    "AWS::SQS::Queue",
}


def _literal(value: Any) -> str | None:
    """A name the template sets itself (pseudo parameters kept as placeholders); None for a reference."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        if all(isinstance(p, str) or p.get("Ref", "").startswith("AWS::") for p in parts):
            return separator.join(p if isinstance(p, str) else f"<{p['Ref']}>" for p in parts)
    return None


def physical_names(assembly: Any) -> set[tuple[str, str]]:
    """``{(resource type, name)}``: every name-like property and every stack name."""
    names = {("AWS::CloudFormation::Stack", stack.stack_name) for stack in assembly.shop.stacks}
    for template in assembly.templates.values():
        for resource in template["Resources"].values():
            for key, value in resource.get("Properties", {}).items():
                if not key.endswith("Name") or (resource["Type"], key) in SCOPED_NAMES:
                    continue
                name = _literal(value)
                if name is not None:
                    names.add((resource["Type"], name))
    return names


def test_two_stages_and_prod_share_no_physical_name(arm64, staging, prod_external) -> None:
    stages = {"dev": arm64, "staging": staging, "prod": prod_external}
    names = {stage: physical_names(assembly) for stage, assembly in stages.items()}
    for stage, found in names.items():
        # the bus, the API, the dashboard and the four stacks name themselves
        assert len(found) >= 7, found
        for resource_type, name in found:
            assert stage in name, f"a {resource_type} is named {name!r} without the stage {stage!r}"
    for first, second in (("dev", "staging"), ("dev", "prod"), ("staging", "prod")):
        shared = names[first] & names[second]
        assert not shared, f"{first} and {second} both create {shared}"


def test_the_event_bus_is_named_for_its_stage(arm64, staging) -> None:
    Template.from_json(arm64.templates["ShopEvents"]).has_resource_properties(
        "AWS::Events::EventBus", {"Name": "shop-dev-domain-events"}
    )
    Template.from_json(staging.templates["ShopEvents"]).has_resource_properties(
        "AWS::Events::EventBus", {"Name": "shop-staging-domain-events"}
    )


def test_business_metrics_have_a_namespace_per_stage(arm64, staging) -> None:
    for assembly, namespace in ((arm64, "Shop/dev"), (staging, "Shop/staging")):
        for name, (_, _, function) in assembly.functions().items():
            assert function["Properties"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"] == namespace, name


def _config(**context: str) -> DeployConfig:
    return DeployConfig.from_context(context.get)


PROTECTED = {**PINNED, "alarm_email": "oncall@example.com"}


@pytest.mark.parametrize("stage", ["prod", "production", "prod-eu", "staging", "dev2", "devx"])
def test_every_stage_not_listed_as_ephemeral_is_protected(stage) -> None:
    assert _config(stage=stage, **PROTECTED).protected


@pytest.mark.parametrize("stage", EPHEMERAL_STAGES)
def test_listed_stages_are_ephemeral(stage) -> None:
    assert not _config(stage=stage).protected


def test_the_ephemeral_list_extends_by_context_with_patterns() -> None:
    config = _config(stage="pr-42", ephemeral_stages="qa,pr-*")
    assert not config.protected
    assert config.ephemeral_stages == (*EPHEMERAL_STAGES, "qa", "pr-*")
    assert not _config(stage="qa", ephemeral_stages="qa,pr-*").protected
    assert _config(stage="prod", ephemeral_stages="qa,pr-*", **PROTECTED).protected


@pytest.mark.parametrize("missing", ["account", "region"])
def test_a_protected_stage_must_be_pinned(missing) -> None:
    context = {"stage": "production", **PROTECTED}
    del context[missing]
    with pytest.raises(ValueError, match=r"stage 'production' is protected: pin where it deploys with -c account="):
        _config(**context)


def test_a_protected_stage_needs_an_alarm_destination() -> None:
    with pytest.raises(ValueError, match=r"its alarms need a destination, -c alarm_email="):
        _config(stage="prod", **PINNED)
    assert _config(stage="prod", **PINNED, alarm_topic_arn="arn:aws:sns:eu-west-1:111111111111:pager").protected


@pytest.mark.parametrize(
    ("key", "value"),
    [("account", "1111"), ("region", "Europe"), ("alarm_topic_arn", "arn:aws:sqs:eu-west-1:111111111111:q")],
)
def test_pinned_values_are_validated(key, value) -> None:
    with pytest.raises(ValueError, match=f"context {key} must be"):
        _config(stage="prod", **{**PROTECTED, key: value})


def test_synth_of_an_unpinned_protected_stage_fails_before_any_stack() -> None:
    from infra.app_factory import build_app

    with pytest.raises(ValueError, match="stage 'prod-eu' is protected"):
        build_app(context={"stage": "prod-eu", "alarm_email": "oncall@example.com"})


def _environments(assembly: Any) -> set[str]:
    manifest = json.loads((assembly.outdir / "manifest.json").read_text())
    return {
        artifact["environment"]
        for artifact in manifest["artifacts"].values()
        if artifact["type"] == "aws:cloudformation:stack"
    }


def test_protected_stages_are_pinned_and_ephemeral_ones_are_not(arm64, staging, prod_external) -> None:
    assert _environments(arm64) == {"aws://unknown-account/unknown-region"}
    assert _environments(staging) == _environments(prod_external) == {"aws://111111111111/eu-west-1"}


@pytest.mark.parametrize("assembly_name", ["staging", "prod_external"])
def test_a_protected_stage_keeps_every_stateful_resource(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    kept = 0
    for stack_id, template in assembly.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] in STATEFUL:
                kept += 1
                assert resource.get("DeletionPolicy") == "Retain", f"{stack_id}/{logical_id}"
                assert resource.get("UpdateReplacePolicy") == "Retain", f"{stack_id}/{logical_id}"
            if resource["Type"] not in RELEASED:
                assert resource.get("DeletionPolicy") != "Delete", f"{stack_id}/{logical_id}"
    assert kept >= 8  # table, secret, queue, six log groups (five functions, access logs)
    Template.from_json(assembly.templates["ShopData"]).has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "DeletionProtectionEnabled": True,
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "ContributorInsightsSpecification": {"Enabled": True},
            "GlobalSecondaryIndexes": [Match.object_like({"ContributorInsightsSpecification": {"Enabled": True}})],
        },
    )


def test_the_user_pool_of_a_protected_stage_cannot_be_deleted(staging) -> None:
    Template.from_json(staging.templates["ShopApi"]).has_resource(
        "AWS::Cognito::UserPool",
        {"DeletionPolicy": "Retain", "Properties": Match.object_like({"DeletionProtection": "ACTIVE"})},
    )


def test_an_ephemeral_stage_tears_down_and_pays_for_no_contributor_insights(arm64) -> None:
    for template in arm64.templates.values():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] in STATEFUL:
                assert resource.get("DeletionPolicy") == "Delete", logical_id
    (table,) = Template.from_json(arm64.templates["ShopData"]).find_resources("AWS::DynamoDB::Table").values()
    assert table["Properties"].get("ContributorInsightsSpecification", {"Enabled": False}) == {"Enabled": False}


def test_the_status_shard_count_is_a_stage_setting_within_what_a_token_can_carry() -> None:
    from infra.settings import DEFAULT_STATUS_SHARDS, MAX_STATUS_SHARDS
    from shop import config, limits

    assert (MAX_STATUS_SHARDS, DEFAULT_STATUS_SHARDS) == (limits.MAX_STATUS_SHARDS, config.DEFAULT_STATUS_SHARDS)
    assert _config().status_shards == DEFAULT_STATUS_SHARDS
    assert _config(status_shards="64").status_shards == 64
    for wrong in ("0", "65", "-4", "four", "4.0", "²"):
        with pytest.raises(ValueError, match=r"context status_shards must be 1\.\.64"):
            _config(status_shards=wrong)


def test_a_shard_count_switch_is_two_stage_settings_checked_as_the_functions_check_them() -> None:
    from infra.constructs.functions import status_shard_env

    assert status_shard_env(_config(status_shards="4")) == {"STATUS_SHARDS": "4"}
    dual_read = _config(status_shards="4", status_shards_next="16")
    assert status_shard_env(dual_read) == {
        "STATUS_SHARDS": "4",
        "STATUS_SHARDS_NEXT": "16",
        "STATUS_SHARDS_WRITERS": "current",
    }
    writers = _config(status_shards="4", status_shards_next="16", status_shards_writers="next")
    assert status_shard_env(writers)["STATUS_SHARDS_WRITERS"] == "next"
    assert _config(status_shards="16", status_shards_next="4").status_shards_next == 4  # shrinking too
    for wrong, message in (
        ({"status_shards_next": "6"}, "one must divide the other"),
        ({"status_shards_next": "4"}, "must differ"),
        ({"status_shards_next": "65"}, r"status_shards_next must be 1\.\.64"),
        ({"status_shards_writers": "next"}, "needs status_shards_next"),
        ({"status_shards_next": "16", "status_shards_writers": "both"}, "must be current or next"),
    ):
        with pytest.raises(ValueError, match=message):
            _config(status_shards="4", **wrong)


@pytest.mark.parametrize("stage", ["Prod", "Prod-Shop", "pr-1234-login-fix-x", "pr_12", "-pr", "pr-", "a--b", "9lives"])
def test_a_stage_that_cannot_name_every_resource_is_refused_with_the_rule(stage) -> None:
    with pytest.raises(ValueError, match=rf"stage must be 1 to {MAX_STAGE_LENGTH} lower-case letters.*got '{stage}'"):
        _config(stage=stage, **PROTECTED)


@pytest.mark.parametrize("stage", ["dev", "prod", "pr-1234", "x" * MAX_STAGE_LENGTH])
def test_lower_case_stages_within_the_length_are_accepted(stage) -> None:
    assert _config(stage=stage, ephemeral_stages="*").stage == stage


def test_synth_of_a_mixed_case_stage_stops_before_any_stack() -> None:
    from infra.app_factory import build_app

    with pytest.raises(ValueError, match=r"stage must be 1 to .* lower-case letters.*got 'Prod-Shop'"):
        build_app(context={"stage": "Prod-Shop", **PROTECTED})


def test_the_longest_stage_fits_every_bucket_name_in_the_longest_region(arm64) -> None:
    """Every bucket the stacks name, with the longest stage, a 12-digit account and the longest region name."""
    buckets = [name for resource_type, name in physical_names(arm64) if resource_type == "AWS::S3::Bucket"]
    assert buckets  # the order archive
    for name in buckets:
        worst = (
            name.replace("shop-dev-", f"shop-{'x' * MAX_STAGE_LENGTH}-")
            .replace("<AWS::AccountId>", "0" * 12)
            .replace("<AWS::Region>", LONGEST_REGION)
        )
        assert len(worst) <= S3_BUCKET_NAME_MAX, worst
    assert len(f"shop-{'x' * (MAX_STAGE_LENGTH + 1)}-order-archive-{'0' * 12}-{LONGEST_REGION}") > S3_BUCKET_NAME_MAX


def test_the_api_custom_domain_certificate_must_be_in_the_api_region() -> None:
    elsewhere = EDGE["edge_origin_certificate_arn"].replace(":eu-west-1:", ":us-east-1:")
    with pytest.raises(ValueError, match="certificate must be in the API's region"):
        _config(stage="prod", **PROTECTED, **{**EDGE, "edge_origin_certificate_arn": elsewhere})
    assert _config(stage="prod", **PROTECTED, **EDGE).edge is not None  # eu-west-1, as the API


def test_an_unpinned_stage_checks_the_certificate_against_the_region_the_cli_deploys_to(monkeypatch) -> None:
    """A dev stage (no -c region) deploys to the CLI's region, which the CLI hands the app as CDK_DEFAULT_REGION."""
    monkeypatch.setenv("CDK_DEFAULT_REGION", "us-east-1")
    with pytest.raises(ValueError, match=r"the API in us-east-1 \(the CLI's region.*certificate must be in the API's"):
        _config(stage="dev", **EDGE)  # the certificate is in eu-west-1
    assert _config(stage="dev", region="eu-west-1", **EDGE).edge is not None  # a pinned region comes first
    monkeypatch.setenv("CDK_DEFAULT_REGION", "eu-west-1")
    assert _config(stage="dev", **EDGE).edge is not None


@pytest.mark.parametrize(("value", "expected"), [(None, 0), ("0", 0), ("5", 5)])
def test_order_events_reserves_no_concurrency_unless_asked(value, expected) -> None:
    context = {} if value is None else {"order_events_concurrency": value}
    assert _config(**context).order_events_concurrency == expected
    with pytest.raises(ValueError, match="order_events_concurrency must be 0"):
        _config(order_events_concurrency="-1")
