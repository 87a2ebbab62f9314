"""Safe deployments: a `live` alias per function, CodeDeploy canaries in protected stages, the bus archive."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from infra.settings import EVENT_ARCHIVE_RETENTION_DAYS, ROOT, runbook_anchor
from tests.infra.conftest import STAGING_RUNBOOK

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

FUNCTIONS = {"customers", "products", "orders", "sessions", "order_events", "payments"}


def _aliases(assembly: Any) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """``{function name: (stack id, alias logical id, alias)}``."""
    names = {logical_id: name for name, (_, logical_id, _) in assembly.functions().items()}
    found = {}
    for logical_id, (stack_id, alias) in assembly.resources("AWS::Lambda::Alias").items():
        name = names[alias["Properties"]["FunctionName"]["Ref"]]
        assert name not in found, f"{name} has two aliases"
        found[name] = (stack_id, logical_id, alias)
    return found


@pytest.mark.parametrize("assembly_name", ["arm64", "prod_external", "snapstart"])
def test_every_function_has_a_live_alias_on_a_published_version(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    aliases = _aliases(assembly)
    assert set(aliases) == FUNCTIONS
    for name, (stack_id, _, alias) in aliases.items():
        assert alias["Properties"]["Name"] == "live", name
        version_id = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
        version = assembly.templates[stack_id]["Resources"][version_id]
        assert version["Type"] == "AWS::Lambda::Version", name


@pytest.mark.parametrize("assembly_name", ["arm64", "snapstart"])
def test_callers_invoke_the_alias_never_the_unqualified_function(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    alias_ids = {logical_id for _, logical_id, _ in _aliases(assembly).values()}
    api = assembly.templates["ShopApi"]["Resources"]
    integrations = [r for r in api.values() if r["Type"] == "AWS::ApiGatewayV2::Integration"]
    assert len(integrations) == len(FUNCTIONS - {"order_events"})  # one per API function
    for integration in integrations:
        assert integration["Properties"]["IntegrationUri"]["Ref"] in alias_ids
    # API Gateway may invoke the alias only (the permission names it)
    permissions = [
        r
        for r in api.values()
        if r["Type"] == "AWS::Lambda::Permission" and r["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    assert permissions
    for permission in permissions:
        assert permission["Properties"]["FunctionName"]["Ref"] in alias_ids
    (mapping,) = [_ for _, m in assembly.resources("AWS::Lambda::EventSourceMapping").values() for _ in [m]]
    assert {"Ref": _aliases(assembly)["order_events"][1]} in mapping["Properties"]["FunctionName"]["Fn::Join"][1][0][
        "Fn::Select"
    ][1]["Fn::Split"]


@pytest.mark.parametrize("assembly_name", ["prod_external", "staging", "snapstart"])
def test_a_protected_stage_shifts_each_alias_by_a_canary_that_rolls_back_on_errors(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    groups = assembly.resources("AWS::CodeDeploy::DeploymentGroup")
    assert len(groups) == len(FUNCTIONS)
    for logical_id, (stack_id, group) in groups.items():
        props = group["Properties"]
        assert props["DeploymentConfigName"] == "CodeDeployDefault.LambdaCanary10Percent5Minutes", logical_id
        assert props["DeploymentStyle"] == {
            "DeploymentOption": "WITH_TRAFFIC_CONTROL",
            "DeploymentType": "BLUE_GREEN",
        }
        assert props["AutoRollbackConfiguration"]["Enabled"] is True
        assert "DEPLOYMENT_STOP_ON_ALARM" in props["AutoRollbackConfiguration"]["Events"]
        alarms = [
            assembly.templates[stack_id]["Resources"][a["Name"]["Ref"]] for a in props["AlarmConfiguration"]["Alarms"]
        ]
        errors = [a["Properties"] for a in alarms if a["Properties"]["MetricName"] == "Errors"]
        (errors_alarm,) = errors
        assert errors_alarm["Threshold"] == 1
        dimensions = {d["Name"] for d in errors_alarm["Dimensions"]}
        assert dimensions == {"FunctionName", "Resource"}  # the alias's invocations, old and new version
    for name, (stack_id, logical_id, _) in _aliases(assembly).items():
        Template.from_json(assembly.templates[stack_id]).has_resource(
            "AWS::Lambda::Alias",
            {"UpdatePolicy": {"CodeDeployLambdaAliasUpdate": Match.object_like({})}},
        )
        alias = assembly.templates[stack_id]["Resources"][logical_id]
        assert "CodeDeployLambdaAliasUpdate" in alias["UpdatePolicy"], name


def test_an_ephemeral_stage_deploys_at_once(arm64) -> None:
    assert arm64.resources("AWS::CodeDeploy::DeploymentGroup") == {}
    for _, _, alias in _aliases(arm64).values():
        assert "UpdatePolicy" not in alias


@pytest.mark.parametrize("assembly_name", ["arm64", "staging"])
def test_the_bus_archives_every_event_for_replay(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    stage = assembly.shop.config.stage
    template = Template.from_json(assembly.templates["ShopEvents"])
    (bus_id,) = template.find_resources("AWS::Events::EventBus")
    (archive,) = template.find_resources("AWS::Events::Archive").values()
    props = archive["Properties"]
    assert props["SourceArn"] == {"Fn::GetAtt": [bus_id, "Arn"]}
    assert props["RetentionDays"] == EVENT_ARCHIVE_RETENTION_DAYS == 90
    assert props["ArchiveName"] == f"shop-{stage}-domain-events"
    # every event put on the bus (an archive needs a pattern): the shop's account, pinned or not
    account = assembly.shop.config.account or {"Ref": "AWS::AccountId"}
    assert props["EventPattern"] == {"account": [account]}


def test_the_rollback_alarms_link_their_runbook_section(staging) -> None:
    headings = re.findall(r"^#{2,4} (.+)$", (ROOT / "docs" / "operations.md").read_text(), flags=re.MULTILINE)
    anchors = {runbook_anchor(heading) for heading in headings}
    alarms = Template.from_json(staging.templates["ShopApi"]).find_resources("AWS::CloudWatch::Alarm")
    assert len(alarms) == 2 * len(
        FUNCTIONS - {"order_events"}
    )  # the alias's Errors and the new version's ServerErrors, per API function
    for logical_id, alarm in alarms.items():
        found = re.search(r"Runbook: (\S+)#([a-z0-9_-]+)$", alarm["Properties"]["AlarmDescription"])
        assert found, logical_id
        assert found.group(1) == STAGING_RUNBOOK
        assert found.group(2) == "deployment-rolled-back"
        assert found.group(2) in anchors


@pytest.mark.parametrize("assembly_name", ["prod_external", "snapstart"])
def test_each_canary_rolls_back_on_the_new_versions_handled_failures(request, assembly_name) -> None:
    """Lambda's Errors misses a 500 the resolver answers and a stream record reported failed: each deployment group
    also alarms on the function's own failure count (shop.version_metrics) of the version being deployed."""
    assembly = request.getfixturevalue(assembly_name)
    failure_metric = {
        "order_events": "RecordsFailed",
        **dict.fromkeys(FUNCTIONS - {"order_events"}, "ServerErrors"),
    }
    by_alias = {}
    for name, (stack_id, _, alias) in _aliases(assembly).items():
        resources = assembly.templates[stack_id]["Resources"]
        group = resources[alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]["DeploymentGroupName"]["Ref"]]
        alarm_ids = [a["Name"]["Ref"] for a in group["Properties"]["AlarmConfiguration"]["Alarms"]]
        (failures_id,) = [a for a in alarm_ids if resources[a]["Properties"]["MetricName"] == failure_metric[name]]
        props = resources[failures_id]["Properties"]
        assert props["Namespace"] == "Shop/prod"
        assert (props["Threshold"], props["EvaluationPeriods"], props["Statistic"]) == (1, 1, "Sum")
        assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert {d["Name"]: d["Value"] for d in props["Dimensions"]} == {
            "service": name,
            "function_version": {"Fn::GetAtt": [alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0], "Version"]},
        }
        assert failures_id in alias.get("DependsOn", []), name  # watching the new version before traffic moves
        by_alias[name] = failures_id
    assert set(by_alias) == FUNCTIONS


@pytest.mark.parametrize("assembly_name", ["prod_external", "arm64"])
def test_function_versions_are_not_retained(request, assembly_name) -> None:
    """docs/deploy.md: the update that publishes a version deletes the one it replaced (no retain policy)."""
    assembly = request.getfixturevalue(assembly_name)
    versions = assembly.resources("AWS::Lambda::Version")
    assert len(versions) == len(FUNCTIONS)
    for logical_id, (_, version) in versions.items():
        assert version.get("DeletionPolicy", "Delete") == "Delete", logical_id
        assert version.get("UpdateReplacePolicy", "Delete") == "Delete", logical_id
