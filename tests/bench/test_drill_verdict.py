"""The drills' verdict: `make drill` holds the recovery bound; the e2e smoke holds every other guarantee."""

from __future__ import annotations

from typing import Any

from bench.drills import FAULTS, guarantees_held, passed


def result(**overrides: Any) -> dict[str, Any]:
    held = {
        "status_500": 0,
        "crashed_invocations_answer_500": False,
        "status_503_without_retry_after": 0,
        "within_budget": True,
        "orders_missing": 0,
        "stock_taken_matches_orders": True,
        "stream_effects_exactly_once": True,
        "recovered_within_s": 0.4,
        "recovery_bound_s": FAULTS["store_stall"].recovery_bound_s,
    }
    return held | overrides


def test_the_store_stall_drill_is_bound_to_two_seconds_of_recovery():
    assert FAULTS["store_stall"].recovery_bound_s == 2.0


def test_a_slow_recovery_fails_the_drill_but_not_the_guarantees():
    slow = result(recovered_within_s=2.5)
    assert guarantees_held(slow)
    assert not passed(slow)
    assert passed(result())


def test_no_recovery_fails_both():
    never = result(recovered_within_s=None)
    assert not guarantees_held(never)
    assert not passed(never)


def test_a_drill_without_a_bound_passes_on_its_guarantees():
    assert passed(result(recovered_within_s=9.0, recovery_bound_s=None))
    assert not passed(result(recovered_within_s=9.0, recovery_bound_s=None, orders_missing=1))
