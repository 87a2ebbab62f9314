"""`make drill`: fault drills against the local stack under steady load, figures into results.json `faults`.

Each drill starts `python -m local_runtime dev --deployed-budget` (the deployed store timeouts and
retries, not the relaxed local ones) on loopback, runs client threads (product reads, cart writes,
order placements with an Idempotency-Key), injects its fault, and then checks:
- no answer is a 500 and none took longer than the function timeout (+ a gateway allowance);
- every 503 carries Retry-After;
- integrity: every 201 order exists; an order answered 503 exists only if its repeat (same key)
  returns it; the product's stock went down by exactly the orders that exist;
- exactly-once stream effects: every order ends CONFIRMED with history [PENDING, CONFIRMED] and
  one ORDER_CONFIRMED notification.
Every process a drill starts is stopped in a finally block (by pid, its own process group).
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
from local_runtime.cli import STORE_FAULTS_FILE
from shop.aws_config import Budget

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
READY = re.compile(r"local stack ready at (http://\S+)")
API_TIMEOUT_S = 10.0
GATEWAY_ALLOWANCE_S = 1.0  # the local gateway's own hop and worker hand-off
ADDRESS = {"name": "Drill", "line1": "1 Loopback Road", "city": "London", "postal_code": "SW1A 1AA", "country": "GB"}
INITIAL_STOCK = 100_000
THROTTLE_RATE = 0.3
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
        cmd = [sys.executable, "-m", "local_runtime", "dev", "--port", "0", "--data-dir", str(self.data_dir)]
        cmd += ["--cdk-out", str(self.cdk_out), "--no-seed", "--deployed-budget"] + (["--fresh"] if fresh else [])
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
        env.pop("TABLE_NAME", None)
        with self.log.open("ab") as out:
            offset = out.tell()
            self.proc = subprocess.Popen(
                cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with self.log.open("rb") as out:
                out.seek(offset)
                found = READY.search(out.read().decode(errors="replace"))
            if found:
                self.url = found.group(1)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the local stack did not start; see {self.log}")

    def pids(self, mark: str) -> list[int]:
        """This run's processes whose command line contains `mark` (a /proc scan of its group)."""
        if self.proc is None:
            return []
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = pathlib.Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            state, pgid = fields[0], int(fields[3])
            if mark in cmdline and state != "Z" and (pgid == self.proc.pid or str(self.data_dir) in cmdline):
                found.append(int(entry))
        return found

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
        product = {"name": "Drill", "category": "drill", "price_cents": 100, "stock": INITIAL_STOCK, "description": "d"}
        self.product_id = self.call("POST", "/products", self.admin, json=product).json()["product_id"]
        self.call("POST", "/customers", self.customer, json={"email": f"{self.customer_id}@example.com", "name": "D"})

    def order(self, key: str) -> requests.Response:
        body = {"lines": [{"product_id": self.product_id, "quantity": 1}], "shipping_address": ADDRESS}
        return self.call("POST", "/orders", self.customer, headers={"Idempotency-Key": key}, json=body)


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
                    key = f"drill-{n}-{i}-{uuid.uuid4().hex[:6]}"
                    response = shop.order(key)
                    with tally.lock:
                        if response.status_code == 201:
                            tally.placed[key] = response.json()["order_id"]
                        elif response.status_code >= 500 or response.status_code == 0:
                            tally.refused.append(key)
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
    repeated = 0
    for key in tally.refused:
        for _ in range(20):
            response = shop.order(key)
            if response.status_code != 503:
                break
            time.sleep(0.5)
        if response.status_code == 201:
            orders[key] = response.json()["order_id"]
            repeated += 1
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
        "orders_missing": len(missing),
        "stock_taken_matches_orders": INITIAL_STOCK - stock == len(ids),
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


def stall(rig: Rig, seconds: float) -> None:
    """DynamoDB Local paused (SIGSTOP) for `seconds`, then resumed."""
    java = rig.java()
    os.kill(java, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(java, signal.SIGCONT)


def store_gone(rig: Rig, _: float) -> None:
    """DynamoDB Local killed; the local stack restarts it on the same data and port, as a supervisor would."""
    java = rig.java()
    os.kill(java, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if [pid for pid in rig.pids("DynamoDBLocal.jar") if pid != java]:
            return
        time.sleep(0.2)
    raise RuntimeError("DynamoDB Local was not restarted")


def kill_worker(rig: Rig, _: float) -> None:
    """kill -9 of the orders function's workers, three times, while order placements run."""
    for _round in range(3):
        for pid in rig.pids("functions/orders"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)


def kill_poller(rig: Rig, seconds: float) -> None:
    """The poller runs in the stack process: kill -9 of it (and all it started), restart on the same data."""
    rig.kill()
    time.sleep(min(seconds, 2.0))
    rig.start(fresh=False)


def throttle(rig: Rig, seconds: float) -> None:
    """30 % of the functions' DynamoDB calls answered with throttling for `seconds` (worker.StoreFaults)."""
    path = rig.data_dir / STORE_FAULTS_FILE
    path.write_text(json.dumps({"throttle_rate": THROTTLE_RATE, "until": time.time() + seconds}))
    time.sleep(seconds)
    path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Fault:
    run: Callable[[Rig, float], None]
    seconds: float
    crashes: bool = False  # invocations die with the worker: API Gateway answers those 500


FAULTS: dict[str, Fault] = {
    "store_stall": Fault(stall, 5.0),
    "store_gone": Fault(store_gone, 0.0),
    "worker_killed": Fault(kill_worker, 0.0, crashes=True),
    "poller_killed": Fault(kill_poller, 1.0),
    "throttling_storm": Fault(throttle, 10.0),
}


def drill(name: str, workdir: pathlib.Path, cdk_out: pathlib.Path, *, scale: float, clients: int) -> dict[str, Any]:
    fault = FAULTS[name]
    rig = Rig(workdir / name, cdk_out)
    budget = Budget.for_timeout(API_TIMEOUT_S)
    tally = Tally(budget_s=budget.function_timeout_s + GATEWAY_ALLOWANCE_S)
    started = time.monotonic()
    steady = max(1.0, 3.0 * scale)
    try:
        rig.start(fresh=True)
        log_from = rig.log.stat().st_size
        shop = Shop(rig)
        shop.setup()
        stop = threading.Event()
        threads = load(shop, tally, stop, clients)
        time.sleep(steady)
        fault.run(rig, fault.seconds * scale)
        recovered = _recovery(shop)
        time.sleep(steady)
        stop.set()
        for thread in threads:
            thread.join(40)
        result = tally.summary() | check(shop, tally, settle_s=30) | {"recovered_within_s": recovered}
        emf = rig.log.read_bytes()[log_from:].decode(errors="replace")
        result["store_unavailable_metric"] = emf.count(EMF_STORE_UNAVAILABLE) // 2  # definition + value
        result["fault_seconds"] = fault.seconds * scale
        result["crashed_invocations_answer_500"] = fault.crashes
    finally:
        rig.stop()
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


def templates_only(source: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    """The synthesized templates without their assets: the runtime then loads functions/<name>/ (the
    source synth packages), as the e2e tests do, and a stale asset folder cannot hide a change."""
    templates = sorted(source.glob("*.template.json"))
    if not templates:
        raise SystemExit(f"no synthesized templates in {source}: run `make synth` first")
    target.mkdir(parents=True, exist_ok=True)
    for path in templates:
        shutil.copy2(path, target / path.name)
    return target


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
        cdk_out = templates_only(pathlib.Path(args.cdk_out), pathlib.Path(tmp) / "cdk.out")
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
