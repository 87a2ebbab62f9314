"""The deployed bundle is self-sufficient.

Synthesized for this machine's architecture (x86_64), each function's code
asset and its layers' assets are laid out as Lambda does (``task/`` and
``opt/python``), and the function's ``handler`` module is imported by a real
CPython of the runtime's version in a clean interpreter (``-I -S``: no site
packages, no PYTHON* variables) whose path holds only those folders plus
boto3 and its dependencies (which the Lambda runtime provides), with the
function's environment from the template.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from infra.settings import ALL_FUNCTIONS, LAYER_PYTHON_VERSION, ROOT

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

# what the Lambda Python runtime ships besides the standard library
RUNTIME_PROVIDED = ("boto3", "botocore", "jmespath", "dateutil", "urllib3", "s3transfer", "six.py")


@cache
def runtime_python() -> str:
    """A CPython of exactly the Lambda runtime's version (3.13), or fail."""
    candidates = [shutil.which(f"python{LAYER_PYTHON_VERSION}") or ""]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{LAYER_PYTHON_VERSION}*/bin/python3")))
    candidates += [f"/usr/bin/python{LAYER_PYTHON_VERSION}", f"/usr/local/bin/python{LAYER_PYTHON_VERSION}"]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == LAYER_PYTHON_VERSION:
            return candidate
    pytest.fail(f"the packaging test needs a Python {LAYER_PYTHON_VERSION} interpreter (tried {candidates})")


def _runtime_site(tmp_path: Path) -> Path:
    """boto3 and friends from the venv, standing in for the Lambda runtime's copy (pure Python)."""
    import boto3

    venv_site = Path(boto3.__file__).resolve().parent.parent
    site = tmp_path / "runtime"
    site.mkdir()
    for name in RUNTIME_PROVIDED:
        source = venv_site / name
        assert source.exists(), source
        (site / name).symlink_to(source)
    return site


def _placeholder_env(variables: dict[str, Any]) -> dict[str, str]:
    """The template's environment, with deploy-time references replaced by plausible values."""
    placeholders = {
        "TABLE_NAME": "shop-packaging-test",
        "PAGINATION_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:111111111111:secret:shop-pagination-AbCdEf",
        "EVENT_BUS_NAME": "shop-packaging-test-bus",
        "ARCHIVE_BUCKET": "shop-packaging-test-order-archive",
        "STRIPE_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:111111111111:secret:shop-stripe-AbCdEf",
    }
    env = {}
    for key, value in variables.items():
        env[key] = value if isinstance(value, str) else placeholders[key]
    return env


def test_every_function_declared_in_infra_has_a_handler() -> None:
    missing = [spec.name for spec in ALL_FUNCTIONS if not (ROOT / "functions" / spec.name / "handler.py").is_file()]
    assert not missing, f"functions without functions/<name>/handler.py: {missing}"


@pytest.mark.parametrize("name", [spec.name for spec in ALL_FUNCTIONS])
def test_handler_imports_from_the_bundle_alone(request, tmp_path, name) -> None:
    # payment_steps is built only with -c payments=stripe (x86_64 too)
    x86_64 = request.getfixturevalue("payments_on" if name == "payment_steps" else "x86_64")
    stack_id, _, function = x86_64.functions()[name]
    resources = x86_64.templates[stack_id]["Resources"]
    task = tmp_path / "task"
    shutil.copytree(x86_64.asset_dir(function), task)
    assert (task / "handler.py").is_file(), f"{name}: the code asset has no handler.py"
    opt_python = tmp_path / "opt" / "python"
    opt_python.mkdir(parents=True)
    for layer_ref in function["Properties"]["Layers"]:
        layer = resources[layer_ref["Ref"]]
        assert layer["Type"] == "AWS::Lambda::LayerVersion"
        # Lambda extracts every layer into /opt; python/ is what lands on sys.path
        shutil.copytree(x86_64.asset_dir(layer) / "python", opt_python, dirs_exist_ok=True)
    runtime_site = _runtime_site(tmp_path)
    module, _, attribute = function["Properties"]["Handler"].rpartition(".")
    code = (
        "import sys\n"
        f"sys.path[:0] = [{str(task)!r}, {str(opt_python)!r}, {str(runtime_site)!r}]\n"
        f"import importlib; handler_module = importlib.import_module({module!r})\n"
        f"assert callable(getattr(handler_module, {attribute!r}))\n"
        "import pydantic_core; print(pydantic_core.__file__)\n"
    )
    env = {
        **_placeholder_env(function["Properties"]["Environment"]["Variables"]),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "LAMBDA_TASK_ROOT": str(task),
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    result = subprocess.run(
        [runtime_python(), "-I", "-S", "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, f"{name}: handler import failed\n{result.stderr[-3000:]}"
    assert str(opt_python) in result.stdout, "pydantic_core must come from the deps layer"
    # the payments layer leaves out requests' character detection (infra.build_layers.LEFT_OUT); shop/__init__
    # filters requests' warning about it, which the Tracer's patch of requests would print at every cold start
    assert "RequestsDependencyWarning" not in result.stderr, result.stderr[-3000:]
