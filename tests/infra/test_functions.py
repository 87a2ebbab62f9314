"""Functions: runtime, architecture, sizing, environment, logs, layers and least privilege."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra import build_layers
from infra.settings import DYNAMODB_ACTIONS, iam_actions

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

FUNCTIONS = {"customers", "products", "orders", "sessions", "payments", "order_events"}
USES_INDEX = {"customers", "products", "orders", "order_events"}  # email, listings, status index, a move's walk
PAGINATING = {"customers", "products", "orders"}  # list routes with next tokens
COMMON_ENV = {
    "STATUS_SHARDS": "48",  # infra.settings.DEFAULT_STATUS_SHARDS
    "SESSION_TTL_SECONDS": "3600",
    "IDEMPOTENCY_TTL_SECONDS": "86400",
    "HOT_PRODUCT_CACHE_SECONDS": "1",
    "POWERTOOLS_METRICS_NAMESPACE": "Shop/dev",  # one namespace per stage
    "POWERTOOLS_LOG_LEVEL": "INFO",
    "POWERTOOLS_TRACE_DISABLED": "false",
    "PYDANTIC_DISABLE_PLUGINS": "__all__",
}


def _statements(assembly: Any) -> list[tuple[str, dict[str, Any]]]:
    """Every IAM statement of every policy, role, managed policy and resource policy."""
    found: list[tuple[str, dict[str, Any]]] = []
    for stack_id, template in assembly.templates.items():
        for logical_id, resource in template["Resources"].items():
            props = resource.get("Properties", {})
            documents = []
            if "PolicyDocument" in props:
                documents.append(props["PolicyDocument"])
            if resource["Type"] in ("AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"):
                documents += [p["PolicyDocument"] for p in props.get("Policies", [])]
            if "AssumeRolePolicyDocument" in props:
                continue  # trust policies carry sts:AssumeRole only
            for document in documents:
                for statement in document["Statement"]:
                    found.append((f"{stack_id}/{logical_id}", statement))
    return found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_every_function_is_built_the_same_way(arm64) -> None:
    functions = arm64.functions()
    assert set(functions) == FUNCTIONS
    for name, (stack_id, _, function) in functions.items():
        props = function["Properties"]
        assert props["Runtime"] == "python3.13", name
        assert props["Architectures"] == ["arm64"], name
        assert props["Handler"] == "handler.handler", name
        assert props["TracingConfig"] == {"Mode": "Active"}, name
        assert len(props["Layers"]) == 2, name
        env = props["Environment"]["Variables"]
        assert {k: env[k] for k in COMMON_ENV} == COMMON_ENV, name
        assert env["POWERTOOLS_SERVICE_NAME"] == name
        assert "TABLE_NAME" in env, name
        assert "PAGINATION_SECRET" not in env, name  # never the key itself, only where to read it
        assert ("PAGINATION_SECRET_ARN" in env) == (name in PAGINATING), name
        assert ("EVENT_BUS_NAME" in env) == (name == "order_events"), name
        assert "AWS_ENDPOINT_URL_DYNAMODB" not in env, name
        expected = (256, 30) if name == "order_events" else (512, 10)
        assert (props["MemorySize"], props["Timeout"]) == expected, name
        assert "ReservedConcurrentExecutions" not in props, name  # -c order_events_concurrency=N only
        assert stack_id == ("ShopEvents" if name == "order_events" else "ShopApi")


def test_each_function_logs_to_its_own_group_for_a_month(arm64) -> None:
    for name, (stack_id, _, function) in arm64.functions().items():
        group = function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        resource = arm64.templates[stack_id]["Resources"][group]
        assert resource["Type"] == "AWS::Logs::LogGroup", name
        assert resource["Properties"]["RetentionInDays"] == 30, name


def test_code_asset_is_the_function_folder(arm64) -> None:
    for name, (_, _, function) in arm64.functions().items():
        assert function["Metadata"]["aws:asset:property"] == "Code", name
        assert arm64.asset_dir(function).is_dir(), name


def _wildcard_actions(assembly: Any) -> list[tuple[str, str]]:
    """Allowed actions with a wildcard (Deny statements such as enforce-SSL may use sqs:*)."""
    return [
        (where, action)
        for where, statement in _statements(assembly)
        if statement["Effect"] == "Allow"
        for action in _as_list(statement.get("Action", []))
        if "*" in action
    ]


def test_no_allow_statement_has_a_wildcard_action(arm64) -> None:
    assert _wildcard_actions(arm64) == []
    # NotAction would be a wildcard in disguise
    assert not [where for where, statement in _statements(arm64) if "NotAction" in statement]


def test_the_wildcard_check_catches_one() -> None:
    statement = {"Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:*"], "Resource": "arn"}
    policy = {"Type": "AWS::IAM::Policy", "Properties": {"PolicyDocument": {"Statement": [statement]}}}
    fake = SimpleNamespace(templates={"S": {"Resources": {"P": policy}}})
    assert _wildcard_actions(fake) == [("S/P", "dynamodb:*")]


def test_dynamodb_actions_come_from_the_single_declaration(arm64) -> None:
    for name, (stack_id, _, function) in arm64.functions().items():
        role = function["Properties"]["Role"]["Fn::GetAtt"][0]
        template = Template.from_json(arm64.templates[stack_id])
        policies = [
            p for p in template.find_resources("AWS::IAM::Policy").values() if {"Ref": role} in p["Properties"]["Roles"]
        ]
        statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
        table_statements = [
            s
            for s in statements
            if any(a.startswith("dynamodb:") and a not in STREAM_READ for a in _as_list(s["Action"]))
        ]
        granted = sorted(a for s in table_statements for a in _as_list(s["Action"]))
        assert granted == iam_actions(DYNAMODB_ACTIONS[name]), name
        if name in ("sessions", "payments"):  # reads and key-limited writes: test_only_sessions_and_payments_...
            continue
        assert len(table_statements) == 1, (name, table_statements)
        (statement,) = table_statements
        resources = _as_list(statement["Resource"])
        assert len(resources) == (2 if name in USES_INDEX else 1), (name, resources)
        if name in USES_INDEX:
            suffix = resources[1]["Fn::Join"][1][-1]
            assert suffix == "/index/GSI1", name
        assert "dynamodb:Scan" not in statement["Action"], name


STREAM_READ = {"dynamodb:ListStreams", "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}


def test_transactions_are_authorized_by_their_item_actions() -> None:
    assert iam_actions(("TransactWriteItems", "PutItem")) == ["dynamodb:PutItem"]
    with pytest.raises(ValueError, match="TransactWriteItems"):
        iam_actions(("TransactWriteItems", "GetItem"))


@pytest.mark.parametrize("assembly_name", ["arm64", "x86_64"])
def test_deps_layer_holds_linux_wheels_for_the_architecture(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    layers = [
        resource
        for _, resource in assembly.resources("AWS::Lambda::LayerVersion").values()
        if "third-party" in resource["Properties"]["Description"]
    ]
    assert layers
    for layer in layers:
        assert layer["Properties"]["CompatibleArchitectures"] == [assembly_name]
        site = assembly.asset_dir(layer) / "python"
        so = site / "pydantic_core" / build_layers.compiled_module_name(assembly_name)
        assert so.is_file(), sorted(p.name for p in (site / "pydantic_core").iterdir())
        other = "x86_64" if assembly_name == "arm64" else "arm64"
        assert not (site / "pydantic_core" / build_layers.compiled_module_name(other)).exists()
        assert not (site / "boto3").exists(), "boto3 comes from the Lambda runtime"
        assert not list(site.rglob("__pycache__"))


def test_arm64_build_carries_aarch64_wheels() -> None:
    target = build_layers.build("arm64")
    (so,) = (target / "python" / "pydantic_core").glob("_pydantic_core.*.so")
    assert so.name == "_pydantic_core.cpython-313-aarch64-linux-gnu.so"
    assert so.read_bytes()[:4] == b"\x7fELF"
    assert so.read_bytes()[18:20] == (183).to_bytes(2, "little")  # e_machine EM_AARCH64


def test_layer_build_is_skipped_when_nothing_changed() -> None:
    target = build_layers.build("x86_64")
    (so,) = (target / "python" / "pydantic_core").glob("_pydantic_core.*.so")
    before = so.stat().st_mtime_ns
    assert build_layers.build("x86_64") == target
    assert so.stat().st_mtime_ns == before, "an unchanged lock must not rebuild the layer"


def test_functions_log_json_at_the_level_powertools_logs(arm64, prod_external) -> None:
    for assembly in (arm64, prod_external):
        for name, (_, _, function) in assembly.functions().items():
            props = function["Properties"]
            logging = props["LoggingConfig"]
            assert logging["LogFormat"] == "JSON", name
            # Lambda drops application lines below its level: Powertools must not log below it either
            assert logging["ApplicationLogLevel"] == props["Environment"]["Variables"]["POWERTOOLS_LOG_LEVEL"], name
            assert logging["ApplicationLogLevel"] == "INFO", name
            assert logging["SystemLogLevel"] == "WARN", name


def _table_statements(assembly: Any, name: str) -> list[dict[str, Any]]:
    stack_id, _, function = assembly.functions()[name]
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    policies = Template.from_json(assembly.templates[stack_id]).find_resources("AWS::IAM::Policy").values()
    return [
        statement
        for policy in policies
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if any(a.startswith("dynamodb:") and a not in STREAM_READ for a in _as_list(statement["Action"]))
    ]


def test_sessions_writes_only_its_own_keys(arm64) -> None:
    statements = _table_statements(arm64, "sessions")
    leading_keys = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["SESSION#*", "CART#*"]}}  # and customer carts
    writes = [s for s in statements if "Condition" in s]
    reads = [s for s in statements if "Condition" not in s]
    assert len(writes) == 1, statements
    assert len(reads) == 1, statements
    assert writes[0]["Condition"] == leading_keys
    assert sorted(_as_list(writes[0]["Action"])) == ["dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    # carts read product prices (and customer profiles) anywhere in the table, and never need the index
    assert sorted(_as_list(reads[0]["Action"])) == ["dynamodb:BatchGetItem", "dynamodb:GetItem"]
    for statement in statements:
        assert "index" not in json.dumps(statement["Resource"])


def test_only_sessions_and_payments_are_limited_to_leading_keys(arm64) -> None:
    for name in FUNCTIONS - {"sessions", "payments"}:
        assert all("Condition" not in s for s in _table_statements(arm64, name)), name
    # the webhook's function writes orders and the stock a failed payment gives back, nothing else (issue 26)
    writes = [s for s in _table_statements(arm64, "payments") if "Condition" in s]
    assert [s["Condition"] for s in writes] == [
        {
            "ForAllValues:StringLike": {
                "dynamodb:LeadingKeys": ["ORDER#*", "PRODUCT#*", "STOCK#*", "PROMO_USES#*", "PROMO_CUSTOMER#*"]
            }
        }
    ]


@pytest.mark.parametrize("assembly_name", ["arm64", "prod_external"])
def test_old_layer_versions_are_deleted_in_every_stage(request, assembly_name) -> None:
    assembly = request.getfixturevalue(assembly_name)
    layers = assembly.resources("AWS::Lambda::LayerVersion")
    assert len(layers) == 4  # shared and deps, in the API and the events stack
    for logical_id, (_, layer) in layers.items():
        assert layer.get("DeletionPolicy") == "Delete", logical_id
        assert layer.get("UpdateReplacePolicy") == "Delete", logical_id


def test_every_function_of_every_stack_logs_json(arm64, prod_external) -> None:
    """The operations functions too (pagination key rotation, the admin MFA trigger), not only the shop's."""
    for assembly in (arm64, prod_external):
        for stack, template in assembly.templates.items():
            for logical_id, resource in template["Resources"].items():
                if resource["Type"] != "AWS::Lambda::Function":
                    continue
                logging = resource["Properties"].get("LoggingConfig", {})
                assert (logging.get("LogFormat"), logging.get("SystemLogLevel")) == ("JSON", "WARN"), (
                    stack,
                    logical_id,
                )
