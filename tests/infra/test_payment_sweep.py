"""The payment windows' sweep, deployed with `-c payments=stripe`: an EventBridge rule invokes payment_steps' live
alias every minute with a "Scheduled Event" (PaymentService.sweep: docs/payments.md, "The windows' sweep"), which
may invoke it, retries a refused delivery within the minute and keeps no dead-letter queue; Lambda does not retry a
failed run (the next run does its work). A failed run is payment_steps' Errors alarm, an undelivered one the rule's
own. With payments off there is no payment_steps and no rule."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.functions import table_statements
from infra.settings import LIVE_ALIAS, PAYMENT_STEPS_FUNCTION, ROOT

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

SWEEP_EVENT = ROOT / "events" / "payment_steps" / "payment_window_sweep.json"


def _of_type(assembly: Any, stack_id: str, cfn_type: str) -> dict[str, Any]:
    return dict(Template.from_json(assembly.templates[stack_id]).find_resources(cfn_type))


def _rules(assembly: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    return assembly.resources("AWS::Events::Rule")


def _steps_alias(assembly: Any) -> str:
    """The logical id of payment_steps' `live` alias."""
    (_, function_id, _) = assembly.functions()["payment_steps"]
    (alias_id,) = [
        logical_id
        for logical_id, alias in _of_type(assembly, "ShopEvents", "AWS::Lambda::Alias").items()
        if alias["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    assert _of_type(assembly, "ShopEvents", "AWS::Lambda::Alias")[alias_id]["Properties"]["Name"] == LIVE_ALIAS
    return alias_id


def _sweep_rule(assembly: Any) -> tuple[str, dict[str, Any]]:
    ((rule_id, (stack_id, rule)),) = _rules(assembly).items()
    assert stack_id == "ShopEvents"
    return rule_id, rule["Properties"]


@pytest.mark.parametrize(("assembly_name", "stage"), [("payments_on", "prod"), ("capture_on_confirm", "dev")])
def test_the_sweep_runs_every_minute_on_payment_steps_live_alias(request, assembly_name, stage) -> None:
    assembly = request.getfixturevalue(assembly_name)
    _, rule = _sweep_rule(assembly)
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert rule["State"] == "ENABLED"
    assert rule["Name"] == f"shop-{stage}-payment-window-sweep"
    assert "EventPattern" not in rule  # a schedule, nothing else
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Ref": _steps_alias(assembly)}  # what the stream invokes too, never $LATEST
    # EventBridge's own event: the handler tells the sweep by its detail-type, as in the sample event
    assert not {"Input", "InputPath", "InputTransformer"} & set(target)
    assert json.loads(SWEEP_EVENT.read_text())["detail-type"] == "Scheduled Event"


def test_a_refused_delivery_is_retried_within_the_minute_and_a_failed_run_is_not(payments_on) -> None:
    _, rule = _sweep_rule(payments_on)
    (target,) = rule["Targets"]
    assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 60, "MaximumRetryAttempts": 2}
    assert "DeadLetterConfig" not in target  # the event carries no data: the next run does what a copy would
    alias_id = _steps_alias(payments_on)
    (config,) = [
        c["Properties"]
        for c in _of_type(payments_on, "ShopEvents", "AWS::Lambda::EventInvokeConfig").values()
        if json.dumps({"Ref": alias_id}) in json.dumps(c["Properties"]["Qualifier"])
    ]
    assert (config["MaximumRetryAttempts"], config["MaximumEventAgeInSeconds"]) == (0, 60)
    assert "DestinationConfig" not in config


def test_eventbridge_may_invoke_the_alias_for_this_rule_only(payments_on) -> None:
    rule_id, _ = _sweep_rule(payments_on)
    alias_id = _steps_alias(payments_on)
    permissions = [
        p["Properties"]
        for p in _of_type(payments_on, "ShopEvents", "AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "events.amazonaws.com"
    ]
    assert permissions == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Ref": alias_id},
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [rule_id, "Arn"]},
        }
    ]


def test_no_sweep_without_payments(arm64, prod_external) -> None:
    for assembly in (arm64, prod_external):
        assert "payment_steps" not in assembly.functions()
        assert _rules(assembly) == {}
        assert not [
            p
            for _, p in assembly.resources("AWS::Lambda::Permission").values()
            if p["Properties"]["Principal"] == "events.amazonaws.com"
        ]


def _alarms(assembly: Any) -> dict[str, dict[str, Any]]:
    return {
        logical_id: alarm["Properties"]
        for logical_id, alarm in _of_type(assembly, "ShopMonitoring", "AWS::CloudWatch::Alarm").items()
    }


def test_a_failed_sweep_run_is_payment_steps_errors_alarm(payments_on) -> None:
    """Lambda's Errors of the function (dimension FunctionName alone: every version and alias, so the scheduled
    runs through `live` too); PaymentService.sweep raises when some order's provider call failed."""
    (_, function_id, _) = payments_on.functions()["payment_steps"]
    (errors,) = [
        props
        for logical_id, props in _alarms(payments_on).items()
        if logical_id.startswith("MonitoringPaymentStepsErrors")
    ]
    assert (errors["Namespace"], errors["MetricName"], errors["Statistic"]) == ("AWS/Lambda", "Errors", "Sum")
    (dimension,) = errors["Dimensions"]
    assert dimension["Name"] == "FunctionName"
    assert function_id in json.dumps(dimension["Value"])
    assert errors["AlarmDescription"].endswith("#function-errors")


def test_a_sweep_eventbridge_cannot_deliver_pages(payments_on, arm64) -> None:
    assert not [logical_id for logical_id in _alarms(arm64) if "PaymentSweep" in logical_id]
    rule_id, _ = _sweep_rule(payments_on)
    (alarm,) = [
        props for logical_id, props in _alarms(payments_on).items() if logical_id.startswith("MonitoringPaymentSweep")
    ]
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("AWS/Events", "FailedInvocations", "Sum")
    assert (alarm["Threshold"], alarm["Period"]) == (1, 60)
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (5, 3)  # sustained: the next run may land
    (dimension,) = alarm["Dimensions"]
    assert dimension["Name"] == "RuleName"
    outputs = payments_on.templates["ShopEvents"]["Outputs"].values()
    (output,) = [o for o in outputs if o.get("Export", {}).get("Name") == dimension["Value"]["Fn::ImportValue"]]
    assert output["Value"] == {"Ref": rule_id}  # a rule's Ref is its name
    assert alarm["AlarmDescription"].endswith("#payment-sweep-not-delivered")


def test_index_only_grants_are_reads_the_function_declares() -> None:
    """FunctionSpec.index_only: on GSI1 alone, and taken off the table's statements."""
    statements = [
        s.to_statement_json() for s in table_statements(PAYMENT_STEPS_FUNCTION, "arn:table", "arn:table/index/GSI1")
    ]
    on_index = [s for s in statements if s["Resource"] == "arn:table/index/GSI1"]
    assert on_index == [{"Action": "dynamodb:Query", "Effect": "Allow", "Resource": "arn:table/index/GSI1"}]
    assert all(s["Resource"] == "arn:table" for s in statements if s not in on_index)
    for index_only in (("UpdateItem",), ("Scan",)):  # a write; an operation it does not declare
        spec = dataclasses.replace(PAYMENT_STEPS_FUNCTION, index_only=index_only)
        with pytest.raises(ValueError, match="index_only"):
            table_statements(spec, "arn:table", "arn:table/index/GSI1")
