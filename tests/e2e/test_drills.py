"""A smoke of each fault drill (`make drill` runs them longer and writes bench/results.json `faults`).

Each starts its own local stack with the deployed store budget, puts it under a small steady load,
injects its fault and checks what the issue asks: no 500 (but for crashed invocations, which API
Gateway answers 500), every 503 with Retry-After, every answer within the function's timeout, no
order lost or half written, every stream effect exactly once, and that the service recovers. How fast
it recovers (the store stall's 2 s) is a wall-clock bound: `make drill` holds it, not `make test`.
"""

from __future__ import annotations

import pathlib

import pytest

from bench.drills import FAULTS, drill, guarantees_held

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("drills")]

SMOKE_SCALE = 0.4
SMOKE_CLIENTS = 2


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_drill(name: str, tmp_path: pathlib.Path, cdk_out: pathlib.Path) -> None:
    result = drill(name, tmp_path, cdk_out, scale=SMOKE_SCALE, clients=SMOKE_CLIENTS)
    assert result["requests"] > 0, result
    assert result["orders_checked"] > 0, result
    assert result["status_503_without_retry_after"] == 0, result
    assert result["within_budget"], result
    assert result["orders_missing"] == 0, result
    assert result["stock_taken_matches_orders"], result
    assert result["stream_effects_exactly_once"], result
    assert result["recovered_within_s"] is not None, result  # the bound is `make drill`'s (bench.drills.passed)
    if not FAULTS[name].crashes:
        assert result["status_500"] == 0, result
    if name == "throttling_storm":
        assert result["store_unavailable_metric"] >= result["status_503"], result
    assert guarantees_held(result), result
