"""`make drill`: fault drills against the local stack under steady load, figures into results.json `faults`.

What each drill injects and checks: docs/operations.md, "Fault drills". `make drill` boots a stack of its own for
each drill (`drill`), so that each drill's figures are measured from a fresh stack; the e2e smoke runs its drills
one after another on one stack (`run`, tests/e2e/test_drills.py), each on shop data of its own. Every process a
drill starts is stopped in a finally block (by pid, its own process group).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import requests

from bench.run import RESULTS
from local_runtime import stack as local_stack
from local_runtime.cli import STORE_FAULTS_FILE
from local_runtime.template import REPO_ROOT, TemplateError
from shop.aws_config import Budget

API_TIMEOUT_S = 10.0
GATEWAY_ALLOWANCE_S = 1.0  # the local gateway's own hop and worker hand-off
ADDRESS = {"name": "Drill", "line1": "1 Loopback Road", "city": "London", "postal_code": "SW1A 1AA", "country": "GB"}
INITIAL_STOCK = 100_000
THROTTLE_RATE = 0.3
REPEAT_FOR_S = 20.0
CRASH_AFTER_S = 0.15  # into an order placement, which takes longer on DynamoDB Local
EMF_STORE_UNAVAILABLE = '"StoreUnavailable"'


class Rig:
    """One local stack process (and its DynamoDB Local and workers) on a data directory."""

    def __init__(self, data_dir: pathlib.Path, cdk_out: pathlib.Path) -> None:
        self.data_dir = data_dir
        self.cdk_out = cdk_out
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.log = data_dir.parent / f"{data_dir.name}.log"

    def start(self, *, fresh: bool) -> None:
        options = ["--no-seed", "--deployed-budget", "--echo-logs", *(["--fresh"] if fresh else [])]
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
        env.pop("TABLE_NAME", None)
        self.proc, offset = local_stack.launch(self.data_dir, self.log, cdk_out=self.cdk_out, options=options, env=env)
        url = local_stack.wait_ready(self.proc, self.log, offset, 90)
        if url:
            self.url = url
            return
        self.stop()
        raise RuntimeError(f"the local stack did not start; see {self.log}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pids(self, mark: str) -> list[int]:
        """This run's processes (below the stack process) whose command line contains `mark`."""
        if self.proc is None:
            return []
        return sorted(p.pid for p in local_stack.descendants(self.proc.pid) if mark in p.cmdline and p.state != "Z")

    def java(self) -> int:
        [pid] = self.pids("DynamoDBLocal.jar")
        return pid

    def kill(self) -> None:
        """kill -9 of the whole stack (stack process, poller thread, Java, workers)."""
        if self.proc is not None:
            children = self.pids("DynamoDBLocal.jar") + self.pids("worker.py")
            for pid in [self.proc.pid, *children]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        for pid in self.pids("DynamoDBLocal.jar"):  # a paused store cannot stop
            os.kill(pid, signal.SIGCONT)
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
            self.proc = None
        except subprocess.TimeoutExpired:
            self.kill()


@dataclass
class Tally:
    budget_s: float
    answers: list[tuple[str, int, float, bool]] = field(default_factory=list)  # (kind, status, seconds, retry-after)
    unanswered: int = 0
    placed: dict[str, str] = field(default_factory=dict)  # idempotency key -> order id (201)
    refused: list[str] = field(default_factory=list)  # keys answered 503
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, response: requests.Response | None, seconds: float) -> None:
        with self.lock:
            if response is None:
                self.unanswered += 1
                return
            self.answers.append((kind, response.status_code, seconds, "Retry-After" in response.headers))

    def summary(self) -> dict[str, Any]:
        statuses = [status for _, status, _, _ in self.answers]
        slowest = max((seconds for *_, seconds, _ in [(a[0], a[1], a[2], a[3]) for a in self.answers]), default=0.0)
        return {
            "requests": len(self.answers) + self.unanswered,
            "successes": sum(1 for s in statuses if s < 400),
            "status_503": statuses.count(503),
            "status_503_without_retry_after": sum(1 for _, s, _, ra in self.answers if s == 503 and not ra),
            "status_500": statuses.count(500),
            "other_errors": sum(1 for s in statuses if s >= 400 and s not in (500, 503)),
            "unanswered_connection_refused": self.unanswered,
            "slowest_answer_s": round(slowest, 3),
            "budget_s": self.budget_s,
            "within_budget": slowest <= self.budget_s,
        }


class Shop:
    def __init__(self, rig: Rig) -> None:
        from local_runtime import auth

        keys = auth.load_or_create_keys(rig.data_dir)
        self.rig = rig
        self.admin = auth.issue_token(keys, "drill-admin", groups=["admin"])
        self.customer_id = f"drill-{uuid.uuid4().hex[:8]}"
        self.customer = auth.issue_token(keys, self.customer_id)
        self.local = threading.local()
        self.product_id = ""

    def call(self, method: str, path: str, token: str | None = None, **kw: Any) -> requests.Response:
        session = getattr(self.local, "session", None) or requests.Session()
        self.local.session = session
        headers = kw.pop("headers", {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return session.request(method, self.rig.url + path, headers=headers, timeout=30, **kw)

    def setup(self) -> None:
        self.call("POST", "/categories", self.admin, json={"slug": "drill", "name": "Drill"})  # 409 when it exists
        product = {"name": "Drill", "category": "drill", "price_cents": 100, "stock": INITIAL_STOCK, "description": "d"}
        self.product_id = self.call("POST", "/products", self.admin, json=product).json()["product_id"]
        self.call("POST", "/customers", self.customer, json={"email": f"{self.customer_id}@example.com", "name": "D"})

    def order(self, key: str) -> requests.Response:
        body = {"lines": [{"product_id": self.product_id, "quantity": 1}], "shipping_address": ADDRESS}
        return self.call("POST", "/orders", self.customer, headers={"Idempotency-Key": key}, json=body)


def place(shop: Shop, tally: Tally, key: str) -> requests.Response:
    """One order placement, remembered for the integrity check (answers >= 500 are repeated there).

    A placement whose connection dropped (the stack was killed with it in flight) may have committed:
    its outcome is unknown, so it is repeated with the same key as well, as a client would.
    """
    try:
        response = shop.order(key)
    except requests.RequestException:
        with tally.lock:
            tally.refused.append(key)
        raise
    with tally.lock:
        if response.status_code == 201:
            tally.placed[key] = response.json()["order_id"]
        elif response.status_code >= 500:
            tally.refused.append(key)
    return response


def load(shop: Shop, tally: Tally, stop: threading.Event, clients: int) -> list[threading.Thread]:
    def client(n: int) -> None:
        session_id: str | None = None
        i = 0
        while not stop.is_set():
            i += 1
            kind = ("read", "cart", "order")[i % 3]
            started = time.monotonic()
            try:
                if kind == "read":
                    response = shop.call("GET", f"/products/{shop.product_id}")
                elif kind == "cart":
                    if session_id is None:
                        created = shop.call("POST", "/sessions")
                        session_id = created.json().get("session_id") if created.status_code == 201 else None
                        response = created
                    else:
                        path = f"/sessions/{session_id}/cart/{shop.product_id}"
                        response = shop.call("PUT", path, json={"quantity": 1 + i % 3})
                else:
                    response = place(shop, tally, f"drill-{n}-{i}-{uuid.uuid4().hex[:6]}")
            except requests.RequestException:
                tally.record(kind, None, time.monotonic() - started)
                time.sleep(0.2)
                continue
            tally.record(kind, response, time.monotonic() - started)
            time.sleep(0.05)

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    return threads


def check(shop: Shop, tally: Tally, settle_s: float) -> dict[str, Any]:
    """Integrity and exactly-once stream effects, once the store answers again."""
    orders = dict(tally.placed)
    taken_before_repeats = INITIAL_STOCK - shop.call("GET", f"/products/{shop.product_id}").json()["stock"]
    repeated = 0
    repeats_refused: list[str] = []
    for key in tally.refused:
        # A first attempt whose in-progress lock the stalled store could not release answers
        # 409 IDEMPOTENCY_IN_PROGRESS until the lock expires (the function's timeout): retry as a client would.
        deadline = time.monotonic() + REPEAT_FOR_S
        while True:
            response = shop.order(key)
            retry = response.status_code in (500, 503) or "IDEMPOTENCY_IN_PROGRESS" in response.text
            if not retry or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if response.status_code == 201:
            orders[key] = response.json()["order_id"]
            repeated += 1
        else:
            repeats_refused.append(f"{response.status_code} {response.text[:200]}")
    missing = [oid for oid in orders.values() if shop.call("GET", f"/orders/{oid}", shop.customer).status_code != 200]
    stock = shop.call("GET", f"/products/{shop.product_id}").json()["stock"]
    ids = set(orders.values())
    deadline = time.monotonic() + settle_s
    confirmed: dict[str, list[str]] = {}
    notified: dict[str, int] = {}
    while time.monotonic() < deadline:
        for oid in ids - set(confirmed):
            body = shop.call("GET", f"/orders/{oid}", shop.customer).json()
            if body.get("status") == "CONFIRMED":
                confirmed[oid] = [h["status"] for h in body["history"]]
        notified = _confirmations(shop)
        if len(confirmed) == len(ids) and all(notified.get(oid) for oid in ids):
            break
        time.sleep(0.5)
    time.sleep(1.0)  # a duplicate would arrive right after the first
    notified = _confirmations(shop)
    wrong = [oid for oid in ids if confirmed.get(oid) != ["PENDING", "CONFIRMED"] or notified.get(oid) != 1]
    if wrong:
        print(
            f"[drill] not exactly once: {[(o, confirmed.get(o), notified.get(o)) for o in wrong[:5]]}", file=sys.stderr
        )
    return {
        "orders_checked": len(ids),
        "orders_from_repeats_of_503": repeated,
        "orders_written_by_attempts_answered_5xx": taken_before_repeats - len(tally.placed),
        "repeats_refused": repeats_refused,
        "orders_missing": len(missing),
        "stock_taken_matches_orders": INITIAL_STOCK - stock == len(ids),
        # Orders no answer or repeat returns: a crashed placement re-run after its idempotency lock expired.
        "orphan_orders": INITIAL_STOCK - stock - len(ids),
        "stream_effects_checked": len(ids),
        "stream_effects_exactly_once": not wrong,
        "orders_confirmed": len(confirmed),
        "confirmation_notifications": sum(notified.values()),
        "duplicate_confirmations": sum(1 for n in notified.values() if n > 1),
    }


def _confirmations(shop: Shop) -> dict[str, int]:
    counts: dict[str, int] = {}
    path = f"/customers/{shop.customer_id}/notifications"
    params: dict[str, Any] = {"limit": 100}
    while True:
        page = shop.call("GET", path, shop.customer, params=params).json()
        for note in page.get("items", []):
            if note.get("type") == "ORDER_CONFIRMED":
                counts[note["order_id"]] = counts.get(note["order_id"], 0) + 1
        if not page.get("next_token"):
            return counts
        params["next_token"] = page["next_token"]


# ------------------------------------------------------------------------------------------ the faults


def stall(rig: Rig, shop: Shop, tally: Tally, seconds: float) -> None:
    """DynamoDB Local paused (SIGSTOP) for `seconds`, then resumed."""
    java = rig.java()
    os.kill(java, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(java, signal.SIGCONT)


def store_gone(rig: Rig, shop: Shop, tally: Tally, _: float) -> None:
    """DynamoDB Local killed; the local stack restarts it on the same data and port, as a supervisor would.
    Returns once it accepts connections again (recovery is measured from there)."""
    java = rig.java()
    cmdline = pathlib.Path(f"/proc/{java}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    found = re.search(r"-port (\d+)", cmdline)
    if found is None:
        raise RuntimeError(f"no -port in DynamoDB Local's command line: {cmdline}")
    port = int(found.group(1))
    os.kill(java, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if [pid for pid in rig.pids("DynamoDBLocal.jar") if pid != java] and _accepts(port):
            return
        time.sleep(0.2)
    raise RuntimeError("DynamoDB Local was not restarted")


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def kill_worker(rig: Rig, shop: Shop, tally: Tally, _: float) -> None:
    """kill -9 of the orders function's workers while an order placement runs in one of them."""
    for round_ in range(3):
        key = f"drill-crash-{round_}-{uuid.uuid4().hex[:6]}"
        started = time.monotonic()
        in_flight = threading.Thread(
            target=lambda key=key, started=started: tally.record(
                "order", place(shop, tally, key), time.monotonic() - started
            )
        )
        in_flight.start()
        time.sleep(CRASH_AFTER_S)
        for pid in rig.pids("functions/orders"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        in_flight.join(30)


def kill_poller(rig: Rig, shop: Shop, tally: Tally, seconds: float) -> None:
    """The poller runs in the stack process: kill -9 of it (and all it started), restart on the same data."""
    rig.kill()
    time.sleep(min(seconds, 2.0))
    rig.start(fresh=False)


def throttle(rig: Rig, shop: Shop, tally: Tally, seconds: float) -> None:
    """30 % of the functions' DynamoDB calls answered with throttling for `seconds` (worker.StoreFaults)."""
    path = rig.data_dir / STORE_FAULTS_FILE
    path.write_text(json.dumps({"throttle_rate": THROTTLE_RATE, "until": time.time() + seconds}))
    try:
        time.sleep(seconds)
    finally:
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Fault:
    run: Callable[[Rig, Shop, Tally, float], None]
    seconds: float
    crashes: bool = False  # invocations die with the worker: API Gateway answers those 500
    # a bound on the seconds from the fault's end to the first normal answer: `make drill` holds it,
    # the e2e smoke only that the service recovers (no wall-clock assertion in `make test`)
    recovery_bound_s: float | None = None


FAULTS: dict[str, Fault] = {
    "store_stall": Fault(stall, 5.0, recovery_bound_s=2.0),
    "store_gone": Fault(store_gone, 0.0),
    "worker_killed": Fault(kill_worker, 0.0, crashes=True),
    "poller_killed": Fault(kill_poller, 1.0),
    "throttling_storm": Fault(throttle, 10.0),
}


def drill(name: str, workdir: pathlib.Path, cdk_out: pathlib.Path, *, scale: float, clients: int) -> dict[str, Any]:
    """One drill on a stack of its own (`make drill`): booted fresh in `workdir/<name>`, stopped after.
    `drill_seconds` counts the boot."""
    rig = Rig(workdir / name, cdk_out)
    started = time.monotonic()
    try:
        rig.start(fresh=True)
        result = run(name, rig, scale=scale, clients=clients)
    finally:
        rig.stop()
    result["drill_seconds"] = round(time.monotonic() - started, 1)
    return result


def run(name: str, rig: Rig, *, scale: float, clients: int) -> dict[str, Any]:
    """One drill on a running stack, which it leaves running (the poller drill restarts it on the same data).

    The drill creates its own product and customer, and its checks read only those (its orders, its product's
    stock, its customer's notifications) and the stack's log from where the drill starts: drills may run one
    after another on one stack. `drill_seconds` counts the drill alone."""
    fault = FAULTS[name]
    budget = Budget.for_timeout(API_TIMEOUT_S)
    tally = Tally(budget_s=budget.function_timeout_s + GATEWAY_ALLOWANCE_S)
    started = time.monotonic()
    steady = max(1.0, 3.0 * scale)
    log_from = rig.log.stat().st_size
    shop = Shop(rig)
    shop.setup()
    stop = threading.Event()
    threads = load(shop, tally, stop, clients)
    try:
        time.sleep(steady)
        fault.run(rig, shop, tally, fault.seconds * scale)
        recovered = _recovery(shop)
        time.sleep(steady)
    finally:  # a drill that fails leaves no load behind on a stack the next drill may share
        stop.set()
        for thread in threads:
            thread.join(40)
    result = tally.summary() | check(shop, tally, settle_s=30) | {"recovered_within_s": recovered}
    emf = rig.log.read_bytes()[log_from:].decode(errors="replace")
    result["store_unavailable_metric"] = emf.count(EMF_STORE_UNAVAILABLE) // 2  # definition + value
    result["fault_seconds"] = fault.seconds * scale
    result["crashed_invocations_answer_500"] = fault.crashes
    result["recovery_bound_s"] = fault.recovery_bound_s
    result["drill_seconds"] = round(time.monotonic() - started, 1)
    return result


def _recovery(shop: Shop) -> float | None:
    """Seconds from the fault's end until a read answers 200 again."""
    end = time.monotonic()
    while time.monotonic() - end < 30:
        try:
            if shop.call("GET", f"/products/{shop.product_id}").status_code == 200:
                return round(time.monotonic() - end, 2)
        except requests.RequestException:
            pass
        time.sleep(0.1)
    return None


def passed(result: dict[str, Any]) -> bool:
    """The drill's guarantees held and the service recovered within the fault's bound (`make drill`)."""
    bound = result.get("recovery_bound_s")
    return guarantees_held(result) and (bound is None or result["recovered_within_s"] <= bound)


def guarantees_held(result: dict[str, Any]) -> bool:
    """Every guarantee but the recovery bound: what the e2e smoke asserts, whatever the machine's load."""
    return (
        (result["status_500"] == 0 or result["crashed_invocations_answer_500"])
        and result["status_503_without_retry_after"] == 0
        and result["within_budget"]
        and result["orders_missing"] == 0
        and result["stock_taken_matches_orders"]
        and result["stream_effects_exactly_once"]
        and result["recovered_within_s"] is not None
    )


@contextlib.contextmanager
def _kept(keep: str | None, tmp: str) -> Iterator[None]:
    try:
        yield
    finally:
        if keep:
            shutil.copytree(tmp, keep, dirs_exist_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drills", description=__doc__)
    parser.add_argument("--only", nargs="*", choices=sorted(FAULTS), help="some drills only")
    parser.add_argument("--scale", type=float, default=1.0, help="fault and load lengths x this (smoke: 0.3)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--cdk-out", default=str(REPO_ROOT / "cdk.out"))
    parser.add_argument("--keep", help="copy the stacks' logs and data here (debugging)")
    parser.add_argument("--no-write", action="store_true", help="print only, leave results.json alone")
    args = parser.parse_args(argv)
    faults: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="shop-drills-") as tmp, _kept(args.keep, tmp):
        try:  # the templates only, as the e2e tests run them: a stale asset folder cannot hide a change
            cdk_out = local_stack.templates_only(pathlib.Path(args.cdk_out), pathlib.Path(tmp) / "cdk.out")
        except TemplateError as exc:
            raise SystemExit(str(exc)) from None
        for name in args.only or FAULTS:
            print(f"[drill] {name} ...", file=sys.stderr, flush=True)
            faults[name] = drill(name, pathlib.Path(tmp), cdk_out, scale=args.scale, clients=args.clients)
            faults[name]["passed"] = passed(faults[name])
            print(f"[drill] {name}: {json.dumps(faults[name])}", file=sys.stderr, flush=True)
    print(json.dumps(faults, indent=1))
    if not args.no_write:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results["faults"] = faults
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(result["passed"] for result in faults.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
