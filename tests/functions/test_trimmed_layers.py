"""The layers without what infra.build_layers trims (infra/layer_trims.json) still run every path of the shop.

A trimmed module that some rare path imports would be an ImportError in production that no test on the venv sees,
so these tests run on the trimmed layers as they deploy (x86_64, CPython 3.13, `-I -S`, sys.path = the function's
code + its layers + the runtime's boto3, as tests/infra/test_packaging.py lays them out):

- the committed plan is what infra.import_closure finds for today's code, on the locks' pins;
- every module that analysis keeps imports from the trimmed layers (none fails for want of a trimmed module);
- every handler answers every sample event of events/ with the status its name promises, on DynamoDB Local (the
  webhook with Stripe on; payment_steps has no sample event: it imports, below);
- every handler imports with tracing on (Powertools' Tracer patches through aws_xray_sdk's computed imports);
- what the analysis assumes of the shop holds (no swagger route, v1 calls only, no ImportString field);
- every distribution of a built layer answers importlib.metadata as installed (its *.dist-info keep METADATA's
  headers, entry points and licences), and the distributions a layer leaves out are absent;
- and, as a control, that a module only a call imports is seen even when the batch swallows its ImportError.

Stripe's call paths on the trimmed library: tests/payments/test_trimmed_payments_layer.py.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sysconfig
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from infra import build_layers
from infra.settings import ALL_FUNCTIONS
from tests.functions.apigw import REPO
from tests.infra.test_packaging import runtime_python

CHILD = REPO / "tests" / "support" / "layer_child.py"
SHARED = REPO / "layers" / "shared" / "python"
SHOP_SOURCES = [*sorted((SHARED / "shop").rglob("*.py")), *sorted((REPO / "functions").glob("*/handler.py"))]
CALLS_STRIPE = {spec.name for spec in ALL_FUNCTIONS if spec.calls_stripe}
RUNTIME_PROVIDED = ("boto3", "botocore", "jmespath", "dateutil", "urllib3", "s3transfer", "six.py")

pytestmark = pytest.mark.xdist_group("layers")


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> build_layers.Analysis:
    return build_layers.analyse(Path(sysconfig.get_paths()["purelib"]), tmp_path_factory.mktemp("layer-analysis"))


@pytest.fixture(scope="module")
def layers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The trimmed layers' site folders as deployed (x86_64: this machine's), and the runtime's boto3."""
    import boto3

    sites = {layer: build_layers.build("x86_64", layer=layer) / "python" for layer in build_layers.LAYERS}
    runtime = tmp_path_factory.mktemp("runtime")
    venv_site = Path(boto3.__file__).resolve().parent.parent
    for name in RUNTIME_PROVIDED:
        (runtime / name).symlink_to(venv_site / name)
    return {**sites, "runtime": runtime}


def _path(layers: dict[str, Path], function: str | None) -> list[str]:
    """A function's layers in the order Lambda merges them into /opt/python, then the runtime's."""
    payments = function is None or function in CALLS_STRIPE
    return [
        str(layers["deps"]),
        *([str(layers["payments"])] if payments else []),
        str(SHARED),
        str(layers["runtime"]),
    ]


@pytest.fixture(scope="module")
def pycache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the children keep the bytecode of what they import (`-X pycache_prefix`), outside the layers' folders:
    the layers ship no bytecode, so each child compiled every module it imported (botocore's and pydantic's
    included), about half of its CPU; now the first child that imports a module compiles it and the others read it
    (Python checks each source's mtime and size against its cached bytecode, as it does in __pycache__)."""
    return tmp_path_factory.mktemp("layer-bytecode")


def _child(request: dict[str, Any], tmp_path: Path, pycache: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    (tmp_path / "request.json").write_text(json.dumps(request))
    done = subprocess.run(
        [
            runtime_python(),
            "-I",
            "-S",
            "-X",
            f"pycache_prefix={pycache}",
            str(CHILD),
            str(tmp_path / "request.json"),
            str(tmp_path / "result.json"),
        ],
        env=env or _env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "result.json").read_text())


def _env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.setdefault("TABLE_NAME", "shop-layer-test")
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("AWS_REGION", env["AWS_DEFAULT_REGION"])
    env.setdefault("AWS_ACCESS_KEY_ID", "testing")
    env.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    env.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    return {**env, **overrides}


def _missing_of_ours(result: dict[str, Any], sys_path: list[str]) -> list[str]:
    """The modules an import looked for in vain whose package one of the function's layers ships or its lock pins
    (not what a library probes for and no lock has, such as botocore's `certifi` beside a function without the
    payments layer)."""
    tops = {path.name.removesuffix(".py") for folder in sys_path for path in Path(folder).iterdir()}
    tops |= {top for layer in build_layers.LEFT_OUT.values() for names in layer.values() for top in names}
    tops -= {name.removesuffix(".py") for name in RUNTIME_PROVIDED}
    return sorted({name for name in result["missing"] if name.split(".")[0] in tops})


def _expected_missing(result: dict[str, Any]) -> list[str]:
    """What a child may look for in vain among the locks' packages: charset_normalizer, which the payments layer
    leaves out (build_layers.LEFT_OUT), once requests is imported (`requests/__init__` reads its version, and
    `requests.compat` tries it for Response.apparent_encoding, which then answers UTF-8). Nothing else."""
    return ["charset_normalizer"] if "requests" in result["paths"] else []


def _dependency_warnings(result: dict[str, Any]) -> list[str]:
    """The warnings a library shows about its own dependencies (requests' when it finds no character detection;
    Powertools' "no application metrics" of a batch without metrics is the shop's business, not the layers')."""
    return [w for w in result["warnings"] if w.startswith("RequestsDependencyWarning")]


def _trimmed(analysis: build_layers.Analysis) -> set[str]:
    return {name for names in analysis.modules.values() for name in names if name not in analysis.kept}


# -- the plan ----------------------------------------------------------------------------------------------------


def test_this_environment_holds_the_layers_pins():
    """The plan is computed on this environment's copies of the layers' packages: they must be the locks' pins."""
    for lock in build_layers.LAYERS.values():
        for line in lock.read_text().splitlines():
            pin = line.split("#", 1)[0].strip()
            if pin:
                name, _, pinned = pin.partition("==")
                assert version(name) == pinned, (lock.name, name)


def test_the_committed_plan_is_what_the_code_can_reach(analysis):
    """A new import of a trimmed module by the shop fails here: run `python -m infra.build_layers --plan`."""
    planned = {
        layer: build_layers._unreachable_paths(site, analysis.modules[layer], analysis.kept)
        for layer, site in analysis.layer_sites.items()
    }
    assert planned == {layer: list(paths) for layer, paths in build_layers.UNUSED_AT_RUN_TIME.items()}


def test_the_plan_trims_no_module_a_path_reaches(analysis):
    kept_paths = {
        (layer, module.replace(".", "/"))
        for layer, modules in analysis.modules.items()
        for module in modules
        if module in analysis.kept
    }
    for layer, paths in build_layers.UNUSED_AT_RUN_TIME.items():
        for path in paths:
            stem = path.removesuffix(".py")
            hits = [m for lay, m in kept_paths if lay == layer and (m == stem or m.startswith(stem + "/"))]
            assert hits == [], (path, hits[:3])


def test_what_the_analysis_assumes_of_the_shop():
    sources = {path: path.read_text(encoding="utf-8") for path in SHOP_SOURCES}
    # Swagger UI's assets are dropped: only `enable_swagger()` serves them
    assert [p for p, text in sources.items() if "enable_swagger" in text] == []
    # pydantic's computed import (import_string) runs only for ImportString (v1: PyObject) fields
    assert [p for p, text in sources.items() if "ImportString" in text or "PyObject" in text] == []
    # the adapter calls the v1 API only (the V2 API's object and event maps are not followed) through the two
    # services it names (V1Services imports a service on its attribute's first read)
    adapter = SHARED / "shop" / "payments" / "stripe_adapter.py"
    v1_services = {
        node.attr
        for node in ast.walk(ast.parse(sources[adapter]))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "v1"
    }
    assert v1_services == {"payment_intents", "refunds"}
    assert [p for p, text in sources.items() if re.search(r"\.v2\b", text) and "stripe" in text] == []


def test_the_built_layers_hold_no_trimmed_module(layers, analysis):
    for layer, paths in build_layers.UNUSED_AT_RUN_TIME.items():
        present = [path for path in paths if (layers[layer] / path).exists()]
        assert present == [], (layer, present[:5])
    assert not (layers["deps"] / build_layers.SWAGGER_ASSETS[0]).exists()
    assert not list(layers["deps"].rglob("*.pyi"))
    if build_layers.STRIP_DEBUG is not None:
        compiled = [so for layer in build_layers.LAYERS for so in layers[layer].rglob("*.so")]
        assert compiled
        assert [so.name for so in compiled if any(name.startswith(".debug") for name in _sections(so))] == []


def test_the_built_layers_dist_info_answer_importlib_metadata(layers):
    """importlib.metadata on a built layer answers every distribution's name, version, requirements and entry points
    as the installed one does (this environment holds the same pins): the dist-info lost only what no run-time path
    reads (pip's RECORD, INSTALLER, REQUESTED, sboms/, METADATA's long description), never a licence file."""
    for layer, lock in build_layers.LAYERS.items():
        site = layers[layer]
        found = {dist.metadata["Name"]: dist for dist in importlib.metadata.distributions(path=[str(site)])}
        pinned = set(build_layers.distribution_tops(lock))
        left_out = set(build_layers.LEFT_OUT.get(layer, {}))
        assert {_normal(name) for name in found} == {_normal(name) for name in pinned - left_out}, layer
        for name, built in found.items():
            installed = importlib.metadata.distribution(name)
            assert built.version == installed.version, name
            assert built.requires == installed.requires, name
            assert _entry_points(built) == _entry_points(installed), name
            # every header (pydantic's version_info, ulid's version() and the plugin loader read these); the body,
            # the long description, is gone
            assert _headers(built) == _headers(installed), name
            assert built.metadata["Description"] is None, name
            assert built.files is None, name  # RECORD: pip's uninstall list
            licences = {
                str(f) for f in installed.files or [] if ".dist-info" in f.parts[0] and _is_licence(f.parts[-1])
            }
            kept = {p.relative_to(site).as_posix() for p in site.glob("*.dist-info/**/*") if p.is_file()}
            assert licences, name
            assert licences <= kept, name
            assert not [p for p in kept if Path(p).parts[1] in build_layers.DIST_INFO_UNREAD], name
        for distribution, tops in build_layers.LEFT_OUT.get(layer, {}).items():
            assert tuple(build_layers.distribution_tops(lock)[distribution]) == tops  # the whole distribution goes
            assert [top for top in tops if (site / top).exists() or (site / f"{top}.py").exists()] == []
    assert not (layers["payments"] / build_layers.SCRIPTS).exists()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _entry_points(dist: importlib.metadata.Distribution) -> list[tuple[str, str, str]]:
    return sorted((e.group, e.name, e.value) for e in dist.entry_points)


def _headers(dist: importlib.metadata.Distribution) -> list[tuple[str, str]]:
    meta = dist.metadata
    return sorted((key, value) for key in set(meta) - {"Description"} for value in meta.get_all(key) or [])


def _is_licence(name: str) -> bool:
    return name.upper().startswith(("LICENSE", "LICENCE", "NOTICE", "COPYING", "AUTHORS"))


def _sections(path: Path) -> list[str]:
    """The section names of a 64-bit little-endian ELF file (both layers' architectures)."""
    data = path.read_bytes()
    assert data[:6] == b"\x7fELF\x02\x01", path
    offset, size, count, names = (
        int.from_bytes(data[0x28:0x30], "little"),
        int.from_bytes(data[0x3A:0x3C], "little"),
        int.from_bytes(data[0x3C:0x3E], "little"),
        int.from_bytes(data[0x3E:0x40], "little"),
    )
    headers = [data[offset + i * size : offset + (i + 1) * size] for i in range(count)]
    table = headers[names]
    strings = data[int.from_bytes(table[0x18:0x20], "little") :][: int.from_bytes(table[0x20:0x28], "little")]
    return [strings[int.from_bytes(h[:4], "little") :].split(b"\0", 1)[0].decode() for h in headers]


# -- on the trimmed layers ---------------------------------------------------------------------------------------


def test_every_module_a_path_reaches_imports_from_the_trimmed_layers(layers, analysis, pycache, tmp_path):
    modules = sorted(
        name for name in analysis.kept if any(name in mods for mods in analysis.modules.values()) or name == "shop"
    )
    modules += sorted(name for name in analysis.kept if name.startswith("shop."))
    result = _child({"sys_path": _path(layers, None), "modules": modules}, tmp_path, pycache)
    trimmed = _trimmed(analysis)
    ours = {name.split(".")[0] for mods in analysis.modules.values() for name in mods} | {"shop"}
    # what fails must fail for want of a package no layer ships (django, redis, ... that the optional integrations
    # of Powertools and aws_xray_sdk name), never for a module of ours or one that is trimmed
    wrong = {
        name: failure
        for name, failure in result["failed"].items()
        if failure["type"] != "ModuleNotFoundError"
        or failure["missing"] in trimmed
        or (failure["missing"] or "").split(".")[0] in ours
    }
    assert wrong == {}
    # the shop and the libraries it calls imported whole; the failures are optional integrations' (aws_xray_sdk.ext)
    assert {name.split(".")[0] for name in result["failed"]} <= {"aws_xray_sdk"}
    assert result["paths"]["stripe"].startswith(str(layers["payments"]))


def _samples() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    from tests.functions.generate_events import SAMPLES

    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for function, names in SAMPLES.items():
        out[function] = [
            (name, json.loads((REPO / "events" / function / f"{name}.json").read_text())) for name in names
        ]
    for function in ("order_events", "payments"):
        out[function] = [
            (path.stem, json.loads(path.read_text())) for path in sorted((REPO / "events" / function).glob("*.json"))
        ]
    return out


# the webhook as tests/functions/test_payment_sample_events.py runs it: Stripe on, the samples' secret, each delivery
# signed again for now (the committed signatures are stale) but the forged one
def _signed(name: str, event: dict[str, Any]) -> dict[str, Any]:
    from tests.functions.generate_payment_events import SAMPLE_SECRET, sign

    return event if name.startswith("forged") else sign(event, SAMPLE_SECRET)


def _payments_env(stripe_api: str) -> dict[str, str]:
    """A charge's or a dispute's sample finds its order through its intent: a read at localstripe, through the
    trimmed Stripe library (the intent is unknown there, so the event changes nothing and answers 200)."""
    from tests.functions.generate_payment_events import SAMPLE_SECRET

    return _env(
        PAYMENTS="stripe",
        STRIPE_SECRET_KEY="sk_test_samples",
        STRIPE_WEBHOOK_SECRET=SAMPLE_SECRET,
        STRIPE_API_BASE=stripe_api,
    )


@pytest.mark.parametrize("function", ["customers", "products", "orders", "sessions", "payments", "order_events"])
def test_every_sample_event_answers_on_the_trimmed_layers(api, layers, pycache, tmp_path, function):
    samples = _samples()[function]
    if function == "payments":
        samples = [(name, _signed(name, event)) for name, event in samples]
    request: dict[str, Any] = {
        "sys_path": _path(layers, function),
        "functions_dir": str(REPO / "functions"),
        "handlers": {function: [event for _, event in samples]},
    }
    if function == "payments":
        from local_runtime.localstripe import LocalStripe

        server = LocalStripe().start()
        try:
            result = _child(request, tmp_path, pycache, _payments_env(server.endpoint))
        finally:
            server.stop()
    else:
        result = _child(request, tmp_path, pycache, _env())
    assert result["failed"] == {}
    assert _missing_of_ours(result, request["sys_path"]) == _expected_missing(result)
    assert _dependency_warnings(result) == []
    assert result["paths"]["aws_lambda_powertools"].startswith(str(layers["deps"]))
    answers = result["answers"][function]
    if function == "order_events":
        failed = {
            name: [f["itemIdentifier"] for f in answer["batchItemFailures"]]
            for (name, _), answer in zip(samples, answers, strict=True)
            if answer["batchItemFailures"]
        }
        # the poison record, by design; an archived order's removal needs the archive bucket (S3), which this test
        # does not give: retried, as on AWS when S3 does not answer
        assert failed == {
            "mixed_batch": ["100000000000000000005"],
            "poison_record": ["100000000000000000005"],
            "order_ttl_removal": ["100000000000000000011"],
        }
        return
    wrong = [(name, answer) for (name, _), answer in zip(samples, answers, strict=True) if answer != int(name[-3:])]
    assert wrong == []


def test_every_handler_imports_with_tracing_on(layers, pycache, tmp_path):
    """The Tracer patches botocore and requests at import through aws_xray_sdk's patcher (computed names). Powertools
    turns tracing off outside Lambda (no LAMBDA_TASK_ROOT), which would skip the patch: the variable is set, as
    Lambda sets it."""
    for spec in ALL_FUNCTIONS:
        env = _env(
            POWERTOOLS_TRACE_DISABLED="false",
            AWS_XRAY_CONTEXT_MISSING="IGNORE_ERROR",
            LAMBDA_TASK_ROOT=str(REPO / "functions" / spec.name),
        )
        request: dict[str, Any] = {
            "sys_path": _path(layers, spec.name),
            "functions_dir": str(REPO / "functions"),
            "handlers": {},
        }
        request["handlers"] = {spec.name: []}
        result = _child(request, tmp_path, pycache, env)
        assert result["failed"] == {}, spec.name
        # the X-Ray SDK's wrappers run on wrapt's compiled extension, stripped of its debug sections
        assert result["paths"]["wrapt._wrappers"].startswith(str(layers["deps"])), spec.name
        assert _missing_of_ours(result, request["sys_path"]) == _expected_missing(result), spec.name
        # the Tracer's patch imports requests where the payments layer is: without charset_normalizer, silently
        assert ("requests" in result["paths"]) == (spec.name in CALLS_STRIPE), spec.name
        assert _dependency_warnings(result) == [], spec.name


def test_the_check_sees_a_module_only_a_call_imports(api, layers, pycache, tmp_path):
    """The control: order_events' first record imports `pydantic.plugin._loader` (pydantic builds a validator at
    the call, not at import), and the batch turns the ImportError of a layer without it into a failed record, not an
    error; the finder still sees it, so the checks above would."""
    import shutil

    deps = tmp_path / "deps"
    shutil.copytree(layers["deps"], deps, symlinks=True)
    (deps / "pydantic" / "plugin" / "_loader.py").unlink()
    request: dict[str, Any] = {
        "sys_path": [str(deps), *_path(layers, "order_events")[1:]],
        "functions_dir": str(REPO / "functions"),
        "handlers": {"order_events": [json.loads((REPO / "events" / "order_events" / "new_order.json").read_text())]},
    }
    result = _child(request, tmp_path, pycache, _env())
    assert result["failed"] == {}
    assert result["answers"]["order_events"] == [{"batchItemFailures": [{"itemIdentifier": "100000000000000000001"}]}]
    assert "pydantic.plugin._loader" in _missing_of_ours(result, request["sys_path"])


def test_the_checks_leave_the_layers_as_built(layers):
    """The children wrote their bytecode under `pycache`: none into the folders `cdk synth` stages (last in this
    file)."""
    assert [str(p) for layer in build_layers.LAYERS for p in layers[layer].rglob("__pycache__")] == []
