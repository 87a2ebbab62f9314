"""A smoke of each fault drill (`make drill` runs them longer and writes bench/results.json `faults`).

The five drills run one after another on one local stack with the deployed store budget, booted once for the
module (five boots were most of their CPU); each has a result and a test of its own. Each puts the stack under a
small steady load on shop data of its own (its product, its customer), injects its fault and checks what the
issue asks: no 500 (but for crashed invocations, which API Gateway answers 500), every 503 with Retry-After,
every answer within the function's timeout, no order lost or half written, every stream effect exactly once,
and that the service recovers, from the very state its fault left (a store restarted, workers respawned, the
stack restarted on the same data after the poller's kill): the next drill starts from there. How fast it
recovers (the store stall's 2 s) is a wall-clock bound: `make drill` holds it, on a stack per drill, not
`make test`.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from bench.drills import FAULTS, Rig, guarantees_held, run

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("drills")]

SMOKE_SCALE = 0.4
SMOKE_CLIENTS = 2


@pytest.fixture(scope="module")
def shared_rig(tmp_path_factory: pytest.TempPathFactory, cdk_out: pathlib.Path) -> Iterator[Rig]:
    rig = Rig(tmp_path_factory.mktemp("drills") / "stack", cdk_out)
    try:
        rig.start(fresh=True)
        yield rig
    finally:
        rig.stop()


@pytest.fixture
def rig(shared_rig: Rig) -> Rig:
    """The shared stack; booted again only if a drill before left it down (that drill's own test failed
    on its recovery), so that one failure does not fail the drills after it."""
    if not shared_rig.running():
        shared_rig.stop()
        shared_rig.start(fresh=True)
    return shared_rig


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_drill(name: str, rig: Rig) -> None:
    result = run(name, rig, scale=SMOKE_SCALE, clients=SMOKE_CLIENTS)
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
