"""Alarms that mean something: sustained breaches, rates, a destination, a runbook section each."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.constructs.monitoring import AUTHORISATIONS_LAPSED_METRIC, runbook_anchor
from tests.infra.conftest import STAGING_ALARM_TOPIC, STAGING_RUNBOOK

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
API_FUNCTIONS = {"customers", "products", "orders", "sessions", "payments"}
# (function, timeout s) from infra/settings.py, written out: 80% of the timeout, in ms
NEAR_TIMEOUT_MS = {
    "customers": 8000,
    "products": 8000,
    "orders": 8000,
    "sessions": 8000,
    "payments": 8000,
    "order_events": 24000,
    "payment_steps": 48000,
}


def _alarms(assembly: Any) -> dict[str, dict[str, Any]]:
    return Template.from_json(assembly.templates["ShopMonitoring"]).find_resources("AWS::CloudWatch::Alarm")


def _metric_names(alarm: dict[str, Any]) -> set[str]:
    props = alarm["Properties"]
    if "MetricName" in props:
        return {props["MetricName"]}
    return {m["MetricStat"]["Metric"]["MetricName"] for m in props["Metrics"] if "MetricStat" in m}


def _by_id(assembly: Any, prefix: str) -> dict[str, Any]:
    (alarm,) = [a for logical_id, a in _alarms(assembly).items() if logical_id.startswith(f"Monitoring{prefix}")]
    return alarm["Properties"]


def _operations_anchors() -> set[str]:
    return {runbook_anchor(m) for m in re.findall(r"^#{2,4} (.+)$", OPERATIONS.read_text(), flags=re.MULTILINE)}


# A stream record given up (and archived, or not) is never noise: one datapoint pages.
ONE_DATAPOINT = ("StreamRecordsDropped", "StreamFailuresNotArchived")


def test_every_alarm_fires_on_a_sustained_breach(arm64) -> None:
    alarms = _alarms(arm64)
    assert len(alarms) >= 20
    for logical_id, alarm in alarms.items():
        props = alarm["Properties"]
        if any(name in logical_id for name in ONE_DATAPOINT):
            assert (props["EvaluationPeriods"], props["DatapointsToAlarm"]) == (1, 1), logical_id
            continue
        assert props["EvaluationPeriods"] == 5, logical_id
        assert props["DatapointsToAlarm"] == 3, logical_id
        assert props["TreatMissingData"] == "notBreaching", logical_id


def test_every_alarm_links_an_existing_runbook_section(arm64, staging, payments_on) -> None:
    anchors = _operations_anchors()
    for assembly, base in (
        (arm64, "docs/operations.md"),
        (staging, STAGING_RUNBOOK),
        (payments_on, "docs/operations.md"),
    ):
        for logical_id, alarm in _alarms(assembly).items():
            found = re.search(r"Runbook: (\S+)#([a-z0-9_-]+)$", alarm["Properties"]["AlarmDescription"])
            assert found, logical_id
            assert found.group(1) == base, logical_id
            assert found.group(2) in anchors, f"{logical_id}: no section #{found.group(2)} in docs/operations.md"


def test_function_alarms_errors_duration_and_throttles_without_the_designed_cap(arm64) -> None:
    (_, _, stream) = arm64.functions()["order_events"]
    assert "ReservedConcurrentExecutions" not in stream["Properties"]
    alarms = _alarms(arm64).values()
    per_function: dict[str, set[str]] = {}
    for alarm in alarms:
        props = alarm["Properties"]
        for dimension in props.get("Dimensions", []):
            if dimension["Name"] == "FunctionName":
                function_id = dimension["Value"]["Fn::ImportValue"]
                per_function.setdefault(function_id, set()).add(props["MetricName"])
    names = {logical_id: name for name, (_, logical_id, _) in arm64.functions().items()}
    by_name = {next(n for lid, n in names.items() if lid in key): metrics for key, metrics in per_function.items()}
    assert by_name == {
        **{name: {"Errors", "Duration", "Throttles"} for name in API_FUNCTIONS},
        # no reserved concurrency by default: a throttle of order_events is the account's pool exhausted
        # (with -c order_events_concurrency=N it throttles by design and has no throttle alarm)
        "order_events": {"Errors", "Duration", "Throttles", "IteratorAge", "DestinationDeliveryFailures"},
    }
    for alarm in alarms:
        props = alarm["Properties"]
        if props.get("MetricName") == "Duration":
            assert props["ExtendedStatistic"] == "p99"
            function_id = props["Dimensions"][0]["Value"]["Fn::ImportValue"]
            name = next(n for lid, n in names.items() if lid in function_id)
            assert props["Threshold"] == NEAR_TIMEOUT_MS[name], name


def test_payment_steps_has_its_own_stream_alarms_with_payments_on(arm64, payments_on) -> None:
    assert not [logical_id for logical_id in _alarms(arm64) if "PaymentSteps" in logical_id]
    alarms = {logical_id: a["Properties"] for logical_id, a in _alarms(payments_on).items()}
    (_, function_id, _) = payments_on.functions()["payment_steps"]
    on_function = {
        props["MetricName"]: props
        for props in alarms.values()
        if any(
            d["Name"] == "FunctionName" and function_id in json.dumps(d["Value"]) for d in props.get("Dimensions", [])
        )
    }
    assert set(on_function) == {"Errors", "Duration", "Throttles", "IteratorAge", "DestinationDeliveryFailures"}
    assert on_function["Duration"]["Threshold"] == NEAR_TIMEOUT_MS["payment_steps"]
    (failed,) = _by_id(payments_on, "PaymentStepsRecordsFailed")["Metrics"]
    assert failed["MetricStat"]["Metric"]["MetricName"] == "RecordsFailed"  # what functions/payment_steps counts
    assert failed["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "service", "Value": "payment_steps"}]
    dropped = _by_id(payments_on, "PaymentStepsStreamRecordsDropped")
    (dimension,) = dropped["Dimensions"]
    assert dimension["Name"] == "EventSourceMappingUUID"
    assert "PaymentStepsLiveDynamoDBEventSource" in json.dumps(dimension["Value"])  # its own mapping
    assert (dropped["EvaluationPeriods"], dropped["DatapointsToAlarm"]) == (1, 1)
    assert not [lid for lid in alarms if "PaymentSteps" in lid and "ServerErrors" in lid]  # it answers no request


def test_api_rates_and_latency(arm64) -> None:
    for prefix, metric, threshold in (("Api5xxRate", "5xx", 1), ("Api429Rate", "Api429", 5), ("Api4xxRate", "4xx", 25)):
        props = _by_id(arm64, prefix)
        assert props["Threshold"] == threshold, prefix
        (expression,) = [m["Expression"] for m in props["Metrics"] if "Expression" in m]
        assert expression == "IF(requests >= 20, 100 * FILL(errors, 0) / requests, 0)", prefix
        assert _metric_names({"Properties": props}) == {"Count", metric}, prefix
    latency = _by_id(arm64, "ApiLatencyP99")
    assert (latency["MetricName"], latency["ExtendedStatistic"], latency["Threshold"]) == ("Latency", "p99", 1000)


def test_429s_are_counted_from_the_access_log(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopMonitoring"])
    template.has_resource_properties(
        "AWS::Logs::MetricFilter",
        {
            "FilterPattern": '{ $.status = "429" }',
            "MetricTransformations": [{"MetricNamespace": "Shop/dev", "MetricName": "Api429", "MetricValue": "1"}],
        },
    )


def test_stream_and_table_alarms(arm64) -> None:
    names = set().union(*(_metric_names(a) for a in _alarms(arm64).values()))
    assert {"IteratorAge", "RecordsFailed", "DroppedEventCount", "DestinationDeliveryFailures"} <= names
    assert {"ThrottledRequests", "SystemErrors", "TransactionConflict"} <= names
    (failed,) = _by_id(arm64, "StreamRecordsFailed")["Metrics"]
    assert failed["MetricStat"]["Metric"]["Namespace"] == "Shop/dev"
    assert failed["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "service", "Value": "order_events"}]
    dropped = _by_id(arm64, "StreamRecordsDropped")
    assert dropped["Namespace"] == "AWS/Lambda"
    (dimension,) = dropped["Dimensions"]
    assert dimension["Name"] == "EventSourceMappingUUID"
    assert "OrderEventsLiveDynamoDBEventSource" in json.dumps(dimension["Value"])  # the mapping of the live alias
    conflicts = _by_id(arm64, "TableTransactionConflicts")
    assert conflicts["Namespace"] == "AWS/DynamoDB"
    assert conflicts["Threshold"] == 10


def test_answers_503_for_the_store_alarm_from_every_api_function(arm64) -> None:
    """Locally DynamoDB's own ThrottledRequests cannot be drilled; the functions' StoreUnavailable can."""
    alarm = _by_id(arm64, "StoreUnavailableAnswers")
    assert alarm["Threshold"] == 5
    stats = [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m]
    assert {m["MetricName"] for m in stats} == {"StoreUnavailable"}
    services = {d["Value"] for m in stats for d in m["Dimensions"]}
    assert services == {"customers", "orders", "payments", "products", "sessions"}


def test_the_dashboard_shows_the_business_metrics(arm64) -> None:
    (dashboard,) = (
        Template.from_json(arm64.templates["ShopMonitoring"]).find_resources("AWS::CloudWatch::Dashboard").values()
    )
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric, service in (
        ("OrdersPlaced", "orders"),
        ("OrderValueCents", "orders"),
        ("OutOfStockRejections", "orders"),
        ("ValidationFailures", "customers"),
        ("ValidationFailures", "sessions"),
        ("OrdersConfirmed", "order_events"),
        ("StatusChanges", "order_events"),
        ("CartsAbandoned", "order_events"),
        ("RecordsFailed", "order_events"),
    ):
        assert f'[\\"Shop/dev\\",\\"{metric}\\",\\"service\\",\\"{service}\\"' in body, metric


def test_every_alarm_notifies_the_stage_topic(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopMonitoring"])
    (topic_id,) = template.find_resources("AWS::SNS::Topic")
    for logical_id, alarm in _alarms(arm64).items():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}], logical_id
        assert alarm["Properties"]["OKActions"] == [{"Ref": topic_id}], logical_id


def test_a_protected_stage_notifies_its_destination(staging, prod_external) -> None:
    staging_template = Template.from_json(staging.templates["ShopMonitoring"])
    staging_template.resource_count_is("AWS::SNS::Topic", 0)
    for logical_id, alarm in _alarms(staging).items():
        assert alarm["Properties"]["AlarmActions"] == [STAGING_ALARM_TOPIC], logical_id
    Template.from_json(prod_external.templates["ShopMonitoring"]).has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "oncall@example.com"}
    )


def test_a_low_traffic_stage_alarms_on_any_sustained_5xx_but_the_transient_503(arm64) -> None:
    """Api5xxRate ignores minutes under 20 requests: Api5xxCount counts 5xx answers whatever the traffic,
    from the access log, which can leave out the store's transient 503 (the gateway's 5xx metric cannot)."""
    props = _by_id(arm64, "Api5xxCount")
    assert (props["Namespace"], props["MetricName"], props["Statistic"], props["Threshold"]) == (
        "Shop/dev",
        "Api5xxNot503",
        "Sum",
        1,
    )
    assert (props["EvaluationPeriods"], props["DatapointsToAlarm"]) == (5, 3)
    Template.from_json(arm64.templates["ShopMonitoring"]).has_resource_properties(
        "AWS::Logs::MetricFilter",
        {
            "FilterPattern": '{ ($.status = "5*") && ($.status != "503") }',
            "MetricTransformations": [
                {"MetricNamespace": "Shop/dev", "MetricName": "Api5xxNot503", "MetricValue": "1"}
            ],
        },
    )


def test_each_api_function_alarms_on_its_handled_server_errors(arm64) -> None:
    """A 500 the resolver answers is no Lambda error: each API function alarms on its ServerErrors count."""
    for name in API_FUNCTIONS:
        label = "".join(part.title() for part in name.split("_"))
        props = _by_id(arm64, f"{label}ServerErrors")
        assert props["Threshold"] == 1
        (metric,) = props["Metrics"]
        assert metric["MetricStat"]["Metric"]["Namespace"] == "Shop/dev"
        assert metric["MetricStat"]["Metric"]["MetricName"] == "ServerErrors"
        assert metric["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "service", "Value": name}]


def test_a_lapsed_authorisation_pages_on_one_datapoint_with_payments_on(payments_on, arm64) -> None:
    """order_events counts AuthorisationsLapsed (namespace Shop/<stage>, dimension service) when Stripe cancels a
    confirmed order's uncaptured authorisation: no money is held for an order about to ship, never noise."""
    assert not [logical_id for logical_id in _alarms(arm64) if "Lapsed" in logical_id]  # payments off: none
    props = _by_id(payments_on, "PaymentAuthorisationLapsed")
    assert (props["Threshold"], props["EvaluationPeriods"], props["DatapointsToAlarm"]) == (1, 1, 1)
    assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert props["TreatMissingData"] == "notBreaching"
    (metric,) = props["Metrics"]
    assert metric["MetricStat"]["Metric"] == {
        "Namespace": "Shop/prod",
        "MetricName": AUTHORISATIONS_LAPSED_METRIC,
        "Dimensions": [{"Name": "service", "Value": "order_events"}],
    }
    assert (metric["MetricStat"]["Stat"], metric["MetricStat"]["Period"]) == ("Sum", 60)
    assert props["AlarmActions"] == props["OKActions"]
    assert props["AlarmDescription"].endswith("Runbook: docs/operations.md#payment-authorisation-lapsed")
    # the name the handler counts (functions/order_events/handler.py), the function the alarm names
    handler = (OPERATIONS.parents[1] / "functions" / "order_events" / "handler.py").read_text()
    assert f'metrics.add_metric(name="{AUTHORISATIONS_LAPSED_METRIC}"' in handler
