"""Powertools idempotency persisted in the shop's single table, each record its own partition.

The key is the caller's ``sub`` plus the ``Idempotency-Key`` header; the payload is the validated body. Keys,
polling and why Powertools is subclassed: docs/decisions.md, "HTTP API".
"""

from __future__ import annotations

import base64
import json
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyInconsistentStateError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.idempotency import idempotent_function
from aws_lambda_powertools.utilities.idempotency.serialization.custom_dict import CustomDictSerializer

from shop import errors
from shop.config import settings
from shop.http_api.errors import IdempotencyInProgress, IdempotencyKeyReused, InternalError
from shop.http_api.observability import logger

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer

# In-progress locks of an attempt whose Lambda died expire after its remaining time; without a
# Lambda context (local runs) assume the API functions' timeout.
DEFAULT_REMAINING_MS = 10_000
POLL_BUDGET_SECONDS = 8.0
POLL_FIRST_DELAY = 0.05
POLL_MAX_DELAY = 0.5


COMPRESSED = "z"


def compact(response: dict[str, Any]) -> dict[str, Any]:
    """The stored form of a response: its JSON deflated and base64-encoded, so a 3-line order's completed
    record stays under 1 KB (1 WRU, not 2; docs/performance.md)."""
    text = json.dumps(response, separators=(",", ":"), sort_keys=True).encode()
    return {COMPRESSED: base64.b64encode(zlib.compress(text, 9)).decode("ascii")}


def expand(stored: dict[str, Any]) -> dict[str, Any]:
    """The response a stored record holds; a record written before compaction is the response itself."""
    if set(stored) == {COMPRESSED}:
        expanded: dict[str, Any] = json.loads(zlib.decompress(base64.b64decode(stored[COMPRESSED])))
        return expanded
    return stored


class _Remaining:
    def __init__(self, millis: int) -> None:
        self._deadline = time.monotonic() + millis / 1000

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class Records(Protocol):
    """Where the records live (shop.repository.idempotency_records.IdempotencyRecords, built by shop.wiring)."""

    def identity(self) -> tuple[Any, str]: ...

    def persistence_layer(self) -> BasePersistenceLayer: ...

    def unavailable(self, cause: BaseException | None) -> errors.ServiceUnavailable | None: ...


@dataclass(frozen=True)
class _Built:
    client: Any
    table_name: str
    decorated: Callable[..., Any]
    config: IdempotencyConfig


def _translated(records: Records, error: IdempotencyPersistenceLayerError) -> errors.DomainError:
    """A failure of the idempotency store is 503 when the store is unavailable, else a bug (500)."""
    unavailable = records.unavailable(error.__cause__)
    if unavailable is not None:
        return unavailable
    logger.exception("idempotency store failed", exc_info=error)
    return InternalError("internal error")


class IdempotentOperation:
    """``function(request=..., **kwargs)`` run at most once per key; repeats return its stored result.

    ``function`` must return a JSON-serialisable dict (it is stored as the response).
    """

    def __init__(self, name: str, function: Callable[..., dict[str, Any]]) -> None:
        self.name = name
        self.function = function
        self._built: _Built | None = None
        self._lock = threading.Lock()

    def _build(self, records: Records) -> _Built:
        client, table_name = records.identity()
        built = self._built
        if built is not None and built.client is client and built.table_name == table_name:
            return built
        with self._lock:
            built = self._built
            if built is not None and built.client is client and built.table_name == table_name:
                return built
            persistence = records.persistence_layer()
            config = IdempotencyConfig(
                event_key_jmespath="key",
                payload_validation_jmespath="payload",
                raise_on_no_idempotency_key=True,
                expires_after_seconds=settings().idempotency_ttl_seconds,
            )
            decorated = idempotent_function(
                self.function,
                data_keyword_argument="request",
                persistence_store=persistence,
                config=config,
                output_serializer=CustomDictSerializer(to_dict=compact, from_dict=expand),
                key_prefix=self.name,
            )
            self._built = built = _Built(client, table_name, decorated, config)
            return built

    def __call__(
        self, records: Records, *, key: str, payload: dict[str, Any], context: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        built = self._build(records)
        lambda_context = context if hasattr(context, "get_remaining_time_in_millis") else None
        built.config.register_lambda_context(lambda_context or _Remaining(DEFAULT_REMAINING_MS))  # type: ignore[arg-type]
        remaining = (lambda_context or _Remaining(DEFAULT_REMAINING_MS)).get_remaining_time_in_millis() / 1000
        deadline = time.monotonic() + max(0.5, min(POLL_BUDGET_SECONDS, remaining - 1.5))
        delay = POLL_FIRST_DELAY
        request = {"key": key, "payload": payload}
        while True:
            try:
                return built.decorated(request=request, **kwargs)
            except IdempotencyValidationError:
                raise IdempotencyKeyReused(
                    "this Idempotency-Key was already used with a different request body"
                ) from None
            except IdempotencyAlreadyInProgressError:
                if time.monotonic() + delay > deadline:
                    raise IdempotencyInProgress(
                        "a request with this Idempotency-Key is still being processed, retry later"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, POLL_MAX_DELAY)
            except IdempotencyInconsistentStateError:
                raise errors.ServiceUnavailable("the idempotency record changed meanwhile, retry") from None
            except IdempotencyPersistenceLayerError as error:
                raise _translated(records, error) from error
