"""What a store budget (shop.aws_config.Budget) adds up to at worst: the figures its tests check it against."""

from __future__ import annotations

from shop.aws_config import (
    CONFLICT_ATTEMPTS,
    CONFLICT_FIRST_DELAY,
    CONFLICT_MAX_DELAY,
    Budget,
    standard_backoff_ceiling,
)


def worst_case_s(budget: Budget) -> float:
    """One call that exhausts standard mode: every attempt times out, every sleep is the longest."""
    return budget.attempts * budget.attempt_s + standard_backoff_ceiling(budget.attempts)


def conflict_backoff_ceiling(attempts: int = CONFLICT_ATTEMPTS) -> float:
    """The longest the conflict retries can sleep between `attempts` attempts."""
    return sum(min(CONFLICT_MAX_DELAY, CONFLICT_FIRST_DELAY * 2 ** (n - 1)) for n in range(1, attempts))
