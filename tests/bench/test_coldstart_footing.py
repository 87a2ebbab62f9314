"""The cold-start child's sys.path: exactly the function's template layers (as the stand-in builds them), the
shared layer and the runtime's boto3; the bare handler only that boto3 (bench.coldstart)."""

from __future__ import annotations

import pathlib

from bench.coldstart import bare_path, function_path, layer_kind
from local_runtime.functions import SHARED_LAYER


def _asset(root: pathlib.Path, name: str, package: str) -> pathlib.Path:
    (root / name / "python" / package).mkdir(parents=True)
    return root / name


def test_each_function_gets_its_template_layers_and_nothing_else(tmp_path):
    deps = _asset(tmp_path, "asset.deps", "pydantic")
    payments = _asset(tmp_path, "asset.payments", "stripe")
    shared = _asset(tmp_path, "asset.shared", "shop")
    sites = {name: tmp_path / "site" / name for name in ("deps", "payments", "runtime")}

    assert [layer_kind(a) for a in (deps, payments, shared)] == ["deps", "payments", "shared"]

    assert function_path([deps, shared], sites) == [
        str(sites["deps"]),
        str(SHARED_LAYER),
        str(sites["runtime"]),
    ]
    assert function_path([deps, payments, shared], sites) == [
        str(sites["deps"]),
        str(sites["payments"]),
        str(SHARED_LAYER),
        str(sites["runtime"]),
    ]
    assert bare_path(sites) == [str(sites["runtime"])]


def test_without_a_stand_in_the_venv_serves_both_sides(tmp_path):
    assert function_path([tmp_path], None) == [str(SHARED_LAYER)]
    assert bare_path(None) == []
