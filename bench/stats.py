"""Small statistics and timing helpers (no numpy needed)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence


def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile; samples need not be sorted."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def median(samples: Sequence[float]) -> float:
    if not samples:
        return math.nan
    ordered = sorted(samples)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def interleaved(
    candidates: dict[str, Callable[[], object]], rounds: int, warmup: int, deadline_s: float
) -> dict[str, list[float]]:
    """Time each candidate once per round, in alternating order, so machine drift hits them alike."""
    names = list(candidates)
    for _ in range(warmup):
        for name in names:
            candidates[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    stop = time.monotonic() + deadline_s
    for i in range(rounds):
        order = names if i % 2 == 0 else list(reversed(names))
        for name in order:
            samples[name].append(timed(candidates[name]))
        if time.monotonic() > stop:
            break
    return samples
