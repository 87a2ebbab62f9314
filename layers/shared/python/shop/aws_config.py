"""The one botocore configuration every AWS client of the shop uses.

Standard retry mode backs off with jitter on throttling and 5xx. Three attempts with
1 s connect / 2 s read timeouts keep the worst case well inside the API functions'
10 s timeout, so the handler still answers 503 itself. DYNAMODB_CONNECT_TIMEOUT and
DYNAMODB_READ_TIMEOUT (seconds) override the timeouts where the store is slower than
DynamoDB, as DynamoDB Local on a loaded laptop or CI machine is.

Standard mode does not retry a write that collided with a transaction on the same item
(`TransactionConflictException` on PutItem/UpdateItem/DeleteItem, or a TransactWriteItems
cancelled for `TransactionConflict`). `with_conflict_retries` adds that to the client's own
retry loop: DynamoDB rejected the whole request, so sending it again re-evaluates every
condition and applies it at most once.
"""

from __future__ import annotations

import os
import random
import threading
import weakref
from typing import Any

from botocore.config import Config

TOTAL_ATTEMPTS = 3

# A transaction holds its items for milliseconds: start at 10 ms, double up to 0.5 s, full jitter.
# Twelve attempts sleep at most 3.1 s, inside the API functions' 10 s timeout.
CONFLICT_ATTEMPTS = 12
CONFLICT_FIRST_DELAY = 0.01
CONFLICT_MAX_DELAY = 0.5

CONFLICT_ERROR = "TransactionConflictException"
CONFLICT_REASON = "TransactionConflict"
NO_REASON = "None"


def client_config() -> Config:
    return Config(
        retries={"mode": "standard", "total_max_attempts": TOTAL_ATTEMPTS},
        connect_timeout=float(os.environ.get("DYNAMODB_CONNECT_TIMEOUT", "1")),
        read_timeout=float(os.environ.get("DYNAMODB_READ_TIMEOUT", "2")),
        tcp_keepalive=True,
    )


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
    """The DynamoDB client, its retry loop also retrying transaction conflicts (idempotent, cheap)."""
    if client not in _conflict_retrying:
        with _conflict_lock:
            if client not in _conflict_retrying:
                client.meta.events.register_first(
                    "needs-retry.dynamodb", _retry_collisions, unique_id="shop-retry-transaction-conflicts"
                )
                _conflict_retrying.add(client)
    return client
