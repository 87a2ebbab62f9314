"""End-to-end fixtures: the real local stack (`python -m local_runtime dev`) as a subprocess, driven over HTTP.

The stack is started exactly as `make dev` starts it after set-up and synth, on free ports
(`--port 0`; DynamoDB Local picks its own free port), with its own data directory (`local_runtime.stack`),
and is stopped the way a person stops it: SIGINT (Ctrl-C). Stopping asserts a clean exit and that no
process of that run (DynamoDB Local's Java, function workers) is left behind, found by a /proc scan.

Which code runs: the stack reads routes, authorizer, environment and the stream mapping from the
synthesized templates. By default the templates are copied without their asset folders, so the
runtime loads each function from `functions/<name>/` (the source synth packages) and a stale
`cdk.out` can never make these tests pass on yesterday's handlers. `E2E_CDK_OUT=cdk.out` runs
the synthesized assets as they are instead.

Tokens are issued in-process with `local_runtime.auth` from the stack's own key pair (what
`python -m local_runtime token` does); `cli_token` goes through the CLI for the one test that
proves that path.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from local_runtime import stack as local_stack
from local_runtime.stack import Proc, descendants, processes_mentioning, read_proc, still_alive, templates_only
from local_runtime.template import TemplateError
from tests.support.polling import until

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 60.0
# Variables the root conftest sets for moto/unit tests; the stack must not inherit any of them.
_SCRUB_PREFIXES = ("AWS_ENDPOINT_URL",)
_SCRUB = {"TABLE_NAME", "PAGINATION_SECRET", "STATUS_SHARDS", "POWERTOOLS_SERVICE_NAME"}


# --------------------------------------------------------------------------- the HTTP client


class Api:
    """A small requests wrapper: base URL, bearer tokens, bounded timeouts, one Session per thread."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._local = threading.local()

    @property
    def session(self) -> requests.Session:
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = requests.Session()
        return s

    def request(
        self, method: str, path: str, *, token: str | None = None, headers: dict[str, str] | None = None, **kw: Any
    ) -> requests.Response:
        all_headers = dict(headers or {})
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        kw.setdefault("timeout", HTTP_TIMEOUT_S)
        return self.session.request(method, self.base_url + path, headers=all_headers, **kw)

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> requests.Response:
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw: Any) -> requests.Response:
        return self.request("PUT", path, **kw)

    def patch(self, path: str, **kw: Any) -> requests.Response:
        return self.request("PATCH", path, **kw)

    def delete(self, path: str, **kw: Any) -> requests.Response:
        return self.request("DELETE", path, **kw)


# --------------------------------------------------------------------------- the stack


def cdk_out_dir(workdir: pathlib.Path) -> pathlib.Path:
    override = os.environ.get("E2E_CDK_OUT")
    if override:
        return (REPO_ROOT / override).resolve()
    try:
        return templates_only(REPO_ROOT / "cdk.out", workdir / "cdk.out")
    except TemplateError as exc:
        pytest.fail(f"{exc} (make test does)")


def stack_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB and not k.startswith(_SCRUB_PREFIXES)}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Stack:
    """One `python -m local_runtime dev` process and what it printed."""

    data_dir: pathlib.Path
    cdk_out: pathlib.Path
    log_path: pathlib.Path
    fresh: bool = True
    seed: bool = False
    options: tuple[str, ...] = ()  # more `dev` options (e.g. --env NAME=VALUE, --ttl-interval)
    proc: subprocess.Popen[bytes] | None = None
    url: str = ""
    api: Api = field(default_factory=lambda: Api("http://invalid"))
    _keys: Any = None
    _log_offset: int = 0
    # files of the data directory the stack must leave as they are when it stops (short_ttl_stack checks them)
    kept_after_stop: dict[pathlib.Path, str] = field(default_factory=dict)

    # ---- life cycle

    def start(self, timeout: float = START_TIMEOUT_S) -> Stack:
        options = [*(["--fresh"] if self.fresh else []), *([] if self.seed else ["--no-seed"]), *self.options]
        self.proc, self._log_offset = local_stack.launch(
            self.data_dir, self.log_path, cdk_out=self.cdk_out, options=options, env=stack_env()
        )
        url = local_stack.wait_ready(self.proc, self.log_path, self._log_offset, timeout)
        if url:
            self.url = url
            self.api = Api(url)
            return self
        rc = self.proc.poll()
        self.kill()
        pytest.fail(f"local stack not ready within {timeout:.0f}s (exit code {rc}); log tail:\n{self.log_tail()}")

    def output(self) -> str:
        """What this run printed so far."""
        return local_stack.output(self.log_path, self._log_offset)

    def log_tail(self, chars: int = 4000) -> str:
        with contextlib.suppress(FileNotFoundError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return ""

    def run_processes(self) -> list[Proc]:
        """The stack process and everything it started (Java, workers), alive now."""
        assert self.proc is not None
        me = read_proc(self.proc.pid)
        return ([me] if me else []) + descendants(self.proc.pid)

    def interrupt(self, *, group: bool = False, timeout: float = STOP_TIMEOUT_S) -> tuple[int | None, list[Proc]]:
        """Ctrl-C: SIGINT to the process (or to its whole process group, as a terminal does).

        Returns the exit code (None if it did not exit in time) and the processes of this run that are
        still alive afterwards (given a few seconds to go, bounded)."""
        assert self.proc is not None
        tracked = self.run_processes()
        if group:
            os.killpg(self.proc.pid, signal.SIGINT)
        else:
            self.proc.send_signal(signal.SIGINT)
        try:
            rc: int | None = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        deadline = time.monotonic() + 10.0
        while True:
            left = [p for p in tracked if still_alive(p)]
            left += [p for p in processes_mentioning(str(self.data_dir)) if p not in left]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if rc is None or left:
            self.kill(extra=left)
        return rc, left

    def kill(self, extra: Sequence[Proc] = ()) -> None:
        """Last resort, only for this run's own processes (by pid, never by name)."""
        if self.proc is not None:
            for p in [*self.run_processes(), *extra]:
                if still_alive(p):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(p.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)

    def stop_cleanly(self, *, group: bool = False) -> None:
        rc, left = self.interrupt(group=group)
        assert rc == 0, f"the stack did not exit 0 after SIGINT (exit code {rc}); log tail:\n{self.log_tail()}"
        assert not left, "processes of this run left behind after SIGINT: " + "; ".join(
            f"{p.pid} {p.cmdline[:160]}" for p in left
        )

    # ---- tokens

    def token(self, sub: str, *, groups: tuple[str, ...] = (), **kw: Any) -> str:
        from local_runtime import auth

        if self._keys is None:
            self._keys = auth.load_or_create_keys(self.data_dir)
        return auth.issue_token(self._keys, sub, groups=list(groups), **kw)

    def admin_token(self, sub: str = "e2e-admin") -> str:
        return self.token(sub, groups=("admin",))

    def cli_token(self, sub: str, groups: str = "") -> str:
        cmd = [sys.executable, "-m", "local_runtime", "token", "--sub", sub, "--data-dir", str(self.data_dir)]
        if groups:
            cmd += ["--groups", groups]
        out = subprocess.run(
            cmd, cwd=REPO_ROOT, env=stack_env(), capture_output=True, text=True, timeout=60, check=True
        )
        return out.stdout.strip()


# --------------------------------------------------------------------------- fixtures


# The stack each group's tests share (a session fixture).
STACK_OF_GROUP = {"e2e": "stack", "e2e-ttl": "short_ttl_stack", "e2e-payments": "paying_stack"}


def _group(item: pytest.Item | None) -> str | None:
    marker = item.get_closest_marker("xdist_group") if item is not None else None
    return str(marker.args[0]) if marker is not None else None


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Under `make test` (xdist's loadgroup) a group's tests run one after another on one worker, and xdist names
    the next test before it runs one. Once the next is of another group, the group's stack has served its last test:
    it is stopped now (its fixture finished, with whatever depends on it), not left polling its stream, TTL and
    schedules (about 6 s of CPU a minute) until the session ends. A later test asking for it would start it again."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return  # one process: groups interleave (tests/conftest.py orders files, not groups)
    group = _group(item)
    name = STACK_OF_GROUP.get(group or "")
    if name is None or _group(nextitem) == group:
        return
    for fixturedef in item.session._fixturemanager.getfixturedefs(name, item) or ():
        fixturedef.finish(request=item._request)  # type: ignore[attr-defined]  # pytest pinned (requirements)


@pytest.fixture(scope="session")
def e2e_workdir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def cdk_out(e2e_workdir: pathlib.Path) -> pathlib.Path:
    return cdk_out_dir(e2e_workdir)


# The session's shared stacks never restart on their data: DynamoDB Local keeps it in memory, a third less of its
# CPU a call than on disk (the tests of restarts and of the store's own restart use stacks on disk).
IN_MEMORY = ("--in-memory",)


@pytest.fixture(scope="session")
def stack(e2e_workdir: pathlib.Path, cdk_out: pathlib.Path) -> Iterator[Stack]:
    """The shared stack for every e2e test: started once, stopped with SIGINT, nothing left behind."""
    s = Stack(
        data_dir=e2e_workdir / "stack", cdk_out=cdk_out, log_path=e2e_workdir / "stack.log", options=IN_MEMORY
    ).start()
    try:
        yield s
    finally:
        s.stop_cleanly()


# The TTL and archive tests' settings: sessions expire after 3 s, finished orders at once (no archival grace: every
# order record's effects then check the ARCHIVED marker), a sweep every 0.5 s.
SHORT_TTL_ENV = ("SESSION_TTL_SECONDS=3", "ARCHIVE_AFTER_DAYS=0", "ARCHIVE_GRACE_SECONDS=0")
SHORT_TTL = (*(arg for pair in SHORT_TTL_ENV for arg in ("--env", pair)), "--ttl-interval", "0.5")


@pytest.fixture(scope="session")
def short_ttl_stack(e2e_workdir: pathlib.Path, cdk_out: pathlib.Path) -> Iterator[Stack]:
    """One stack with SHORT_TTL for every test that needs things to expire (group `e2e-ttl`): started once.

    Stopped with SIGINT at the end of the session; a test that needs to see what survives the stop (the
    archive's objects, written to the data directory when the stack stops) registers it in `kept_after_stop`
    (path -> text), checked here once the stack has exited cleanly.
    """
    s = Stack(
        data_dir=e2e_workdir / "short-ttl",
        cdk_out=cdk_out,
        log_path=e2e_workdir / "short-ttl.log",
        options=(*SHORT_TTL, *IN_MEMORY),
    ).start()
    try:
        yield s
    finally:
        s.stop_cleanly()
        for path, text in s.kept_after_stop.items():
            assert path.read_text() == text, f"{path} not kept as it was served after the stop"


# make dev's default, payments through localstripe (`--payments stripe`), with a 30-second payment window (what
# `make dev FUNCTION_ENV=PAYMENT_WINDOW_SECONDS=30` passes) and payment_steps' schedule (the windows' sweep,
# rate(1 minute) deployed) every 5 seconds, so that an unpaid order expires within a test; a TTL sweep every second.
PAYING_WINDOW_S = 30
PAYING_SCHEDULE_S = 5
PAYING = (
    *("--payments", "stripe", "--env", f"PAYMENT_WINDOW_SECONDS={PAYING_WINDOW_S}", "--ttl-interval", "1"),
    *("--schedule-interval", str(PAYING_SCHEDULE_S)),
)


# The paying stack's shipping zones and tax rate, set before the fuzz test (which, as admin, PUTs zones and rates of
# its own; tests/e2e/fuzz_hooks.py keeps it off these zones' ids and these countries' rates): the countries the tests
# ship to, free and untaxed, so that their totals are their lines'; and a priced, taxed zone for
# tests/e2e/test_order_total.py. A zone, once a shop has one, is what makes a country shippable.
HOME_ZONE = {
    "name": "e2e: where the tests ship",
    "countries": ["US", "GB", "FR", "BE"],
    "options": [{"option_id": "free", "name": "Free", "price_cents": 0}],
}
EUROPE_ZONE = {
    "name": "e2e: Europe",
    "countries": ["DE", "AT"],
    "options": [
        {"option_id": "standard", "name": "Standard", "price_cents": 499, "free_over_cents": 20000},
        {"option_id": "express", "name": "Express", "price_cents": 1299},
    ],
}
GERMAN_RATE = {"rate_bps": 1900}


def set_checkout(stack: Stack) -> None:
    admin = stack.admin_token()
    expect(stack.api.put("/shipping/zones/e2e-home", token=admin, json=HOME_ZONE), 200)
    expect(stack.api.put("/shipping/zones/e2e-europe", token=admin, json=EUROPE_ZONE), 200)
    expect(stack.api.put("/tax/rates/DE", token=admin, json=GERMAN_RATE), 200)


@pytest.fixture(scope="session")
def paying_stack(e2e_workdir: pathlib.Path, cdk_out: pathlib.Path) -> Iterator[Stack]:
    """One stack with payments on (PAYING) for the payment flow, the windows' sweep, the order's total and the fuzz
    test (group `e2e-payments`), its checkout set (set_checkout): started once, stopped with SIGINT at the end of the
    session, nothing left behind."""
    s = Stack(
        data_dir=e2e_workdir / "paying",
        cdk_out=cdk_out,
        log_path=e2e_workdir / "paying.log",
        options=(*PAYING, *IN_MEMORY),
    ).start()
    try:
        set_checkout(s)
        yield s
    finally:
        s.stop_cleanly()


@pytest.fixture(scope="session")
def left_to_sweep(paying_stack: Stack) -> dict[str, Any]:
    """An unpaid order on the paying stack, left for the windows' sweep (tests/e2e/test_payments_sweep.py). The
    payment flow's module asks for it first, so that its window runs while that module does; not sooner: the fuzz
    test, before it on the stack, cancels orders it did not place."""
    stack = paying_stack
    admin, customer = stack.admin_token(), stack.token("e2e-left-to-sweep")
    product = create_product(stack.api, admin, category="e2e-sweep", name="Sieve", price_cents=700, stock=3)
    order = expect(place_order(stack.api, customer, "left-to-sweep", order_lines(product["product_id"], 2)), 201)
    return {"order": order, "product_id": product["product_id"], "customer": customer}


@pytest.fixture
def new_stack(
    tmp_path: pathlib.Path, cdk_out: pathlib.Path
) -> Iterator[Callable[..., Stack]]:  # a factory for tests that start and stop their own stacks
    started: list[Stack] = []

    def factory(
        data_dir: pathlib.Path | None = None, *, fresh: bool = True, seed: bool = False, options: Sequence[str] = ()
    ) -> Stack:
        s = Stack(
            data_dir=data_dir or tmp_path / "stack",
            cdk_out=cdk_out,
            log_path=tmp_path / "stack.log",
            fresh=fresh,
            seed=seed,
            options=tuple(options),
        )
        started.append(s)
        return s.start()

    yield factory
    for s in started:
        if s.proc is not None and s.proc.poll() is None:
            s.kill()


@pytest.fixture
def stack_api(stack: Stack) -> Api:
    return stack.api


@pytest.fixture
def uid() -> str:
    return uuid.uuid4().hex[:12]


# --------------------------------------------------------------------------- helpers used by the tests

ADDRESS = {
    "name": "Ada Lovelace",
    "line1": "12 St James's Square",
    "city": "London",
    "postal_code": "SW1Y 4JH",
    "country": "GB",
}


def error_code(resp: requests.Response) -> str | None:
    try:
        body = resp.json()
    except ValueError:
        return None
    err = body.get("error") if isinstance(body, dict) else None
    return err.get("code") if isinstance(err, dict) else None


def expect(resp: requests.Response, status: int, code: str | None = None) -> Any:
    """Assert the status (and the contract's error envelope and code for errors); return the JSON body."""
    detail = f"{resp.request.method} {resp.request.url} -> {resp.status_code} {resp.text[:500]}"
    assert resp.status_code == status, detail
    if status == 204 or not resp.content:
        return None
    body = resp.json()
    if status >= 400 and status != 401:  # 401 is the authorizer's own `{"message": "Unauthorized"}`
        assert isinstance(body.get("error"), dict), detail
        assert isinstance(body["error"].get("code"), str), detail
        assert isinstance(body["error"].get("message"), str), detail
        if code is not None:
            assert body["error"]["code"] == code, detail
    return body


def eventually(probe: Callable[[], Any], *, timeout: float = 30.0, interval: float = 0.25, what: str = "") -> Any:
    """Call `probe` until it returns something truthy, at most `timeout` seconds; return that value."""
    return until(probe, what or repr(probe), timeout=timeout, interval=interval)


def create_product(api: Api, admin: str, *, category: str, name: str, price_cents: int, stock: int) -> dict[str, Any]:
    """A product filed under `category`, a top-level category created first unless it exists (201 or 409)."""
    made = api.post("/categories", token=admin, json={"slug": category, "name": category.title()})
    assert made.status_code in (201, 409), made.text
    body = {"name": name, "category": category, "price_cents": price_cents, "stock": stock, "description": "e2e"}
    return expect(api.post("/products", token=admin, json=body), 201)


def order_lines(product_id: str, quantity: int = 1) -> dict[str, Any]:
    """An order body: one line of the product, shipped to ADDRESS."""
    return {"lines": [{"product_id": product_id, "quantity": quantity}], "shipping_address": ADDRESS}


def place_order(api: Api, token: str, key: str, body: dict[str, Any]) -> requests.Response:
    """POST /orders with its Idempotency-Key; the response, whatever its status."""
    return api.post("/orders", token=token, headers={"Idempotency-Key": key}, json=body)


def confirmed(api: Api, token: str, order_id: str, *, timeout: float = 30.0) -> requests.Response:
    """GET /orders/{order_id} once the stream processor has confirmed the order (bounded wait)."""

    def probe() -> requests.Response | None:
        resp = api.get(f"/orders/{order_id}", token=token)
        return resp if expect(resp, 200)["status"] == "CONFIRMED" else None

    return eventually(probe, timeout=timeout, what=f"order {order_id} CONFIRMED by the stream processor")
