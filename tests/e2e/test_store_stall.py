"""A stalled store under plain `make dev` (its widened 5 s / 15 s store timeouts, not the drills' deployed budget):
the client sees what a client on AWS sees, 503 with Retry-After from the function itself, never API Gateway's 500
for a function that outlived its timeout (issue 23, item 6; shop.aws_config caps each attempt's read).

It runs on the session stack, which is started exactly as `make dev` starts it (the settings this test needs),
instead of booting one of its own: the e2e group runs its tests one at a time on one worker, so the stall
(a few seconds of a stopped DynamoDB Local) delays no other test's request, only the stream poller's
background work, which retries. The clean stop (exit 0, nothing left behind) is the session stack's teardown.
"""

from __future__ import annotations

import os
import signal
import uuid

import pytest

from tests.e2e.conftest import Stack, create_product, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def test_a_stalled_store_answers_503_with_retry_after_not_500(stack: Stack) -> None:
    # the session stack: as `make dev` starts it, no --deployed-budget
    admin = stack.admin_token()
    product = create_product(
        stack.api, admin, category="stall", name=f"stall-{uuid.uuid4().hex[:8]}", price_cents=100, stock=1
    )
    path = f"/products/{product['product_id']}"
    expect(stack.api.get(path), 200)  # a warm worker
    (java,) = [p.pid for p in stack.run_processes() if "DynamoDBLocal.jar" in p.cmdline]
    os.kill(java, signal.SIGSTOP)
    try:
        stalled = stack.api.get(path)
    finally:
        os.kill(java, signal.SIGCONT)
    expect(stalled, 503, "SERVICE_UNAVAILABLE")
    assert stalled.headers["Retry-After"] == "1"
    expect(stack.api.get(path), 200)  # and the store is served again once it answers
