"""`-c payments=none|stripe` in the templates: Stripe's layer, variables and secret only where Stripe is called.

The default (payments off) ships version 2's flow: no function carries the payments layer, PAYMENTS or the
Stripe secret. With payments on, the orders and payments functions (and payment_steps once merged) get the
layer, PAYMENTS=stripe and the secret's ARN with GetSecretValue on that secret alone; the others nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.settings import PAYMENT_STEP_FILTERS, DeployConfig
from local_runtime.filters import matches_any

STRIPE_CALLERS = {"orders", "payments", "payment_steps"}


def _layer_ids(resource: dict[str, Any]) -> list[str]:
    return [layer["Ref"] for layer in resource["Properties"]["Layers"]]


def _payments_layer(assembly, stack_id: str) -> str | None:
    # by stack: several stacks build their layers under the same construct path (the same logical id)
    layers = [
        logical_id
        for logical_id, resource in assembly.templates[stack_id]["Resources"].items()
        if resource["Type"] == "AWS::Lambda::LayerVersion" and "Stripe" in str(resource["Properties"]["Description"])
    ]
    return layers[0] if layers else None


def _policies_of(assembly, stack_id: str, function: dict[str, Any]) -> list[dict[str, Any]]:
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for policy in assembly.templates[stack_id]["Resources"].values()
        if policy["Type"] == "AWS::IAM::Policy" and {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_payments_are_off_by_default_and_nothing_carries_stripe(arm64) -> None:
    assert DeployConfig().payments == "none"
    assert not [r for _, (_, r) in arm64.resources("AWS::Lambda::LayerVersion").items() if "Stripe" in str(r)]
    for name, (_, _, function) in arm64.functions().items():
        env = function["Properties"]["Environment"]["Variables"]
        assert "PAYMENTS" not in env, name
        assert "STRIPE_SECRET_ARN" not in env, name
    assert not [r for r in arm64.resources("AWS::SecretsManager::Secret").values() if "Stripe" in str(r)]


def test_with_payments_on_only_the_functions_that_call_stripe_carry_its_layer_and_secret(payments_on) -> None:
    (secret_id,) = [
        logical_id
        for logical_id, (_, resource) in payments_on.resources("AWS::SecretsManager::Secret").items()
        if "Stripe" in resource["Properties"]["Description"]
    ]
    functions = payments_on.functions()
    assert {"orders", "payments"} <= set(functions)
    for name, (stack_id, _, function) in functions.items():
        env = function["Properties"]["Environment"]["Variables"]
        layer = _payments_layer(payments_on, stack_id)
        reads = [
            s for s in _policies_of(payments_on, stack_id, function) if s["Action"] == "secretsmanager:GetSecretValue"
        ]
        stripe_reads = [s for s in reads if secret_id in str(s["Resource"])]
        if name in STRIPE_CALLERS:
            assert env["PAYMENTS"] == "stripe", name
            assert secret_id in str(env["STRIPE_SECRET_ARN"]), name
            assert env["SHOP_CURRENCY"] == "usd", name
            assert layer in _layer_ids(function), name
            assert len(stripe_reads) == 1, name  # that secret alone, read only
        else:
            assert "PAYMENTS" not in env, name
            assert "STRIPE_SECRET_ARN" not in env, name
            assert layer is None or layer not in _layer_ids(function), name
            assert stripe_reads == [], name


@pytest.mark.parametrize(
    ("context", "message"),
    [({"payments": "paypal"}, "context payments"), ({"currency": "EUR"}, "context currency")],
)
def test_bad_payment_context_is_refused(context, message) -> None:
    with pytest.raises(ValueError, match=message):
        DeployConfig.from_context(context.get)


def _order_record(status: str, *, payment: bool = True) -> dict[str, Any]:
    image: dict[str, Any] = {"entity": {"S": "ORDER"}, "status": {"S": status}}
    if payment:
        image["payment"] = {"M": {"provider": {"S": "stripe"}, "status": {"S": "AUTHORISED"}}}
    return {"eventName": "MODIFY", "dynamodb": {"NewImage": image}}


def _removal(entity: str, *, by_ttl: bool = True) -> dict[str, Any]:
    record: dict[str, Any] = {"eventName": "REMOVE", "dynamodb": {"OldImage": {"entity": {"S": entity}}}}
    if by_ttl:
        record["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    return record


@pytest.mark.parametrize(
    ("record", "passes"),
    [
        (_order_record("SHIPPED"), True),
        (_order_record("CANCELLED"), True),
        (_order_record("PAYMENT_FAILED"), True),
        (_order_record("EXPIRED"), True),
        (_order_record("RETURNED"), True),
        (_order_record("CONFIRMED"), False),  # the webhook's own change: nothing to do on the stream
        (_order_record("DELIVERED"), False),
        (_order_record("SHIPPED", payment=False), False),  # version 2's orders never reach payment_steps
        (_removal("ORDER_PAYMENT_DUE"), True),  # the payment window closed
        (_removal("ORDER_PAYMENT_DUE", by_ttl=False), False),  # settled first: deleted by a transaction
        (_removal("ORDER"), False),
    ],
)
def test_payment_steps_filters_let_in_exactly_the_records_a_step_needs(record, passes) -> None:
    assert matches_any(PAYMENT_STEP_FILTERS, record) is passes
