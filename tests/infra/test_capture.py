"""`-c capture=on_ship|on_confirm` in the templates: CAPTURE on every function that reads the payment settings, and
payment_steps' mapping letting the confirmation through only when the amount is captured there.

on_ship (the default) captures at SHIPPED: the confirmation is the webhook's own change and payment_steps never sees
it. on_confirm captures when the order goes PENDING_PAYMENT -> CONFIRMED (the webhook's authorisation, or the
expiry step finding the intent authorised) and refunds at CANCELLED, which the cancel pattern already lets in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from infra.settings import (
    CAPTURE_ON_CONFIRM_FILTER,
    PAYMENT_STEP_FILTERS,
    ROOT,
    DeployConfig,
    payment_step_filters,
)
from local_runtime.filters import matches_any
from tests.infra.test_payments import STRIPE_CALLERS, _mappings

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _order_record(status: str, was: str, *, payment: bool = True) -> dict[str, Any]:
    new: dict[str, Any] = {"entity": {"S": "ORDER"}, "status": {"S": status}}
    if payment:
        new["payment"] = {"M": {"currency": {"S": "usd"}, "status": {"S": "AUTHORISED"}}}
    keys = {"PK": {"S": "ORDER#o-1"}, "SK": {"S": "ORDER"}}
    return {
        "eventName": "MODIFY",
        "dynamodb": {"Keys": keys, "NewImage": new, "OldImage": {**new, "status": {"S": was}}},
    }


CONFIRMED = _order_record("CONFIRMED", "PENDING_PAYMENT")


def _environments(assembly: Any) -> dict[str, dict[str, Any]]:
    return {
        name: function["Properties"]["Environment"]["Variables"]
        for name, (_, _, function) in assembly.functions().items()
    }


def test_capture_defaults_to_on_ship_and_other_values_are_refused() -> None:
    assert DeployConfig.from_context({}.get).capture == "on_ship"
    assert DeployConfig.from_context({"payments": "stripe", "capture": "on_confirm"}.get).capture == "on_confirm"
    for bad in ("on_delivery", "ON_CONFIRM", "confirm", "true"):
        with pytest.raises(ValueError, match=r"context capture must be one of on_ship, on_confirm"):
            DeployConfig.from_context({"payments": "stripe", "capture": bad}.get)
    # with payments off nothing is captured: the operator meant to take money and forgot -c payments=stripe
    with pytest.raises(ValueError, match=r"capture=on_confirm needs -c payments=stripe"):
        DeployConfig.from_context({"capture": "on_confirm"}.get)


def test_a_wrong_capture_stops_the_cdk_app_with_the_rule_not_a_traceback(tmp_path) -> None:
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({"payments": "stripe", "capture": "at_dawn"}),
        "CDK_OUTDIR": str(tmp_path),  # refused before any stack is built: nothing is written there
    }
    run = subprocess.run(
        [sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        "error: context capture must be one of on_ship, on_confirm (when the authorised amount is captured: "
        "at SHIPPED, or at CONFIRMED with a refund at CANCELLED), got 'at_dawn'"
    )
    assert "Traceback" not in run.stderr
    assert not list(tmp_path.glob("*.template.json"))


def test_filters_per_mode_let_the_confirmation_in_only_when_it_captures() -> None:
    assert payment_step_filters("on_ship") == PAYMENT_STEP_FILTERS
    assert payment_step_filters("on_confirm") == (*PAYMENT_STEP_FILTERS, CAPTURE_ON_CONFIRM_FILTER)
    assert len(payment_step_filters("on_confirm")) <= 5  # Lambda's filters per event source mapping
    with pytest.raises(ValueError, match="capture must be one of"):
        payment_step_filters("later")
    on_ship, on_confirm = payment_step_filters("on_ship"), payment_step_filters("on_confirm")
    assert not matches_any(on_ship, CONFIRMED)  # the webhook's own change: nothing to do at SHIPPED-capture
    assert matches_any(on_confirm, CONFIRMED)  # capture
    refund = _order_record("CANCELLED", "CONFIRMED")  # a captured order cancelled: its refund
    assert matches_any(on_ship, refund)
    assert matches_any(on_confirm, refund)
    assert not matches_any(on_confirm, _order_record("CONFIRMED", "PENDING_PAYMENT", payment=False))  # payments off
    assert not matches_any(on_confirm, _order_record("CONFIRMED", "CONFIRMED"))  # the capture's own record
    assert not matches_any(on_confirm, _order_record("CONFIRMED", "PENDING"))  # version 2's confirmation


def test_on_ship_gives_every_stripe_caller_capture_on_ship_and_the_three_filters(payments_on) -> None:
    for name, env in _environments(payments_on).items():
        assert env.get("CAPTURE") == ("on_ship" if name in STRIPE_CALLERS else None), name
    steps = _mappings(payments_on)["payment_steps"]
    patterns = [json.loads(f["Pattern"]) for f in steps["FilterCriteria"]["Filters"]]
    assert patterns == list(PAYMENT_STEP_FILTERS)
    assert not matches_any(patterns, CONFIRMED)


def test_nothing_carries_capture_with_payments_off(arm64) -> None:
    for name, env in _environments(arm64).items():
        assert "CAPTURE" not in env, name


def test_on_confirm_gives_every_stripe_caller_capture_on_confirm_and_the_confirmation_filter(
    capture_on_confirm, payments_on
) -> None:
    environments = _environments(capture_on_confirm)
    assert set(environments) >= STRIPE_CALLERS
    for name, env in environments.items():
        assert env.get("CAPTURE") == ("on_confirm" if name in STRIPE_CALLERS else None), name
    mappings = _mappings(capture_on_confirm)
    patterns = [json.loads(f["Pattern"]) for f in mappings["payment_steps"]["FilterCriteria"]["Filters"]]
    assert patterns == [*PAYMENT_STEP_FILTERS, CAPTURE_ON_CONFIRM_FILTER]
    assert matches_any(patterns, CONFIRMED)
    assert matches_any(patterns, _order_record("CANCELLED", "CONFIRMED"))  # the refund
    # order_events' own mapping is the same in both modes
    on_ship = _mappings(payments_on)["order_events"]["FilterCriteria"]
    assert mappings["order_events"]["FilterCriteria"] == on_ship


def test_the_local_runtime_runs_payment_steps_with_the_templates_mode(
    capture_on_confirm, payments_on, tmp_path, capsys
) -> None:
    """`make dev CAPTURE=on_confirm`: the local runtime reads payment_steps' filters and CAPTURE from the templates,
    and refuses to start on templates of the other mode (a stale cdk.out, or CAPTURE set with --env)."""
    from local_runtime.cli import _synthesized_capture, build_parser, cmd_dev
    from local_runtime.functions import function_environment
    from local_runtime.template import load_app

    for assembly, mode in ((capture_on_confirm, "on_confirm"), (payments_on, "on_ship")):
        app = load_app(assembly.outdir)
        assert _synthesized_capture(app) == mode
        (steps,) = [m for m in app.mappings if m.function == "payment_steps"]
        assert steps.filters == list(payment_step_filters(mode))  # what the local poller lets through
        env = function_environment(
            app, app.functions["payment_steps"], table_name="t", endpoint="http://127.0.0.1:1", state_dir=tmp_path
        )
        assert env["CAPTURE"] == mode
    out = str(capture_on_confirm.outdir)
    for refused in (["--capture", "on_ship"], ["--env", "CAPTURE=on_ship"]):
        args = build_parser().parse_args(["dev", "--cdk-out", out, "--data-dir", str(tmp_path), *refused])
        assert cmd_dev(args) == 2  # before anything starts
        assert "synthesized with capture=on_confirm, not on_ship: run `make synth CAPTURE=on_ship`" in (
            capsys.readouterr().err
        )
