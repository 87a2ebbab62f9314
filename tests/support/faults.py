"""Inject DynamoDB throttling and 5xx answers with botocore's before-send hook."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.awsrequest import AWSResponse


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any, **__: Any) -> bytes:
        return self._body


FAULTS = {
    "throttle": (400, "com.amazonaws.dynamodb.v20120810#ThrottlingException", "Rate exceeded"),
    "capacity": (
        400,
        "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "The level of configured provisioned throughput for the table was exceeded",
    ),
    "internal": (500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error"),
    "unavailable": (503, "com.amazonaws.dynamodb.v20120810#ServiceUnavailable", "Service unavailable"),
}


class Injector:
    def __init__(self, fault: str, operations: set[str] | None, times: int | None) -> None:
        self.status, self.code, self.message = FAULTS[fault]
        self.operations = operations
        self.remaining = times
        self.injected = 0

    def __call__(self, request: Any, **kwargs: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).rsplit(".", 1)[-1]
        if self.operations is not None and operation not in self.operations:
            return None
        if self.remaining is not None:
            if self.remaining <= 0:
                return None
            self.remaining -= 1
        self.injected += 1
        body = json.dumps({"__type": self.code, "message": self.message}).encode()
        return AWSResponse(request.url, self.status, {"x-amzn-requestid": "injected"}, _Raw(body))


@contextmanager
def injected(
    client: Any, fault: str, operations: set[str] | None = None, times: int | None = None
) -> Iterator[Injector]:
    """Answer matching calls with `fault` (all of them, or the first `times`)."""
    injector = Injector(fault, operations, times)
    names = [f"before-send.dynamodb.{op}" for op in operations] if operations else ["before-send.dynamodb"]
    for name in names:
        client.meta.events.register_first(name, injector)
    try:
        yield injector
    finally:
        for name in names:
            client.meta.events.unregister(name, injector)
