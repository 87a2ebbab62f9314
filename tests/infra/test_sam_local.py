"""`make synth-local` (`-c local=true`): templates `sam local invoke` runs without reaching AWS.

SAM CLI hands a function only the variables its template declares (docs/deploy.md): with Docker,
the function gets the user's real credentials and region and nothing else, so whatever endpoint
the template does not declare is AWS's. `sam_environment` reads a template as SAM CLI does
(samcli.local.lambdafn.env_vars and its intrinsic resolver); botocore then says where each client
of the code would connect with exactly that environment.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest

from infra.settings import LOCAL_DYNAMODB_ENDPOINT, LOCAL_DYNAMODB_PORT, LOCAL_TABLE_NAME, ROOT
from local_runtime.cli import DEFAULT_TABLE_NAME

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

FUNCTIONS = {"customers", "products", "orders", "sessions", "payments", "order_events"}
CODE_DIRS = (ROOT / "layers" / "shared" / "python", ROOT / "functions")
LOCAL_HOSTS = {"host.docker.internal", "localhost", "127.0.0.1"}
# What SAM CLI sets itself: the user's real credentials and region when a profile is configured.
SAM_OWN_VARIABLES = {
    "AWS_SAM_LOCAL": "true",
    "AWS_REGION": "eu-west-1",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "AKIAREALACCOUNTKEY00",
    "AWS_SECRET_ACCESS_KEY": "real-secret",
    "AWS_SESSION_TOKEN": "real-session-token",
    "AWS_ACCOUNT_ID": "123456789012",
}


def sam_value(value: Any, template: dict[str, Any]) -> str:
    """One declared value as the container sees it.

    A Ref to a resource becomes its logical id; what SAM cannot resolve (Fn::ImportValue, a
    secret's dynamic reference inside Fn::Join) stays an intrinsic, which it passes as "".
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in template.get("Resources", {}):
        return str(value["Ref"])
    return ""


def sam_environment(template: dict[str, Any], resource: dict[str, Any]) -> dict[str, str]:
    """The container's environment under `sam local invoke` with no --env-vars and a clean shell."""
    declared = resource["Properties"].get("Environment", {}).get("Variables", {})
    return {**SAM_OWN_VARIABLES, **{name: sam_value(value, template) for name, value in declared.items()}}


@cache
def client_services() -> frozenset[str]:
    """Every service the shop's code creates a boto3 client or resource for: `*.client("<service>", ...)` or
    `ProcessClient(__name__, "<service>")` (read once: each check below asks)."""
    services = set()
    for directory in CODE_DIRS:
        for path in directory.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("client", "resource")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    services.add(node.args[0].value)
                if (  # shop.runtime.botocore_clients.ProcessClient(__name__, "<service>"): the process-wide clients
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "ProcessClient"
                    and len(node.args) == 2
                    and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, str)
                ):
                    services.add(node.args[1].value)
    return frozenset(services)


@cache
def _data_loader() -> Any:
    """botocore's data files (service models, endpoint rules), loaded once for every session below: a new session
    loads them again, most of a check's CPU. What a session reads of the environment stays its own."""
    import botocore.loaders

    return botocore.loaders.create_loader()


def _session() -> boto3.session.Session:
    """A session on the environment as it is now, as `boto3.session.Session()` makes one."""
    import botocore.session

    core = botocore.session.get_session()
    core.register_component("data_loader", _data_loader())
    return boto3.session.Session(botocore_session=core)


def use_environment(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Exactly `env`, as in the container (no shared AWS config or credentials files there either)."""
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


def unreachable_aws(template: dict[str, Any], resource: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Why this function, run by SAM, could reach AWS or would not start: [] when it cannot."""
    env = sam_environment(template, resource)
    problems = [f"{name} is {value!r} (unresolvable for SAM)" for name, value in env.items() if not value]
    problems += [f"{name} is a dynamic reference" for name, value in env.items() if "{{resolve:" in value]
    if env.get("EVENT_BUS_NAME"):
        problems.append(f"publishes to EventBridge bus {env['EVENT_BUS_NAME']!r}")
    use_environment(monkeypatch, env)
    # botocore reads AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL, as the Lambda runtime's boto3 does
    session = _session()
    for service in sorted(client_services() | {"events", "sts"}):
        endpoint = session.client(service).meta.endpoint_url
        if urlsplit(endpoint).hostname not in LOCAL_HOSTS:
            problems.append(f"{service} goes to {endpoint}")
    return problems


def test_the_scan_finds_the_clients_the_code_creates() -> None:
    # a client added later is found the same way and checked below without editing this file
    assert client_services() >= {"dynamodb", "events"}


def test_no_function_of_the_local_templates_can_reach_aws(sam_local: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    functions = sam_local.functions()
    assert set(functions) == FUNCTIONS
    for name, (stack_id, _, resource) in functions.items():
        assert unreachable_aws(sam_local.templates[stack_id], resource, monkeypatch) == [], name


def test_every_local_variable_is_a_literal_sam_passes_as_is(sam_local: Any) -> None:
    for name, (_, _, resource) in sam_local.functions().items():
        declared = resource["Properties"]["Environment"]["Variables"]
        assert all(isinstance(value, str) and value for value in declared.values()), name
        assert declared["AWS_ENDPOINT_URL_DYNAMODB"] == LOCAL_DYNAMODB_ENDPOINT, name
        assert declared["AWS_ENDPOINT_URL"] == LOCAL_DYNAMODB_ENDPOINT, name
        assert declared["TABLE_NAME"] == LOCAL_TABLE_NAME == DEFAULT_TABLE_NAME, name
        assert "EVENT_BUS_NAME" not in declared, name


def test_order_events_publishes_nothing_under_sam(sam_local: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from shop import wiring
    from shop.config import settings

    stack_id, _, resource = sam_local.functions()["order_events"]
    use_environment(monkeypatch, sam_environment(sam_local.templates[stack_id], resource))
    settings.cache_clear()
    try:
        assert settings().table_name == LOCAL_TABLE_NAME
        assert wiring.event_publisher().bus_name is None
    finally:
        settings.cache_clear()


def test_the_deployable_templates_would_reach_aws_under_sam(x86_64: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What docs/deploy.md's old recipe ran: the checks above catch it, and `make synth` is unchanged."""
    for name, (stack_id, _, resource) in x86_64.functions().items():
        declared = resource["Properties"]["Environment"]["Variables"]
        assert not any(variable.startswith("AWS_ENDPOINT_URL") for variable in declared), name
        problems = unreachable_aws(x86_64.templates[stack_id], resource, monkeypatch)
        assert "dynamodb goes to https://dynamodb.eu-west-1.amazonaws.com" in problems, name
        assert "TABLE_NAME is '' (unresolvable for SAM)" in problems, name
    stack_id, _, resource = x86_64.functions()["order_events"]
    bus = sam_environment(x86_64.templates[stack_id], resource)["EVENT_BUS_NAME"]
    assert x86_64.templates[stack_id]["Resources"][bus]["Type"] == "AWS::Events::EventBus"


def test_make_dev_and_synth_local_share_the_dynamodb_port() -> None:
    default = re.search(r"^DYNAMODB_PORT \?= (\d+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert default is not None
    assert int(default.group(1)) == LOCAL_DYNAMODB_PORT

    def dry_run(target: str) -> str:
        command = ["make", "-n", "-o", "setup", "-o", "layers", "-o", "synth", target, "DYNAMODB_PORT=8123"]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout

    assert "--dynamodb-port 8123" in dry_run("dev")
    synth_local = dry_run("synth-local")
    assert "-c local=true" in synth_local
    assert "-c local_dynamodb_endpoint=http://host.docker.internal:8123" in synth_local
    output = re.search(r"--output (\S+)", synth_local)
    assert output is not None
    assert Path(output.group(1)).name != "cdk.out"


@pytest.fixture(scope="module")
def sam_local_paying(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`make synth-local` with `-c payments=stripe`: the local template with payment_steps, its second consumer."""
    from tests.infra.conftest import _synth

    return _synth(tmp_path_factory, "local-payments", {"arch": "x86_64", "local": "true", "payments": "stripe"})


def test_with_payments_payment_steps_is_local_too_and_cannot_reach_aws(
    sam_local_paying: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    functions = sam_local_paying.functions()
    assert set(functions) == FUNCTIONS | {"payment_steps"}
    for name in ("payment_steps", "order_events"):
        stack_id, _, resource = functions[name]
        assert unreachable_aws(sam_local_paying.templates[stack_id], resource, monkeypatch) == [], name
