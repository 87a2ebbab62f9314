"""Given-up stream batches in the shape of Lambda's S3 on-failure destination, and their replay.

The poller writes them under `<state dir>/stream-failures/`; replay moves each one whose records all succeed to
`replayed/` (docs/decisions.md, "Production infrastructure: replayable stream failures").
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from infra.settings import STREAM_FAILURE_PREFIX

PREFIX = STREAM_FAILURE_PREFIX
REPLAYED = "replayed/"
LOCAL_DIR = "stream-failures"


class FailureStore(Protocol):
    def object_keys(self) -> Iterator[str]: ...
    def read(self, key: str) -> dict[str, Any]: ...
    def write(self, key: str, record: dict[str, Any]) -> None: ...
    def mark_replayed(self, key: str) -> None: ...


def object_key(mapping_id: str, shard_id: str, now: dt.datetime) -> str:
    return f"{PREFIX}{mapping_id}/{shard_id}/{now:%Y/%m/%d}/{now:%Y-%m-%dT%H.%M.%S}-{uuid.uuid4()}"


def event_of(record: dict[str, Any]) -> dict[str, Any]:
    """The event the processor was invoked with (`payload` is JSON text in Lambda's objects)."""
    payload = record.get("payload")
    event = json.loads(payload) if isinstance(payload, str) else payload
    if not isinstance(event, dict) or not isinstance(event.get("Records"), list):
        raise ValueError("the failure record carries no event payload with Records")
    return event


class DirectoryStore:
    """The bucket's stand-in: one file per object key under a directory."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = pathlib.Path(root)

    def object_keys(self) -> Iterator[str]:
        base = self.root / PREFIX
        if base.is_dir():
            for path in sorted(p for p in base.rglob("*") if p.is_file()):
                yield path.relative_to(self.root).as_posix()

    def read(self, key: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.root / key).read_text(encoding="utf-8"))
        return data

    def write(self, key: str, record: dict[str, Any]) -> None:
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(record, default=str), encoding="utf-8")
        tmp.replace(path)

    def mark_replayed(self, key: str) -> None:
        target = self.root / REPLAYED / key
        target.parent.mkdir(parents=True, exist_ok=True)
        (self.root / key).replace(target)


class BucketStore:
    """The deployed failure bucket (ShopEvents output StreamFailureBucket)."""

    def __init__(self, s3: Any, bucket: str) -> None:
        self.s3, self.bucket = s3, bucket

    def object_keys(self) -> Iterator[str]:
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=PREFIX):
            for item in page.get("Contents", []):
                yield str(item["Key"])

    def read(self, key: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())
        return data

    def write(self, key: str, record: dict[str, Any]) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=json.dumps(record, default=str).encode())

    def mark_replayed(self, key: str) -> None:
        self.s3.copy_object(Bucket=self.bucket, Key=REPLAYED + key, CopySource={"Bucket": self.bucket, "Key": key})
        self.s3.delete_object(Bucket=self.bucket, Key=key)


class Invoked(Protocol):
    """What an invocation of the processor returned: ok is False for a function error."""

    @property
    def ok(self) -> bool: ...
    @property
    def payload(self) -> Any: ...


@dataclass(frozen=True)
class Outcome:
    ok: bool
    payload: Any


def lambda_invoker(client: Any, function: str) -> Callable[[dict[str, Any]], Outcome]:
    """Invoke the deployed processor synchronously, as the event source mapping does."""

    def invoke(event: dict[str, Any]) -> Outcome:
        response = client.invoke(FunctionName=function, InvocationType="RequestResponse", Payload=json.dumps(event))
        payload = json.loads(response["Payload"].read() or b"null")
        return Outcome(ok="FunctionError" not in response, payload=payload)

    return invoke


@dataclass
class ReplayReport:
    replayed: list[str]
    failed: list[str]


def mapping_of(key: str) -> str:
    """The event source mapping an object's key names (`object_key`): whose batch it is."""
    return key[len(PREFIX) :].split("/", 1)[0] if key.startswith(PREFIX) else ""


def replay(
    store: FailureStore,
    invoke: Callable[[dict[str, Any]], Invoked],
    *,
    routes: Mapping[str, Callable[[dict[str, Any]], Invoked]] | None = None,
) -> ReplayReport:
    """Re-drive every kept batch; `routes` (mapping logical id -> its function) sends each batch to the consumer
    that gave it up (order_events' or payment_steps'), `invoke` the batches of any other mapping."""
    report = ReplayReport([], [])
    for key in list(store.object_keys()):
        target = (routes or {}).get(mapping_of(key), invoke)
        outcome = target(event_of(store.read(key)))
        failures = outcome.payload.get("batchItemFailures") if isinstance(outcome.payload, dict) else None
        if outcome.ok and not failures:
            store.mark_replayed(key)
            report.replayed.append(key)
        else:
            report.failed.append(key)
    return report
