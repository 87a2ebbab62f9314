"""Going live with Stripe from the docs alone: the secret's ARN as a named output, the alarm that pages while the
secret cannot be used, and the pipeline deploying a stage's payments, currency and capture from its variables.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Template

from infra.constructs.monitoring import runbook_anchor
from infra.settings import ROOT
from shop.payment_secrets import CREDENTIALS_UNUSABLE_METRIC

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

OPERATIONS = ROOT / "docs" / "operations.md"
DEPLOY = ROOT / "docs" / "deploy.md"
WORKFLOW = ROOT / ".github" / "workflows" / "deploy-stage.yml"
STRIPE_CALLERS = ["orders", "payment_steps", "payments"]


def _stripe_secret_id(assembly: Any) -> str:
    (secret_id,) = [
        logical_id
        for logical_id, (stack_id, resource) in assembly.resources("AWS::SecretsManager::Secret").items()
        if stack_id == "ShopData" and "Stripe" in resource["Properties"]["Description"]
    ]
    return secret_id


def test_the_stripe_secret_arn_is_a_named_output_of_the_data_stack(payments_on, arm64) -> None:
    outputs = payments_on.templates["ShopData"]["Outputs"]
    output = outputs["StripeSecretArn"]
    assert output["Value"] == {"Ref": _stripe_secret_id(payments_on)}  # a secret's Ref is its ARN
    assert "Export" not in output  # named for people; the functions' cross-stack export stays as it was
    assert "put" in output["Description"]
    assert "secret_key" in output["Description"]
    assert "StripeSecretArn" not in arm64.templates["ShopData"].get("Outputs", {})  # payments off: no secret
    # the output docs/deploy.md tells the operator to read, by that name
    assert "OutputKey=='StripeSecretArn'" in DEPLOY.read_text()


def _credentials_alarm(assembly: Any) -> dict[str, Any] | None:
    alarms = Template.from_json(assembly.templates["ShopMonitoring"]).find_resources("AWS::CloudWatch::Alarm")
    found = [a["Properties"] for lid, a in alarms.items() if lid.startswith("MonitoringPaymentCredentialsUnusable")]
    assert len(found) <= 1
    return found[0] if found else None


def test_an_unusable_stripe_secret_pages_on_one_datapoint_from_any_function_that_calls_stripe(
    payments_on, arm64
) -> None:
    assert _credentials_alarm(arm64) is None  # payments off: no secret, no alarm
    alarm = _credentials_alarm(payments_on)
    assert alarm is not None
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"], alarm["Threshold"]) == (1, 1, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"
    (expression,) = [m for m in alarm["Metrics"] if "Expression" in m]
    stats = {m["Id"]: m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m}
    assert expression["Expression"] == " + ".join(f"FILL({i}, 0)" for i in sorted(stats))
    assert sorted(s["Metric"]["Dimensions"][0]["Value"] for s in stats.values()) == STRIPE_CALLERS
    for stat in stats.values():
        metric = stat["Metric"]
        assert metric["MetricName"] == CREDENTIALS_UNUSABLE_METRIC  # what shop.payment_secrets counts
        assert metric["Namespace"] == "Shop/prod"
        assert [d["Name"] for d in metric["Dimensions"]] == ["service"]
        assert (stat["Stat"], stat["Period"]) == ("Sum", 60)
    assert alarm["AlarmActions"] == alarm["OKActions"]  # the stage's topic, on alarm and on recovery
    found = re.search(r"Runbook: docs/operations\.md#([a-z0-9_-]+)$", alarm["AlarmDescription"])
    assert found is not None
    anchors = {runbook_anchor(h) for h in re.findall(r"^#{2,4} (.+)$", OPERATIONS.read_text(), flags=re.MULTILINE)}
    assert found.group(1) == "payment-credentials-unusable"
    assert found.group(1) in anchors


def _deploy_step() -> dict[str, Any]:
    (job,) = yaml.safe_load(WORKFLOW.read_text())["jobs"].values()
    (step,) = [step for step in job["steps"] if "make deploy" in step.get("run", "")]
    return step


def _cdk_args(variables: dict[str, str], tmp_path: Path) -> list[str]:
    """The words `make deploy` gets as CDK_ARGS when the step's shell runs with these GitHub variables."""
    step = _deploy_step()
    env = {
        **os.environ,
        "STAGE": "prod",
        "ACCOUNT": "111111111111",
        "REGION": "eu-west-1",
        "ALARM_TOPIC_ARN": "",
        "PAYMENTS": "",
        "CURRENCY": "",
        "CAPTURE": "",
        **variables,
    }
    fake_make = tmp_path / "make"
    fake_make.write_text(
        '#!/bin/bash\nfor arg in "$@"; do case "$arg" in CDK_ARGS=*) echo "${arg#CDK_ARGS=}";; esac; done\n'
    )
    fake_make.chmod(0o755)
    env["PATH"] = f"{tmp_path}:{env['PATH']}"
    run = subprocess.run(["bash", "-c", step["run"]], env=env, capture_output=True, text=True, check=True)
    return shlex.split(run.stdout)


def test_the_pipeline_takes_payments_currency_and_capture_from_the_stages_variables(tmp_path) -> None:
    step = _deploy_step()
    for name in ("PAYMENTS", "CURRENCY", "CAPTURE"):
        assert step["env"][name] == f"${{{{ vars.{name} }}}}"  # the stage's environment, else the repository's
    # unset (today's stages): no payment context at all, so the deployed defaults: payments none, usd, on_ship
    unset = _cdk_args({}, tmp_path)
    assert not [arg for arg in unset if arg.startswith(("payments=", "currency=", "capture="))]
    assert unset[:1] == ["--require-approval"]
    assert "stage=prod" in unset
    paying = _cdk_args({"PAYMENTS": "stripe", "CURRENCY": "eur", "CAPTURE": "on_confirm"}, tmp_path)
    pairs = [f"{flag} {value}" for flag, value in itertools.pairwise(paying) if flag == "-c"]
    assert {"-c payments=stripe", "-c currency=eur", "-c capture=on_confirm"} <= set(pairs)
    assert "-c stage=prod" in pairs
    assert "-c account=111111111111" in pairs


def test_the_variables_are_documented_where_the_pipeline_is_set_up() -> None:
    pipeline = DEPLOY.read_text().split("## Pipeline", 1)[1].split("\n## ", 1)[0]
    for name in ("PAYMENTS", "CURRENCY", "CAPTURE"):
        assert f"`{name}`" in pipeline, name
