"""A token bucket in write capacity units per second, fed by what DynamoDB says each write consumed.

`acquire(estimate)` waits until the bucket holds the estimate (or is full, for a write larger than
the bucket) and takes it; `settle(estimate, consumed)` gives back or takes the difference once the
write's ConsumedCapacity is known. The bucket may go negative after a write larger than estimated:
the next acquire waits the debt off. So, from the start, consumed <= burst + rate * elapsed + the
largest underestimate of one write, whatever the sizes of the items.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(
        self,
        rate: float,
        *,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("the rate must be positive")
        self.rate = rate
        self.capacity = burst if burst is not None else rate
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = self.capacity
        self._updated = self.started = clock()
        self.consumed = 0.0

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
        self._updated = now

    def acquire(self, estimate: float) -> None:
        """Take `estimate` units, waiting as long as the rate asks. Holding the lock while waiting is the
        point: every thread of a run shares one bucket and queues behind the one waiting."""
        needed = min(estimate, self.capacity)
        with self._lock:
            self._refill()
            if self._tokens < needed:
                self._sleep((needed - self._tokens) / self.rate)
                self._refill()
                # the sleep lasted at least the wait; a refill a rounding error short must not loop
                self._tokens = max(self._tokens, needed)
            self._tokens -= estimate

    def settle(self, estimate: float, consumed: float) -> None:
        with self._lock:
            self._tokens += estimate - consumed
            self.consumed += consumed

    def elapsed(self) -> float:
        return self._clock() - self.started
