"""The sales cut-over margin (shop.services.sales) against what the stacks deploy: read from the CDK code, so it
lives with the infrastructure tests (importing aws_cdk costs the fast lane seconds)."""

from __future__ import annotations

import inspect

import pytest

from shop.services.sales import CUTOVER_MARGIN_SECONDS

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def test_the_cut_over_margin_covers_a_canary_deploy_the_processors_timeout_and_clock_skew() -> None:
    """While this release's first count records the cut-over, the release before may still start invocations: a
    protected stage's canary keeps it on 90% of the batches for 5 minutes (infra.constructs.functions), and an
    invocation it started handles records written before it, for up to order_events' timeout."""
    from infra.constructs import functions
    from infra.settings import STREAM_FUNCTION

    assert "CANARY_10_PERCENT_5_MINUTES" in inspect.getsource(functions)  # the slowest shift the stacks make
    canary_s, skew_s = 5 * 60, 300
    assert canary_s + STREAM_FUNCTION.timeout_s + skew_s < CUTOVER_MARGIN_SECONDS
