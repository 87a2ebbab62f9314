"""Measure what DynamoDB reads: items read (ScannedCount) and capacity (ReturnConsumedCapacity), by hooks.

Every read a client makes inside `reading(client)` asks for its consumed capacity (the code under
test is unchanged: the hook adds the parameter) and is recorded with the items it read and returned.
DynamoDB Local reports capacity as DynamoDB computes it; moto's figures are not to be trusted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

READS = ("Query", "GetItem", "BatchGetItem", "Scan")


@dataclass(frozen=True)
class Read:
    operation: str
    items_read: int
    items_returned: int
    capacity: float


@dataclass
class ReadLog:
    reads: list[Read] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ask_capacity(self, params: dict[str, Any], **_: Any) -> None:
        params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def record(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "GetItem":
            read = returned = 1 if "Item" in parsed else 0
        elif model.name == "BatchGetItem":
            read = returned = sum(len(items) for items in parsed.get("Responses", {}).values())
        else:
            read, returned = parsed.get("ScannedCount", 0), parsed.get("Count", 0)
        consumed = parsed.get("ConsumedCapacity") or []
        units = sum(c.get("CapacityUnits", 0.0) for c in (consumed if isinstance(consumed, list) else [consumed]))
        with self._lock:
            self.reads.append(Read(model.name, read, returned, units))

    @property
    def items_read(self) -> int:
        return sum(r.items_read for r in self.reads)

    @property
    def capacity(self) -> float:
        return sum(r.capacity for r in self.reads)

    @property
    def operations(self) -> list[str]:
        return [r.operation for r in self.reads]


@contextmanager
def reading(client: Any) -> Iterator[ReadLog]:
    log = ReadLog()
    events = client.meta.events
    for operation in READS:
        events.register(f"provide-client-params.dynamodb.{operation}", log.ask_capacity)
        events.register(f"after-call.dynamodb.{operation}", log.record)
    try:
        yield log
    finally:
        for operation in READS:
            events.unregister(f"provide-client-params.dynamodb.{operation}", log.ask_capacity)
            events.unregister(f"after-call.dynamodb.{operation}", log.record)
