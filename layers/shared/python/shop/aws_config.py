"""The one botocore configuration every AWS client of the shop uses, derived from the function's timeout.

Attempts, timeouts and a per-invocation deadline leave a handler time to answer 503 itself before Lambda kills
it; DynamoDB clients also retry transaction conflicts (docs/decisions.md, "Fault drills: the store budget").
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError

from shop.limits import MAX_PARALLEL_QUERIES

DEFAULT_FUNCTION_TIMEOUT_S = 10.0
TOTAL_ATTEMPTS = 3
# The deployed per-attempt ceiling: DynamoDB answers in milliseconds; longer waits only delay the 503.
MAX_CONNECT_TIMEOUT_S = 1.0
MAX_READ_TIMEOUT_S = 2.0
MIN_ATTEMPT_S = 0.3
# Standard retry mode sleeps random() * 2 ** (attempt - 1) s after a failed attempt (botocore
# retries.standard.ExponentialBackoff, capped at 20 s).
STANDARD_BACKOFF_BASE = 2
STANDARD_BACKOFF_CAP_S = 20.0

# A transaction holds its items for milliseconds: start at 10 ms, double up to 0.5 s, full jitter.
# The invocation deadline, not this count, is what bounds them in time.
CONFLICT_ATTEMPTS = 12
CONFLICT_FIRST_DELAY = 0.01
CONFLICT_MAX_DELAY = 0.5

# The clock deadlines are measured on; tests replace it (and a stalled store advances it) to run without waiting.
now: Callable[[], float] = time.monotonic

CONFLICT_ERROR = "TransactionConflictException"
CONFLICT_REASON = "TransactionConflict"
NO_REASON = "None"


def standard_backoff_ceiling(attempts: int) -> float:
    """The longest standard mode can sleep between `attempts` attempts."""
    return sum(min(STANDARD_BACKOFF_BASE ** (n - 1), STANDARD_BACKOFF_CAP_S) for n in range(1, attempts))


@dataclass(frozen=True)
class Budget:
    """How long the store may take within one invocation of a function with `function_timeout_s`."""

    function_timeout_s: float
    margin_s: float
    attempts: int
    connect_timeout_s: float
    read_timeout_s: float

    @classmethod
    def for_timeout(cls, function_timeout_s: float) -> Budget:
        """The most patient budget whose worst case leaves the handler `margin_s` to answer.

        The margin is a tenth of the timeout, at least 0.5 s (serialising the 503, flushing
        metrics). Attempts drop from three when their sleeps and the minimal attempt do not fit.
        """
        margin = max(0.5, function_timeout_s / 10)
        usable = function_timeout_s - margin
        for attempts in range(TOTAL_ATTEMPTS, 0, -1):
            per_attempt = (usable - standard_backoff_ceiling(attempts)) / attempts
            if per_attempt >= MIN_ATTEMPT_S:
                connect = _tenths(min(MAX_CONNECT_TIMEOUT_S, per_attempt / 4))
                read = _tenths(min(MAX_READ_TIMEOUT_S, per_attempt - connect))
                return cls(function_timeout_s, margin, attempts, connect, read)
        raise ValueError(f"a {function_timeout_s} s function timeout leaves no time for one store attempt")

    @property
    def attempt_s(self) -> float:
        return self.connect_timeout_s + self.read_timeout_s


def _tenths(seconds: float) -> float:
    return math.floor(seconds * 10) / 10


def function_timeout() -> float:
    return float(os.environ.get("FUNCTION_TIMEOUT_SECONDS") or DEFAULT_FUNCTION_TIMEOUT_S)


def budget() -> Budget:
    return _budget_for(function_timeout())


@functools.lru_cache(maxsize=8)
def _budget_for(function_timeout_s: float) -> Budget:
    """Budget.for_timeout, worked out once per timeout (every invocation asks: shop.http_api.observability)."""
    return Budget.for_timeout(function_timeout_s)


def client_config() -> Config:
    derived = budget()
    return Config(
        retries={"mode": "standard", "total_max_attempts": derived.attempts},
        connect_timeout=float(os.environ.get("DYNAMODB_CONNECT_TIMEOUT") or derived.connect_timeout_s),
        read_timeout=float(os.environ.get("DYNAMODB_READ_TIMEOUT") or derived.read_timeout_s),
        tcp_keepalive=True,
        max_pool_connections=MAX_PARALLEL_QUERIES,  # a status-listing page's parallel Queries (botocore: 10)
    )


class DeadlineExceeded(BotoCoreError):
    """No time is left in the invocation for another attempt that could end before its deadline."""

    fmt = "not enough time left for a store attempt ({left:.2f} s left, an attempt may take {needed:.2f} s)"


_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("shop_store_deadline", default=None)


@contextlib.contextmanager
def invocation_deadline(context: Any) -> Iterator[float]:
    """Within it, no store attempt starts that could end after Lambda's remaining time minus the margin,
    and none that starts waits past that deadline (`_DeadlineGuard.before_send` caps its read timeout)."""
    derived = budget()
    remaining_ms = getattr(context, "get_remaining_time_in_millis", None)
    remaining = remaining_ms() / 1000 if callable(remaining_ms) else derived.function_timeout_s
    deadline = now() + remaining - derived.margin_s
    token = _deadline.set(deadline)
    try:
        yield deadline
    finally:
        _deadline.reset(token)


RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
        CONFLICT_ERROR,
    }
)


class _DeadlineGuard:
    """before-send and needs-retry handlers: neither a sleep nor an attempt may end after the deadline.

    An attempt starts only with a deployed attempt's time (connect + read timeout) left, and its read
    timeout is cut to the time left after a connect that takes the client's whole connect timeout: widened
    local timeouts (DYNAMODB_*_TIMEOUT, `make dev`) would otherwise let one attempt outlast the function,
    which then dies with a 500 instead of answering 503. botocore takes a read timeout per request but no
    connect timeout (the pool's), so the connect is bounded by leaving room for it, not by cutting it.
    A retry sleeps at most the longer of standard mode's and the conflict backoff. Without a deadline
    (scripts, tests) the guard does nothing.
    """

    def __init__(self, client: Any) -> None:
        config = client.meta.config
        # Widened local timeouts (DYNAMODB_*_TIMEOUT) would refuse every retry: they count as deployed.
        self.attempt_s = min(float(config.connect_timeout) + float(config.read_timeout), budget().attempt_s)
        self.connect_timeout_s = float(config.connect_timeout)
        self.read_timeout_s = float(config.read_timeout)
        self.max_attempts = int((config.retries or {}).get("total_max_attempts", TOTAL_ATTEMPTS))

    def before_send(self, request: Any = None, **_: Any) -> None:
        left = self._require(self.attempt_s)
        if left is None or request is None:
            return
        read_s = min(self.read_timeout_s, left - self.connect_timeout_s)
        if read_s <= 0:  # only widened timeouts get here: a deployed attempt's connect + read fit in attempt_s
            raise DeadlineExceeded(left=left, needed=self.connect_timeout_s + self.read_timeout_s)
        # botocore's per-request read timeout (the request context's read_timeout, given to urllib3)
        request.context["read_timeout"] = read_s

    def needs_retry(
        self,
        response: tuple[Any, dict[str, Any]] | None = None,
        attempts: int = 1,
        caught_exception: Exception | None = None,
        **_: Any,
    ) -> None:
        """Refuse a retry whose sleep and attempt could not end before the deadline."""
        if response is not None and collided(response[1]):
            if attempts < CONFLICT_ATTEMPTS:
                self._require(min(CONFLICT_MAX_DELAY, CONFLICT_FIRST_DELAY * 2 ** (attempts - 1)) + self.attempt_s)
            return
        transient = caught_exception is not None or (response is not None and _transient(response[1]))
        if transient and attempts < self.max_attempts:
            self._require(min(STANDARD_BACKOFF_BASE ** (attempts - 1), STANDARD_BACKOFF_CAP_S) + self.attempt_s)

    @staticmethod
    def _require(seconds: float) -> float | None:
        """The seconds left before the deadline (None: no deadline), if at least `seconds`."""
        deadline = _deadline.get()
        if deadline is None:
            return None
        left = deadline - now()
        if left < seconds:
            raise DeadlineExceeded(left=left, needed=seconds)
        return left


def _transient(parsed: dict[str, Any]) -> bool:
    status = parsed.get("ResponseMetadata", {}).get("HTTPStatusCode", 200)
    return status >= 500 or parsed.get("Error", {}).get("Code") in RETRYABLE_CODES


def conflict_delay(attempt: int) -> float:
    """Seconds to wait after the `attempt`-th attempt collided (1-based)."""
    return random.uniform(0, min(CONFLICT_MAX_DELAY, CONFLICT_FIRST_DELAY * 2 ** (attempt - 1)))


def collided(parsed: dict[str, Any]) -> bool:
    """Whether DynamoDB refused the request only because a transaction held one of its items."""
    code = parsed.get("Error", {}).get("Code")
    if code == CONFLICT_ERROR:
        return True
    if code != "TransactionCanceledException":
        return False
    reasons = {reason.get("Code", NO_REASON) for reason in parsed.get("CancellationReasons", [])}
    return CONFLICT_REASON in reasons and reasons <= {CONFLICT_REASON, NO_REASON}


def _retry_collisions(response: tuple[Any, dict[str, Any]] | None = None, attempts: int = 1, **_: Any) -> float | None:
    """botocore's needs-retry handler: a delay to retry after, or None to leave the answer to standard mode."""
    if response is None or attempts >= CONFLICT_ATTEMPTS or not collided(response[1]):
        return None
    return conflict_delay(attempts)


_conflict_retrying: weakref.WeakSet[Any] = weakref.WeakSet()
_conflict_lock = threading.Lock()


def with_conflict_retries(client: Any) -> Any:
    """The DynamoDB client, its retry loop also retrying transaction conflicts (idempotent, cheap) and
    never running past the invocation's deadline (`invocation_deadline`)."""
    if client not in _conflict_retrying:
        with _conflict_lock:
            if client not in _conflict_retrying:
                guard = _DeadlineGuard(client)
                events = client.meta.events
                events.register_first(
                    "needs-retry.dynamodb", _retry_collisions, unique_id="shop-retry-transaction-conflicts"
                )
                # Registered first after it, so it runs before it: a refused retry never sleeps.
                events.register_first("needs-retry.dynamodb", guard.needs_retry, unique_id="shop-deadline-retry")
                events.register_last("before-send.dynamodb", guard.before_send, unique_id="shop-deadline-send")
                _conflict_retrying.add(client)
    return client
