"""Run the template's functions: the local environment, worker pools and in-process invocation.

Each function runs in its own warm worker processes (`local_runtime/worker.py`), like Lambda execution environments;
`python -m local_runtime invoke` runs one in-process instead (docs/local-runtime.md, "Execution").
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import json
import os
import pathlib
import queue
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from local_runtime import worker
from local_runtime.template import REGION, AppModel, FunctionDef, Resolver

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_LAYER = REPO_ROOT / "layers" / "shared" / "python"
WORKER = pathlib.Path(worker.__file__).resolve()
PASS_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")


def local_secret(state_dir: pathlib.Path, name: str) -> str:
    """A random secret generated once per name into `<state_dir>/secrets.json`."""
    path = state_dir / "secrets.json"
    state_dir.mkdir(parents=True, exist_ok=True)
    data: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    if name not in data:
        data[name] = secrets.token_urlsafe(32)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.chmod(tmp, 0o600)
        tmp.replace(path)
    return data[name]


def function_environment(
    app: AppModel,
    fn: FunctionDef,
    *,
    table_name: str,
    endpoint: str,
    state_dir: pathlib.Path,
    deployed_budget: bool = False,
    store_faults: pathlib.Path | None = None,
    aws_endpoint: str | None = None,
    overrides: dict[str, str] | None = None,
) -> dict[str, str]:
    """What the deployed function's environment holds, resolved for the local stack.

    The template's variables (table Ref -> the local table, secret references -> a local secret,
    EventBridge bus -> unset), the variables the Lambda runtime sets, fake credentials, the
    DynamoDB Local endpoint and POWERTOOLS_TRACE_DISABLED (no X-Ray daemon locally).
    With `aws_endpoint` (the local S3 and EventBridge, local_runtime.local_aws) the bus is named and
    S3 and EventBridge calls go there; without it ARCHIVE_BUCKET is unset too (archived orders answer
    503). `overrides` replace template variables (`dev --env NAME=VALUE`: short TTLs for tests).
    """
    resolver = Resolver(
        app, table_name=table_name, secret=lambda name: local_secret(state_dir, name), buses=aws_endpoint is not None
    )
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.update(
        {
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_SESSION_TOKEN": "local",
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
            "AWS_LAMBDA_FUNCTION_NAME": fn.function_name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{fn.function_name}",
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{fn.runtime}",
            "LAMBDA_TASK_ROOT": str(fn.code_dir),
            "LAMBDA_RUNTIME_DIR": sys.prefix,
            "_HANDLER": fn.handler,
            "TZ": ":UTC",
            "PYTHONUNBUFFERED": "1",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
    )
    env.update(resolver.environment(fn))
    # Payments locally (templates synthesized with -c payments=stripe): never the Stripe secret's ARN, and
    # version 2's flow unless the caller points the functions at localstripe (`dev --payments stripe` passes
    # PAYMENTS=stripe and localstripe's literal keys as overrides): `make invoke`, replays and drills stay as
    # they were.
    env.pop("STRIPE_SECRET_ARN", None)
    if "PAYMENTS" in env:
        env["PAYMENTS"] = "none"
    env["AWS_ENDPOINT_URL_DYNAMODB"] = endpoint
    env["AWS_ENDPOINT_URL_DYNAMODB_STREAMS"] = endpoint
    if aws_endpoint is not None:
        env["AWS_ENDPOINT_URL_S3"] = aws_endpoint
        env["AWS_ENDPOINT_URL_EVENTBRIDGE"] = aws_endpoint  # botocore names it by the service id
    else:
        env.pop("ARCHIVE_BUCKET", None)
    env.update(overrides or {})
    env["POWERTOOLS_TRACE_DISABLED"] = "true"
    env["FUNCTION_TIMEOUT_SECONDS"] = str(fn.timeout_s)
    if store_faults is not None:  # fault drills: throttling injected at the client (worker.StoreFaults)
        env["LOCAL_STORE_FAULTS_FILE"] = str(store_faults)
    if not deployed_budget:
        # DynamoDB Local on a busy 2-core machine answers far slower than DynamoDB; the deployed
        # timeouts (shop.aws_config.Budget) would turn that into 503s that AWS would not give.
        # Fault drills keep the deployed ones: what is drilled is what runs on AWS.
        env.setdefault("DYNAMODB_CONNECT_TIMEOUT", "5")
        env.setdefault("DYNAMODB_READ_TIMEOUT", "15")
    return env


def layer_paths(fn: FunctionDef) -> list[str]:
    """/opt/python equivalents: the shared layer from the repo (the deps layer is built for Lambda's
    architecture and Python, so the venv's site-packages stand in for it)."""
    return [str(SHARED_LAYER)]


@dataclass
class InvokeResult:
    ok: bool
    payload: Any  # the handler's return value, or the Lambda error payload
    duration_ms: float
    request_id: str


# Workers are spawned from this one long-lived thread: PR_SET_PDEATHSIG fires when the *thread* that
# forked exits, and the gateway's request threads are short-lived.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="worker-spawner")


def _spawn(fn: FunctionDef, env: dict[str, str], log_path: pathlib.Path | None = None) -> _Worker:
    return _SPAWNER.submit(_Worker, fn, env, log_path).result()


class _Worker:
    def __init__(self, fn: FunctionDef, env: dict[str, str], log_path: pathlib.Path | None = None) -> None:
        init = {
            "code_dir": str(fn.code_dir),
            "handler": fn.handler,
            "sys_path": [str(fn.code_dir), *layer_paths(fn)],
            "function_name": fn.function_name,
            "memory_mb": fn.memory_mb,
            "arn": fn.arn,
            "timeout_s": fn.timeout_s,
        }
        # The function's output (stderr, as Lambda's goes to CloudWatch) appends to its log file when given.
        log = log_path.open("ab") if log_path is not None else None
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", str(WORKER), json.dumps(init)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=str(fn.code_dir),
                start_new_session=True,  # Ctrl-C goes to the runtime, which stops workers itself
                preexec_fn=_die_with_parent,  # noqa: PLW1509
            )
        finally:
            if log is not None:
                log.close()
        self.ready: dict[str, Any] | None = None

    def _read(self, timeout: float) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout))
        if not ready:
            return None
        line = self.proc.stdout.readline()
        if not line:
            raise EOFError("worker exited")
        return json.loads(line)

    def wait_ready(self, timeout: float) -> dict[str, Any] | None:
        """The worker's signal that its init (the handler's import) is over: {"ready": bool, "error": ...}; None
        when it has not come within `timeout`. Read once; the caller holds the worker (no invocation meanwhile)."""
        if self.ready is None:
            self.ready = self._read(timeout)
        return self.ready

    def invoke(self, event: Any, request_id: str, timeout: float) -> dict[str, Any] | None:
        """None on timeout (the caller kills the worker)."""
        if self.wait_ready(max(timeout, 30.0)) is None:  # init has its own, longer budget
            return None
        deadline = time.monotonic() + timeout
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"event": event, "request_id": request_id}) + "\n").encode())
        self.proc.stdin.flush()
        return self._read(deadline - time.monotonic())

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)

    def alive(self) -> bool:
        return self.proc.poll() is None


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


class FunctionPool:
    """Up to `concurrency` warm workers for one function, like Lambda execution environments."""

    def __init__(
        self, fn: FunctionDef, env: dict[str, str], concurrency: int = 4, log_path: pathlib.Path | None = None
    ) -> None:
        self.fn = fn
        self.env = env
        self.concurrency = concurrency
        self.log_path = log_path
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._slots = threading.Semaphore(concurrency)
        self._all: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = False

    def warm(self) -> None:
        """Start one worker ahead of the first request (its import is the cold start)."""
        with self._lock:
            if self._all or self._closed:
                return
            w = _spawn(self.fn, self.env, self.log_path)
            self._all.add(w)
        self._idle.put(w)

    def wait_warm(self, timeout: float) -> dict[str, Any] | None:
        """Wait for the warm worker's init to end (`warm` first); its ready signal, None if it did not come in time.
        Before any invocation only: the worker is taken from the idle ones meanwhile."""
        with self._lock:
            if not self._all:
                return None
        try:
            w = self._idle.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        try:
            return w.wait_ready(timeout)
        except (EOFError, OSError, ValueError) as exc:  # it died in its init: the next invocation starts another
            return {"ready": False, "error": {"errorType": "Runtime.ExitError", "errorMessage": str(exc)}}
        finally:
            self._idle.put(w)

    def invoke(self, event: Any, request_id: str | None = None) -> InvokeResult:
        request_id = request_id or str(uuid.uuid4())
        started = time.monotonic()
        with self._slots:
            w = self._checkout()
            try:
                response = w.invoke(event, request_id, float(self.fn.timeout_s))
            except (EOFError, OSError, ValueError) as exc:
                response = {
                    "ok": False,
                    "error": {
                        "errorType": "Runtime.ExitError",
                        "errorMessage": f"RequestId: {request_id} Error: Runtime exited ({exc})",
                    },
                }
                self._discard(w)
                self._log_platform_error(response["error"], request_id)
            else:
                if response is None:
                    response = {
                        "ok": False,
                        "error": {
                            "errorType": "Sandbox.Timedout",
                            "errorMessage": f"RequestId: {request_id} Error: Task timed out after "
                            f"{self.fn.timeout_s:.2f} seconds",
                        },
                    }
                    self._discard(w)
                    self._log_platform_error(response["error"], request_id)
                else:
                    self._idle.put(w)
        duration = (time.monotonic() - started) * 1000
        if response.get("ok"):
            return InvokeResult(True, response.get("result"), duration, request_id)
        return InvokeResult(False, response.get("error"), duration, request_id)

    def _log_platform_error(self, error: dict[str, str], request_id: str) -> None:
        """What Lambda itself writes to the function's log when its runtime times out or exits (the worker could
        not): one ERROR record, so `make logs` shows why an invocation failed without a traceback."""
        record = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "level": "ERROR",
            "message": error["errorMessage"],
            "errorType": error["errorType"],
            "requestId": request_id,
        }
        line = json.dumps(record) + "\n"
        if self.log_path is None:
            sys.stderr.write(line)
            return
        with contextlib.suppress(OSError), self.log_path.open("a", encoding="utf-8") as log:
            log.write(line)

    def _checkout(self) -> _Worker:
        while True:
            try:
                w = self._idle.get_nowait()
            except queue.Empty:
                with self._lock:
                    if self._closed:
                        raise RuntimeError("function pool is closed") from None
                    w = _spawn(self.fn, self.env, self.log_path)
                    self._all.add(w)
                return w
            if w.alive():
                return w
            self._discard(w)

    def _discard(self, w: _Worker) -> None:
        w.kill()
        with self._lock:
            self._all.discard(w)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
        for w in workers:
            if w.proc.stdin:
                with contextlib.suppress(OSError):
                    w.proc.stdin.close()
        for w in workers:
            try:
                w.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                w.kill()
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(w.proc.pid, signal.SIGKILL)


class Functions:
    """Pools for every function of the app, sharing one resolved environment recipe."""

    def __init__(
        self,
        app: AppModel,
        *,
        table_name: str,
        endpoint: str,
        state_dir: pathlib.Path,
        concurrency: int = 4,
        deployed_budget: bool = False,
        store_faults: pathlib.Path | None = None,
        aws_endpoint: str | None = None,
        overrides: dict[str, str] | None = None,
        log_dir: pathlib.Path | None = None,
    ) -> None:
        """`log_dir`: each function's output goes to `<log_dir>/<name>.log` (else to this process's stderr)."""
        self.app = app
        self.pools = {
            name: FunctionPool(
                fn,
                function_environment(
                    app,
                    fn,
                    table_name=table_name,
                    endpoint=endpoint,
                    state_dir=state_dir,
                    deployed_budget=deployed_budget,
                    store_faults=store_faults,
                    aws_endpoint=aws_endpoint,
                    overrides=overrides,
                ),
                concurrency,
                log_dir / f"{name}.log" if log_dir is not None else None,
            )
            for name, fn in app.functions.items()
        }

    def invoke(self, name: str, event: Any) -> InvokeResult:
        return self.pools[name].invoke(event)

    def warm(self) -> None:
        for pool in self.pools.values():
            pool.warm()

    def wait_warm(self, timeout: float = 60.0) -> dict[str, dict[str, Any] | None]:
        """After `warm`: wait until every function's worker has ended its init (imported its handler), as a
        deployed function is initialised before its first invocation; each one's ready signal (`ready` false with
        the init error, as Lambda reports Runtime.ImportModuleError; None: not within `timeout`)."""
        deadline = time.monotonic() + timeout
        return {name: pool.wait_warm(deadline - time.monotonic()) for name, pool in self.pools.items()}

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()


def lambda_context(fn: FunctionDef) -> worker.LambdaContext:
    """The context Lambda passes the function (a new request id)."""
    return worker.LambdaContext(
        function_name=fn.function_name,
        memory_limit_in_mb=fn.memory_mb,
        invoked_function_arn=fn.arn,
        timeout_s=fn.timeout_s,
    )


def invoke_in_process(fn: FunctionDef, env: dict[str, str], event: Any) -> InvokeResult:
    """Run one function in this process with its environment (used by `invoke`)."""
    os.environ.update(env)
    for entry in reversed([str(fn.code_dir), *layer_paths(fn)]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    handler = worker.load_handler(str(fn.code_dir), fn.handler, module_alias=f"_local_fn_{fn.name}_handler")
    context = lambda_context(fn)
    started = time.monotonic()
    response = worker.call(handler, event, context)
    duration = (time.monotonic() - started) * 1000
    ok = bool(response["ok"])
    return InvokeResult(ok, response["result"] if ok else response["error"], duration, context.aws_request_id)
