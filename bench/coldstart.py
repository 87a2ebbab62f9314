"""Cold start: each function in a fresh process (import + first invocation) against a bare boto3 handler.

Samples alternate function/bare and their medians are compared; a function over the target is profiled with
`python -X importtime` (docs/performance.md, "How each figure is measured").
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

from bench.stats import median
from bench.store import function_env
from local_runtime.functions import SHARED_LAYER
from local_runtime.template import REPO_ROOT, FunctionDef

TARGET = 1.25
CHILD = pathlib.Path(__file__).resolve().parent / "coldchild.py"
BARE = """import os

import boto3

client = boto3.client("dynamodb")


def handler(event, context):
    answers = [getattr(client, call["operation"])(**call["params"]) for call in event["calls"]]
    return {"statusCode": 200, "body": str(sum(len(answer) for answer in answers))}
"""


# -- what deploys, for the local Python (docs/performance.md, "How each figure is measured") -------------------

STANDIN_ROOT = REPO_ROOT / "build" / "bench-site"
# What the Lambda runtime provides besides the standard library (as tests/infra/test_packaging.py lays it out):
# boto3 and its dependencies, taken from the venv at the dev lock's pins, for both sides of every ratio.
RUNTIME_PROVIDED = ("boto3", "botocore", "jmespath", "dateutil", "urllib3", "s3transfer", "six.py")
LOCKS = {"deps": REPO_ROOT / "requirements" / "runtime.txt", "payments": REPO_ROOT / "requirements" / "payments.txt"}


def layer_kind(asset: pathlib.Path) -> str:
    """Which layer a template's layer asset is, by what it holds: shared (the shop), payments (Stripe's library) or
    deps (Powertools, pydantic)."""
    site = asset / "python"
    if (site / "shop").is_dir():
        return "shared"
    if (site / "stripe").is_dir():
        return "payments"
    return "deps"


def _fingerprint(layer: str) -> str:
    from infra import build_layers

    digest = hashlib.sha256(LOCKS[layer].read_bytes())
    digest.update(pathlib.Path(build_layers.__file__).read_bytes())  # its trimming decides what the layer holds
    digest.update(f"\0{platform.python_version()}\0{platform.machine()}".encode())
    return digest.hexdigest()[:16]


def _build_layer(layer: str) -> pathlib.Path:
    """`pip install --target` of the layer's lock for this Python, trimmed as infra.build_layers trims the deployed
    layer; cached under build/bench-site by the lock's hash."""
    from infra import build_layers

    target = STANDIN_ROOT / f"{layer}-{_fingerprint(layer)}"
    if (target / ".complete").exists():
        return target
    for stale in STANDIN_ROOT.glob(f"{layer}-*"):  # an older lock's or trimming's build
        shutil.rmtree(stale, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile"]
    command += ["--only-binary=:all:", "--no-deps", "-r", str(LOCKS[layer]), "--target", str(target)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install of {LOCKS[layer].name} failed: {proc.stderr.strip()[-400:]}")
    build_layers.trim(target, layer)
    (target / ".complete").write_text(" ".join(command) + "\n")
    return target


def _runtime_site() -> pathlib.Path:
    """boto3 and its dependencies alone (links into the venv), standing in for the Lambda runtime's copy."""
    import boto3

    venv_site = pathlib.Path(boto3.__file__).resolve().parent.parent
    target = STANDIN_ROOT / "runtime"
    target.mkdir(parents=True, exist_ok=True)
    for name in RUNTIME_PROVIDED:
        link = target / name
        if link.is_symlink() and link.resolve() != (venv_site / name).resolve():  # a moved or rebuilt venv
            link.unlink()
        if not link.is_symlink():
            link.symlink_to(venv_site / name)
    return target


def template_layers() -> dict[str, list[pathlib.Path]]:
    """Each function's layer assets, as the synthesized templates give them (cdk.out: `make synth`)."""
    from local_runtime.template import load_app

    return {name: fn.layers for name, fn in load_app().functions.items()}


def standin() -> tuple[dict[str, pathlib.Path] | None, dict[str, list[pathlib.Path]], str]:
    """({layer: site dir} for deps, payments and the runtime's boto3, or None: the venv then), each function's
    template layers, and what was used."""
    try:
        layers = template_layers()
        if not layers:
            raise RuntimeError("no synthesized template in cdk.out (make synth)")
        sites = {layer: _build_layer(layer) for layer in LOCKS}
        sites["runtime"] = _runtime_site()
    except (OSError, ValueError, RuntimeError, subprocess.TimeoutExpired) as error:
        return None, {}, f"the venv's site-packages (the layers' stand-in could not be built: {error})"
    return (
        sites,
        layers,
        (
            "each side on exactly what deploys: `python -I -S` (no site-packages), sys.path = the function's code + its "
            "template layers (the deps layer from requirements/runtime.txt and, for the functions that call Stripe, the "
            "payments layer from requirements/payments.txt, each `pip install --target` for this Python and trimmed as "
            "infra.build_layers trims it, cached in build/bench-site by the lock's hash) + layers/shared/python + boto3 "
            "and its dependencies as the Lambda runtime provides them; the bare handler: its code + that boto3"
        ),
    )


def function_path(layers: list[pathlib.Path], sites: dict[str, pathlib.Path] | None) -> list[str]:
    """The child's sys.path after the code dir: the function's template layers, the shared layer, the runtime."""
    if sites is None:
        return [str(SHARED_LAYER)]
    kinds = [layer_kind(asset) for asset in layers]
    return [*(str(sites[kind]) for kind in kinds if kind != "shared"), str(SHARED_LAYER), str(sites["runtime"])]


def bare_path(sites: dict[str, pathlib.Path] | None) -> list[str]:
    return [] if sites is None else [str(sites["runtime"])]


def _child_request(fn: FunctionDef, code_dir: pathlib.Path, layers: list[str], event: Any) -> dict[str, Any]:
    """What the child loads (the handler of code_dir, with Lambda's sys.path) and calls it with."""
    return {
        "code_dir": str(code_dir),
        "handler": fn.handler,
        "sys_path": [str(code_dir), *layers],
        "event": event,
        "context": {
            "function_name": fn.function_name,
            "memory_limit_in_mb": fn.memory_mb,
            "invoked_function_arn": fn.arn,
            "timeout_s": fn.timeout_s,
        },
    }


def _run_child(
    request: dict[str, Any], env: dict[str, str], importtime: bool = False, *, no_site: bool = False
) -> tuple[dict[str, Any], str]:
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        req, res = pathlib.Path(tmp) / "request.json", pathlib.Path(tmp) / "result.json"
        req.write_text(json.dumps(request))
        flags = ["-I", *(["-S"] if no_site else []), *(["-X", "importtime"] if importtime else [])]
        cmd = [sys.executable, *flags, str(CHILD), str(req), str(res)]
        started = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
        wall = (time.perf_counter() - started) * 1000
        if proc.returncode != 0 or not res.exists():
            raise RuntimeError(f"cold start child failed ({proc.returncode}): {proc.stderr[-1500:]}")
        result = json.loads(res.read_text())
        result["wall_ms"] = wall
        return result, proc.stderr


PROFILER_MODULES = {"cProfile", "pstats", "_lsprof", "profile"}


def top_imports(stderr: str, limit: int = 15) -> dict[str, Any]:
    """From `-X importtime` output: self time summed per top-level package, and the heaviest direct imports."""
    by_package: dict[str, int] = {}
    direct: list[dict[str, Any]] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:") :].split("|")
        try:
            self_us, cumulative_us = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        name = parts[2].rstrip()
        module = name.strip()
        package = module.split(".", 1)[0]
        if package in PROFILER_MODULES:  # the profiling run's own, not the function's
            continue
        by_package[package] = by_package.get(package, 0) + self_us
        if len(name) - len(name.lstrip(" ")) <= 1:
            direct.append({"module": module, "cumulative_ms": round(cumulative_us / 1000, 1)})
    direct.sort(key=lambda r: r["cumulative_ms"], reverse=True)
    packages = sorted(by_package.items(), key=lambda kv: kv[1], reverse=True)[:limit]
    return {
        "self_ms_by_package": {name: round(us / 1000, 1) for name, us in packages},
        "heaviest_direct_imports_ms": direct[:limit],
        "note": "one `python -X importtime` run; a module is charged to whoever imported it first",
    }


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """The bare handler's event: the raw calls to make, in order (the function's first call makes the same)."""
    return {"calls": [{"operation": operation, "params": params} for operation, params in calls]}


def _requests(ctx: dict[str, Any], table: str) -> dict[str, dict[str, Any]]:
    """Per function: the first event it gets and the equivalent single raw call for the bare handler."""
    from shop import keys
    from shop.repository.store import to_item

    scenario = ctx["scenario"]
    http_event = ctx["functions"].http_event
    product_id = scenario.ids["products"][0]
    order_id = scenario.ids.get("order_id") or "missing"
    out: dict[str, dict[str, Any]] = {
        "customers": {
            "event": http_event("GET", "/customers/bench-alice", sub="bench-alice"),
            "bare": _calls(("get_item", {"TableName": table, "Key": to_item(keys.customer_key("bench-alice"))})),
        },
        "products": {
            "event": http_event("GET", f"/products/{product_id}"),
            "bare": _calls(("get_item", {"TableName": table, "Key": to_item(keys.product_key(product_id))})),
        },
        "orders": {
            "event": http_event("GET", f"/orders/{order_id}", sub="bench-alice"),
            "bare": _calls(
                (
                    "query",
                    {
                        "TableName": table,
                        "KeyConditionExpression": "PK = :pk",
                        "ExpressionAttributeValues": {":pk": {"S": keys.order_pk(order_id)}},
                    },
                )
            ),
        },
    }
    session_id = ctx.get("cold_session_id")
    if session_id:
        out["sessions"] = {
            "event": http_event("GET", f"/sessions/{session_id}"),
            "bare": _calls(
                ("get_item", {"TableName": table, "Key": to_item(keys.session_key(session_id)), "ConsistentRead": True})
            ),
        }
    return out


def _stream_request(ctx: dict[str, Any], table: str) -> dict[str, Any]:
    """A fresh PENDING order and its real INSERT stream record (each sample confirms its own order)."""
    from bench.lambdas import order_events_reader
    from bench.routes import ADDRESS
    from shop import keys, wiring
    from shop.models import ShippingAddress
    from shop.repository import Table
    from shop.repository.store import to_item
    from shop.services.actor import Actor
    from shop.services.orders import RequestedLine

    store = ctx["store"]
    if "cold_reader" not in ctx:
        ctx["cold_reader"] = order_events_reader(store.client(), store.client("dynamodbstreams"), table)
    reader = ctx["cold_reader"]
    reader.skip_to_now()
    order = wiring.order_service(Table()).place(
        Actor("bench-cold"),
        address=ShippingAddress.model_validate(ADDRESS),
        lines=[RequestedLine(ctx["scenario"].ids["products"][5], 1)],
    )
    records = [r for r in reader.read() if r["dynamodb"]["Keys"]["PK"]["S"] == keys.order_pk(order.order_id)]
    # The first batch confirms the order: its conditional UpdateItem, then the notification (a conditional
    # PutItem) and the customer's order entry (a conditional UpdateItem): a fresh record writes them without the
    # order's not-archived check (shop.services.archive_timing; the history entry is written by the
    # confirmation's MODIFY, with the sales count: decision 057; counting nothing, the batch never reads the sales
    # cut-over either, shop.services.sales.LegacyMarkerCheck). The bare handler makes the same three calls, so
    # the ratio compares what the code costs, not a different amount of store work (cold_start refuses a pair
    # whose calls differ).
    bench_key = {"PK": f"BENCH#COLD#{order.order_id}"}
    writes = [
        (
            "put_item",
            {
                "TableName": table,
                "Item": to_item({**bench_key, "SK": "NOTIFICATION", "at": order.created_at}),
                "ConditionExpression": "attribute_not_exists(PK)",
            },
        ),
        (
            "update_item",
            {
                "TableName": table,
                "Key": to_item({**bench_key, "SK": "CUSTOMER_ENTRY"}),
                "UpdateExpression": "SET #at = :at",
                "ConditionExpression": "attribute_not_exists(PK)",
                "ExpressionAttributeNames": {"#at": "at"},
                "ExpressionAttributeValues": {":at": {"S": order.created_at}},
            },
        ),
    ]
    return {
        "event": {"Records": records[:1]},
        "bare": _calls(
            (
                "update_item",
                {
                    "TableName": table,
                    "Key": to_item(keys.order_key(order.order_id)),
                    "UpdateExpression": "SET updated_at = :at",
                    "ExpressionAttributeValues": {":at": {"S": order.created_at}},
                },
            ),
            *writes,
        ),
    }


WEBHOOK_SECRET = "whsec_bench_cold_start"  # not a secret: the bench signs its own deliveries
PAYMENT_ENV = {
    "PAYMENTS": "stripe",
    "STRIPE_SECRET_KEY": "sk_test_bench",
    "STRIPE_WEBHOOK_SECRET": WEBHOOK_SECRET,
    "STRIPE_API_BASE": "http://127.0.0.1:9",  # never called: an event for an unknown order changes nothing
}


def _webhook_request(ctx: dict[str, Any], table: str) -> dict[str, Any]:
    """A fresh signed delivery (its own event id: each sample applies one) of an authorisation for an order the
    table does not hold: the payments function verifies it and reads the order (nothing is written: decision 056)."""
    from local_runtime.payments import signed
    from shop import keys
    from shop.repository.store import to_item

    order_id = f"bench-cold-{uuid.uuid4()}"
    event = {
        "id": f"evt_bench_{uuid.uuid4().hex}",
        "object": "event",
        "type": "payment_intent.amount_capturable_updated",
        "created": int(time.time()),
        "livemode": False,
        "data": {
            "object": {
                "id": f"pi_bench_{uuid.uuid4().hex[:16]}",
                "object": "payment_intent",
                "amount": 1000,
                "amount_capturable": 1000,
                "currency": "usd",
                "status": "requires_capture",
                "metadata": {"order_id": order_id},
            }
        },
    }
    body = json.dumps(event)
    headers = {"Stripe-Signature": signed(body.encode(), WEBHOOK_SECRET)}
    # The delivery's one store call: the order's consistent GetItem; the bare handler makes the same.
    return {
        "event": ctx["functions"].http_event("POST", "/webhooks/stripe", body=event, headers=headers),
        "bare": _calls(
            ("get_item", {"TableName": table, "Key": to_item(keys.order_key(order_id)), "ConsistentRead": True}),
        ),
    }


def _request(function: str, ctx: dict[str, Any], table: str, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if function == "order_events":
        return _stream_request(ctx, table)
    if function == "payments":
        return _webhook_request(ctx, table)
    return requests[function]


def cold_start(config: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    scenario = ctx.get("scenario")
    if scenario is None:
        return {"met": False, "why": "needs the routes phase (its table and ids)"}
    store = ctx["store"]
    table = scenario.table_name
    store.use(table)
    from shop import wiring
    from shop.repository import Table

    ctx["cold_session_id"] = wiring.session_service(Table()).create().session_id
    requests = _requests(ctx, table)
    sites, layers, footing = (None, {}, "the venv's site-packages (smoke run)") if config.smoke else standin()
    no_site = sites is not None
    bare_dir = pathlib.Path(tempfile.mkdtemp(prefix="bench-bare-"))
    (bare_dir / "handler.py").write_text(BARE)
    results: dict[str, Any] = {}
    misses: list[str] = []
    functions = ctx["functions"]
    for function in ("customers", "products", "orders", "sessions", "order_events", "payments"):
        if not functions.has(function):
            results[function] = {"skipped": functions.errors[function]}
            misses.append(f"{function}: not measured")
            continue
        fn = functions.functions[function]
        env = {
            **{k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ},
            **function_env(store.endpoint, table, service=function),
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
            "TZ": ":UTC",
            **(PAYMENT_ENV if function == "payments" else {}),
        }
        fn_samples: list[dict[str, Any]] = []
        bare_samples: list[dict[str, Any]] = []
        for i in range(config.cold_samples):
            request = _request(function, ctx, table, requests)
            fn_request = _child_request(
                fn, fn.code_dir, function_path(layers.get(function, []), sites), request["event"]
            )
            bare_request = _child_request(fn, bare_dir, bare_path(sites), request["bare"])
            pair = [(fn_samples, fn_request), (bare_samples, bare_request)]
            for samples, req in pair if i % 2 == 0 else reversed(pair):
                samples.append(_run_child(req, env, no_site=no_site)[0])
        fn_total = median([s["total_ms"] for s in fn_samples])
        bare_total = median([s["total_ms"] for s in bare_samples])
        # The ratio judged: the median of each pair's own ratio. A pair's two samples ran back to back, so a
        # burst of load from elsewhere moves both; the ratio of the two sides' medians (kept below) can pair a
        # quiet moment's bare sample with a loaded moment's function sample.
        pair_ratios = [f["total_ms"] / b["total_ms"] for f, b in zip(fn_samples, bare_samples, strict=True)]
        ratio = round(median(pair_ratios), 2) if all(b["total_ms"] for b in bare_samples) else None
        entry: dict[str, Any] = {
            "median_ms": round(fn_total, 1),
            "import_median_ms": round(median([s["import_ms"] for s in fn_samples]), 1),
            "first_invoke_median_ms": round(median([s["first_invoke_ms"] for s in fn_samples]), 1),
            "bare_median_ms": round(bare_total, 1),
            "bare_import_median_ms": round(median([s["import_ms"] for s in bare_samples]), 1),
            "bare_first_invoke_median_ms": round(median([s["first_invoke_ms"] for s in bare_samples]), 1),
            "ratio": ratio,
            "pair_ratios_range": [round(min(pair_ratios), 2), round(max(pair_ratios), 2)],
            # cross-checks on a loaded machine: the ratio of the medians (the figure before issue 26), and the
            # same work's CPU time (no waiting for the CPU, the store's answer or the disk)
            "ratio_of_medians": round(fn_total / bare_total, 2) if bare_total else None,
            "cpu_median_ms": round(median([s["total_cpu_ms"] for s in fn_samples]), 1),
            "bare_cpu_median_ms": round(median([s["total_cpu_ms"] for s in bare_samples]), 1),
            "cpu_ratio": round(
                median([s["total_cpu_ms"] for s in fn_samples]) / median([s["total_cpu_ms"] for s in bare_samples]),
                2,
            ),
            "wall_median_ms": round(median([s["wall_ms"] for s in fn_samples]), 1),
            "bare_wall_median_ms": round(median([s["wall_ms"] for s in bare_samples]), 1),
            "wall_ratio": round(
                median([s["wall_ms"] for s in fn_samples]) / median([s["wall_ms"] for s in bare_samples]), 2
            ),
            "samples": len(fn_samples),
            "first_status": fn_samples[0].get("status"),
            "modules_loaded": fn_samples[0].get("modules"),
            "bare_modules_loaded": bare_samples[0].get("modules"),
        }
        if ratio is None or ratio > TARGET:
            misses.append(f"{function}: {ratio}x")
        if config.profile:  # every function's import graph (docs/performance.md keeps them as tables)
            request = _request(function, ctx, table, requests)
            path = function_path(layers.get(function, []), sites)
            profile_request = _child_request(fn, fn.code_dir, path, request["event"])
            profile_request["profile_first_call"] = True
            profiled, stderr = _run_child(profile_request, env, importtime=True, no_site=no_site)
            entry["heaviest_imports"] = top_imports(stderr)
            entry["first_call_profile"] = profiled.get("first_call_profile")
            entry["first_call_store_calls"] = profiled.get("store_calls")
            bare_profile = _child_request(fn, bare_dir, bare_path(sites), request["bare"])
            bare_profile["profile_first_call"] = True
            entry["bare_store_calls"] = _run_child(bare_profile, env, no_site=no_site)[0].get("store_calls")
            if entry["bare_store_calls"] != entry["first_call_store_calls"]:
                # An unfair pair (the function's first call changed, its bare twin did not): no ratio stands.
                misses.append(
                    f"{function}: the bare handler's store calls {entry['bare_store_calls']} are not the function's "
                    f"first call's {entry['first_call_store_calls']}"
                )
        results[function] = entry
    shutil.rmtree(bare_dir, ignore_errors=True)
    worst = max((r["ratio"] for r in results.values() if r.get("ratio")), default=None)
    why = None
    if misses:
        modules = sorted(r["modules_loaded"] for r in results.values() if r.get("modules_loaded"))
        bare = next((r["bare_modules_loaded"] for r in results.values() if r.get("bare_modules_loaded")), None)
        why = (
            (
                f"{misses}: the functions load {modules[0]} to {modules[-1]} modules against the bare handler's "
                f"{bare}: pydantic (the validated bodies and models), Powertools' resolver with OpenAPI validation, "
                "Logger and Metrics; order_events also Powertools' batch module (which imports asyncio); the bare "
                "handler makes the same store calls as each function's first call (functions.*.bare_store_calls); see "
                "functions.*.heaviest_imports, first_call_profile and docs/performance.md"
            )
            if modules
            else f"{misses}"
        )
    return {
        "why": why,
        "value": worst,
        "functions": results,
        "target": TARGET,
        "met": not misses,
        "misses": misses,
        "method": "fresh `python -I` per sample; (handler module import + first invocation) measured inside the "
        "process, against a bare module that imports boto3, makes a client and makes the same store calls as the "
        "function's first call (one for the API reads; order_events' confirmation: 3; the webhook: 1; a pair whose calls differ is a miss), the two "
        "run back to back in alternating order; ratio = median over the pairs of function/bare (ratio_of_medians: "
        "median function / median bare); cpu_* = the same span's process CPU time; "
        f"wall_* includes interpreter start (the same for both); site-packages: {footing}",
        "env": "TABLE_NAME, PAGINATION_SECRET, STATUS_SHARDS, POWERTOOLS_SERVICE_NAME/METRICS_NAMESPACE/LOG_LEVEL=INFO, "
        "POWERTOOLS_TRACE_DISABLED=true, AWS_ENDPOINT_URL_DYNAMODB -> DynamoDB Local; payments also PAYMENTS=stripe and "
        "the local Stripe variables (its first event: a signed delivery for an order the table does not hold)",
    }
