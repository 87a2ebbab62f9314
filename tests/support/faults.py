"""Inject DynamoDB errors into the real botocore client with its before-send hook.

botocore emits before-send to every handler and keeps the first response, so moto's stubber
(registered after ours) would still execute an answered call. An answered request is pointed at
an unroutable host first: moto ignores it and the injected answer is the only outcome, on moto as
on DynamoDB Local.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.awsrequest import AWSResponse

_PREFIX = "com.amazonaws.dynamodb.v20120810#"


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body

    def read(self, *_: Any, **__: Any) -> bytes:
        return self._body


FAULTS = {
    "throttle": (400, "ThrottlingException", "Rate exceeded"),
    "capacity": (
        400,
        "ProvisionedThroughputExceededException",
        "The level of configured provisioned throughput for the table was exceeded",
    ),
    "internal": (500, "InternalServerError", "Internal server error"),
    "unavailable": (503, "ServiceUnavailable", "Service unavailable"),
    "conflict": (400, "TransactionConflictException", "Transaction is ongoing for the item"),
    "invalid": (400, "ValidationException", "One or more parameter values were invalid: Key too long"),
}


def _operation(request: Any) -> str:
    target = request.headers.get("X-Amz-Target", b"")
    return (target.decode() if isinstance(target, bytes) else target).rsplit(".", 1)[-1]


class Injector(ABC):
    """Answers matching calls (all of them, or the first `times`) with an AWS error."""

    def __init__(self, operations: set[str] | None, times: int | None) -> None:
        self.operations = operations
        self.remaining = times
        self.injected = 0

    @abstractmethod
    def answer(self, request: Any) -> tuple[int, dict[str, Any]]:
        """The status and JSON body of the error."""

    def __call__(self, request: Any, **kwargs: Any) -> AWSResponse | None:
        if self.operations is not None and _operation(request) not in self.operations:
            return None
        if self.remaining is not None:
            if self.remaining <= 0:
                return None
            self.remaining -= 1
        self.injected += 1
        status, body = self.answer(request)
        request.url = "https://fault-injected.invalid/"
        headers = {"x-amzn-requestid": "injected", "Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, status, headers, _Raw(json.dumps(body).encode()))


class ErrorInjector(Injector):
    def __init__(self, fault: str, operations: set[str] | None, times: int | None) -> None:
        super().__init__(operations, times)
        self.status, self.code, self.message = FAULTS[fault]

    def answer(self, request: Any) -> tuple[int, dict[str, Any]]:
        return self.status, {"__type": _PREFIX + self.code, "message": self.message}


class CancellationInjector(Injector):
    """TransactWriteItems cancelled with `reason` for the item at `index`, `None` for the others."""

    def __init__(self, reason: str, index: int, times: int | None) -> None:
        super().__init__({"TransactWriteItems"}, times)
        self.reason = reason
        self.index = index

    def answer(self, request: Any) -> tuple[int, dict[str, Any]]:
        count = len(json.loads(request.body)["TransactItems"])
        codes = ["None"] * count
        codes[min(self.index, count - 1)] = self.reason
        return 400, {
            "__type": _PREFIX + "TransactionCanceledException",
            "message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{', '.join(codes)}]",
            "CancellationReasons": [{"Code": code} for code in codes],
        }


@contextmanager
def _registered(client: Any, injector: Injector) -> Iterator[Any]:
    operations = injector.operations
    names = [f"before-send.dynamodb.{op}" for op in operations] if operations else ["before-send.dynamodb"]
    for name in names:
        client.meta.events.register_first(name, injector)
    try:
        yield injector
    finally:
        for name in names:
            client.meta.events.unregister(name, injector)


@contextmanager
def injected(
    client: Any, fault: str, operations: set[str] | None = None, times: int | None = None
) -> Iterator[ErrorInjector]:
    """Answer matching calls with `fault` (all of them, or the first `times`)."""
    with _registered(client, ErrorInjector(fault, operations, times)) as injector:
        yield injector


@contextmanager
def cancelled(client: Any, reason: str, *, index: int = 0, times: int | None = None) -> Iterator[CancellationInjector]:
    """Cancel TransactWriteItems calls for `reason` (all of them, or the first `times`)."""
    with _registered(client, CancellationInjector(reason, index, times)) as injector:
        yield injector


@contextmanager
def first_answer_lost(client: Any, operation: str) -> Iterator[list[dict[str, Any]]]:
    """The first `operation` is applied but its answer is treated as lost, so botocore sends the same
    request again, as it does after a timeout; yields the parameters of each call made."""
    sent: list[dict[str, Any]] = []
    lost = {"done": False}

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append(dict(params))

    def retry_once(attempts: int, caught_exception: Any, **_: Any) -> float | None:
        if not lost["done"] and caught_exception is None:
            lost["done"] = True
            return 0
        return None

    client.meta.events.register(f"provide-client-params.dynamodb.{operation}", record)
    client.meta.events.register(f"needs-retry.dynamodb.{operation}", retry_once)
    try:
        yield sent
    finally:
        client.meta.events.unregister(f"provide-client-params.dynamodb.{operation}", record)
        client.meta.events.unregister(f"needs-retry.dynamodb.{operation}", retry_once)
    assert lost["done"], f"no {operation} was sent"
