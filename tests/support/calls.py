"""Count the DynamoDB operations a piece of code issues, with botocore's event hooks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class CallLog:
    def __init__(self) -> None:
        self.operations: list[str] = []
        self._lock = threading.Lock()

    def record(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.operations.append(model.name)

    def count(self, operation: str | None = None) -> int:
        return len(self.operations) if operation is None else self.operations.count(operation)


@contextmanager
def counting(client: Any) -> Iterator[CallLog]:
    """Every API call the client makes inside the block, retries excluded, in order."""
    log = CallLog()
    client.meta.events.register("before-call.dynamodb.*", log.record)
    try:
        yield log
    finally:
        client.meta.events.unregister("before-call.dynamodb.*", log.record)
