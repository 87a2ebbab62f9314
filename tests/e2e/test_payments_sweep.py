"""The windows' sweep on `make dev`'s stack: payment_steps on its schedule (the EventBridge rule the templates hold,
run by the local scheduler every few seconds: `--schedule-interval`) expires an unpaid order once its window has
closed, within one interval, as a deployed stage's sweep does every minute (docs/payments.md, "The windows' sweep").

On the payments stack (conftest's `paying_stack`, group `e2e-payments`), conftest's `left_to_sweep` places such an
order when the payment flow's module starts: its window runs while that module does, and this module, the group's
last by collection order, waits for what remains.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
import stripe

from local_runtime.payments import STATE_FILE
from tests.e2e.conftest import PAYING_SCHEDULE_S, PAYING_WINDOW_S, Stack, eventually, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-payments")]


def _order(stack: Stack, order_id: str, token: str) -> dict[str, Any]:
    return expect(stack.api.get(f"/orders/{order_id}", token=token), 200)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _intent_status(stack: Stack, order_id: str) -> str:
    api = json.loads((stack.data_dir / STATE_FILE).read_text())["stripe"]
    client = stripe.StripeClient("sk_test_e2e", base_addresses={"api": api}, max_network_retries=0)
    listed = [i.to_dict() for i in client.v1.payment_intents.list(params={"limit": 100}).auto_paging_iter()]
    (intent,) = [i for i in listed if (i.get("metadata") or {}).get("order_id") == order_id]
    return str(intent["status"])


def _swept(stack: Stack, order_id: str) -> list[dict[str, Any]]:
    """payment_steps' log records of a sweep's step on the order."""
    lines = (stack.data_dir / "logs" / "payment_steps.log").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    return [r for r in records if r.get("by") == "sweep" and r.get("order_id") == order_id]


def test_an_unpaid_order_is_expired_by_the_scheduled_sweep_once_its_window_closed(
    paying_stack: Stack, left_to_sweep: dict[str, Any]
) -> None:
    stack, left = paying_stack, left_to_sweep
    order_id, customer = left["order"]["order_id"], left["customer"]
    assert left["order"]["status"] == "PENDING_PAYMENT"
    (line,) = [line for line in stack.output().splitlines() if line.startswith("schedules ")]
    assert f"payment_steps every {PAYING_SCHEDULE_S:g}s (" in line, (
        f"{line} (templates older than the rule? make synth)"
    )
    assert ": rate(1 minute) deployed)" in line

    expired = eventually(
        lambda: (order := _order(stack, order_id, customer))["status"] == "EXPIRED" and order,
        # the window from the placement (mostly over by now), then a run and the stream
        timeout=PAYING_WINDOW_S + PAYING_SCHEDULE_S + 60,
        interval=1,
        what=f"order {order_id} EXPIRED by the sweep",
    )
    # Not before its window closed. (Within the window plus one interval is the schedule's: a loaded machine runs a
    # scheduled invocation late, so this test bounds only the lower side.)
    waited = _instant(expired["updated_at"]) - _instant(expired["created_at"])
    assert waited >= timedelta(seconds=PAYING_WINDOW_S)
    # The worker's log lines reach the file after its invocation has answered: wait for them too.
    eventually(lambda: _swept(stack, order_id), timeout=30, what="payment_steps' log line of the sweep's step")
    assert expired["version"] == 2
    product = expect(stack.api.get(f"/products/{left['product_id']}"), 200)
    assert product["stock"] == 3  # the two held units back
    eventually(
        lambda: expect(stack.api.get(f"/orders/{order_id}/payment", token=customer), 200)["status"] == "CANCELED",
        what="the payment recorded CANCELED",
    )
    assert _intent_status(stack, order_id) == "canceled"
