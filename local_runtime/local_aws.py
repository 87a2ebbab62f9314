"""The local stack's S3 and EventBridge: moto's server (ThreadedMotoServer) on a loopback port.

`make dev` starts it with DynamoDB Local and stops it with the stack: it runs in a thread of the stack's
own process, so Ctrl-C leaves nothing behind. It holds
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
import pathlib
import threading
from typing import Any

from local_runtime.template import REGION

log = logging.getLogger("local_runtime.local_aws")

CAPTURE_QUEUE = "shop-local-bus-capture"
CAPTURE_RULE = "shop-local-capture-everything"
EVENTS_FILE = "events.jsonl"
S3_DIR = "s3"
CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local", "region_name": REGION}


class LocalAws:
    """moto's server for S3, EventBridge and SQS, with the template's buckets and bus."""

    def __init__(self, data_dir: pathlib.Path, *, port: int = 0, host: str = "127.0.0.1") -> None:
        self.data_dir = pathlib.Path(data_dir)
        self.host = host
        self.port = port
        self._server: Any = None
        self.buckets: list[str] = []

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client(self, service: str) -> Any:
        import boto3

        return boto3.session.Session().client(service, endpoint_url=self.endpoint, **CREDENTIALS)

    def start(self) -> LocalAws:
        from moto.server import ThreadedMotoServer

        if self.port == 0:
            from local_runtime.dynamodb_local import free_port

            self.port = free_port()
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        self._server = ThreadedMotoServer(ip_address=self.host, port=self.port, verbose=False)
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        with contextlib.suppress(Exception):
            self.save_buckets()
        self._server.stop()
        self._server = None

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
