"""`-c payments=none|stripe` in the templates: Stripe's layer, variables and secret only where Stripe is called.

The default (payments off) ships version 2's flow: no function carries the payments layer, PAYMENTS or the
Stripe secret. With payments on, the orders, payments and payment_steps functions get the layer, PAYMENTS=stripe
and the secret's ARN with GetSecretValue on that secret alone; the others nothing. payment_steps is the table
stream's second consumer: its own filtered mapping, failure bucket and least-privilege role.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.settings import DYNAMODB_ACTIONS, PAYMENT_STEP_FILTERS, DeployConfig, iam_actions
from local_runtime.filters import matches_any

pytestmark = [pytest.mark.xdist_group("infra")]  # the session's synths are this group's worker's

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


def _order_record(status: str, *, was: str = "CONFIRMED", payment: bool = True) -> dict[str, Any]:
    new: dict[str, Any] = {"entity": {"S": "ORDER"}, "status": {"S": status}}
    if payment:
        new["payment"] = {"M": {"provider": {"S": "stripe"}, "currency": {"S": "usd"}, "status": {"S": "AUTHORISED"}}}
    old = {**new, "status": {"S": was}}
    keys = {"PK": {"S": "ORDER#o-1"}, "SK": {"S": "ORDER"}}
    return {"eventName": "MODIFY", "dynamodb": {"Keys": keys, "NewImage": new, "OldImage": old}}


def _removal(sk: str, *, by_ttl: bool = True) -> dict[str, Any]:
    image = {"entity": {"S": "ORDER_PAYMENT_DUE" if sk == "PAYMENT_DUE" else sk}}  # a window item of before 075
    keys = {"PK": {"S": "ORDER#o-1"}, "SK": {"S": sk}}
    record: dict[str, Any] = {"eventName": "REMOVE", "dynamodb": {"Keys": keys, "OldImage": image}}
    if by_ttl:
        record["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    return record


@pytest.mark.parametrize(
    ("record", "passes"),
    [
        (_order_record("SHIPPED"), True),  # capture
        (_order_record("CANCELLED", was="PENDING_PAYMENT"), True),  # cancel the intent
        (_order_record("CANCELLED"), True),
        (_order_record("PAYMENT_FAILED", was="PENDING_PAYMENT"), True),
        (_order_record("EXPIRED", was="PENDING_PAYMENT"), True),
        (_order_record("RETURNED", was="RETURN_REQUESTED"), True),  # refund
        (_order_record("CONFIRMED", was="PENDING_PAYMENT"), False),  # the webhook's own change: nothing to do
        (_order_record("DELIVERED", was="SHIPPED"), False),
        (_order_record("SHIPPED", was="SHIPPED"), False),  # the capture's own record on the payment
        (_order_record("RETURNED", was="RETURNED"), False),  # the refund's own record
        (_order_record("SHIPPED", payment=False), False),  # version 2's orders never reach payment_steps
        (_removal("PAYMENT_DUE"), False),  # an old window item's TTL removal: the sweep expires its order
        (_removal("PAYMENT_DUE", by_ttl=False), False),
        (_removal("ORDER"), False),
    ],
)
def test_payment_steps_filters_let_in_exactly_the_records_a_step_needs(record, passes) -> None:
    assert matches_any(PAYMENT_STEP_FILTERS, record) is passes


def test_payment_steps_is_built_only_with_payments_on(arm64, payments_on) -> None:
    assert "payment_steps" not in arm64.functions()
    stack_id, _, function = payments_on.functions()["payment_steps"]
    assert stack_id == "ShopEvents"
    props = function["Properties"]
    assert (props["MemorySize"], props["Timeout"]) == (256, 60)
    assert "EVENT_BUS_NAME" in props["Environment"]["Variables"]  # OrderRefunded


def _mappings(assembly) -> dict[str, dict[str, Any]]:
    """ShopEvents' event source mappings by the function their alias invokes."""
    template = assembly.templates["ShopEvents"]
    resources = template["Resources"]
    found = {}
    for mapping in Template.from_json(template).find_resources("AWS::Lambda::EventSourceMapping").values():
        (alias_id,) = _refs(mapping["Properties"]["FunctionName"])
        function_id = resources[alias_id]["Properties"]["FunctionName"]["Ref"]
        found[resources[function_id]["Metadata"]["shop:function"]] = mapping["Properties"]
    return found


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        if "Ref" in value:
            return [value["Ref"]]
        return [ref for inner in value.values() for ref in _refs(inner)]
    if isinstance(value, list):
        return [ref for inner in value for ref in _refs(inner)]
    return []


def test_payment_steps_is_a_second_consumer_with_its_filters_and_own_failure_bucket(payments_on) -> None:
    mappings = _mappings(payments_on)
    assert set(mappings) == {"order_events", "payment_steps"}
    steps, events = mappings["payment_steps"], mappings["order_events"]
    assert steps["EventSourceArn"] == events["EventSourceArn"]  # the same table stream
    patterns = [json.loads(f["Pattern"]) for f in steps["FilterCriteria"]["Filters"]]
    assert patterns == list(PAYMENT_STEP_FILTERS)
    assert len(patterns) <= 5
    assert steps["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert steps["MetricsConfig"] == {"Metrics": ["EventCount"]}
    bucket = steps["DestinationConfig"]["OnFailure"]["Destination"]
    assert bucket != events["DestinationConfig"]["OnFailure"]["Destination"]
    (bucket_id,) = _refs(bucket) or [bucket["Fn::GetAtt"][0]]
    assert payments_on.templates["ShopEvents"]["Resources"][bucket_id]["Type"] == "AWS::S3::Bucket"


def test_payment_steps_role_is_least_privilege(payments_on) -> None:
    stack_id, _, function = payments_on.functions()["payment_steps"]
    statements = _policies_of(payments_on, stack_id, function)
    table = [
        s
        for s in statements
        if any(
            a.startswith("dynamodb:") and "Stream" not in a and "Records" not in a and "ShardIterator" not in a
            for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        )
    ]
    granted = sorted(a for s in table for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]]))
    assert granted == iam_actions(DYNAMODB_ACTIONS["payment_steps"])
    # no PutItem (no marks), no DeleteItem (TTL); Query: the windows' sweep
    assert granted == ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    writes = [s for s in table if "Condition" in s]
    assert [s["Condition"] for s in writes] == [
        {
            "ForAllValues:StringLike": {
                "dynamodb:LeadingKeys": ["ORDER#*", "PRODUCT#*", "STOCK#*", "PROMO_USES#*", "PROMO_CUSTOMER#*"]
            }
        }
    ]
    # the sweep's Query on GSI1 alone (its own statement, unconditioned like every read); nothing else on the index
    (on_index,) = [s for s in table if "index" in json.dumps(s["Resource"])]
    assert on_index["Action"] == "dynamodb:Query"
    assert on_index["Resource"]["Fn::Join"][1][-1] == "/index/GSI1"
    assert "Condition" not in on_index
    for statement in table:
        if statement is not on_index:
            assert "dynamodb:Query" not in statement["Action"]
            assert "index" not in json.dumps(statement["Resource"])
    actions = {a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}
    assert "events:PutEvents" in actions
    assert not [a for a in actions if a.endswith("*")]


def test_payments_role_writes_orders_and_stock_only(payments_on) -> None:
    """The webhook's function (issue 26): no event marks and no deletes, so no PutItem or DeleteItem,
    and its writes are held to the order's and the stock's partitions."""
    stack_id, _, function = payments_on.functions()["payments"]
    statements = _policies_of(payments_on, stack_id, function)
    table = [
        s
        for s in statements
        if any(a.startswith("dynamodb:") for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]]))
    ]
    granted = sorted(a for s in table for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]]))
    assert granted == iam_actions(DYNAMODB_ACTIONS["payments"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    writes = [s for s in table if "Condition" in s]
    assert [s["Condition"] for s in writes] == [
        {
            "ForAllValues:StringLike": {
                "dynamodb:LeadingKeys": ["ORDER#*", "PRODUCT#*", "STOCK#*", "PROMO_USES#*", "PROMO_CUSTOMER#*"]
            }
        }
    ]
