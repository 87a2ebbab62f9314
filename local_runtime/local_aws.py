"""The local stack's S3 and EventBridge: moto's server on a loopback port, in a child process.

`make dev` starts it with DynamoDB Local and stops it with the stack. It runs as a child of the stack's process
(`python -m local_runtime.local_aws --serve`, local_runtime.child_process: its own process group, dying with its
parent), so its import and its requests take nothing from the stack's own interpreter, and Ctrl-C leaves nothing
behind. Like localstripe, the child binds its port before it loads moto and reports it at once (`wait_port`): the
functions' environment names it before the server answers (`wait_ready`). It holds
- the buckets of the templates (the order archive): functions reach them through AWS_ENDPOINT_URL_S3.
  moto keeps objects in memory, so the archive's objects are saved to `<data dir>/s3/<bucket>/<key>` as
  on stop and loaded again on start: archived orders survive a restart of
  `make dev` (a kill -9 loses what was archived since the start);
- the domain-event bus: functions publish to it through AWS_ENDPOINT_URL_EVENTBRIDGE. A rule sends every
  event to an SQS queue that `BusCapture` drains into `<data dir>/events.jsonl`, one event per line:
  what reached the bus, for people (`tail -f .local/events.jsonl`) and the e2e tests.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from local_runtime import child_process
from local_runtime.template import REGION

log = logging.getLogger("local_runtime.local_aws")

CAPTURE_QUEUE = "shop-local-bus-capture"
CAPTURE_RULE = "shop-local-capture-everything"
EVENTS_FILE = "events.jsonl"
S3_DIR = "s3"
CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local", "region_name": REGION}
_READY_PREFIX = "moto listening on port "


class LocalAws:
    """moto's server for S3, EventBridge and SQS, with the template's buckets and bus. `port=0`: the child picks a
    free one."""

    def __init__(self, data_dir: pathlib.Path, *, port: int = 0, host: str = "127.0.0.1") -> None:
        self.data_dir = pathlib.Path(data_dir)
        self.host = host
        self.port = 0
        self._requested_port = port
        self._proc: subprocess.Popen[str] | None = None
        self._log: Any = None
        self._ready = False
        self._lock = threading.Lock()
        self._session: Any = None
        self.buckets: list[str] = []

    @property
    def endpoint(self) -> str:
        if not self.port:
            raise RuntimeError("LocalAws has no port yet: call wait_port() or start() first")
        return f"http://{self.host}:{self.port}"

    def client(self, service: str) -> Any:
        """A client of the server, from one session of this instance: each service's model is loaded once."""
        import boto3

        with self._lock:
            if self._session is None:
                self._session = boto3.session.Session()
            return self._session.client(service, endpoint_url=self.endpoint, **CREDENTIALS)

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def spawn(self) -> LocalAws:
        """Start the child and return at once; it dies with the thread that spawns it (PR_SET_PDEATHSIG): spawn it
        from a long-lived one."""
        with self._lock:
            if self._proc is not None:
                return self
            self._log = tempfile.TemporaryFile(prefix="moto-", mode="w+")  # noqa: SIM115 - closed in stop()
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "local_runtime.local_aws", "--serve", self.host, str(self._requested_port)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._log,
                text=True,
                start_new_session=True,
                preexec_fn=child_process.set_pdeathsig,  # noqa: PLW1509 - one prctl call
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            )
            child_process.track(self)
            return self

    def wait_port(self, timeout: float = 30.0) -> int:
        """The port the spawned child bound (before it loads moto): `endpoint` is known from then on."""
        with self._lock:
            if not self.port:
                assert self._proc is not None, "spawn() first"
                try:
                    self.port = child_process.read_port(self._proc, _READY_PREFIX, timeout, self._log)
                except RuntimeError:
                    self._terminate()
                    raise
            return self.port

    def wait_ready(self, timeout: float = 30.0) -> LocalAws:
        """Block until the server accepts connections (RuntimeError with its log's tail otherwise)."""
        self.wait_port(timeout)
        deadline = time.monotonic() + timeout
        while not self._ready:
            with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), timeout=1):
                self._ready = True
                break
            if not self.is_running():
                raise RuntimeError(f"moto exited on port {self.port}: {child_process.log_tail(self._log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"moto did not answer on {self.endpoint} within {timeout:.0f}s")
            time.sleep(0.05)
        return self

    def start(self, timeout: float = 30.0) -> LocalAws:
        return self.spawn().wait_ready(timeout)

    def stop(self) -> None:
        """Save the buckets' objects, then stop the child; idempotent."""
        if self._ready and self.is_running():
            with contextlib.suppress(Exception):
                self.save_buckets()
        with self._lock:
            self._terminate()
        child_process.untrack(self)

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        self._ready = False
        if proc is not None:
            child_process.stop_group(proc, 10.0)
            if proc.stdout is not None:
                proc.stdout.close()
        child_process.close_log(self._log)
        self._log = None

    def __enter__(self) -> LocalAws:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- S3 -----------------------------------------------------------------------------------------

    def create_buckets(self, names: list[str]) -> None:
        """The buckets, with the objects saved by the last run."""
        s3 = self.client("s3")
        for name in names:
            s3.create_bucket(Bucket=name)
            self.buckets.append(name)
            saved = self.data_dir / S3_DIR / name
            for path in sorted(saved.rglob("*")) if saved.is_dir() else []:
                if path.is_file():
                    s3.put_object(Bucket=name, Key=path.relative_to(saved).as_posix(), Body=path.read_bytes())

    def save_buckets(self) -> None:
        s3 = self.client("s3")
        for name in self.buckets:
            root = self.data_dir / S3_DIR / name
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
                for entry in page.get("Contents", []):
                    target = root / entry["Key"]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(s3.get_object(Bucket=name, Key=entry["Key"])["Body"].read())

    # -- EventBridge --------------------------------------------------------------------------------

    def create_bus(self, name: str) -> str:
        """The bus, and a rule that copies every event to the capture queue; the queue's URL."""
        events, sqs = self.client("events"), self.client("sqs")
        events.create_event_bus(Name=name)
        queue_url = sqs.create_queue(QueueName=CAPTURE_QUEUE)["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        everything = {"source": [{"prefix": ""}]}
        events.put_rule(Name=CAPTURE_RULE, EventBusName=name, EventPattern=json.dumps(everything))
        events.put_targets(Rule=CAPTURE_RULE, EventBusName=name, Targets=[{"Id": "capture", "Arn": queue_arn}])
        return str(queue_url)


class BusCapture:
    """Drains the capture queue into `<data dir>/events.jsonl` (the whole EventBridge event, one per line)."""

    def __init__(self, aws: LocalAws, queue_url: str, interval: float = 0.5) -> None:
        self.sqs = aws.client("sqs")
        self.queue_url = queue_url
        self.path = aws.data_dir / EVENTS_FILE
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def drain(self) -> int:
        messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if messages:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as out:
                for message in messages:
                    out.write(json.dumps(json.loads(message["Body"]), separators=(",", ":")) + "\n")
            self.sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
            )
        return len(messages)

    def start(self) -> BusCapture:
        self._thread = threading.Thread(target=self._run, name="bus-capture", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with contextlib.suppress(Exception):
            while self.drain():
                pass

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.drain():
                    continue
            except Exception:
                log.exception("bus capture failed; trying again")
            self._stop.wait(self.interval)


def _serve(host: str, port: int) -> None:  # pragma: no cover - the child process
    """The port first, reported at once, then moto: werkzeug serves the socket already bound (as its reloader does)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    print(f"{_READY_PREFIX}{sock.getsockname()[1]}", flush=True)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)  # what moto's ThreadedMotoServer serves
    make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler, fd=sock.fileno()).serve_forever()


if __name__ == "__main__":  # pragma: no cover - the child's entry point
    if sys.argv[1:2] == ["--serve"]:
        _serve(sys.argv[2], int(sys.argv[3]))
