"""A bounded load run against the local stack: fixed clients, fixed time, loopback only.

The mix and the stack's start and stop: docs/performance.md, "How each figure is measured".
"""

from __future__ import annotations

import os
import pathlib
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from bench.stats import ms, percentile
from local_runtime.functions import SHARED_LAYER
from local_runtime.template import REPO_ROOT

READY = re.compile(r"local stack ready at (http://\S+)")
MIX = (("get_product", 4), ("list_category", 3), ("create_session", 1.5), ("put_cart", 1.5))


def _start_stack(data_dir: pathlib.Path, timeout: float) -> tuple[subprocess.Popen[str], str, list[str]]:
    env = {**os.environ, "PYTHONPATH": f"{SHARED_LAYER}{os.pathsep}{REPO_ROOT}", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "local_runtime", "dev", "--port", "0", "--data-dir", str(data_dir), "--fresh"],
        cwd=str(REPO_ROOT),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    output: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line.rstrip())
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, name="stack-output", daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            continue
        if line is None:
            break
        match = READY.search(line)
        if match:
            return proc, match.group(1), output
    _stop_stack(proc)
    raise RuntimeError(f"local stack not ready within {timeout:.0f}s: {' | '.join(output[-15:])}")


def _stop_stack(proc: subprocess.Popen[str]) -> float:
    started = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    return time.monotonic() - started


def _client(url: str, products: list[str], categories: list[str], stop_at: float, seed: int) -> dict[str, Any]:
    import requests

    rng = random.Random(seed)
    names = [name for name, _ in MIX]
    weights = [weight for _, weight in MIX]
    latencies: list[float] = []
    errors: dict[str, int] = {}
    counts: dict[str, int] = dict.fromkeys(names, 0)
    session_id: str | None = None
    with requests.Session() as http:
        for _ in range(1_000_000):  # bounded; the clock ends it first
            if time.monotonic() >= stop_at:
                break
            kind = rng.choices(names, weights)[0]
            if kind == "put_cart" and session_id is None:
                kind = "create_session"
            started = time.perf_counter()
            try:
                if kind == "get_product":
                    response = http.get(f"{url}/products/{rng.choice(products)}", timeout=10)
                elif kind == "list_category":
                    response = http.get(f"{url}/products", params={"category": rng.choice(categories)}, timeout=10)
                elif kind == "create_session":
                    response = http.post(f"{url}/sessions", timeout=10)
                    if response.status_code == 201:
                        session_id = response.json()["session_id"]
                else:
                    response = http.put(
                        f"{url}/sessions/{session_id}/cart/{rng.choice(products)}",
                        json={"quantity": rng.randint(1, 3)},
                        timeout=10,
                    )
                latencies.append(time.perf_counter() - started)
                counts[kind] += 1
                if response.status_code >= 400:
                    key = f"{kind}: HTTP {response.status_code}"
                    errors[key] = errors.get(key, 0) + 1
            except requests.RequestException as exc:
                latencies.append(time.perf_counter() - started)
                key = f"{kind}: {type(exc).__name__}"
                errors[key] = errors.get(key, 0) + 1
    return {"latencies": latencies, "errors": errors, "counts": counts}


def load(config: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    import requests

    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="bench-stack-"))
    boot_started = time.monotonic()
    proc, url, _output = _start_stack(data_dir, timeout=config.load_budget_s)
    boot_s = time.monotonic() - boot_started
    warmup = 0.0
    elapsed = 0.0
    results: list[dict[str, Any]] = []
    try:
        categories = ["coffee", "kitchen", "apparel"]
        products: list[str] = []
        for category in categories:
            page = requests.get(f"{url}/products", params={"category": category, "limit": "100"}, timeout=10)
            page.raise_for_status()
            products += [item["product_id"] for item in page.json()["items"]]
        if not products:
            raise RuntimeError("the local stack's seeded catalogue is empty")
        warmup = min(5.0, config.load_seconds / 4)  # the same clients, unrecorded: workers spawn on demand
        warmers = [
            threading.Thread(target=_client, args=(url, products, categories, time.monotonic() + warmup, 100 + i))
            for i in range(config.load_clients)
        ]
        for thread in warmers:
            thread.start()
        for thread in warmers:
            thread.join(timeout=warmup + 30)
        stop_at = time.monotonic() + config.load_seconds
        threads = [
            threading.Thread(target=lambda i=i: results.append(_client(url, products, categories, stop_at, i)))
            for i in range(config.load_clients)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=config.load_seconds + 30)
        elapsed = time.monotonic() - started
    finally:
        stop_s = _stop_stack(proc)
        shutil.rmtree(data_dir, ignore_errors=True)
    latencies = [lat for r in results for lat in r["latencies"]]
    errors: dict[str, int] = {}
    counts: dict[str, int] = {}
    for r in results:
        for key, value in r["errors"].items():
            errors[key] = errors.get(key, 0) + value
        for key, value in r["counts"].items():
            counts[key] = counts.get(key, 0) + value
    error_total = sum(errors.values())
    return {
        "clients": config.load_clients,
        "seconds": config.load_seconds,
        "elapsed_s": round(elapsed, 2),
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / elapsed, 1) if elapsed else None,
        "p50_ms": ms(percentile(latencies, 50)),
        "p99_ms": ms(percentile(latencies, 99)),
        "max_ms": ms(max(latencies)) if latencies else None,
        "errors": error_total,
        "error_kinds": errors,
        "by_kind": counts,
        "mix_weights": dict(MIX),
        "warmup_s": warmup,
        "stack_boot_s": round(boot_s, 1),
        "stack_stop_s": round(stop_s, 1),
        "stack_exit_code": proc.returncode,
        "target": "0 errors",
        "met": error_total == 0 and bool(latencies),
        "method": "`python -m local_runtime dev --port 0 --fresh` (gateway + JWT authorizer + worker processes + "
        "stream poller + DynamoDB Local), loopback HTTP, one requests.Session per client thread",
    }
