"""The stack's life cycle: a restart keeps the data, and Ctrl-C or SIGTERM leaves no process behind.

The test starts its own stacks (own data directory, free ports) so it can stop them mid-test. Three boots
prove everything: the first is stopped with SIGINT to the process, the second (the restart on the same
data) with SIGTERM, the third (`--fresh` on that data) with Ctrl-C to the foreground process group while
every function has a warm worker. One stack per way of stopping, not one more: each boot costs 10 to 25 s.
"""

from __future__ import annotations

import pathlib
import signal
import time
from typing import Any

import pytest

from local_runtime.stack import processes_mentioning, still_alive
from tests.e2e.conftest import Stack, confirmed, create_product, eventually, expect, order_lines, place_order

# its own group: these tests start their own stacks, never the session one, so they run beside it
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-lifecycle")]


def test_restart_keeps_the_data_and_ctrl_c_or_sigterm_leaves_nothing_behind(
    new_stack: Any, tmp_path: pathlib.Path
) -> None:
    data_dir = tmp_path / "kept"
    first: Stack = new_stack(data_dir, fresh=True, seed=True)
    assert "seeded 6 demo products" in first.output()
    demo = expect(first.api.get("/products", params={"category": "coffee"}), 200)["items"]
    assert demo
    admin = first.admin_token()
    customer_id = "e2e-restart-customer"
    customer = first.token(customer_id)
    product = create_product(first.api, admin, category="e2e-restart", name="Durable", price_cents=1234, stock=7)
    pid = product["product_id"]
    oid = expect(place_order(first.api, customer, "restart-1", order_lines(pid, 2)), 201)["order_id"]
    confirmed(first.api, customer, oid)  # before the restart
    first.stop_cleanly()

    second: Stack = new_stack(data_dir, fresh=False, seed=True)  # same data dir, no --fresh
    api = second.api
    # the demo catalogue is seeded once per data dir, not again on a restart
    assert "seeded" not in second.output()
    assert expect(api.get("/products", params={"category": "coffee"}), 200)["items"] == demo
    # tokens survive the restart: the key pair is kept in the data dir
    again = expect(api.get(f"/products/{pid}"), 200)
    for field in ("name", "category", "price_cents", "description", "created_at"):
        assert again[field] == product[field], field
    assert again["stock"] == 5
    listed = expect(api.get("/products", params={"category": "e2e-restart"}), 200)["items"]
    assert [p["product_id"] for p in listed] == [pid]
    order = expect(api.get(f"/orders/{oid}", token=customer), 200)
    assert order["status"] == "CONFIRMED"
    assert [h["status"] for h in order["history"]] == ["PENDING", "CONFIRMED"]
    # the idempotency record survived too: the same key and body answer the same order
    repeat = expect(place_order(api, customer, "restart-1", order_lines(pid, 2)), 201)
    assert repeat["order_id"] == oid
    # the stream poller resumed from its checkpoint: nothing replayed twice, new changes still processed
    notes = expect(api.get(f"/customers/{customer_id}/notifications", token=customer), 200)["items"]
    assert [n["type"] for n in notes if n["order_id"] == oid] == ["ORDER_CONFIRMED"]
    etag = api.get(f"/orders/{oid}", token=admin).headers["ETag"]
    expect(
        api.patch(
            f"/orders/{oid}",
            token=admin,
            headers={"If-Match": etag},
            json={"status": "SHIPPED", "carrier": "DHL", "tracking_number": "JD0146000062"},
        ),
        200,
    )

    def shipped_notice() -> bool:
        items = expect(api.get(f"/customers/{customer_id}/notifications", token=customer), 200)["items"]
        return [n["type"] for n in items if n["order_id"] == oid] == ["ORDER_STATUS_CHANGED", "ORDER_CONFIRMED"]

    eventually(shipped_notice, what="ORDER_STATUS_CHANGED after the restart")
    sigterm_stops_everything(second)

    # --fresh really starts empty (and still on the same data dir)
    third: Stack = new_stack(data_dir, fresh=True)
    expect(third.api.get(f"/products/{pid}"), 404)
    ctrl_c_on_the_foreground_stack_leaves_nothing_behind(third)


def ctrl_c_on_the_foreground_stack_leaves_nothing_behind(stack: Stack) -> None:
    """`make dev` runs `python -m local_runtime dev` in the foreground; Ctrl-C sends SIGINT to the whole
    foreground process group. Afterwards: exit code 0, no DynamoDB Local (Java) on this data dir, no
    function worker of this run."""
    admin = stack.admin_token()
    # make every function start workers, so there is something to leave behind: a burst of requests
    create_product(stack.api, admin, category="e2e-ctrl-c", name="Busy", price_cents=1, stock=3)
    expect(stack.api.post("/sessions"), 201)
    expect(stack.api.get("/customers/e2e-ctrl-c/orders", token=stack.token("e2e-ctrl-c")), 200)
    running = stack.run_processes()
    cmdlines = [p.cmdline for p in running]
    assert any("java" in c and str(stack.data_dir) in c for c in cmdlines), cmdlines  # DynamoDB Local, ours
    assert sum("worker.py" in c for c in cmdlines) >= 5, cmdlines  # one warm worker per function at least

    # bounded (30 s to exit, 10 s for children); asserts exit code 0 and nothing of the run left
    stack.stop_cleanly(group=True)
    assert not processes_mentioning(str(stack.data_dir))
    assert "stopping" in stack.output()  # this run's own lines (the log file is the three runs')


def sigterm_stops_everything(stack: Stack) -> None:
    running = stack.run_processes()
    assert any("java" in p.cmdline and str(stack.data_dir) in p.cmdline for p in running)  # something to stop
    assert stack.proc is not None
    stack.proc.send_signal(signal.SIGTERM)
    assert stack.proc.wait(timeout=30) == 0, stack.log_tail()
    deadline = time.monotonic() + 10
    while any(still_alive(p) for p in running) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p.cmdline for p in running if still_alive(p)]
    assert not processes_mentioning(str(stack.data_dir))


def test_the_leftover_detector_sees_a_leftover(tmp_path: pathlib.Path) -> None:
    """The /proc scan the life-cycle checks rely on finds a live process by its command line and by
    parentage, and tells a dead one from a live one (so `nothing left` above is not vacuous)."""
    import os
    import subprocess
    import sys

    from tests.e2e.conftest import descendants

    marker = str(tmp_path / "leftover-marker")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        found = eventually(lambda: processes_mentioning(marker), timeout=10, what="the marker process")
        assert [p.pid for p in found] == [child.pid]
        assert child.pid in {p.pid for p in descendants(os.getpid())}
        assert still_alive(found[0])
    finally:
        child.kill()
        child.wait(timeout=10)
    assert not still_alive(found[0])
    assert not processes_mentioning(marker)
