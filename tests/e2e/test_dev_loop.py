"""The developer loop on a running `make dev` with payments: the ports it leaves for the other commands, `make pay`'s
one-line refusals, and a localstripe that dies being restarted. One stack of its own (the last test kills its
localstripe, which loses every intent), started as `make dev` starts it."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import requests

from local_runtime import dev_state
from local_runtime.payments import STATE_FILE
from local_runtime.stack import descendants
from tests.e2e.conftest import (
    REPO_ROOT,
    Stack,
    create_product,
    eventually,
    expect,
    order_lines,
    place_order,
    stack_env,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-dev-loop")]


@pytest.fixture(scope="module")
def dev(e2e_workdir: pathlib.Path, cdk_out: pathlib.Path) -> Iterator[Stack]:
    s = Stack(
        data_dir=e2e_workdir / "dev-loop",
        cdk_out=cdk_out,
        log_path=e2e_workdir / "dev-loop.log",
        options=("--payments", "stripe"),
    ).start()
    try:
        yield s
    finally:
        s.stop_cleanly()
        assert not (s.data_dir / dev_state.STATE_FILE).exists()  # removed when the stack stops


def pay(stack: Stack, order_id: str, card: str = "visa") -> subprocess.CompletedProcess[str]:
    """`make -s pay ORDER=<id> [CARD=declined]` against the stack's data directory."""
    command = [sys.executable, "-m", "local_runtime", "pay", "--order", order_id, "--card", card]
    return subprocess.run(
        [*command, "--data-dir", str(stack.data_dir)],
        cwd=REPO_ROOT,
        env=stack_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused `make pay` printed (and nothing else)."""
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    return line


def test_make_dev_leaves_its_ports_for_the_other_commands(dev: Stack) -> None:
    running = dev_state.running(dev.data_dir)
    assert running is not None
    assert dev.proc is not None
    assert running.pid == dev.proc.pid
    assert running.gateway == dev.url
    printed = dev.output()
    assert f"DynamoDB      {running.dynamodb} " in printed
    assert f"S3, events    {running.aws} " in printed
    assert running.localstripe == json.loads((dev.data_dir / STATE_FILE).read_text())["stripe"]
    assert f"localstripe {running.localstripe} " in printed


def test_make_pay_refuses_an_order_it_cannot_pay_in_one_line(dev: Stack) -> None:
    api, admin, customer = dev.api, dev.admin_token(), dev.token("loop-payer")
    product = create_product(api, admin, category="loop-pay", name="Kettle", price_cents=2100, stock=5)

    assert refused(pay(dev, "ord-nobody-placed")) == "error: no order ord-nobody-placed on the running `make dev`"

    cancelled = expect(place_order(api, customer, "loop-cancel", order_lines(product["product_id"])), 201)
    expect(api.post(f"/orders/{cancelled['order_id']}/cancel", token=customer), 200)
    assert (
        refused(pay(dev, cancelled["order_id"]))
        == f"error: order {cancelled['order_id']} is CANCELLED: it was cancelled"
    )

    paid = expect(place_order(api, customer, "loop-paid", order_lines(product["product_id"])), 201)
    first = pay(dev, paid["order_id"])
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("authorised 2100 usd")
    eventually(
        lambda: expect(api.get(f"/orders/{paid['order_id']}", token=customer), 200)["status"] == "CONFIRMED",
        what="CONFIRMED",
    )
    assert refused(pay(dev, paid["order_id"])) == f"error: order {paid['order_id']} is CONFIRMED: it is already paid"


def _webhook_200s(stack: Stack) -> int:
    return sum(log.read_text().count('"Webhook200":[1.0]') for log in stack.data_dir.rglob("payments.log"))


def test_a_localstripe_that_dies_is_restarted_on_its_port_with_the_same_webhook(dev: Stack) -> None:
    api, admin, customer = dev.api, dev.admin_token(), dev.token("loop-restart")
    product = create_product(api, admin, category="loop-restart", name="Filter", price_cents=900, stock=5)
    before = expect(place_order(api, customer, "loop-before", order_lines(product["product_id"])), 201)
    running = dev_state.running(dev.data_dir)
    assert running is not None
    assert dev.proc is not None
    (localstripe,) = [p for p in descendants(dev.proc.pid) if "local_runtime.localstripe --serve" in p.cmdline]

    os.kill(localstripe.pid, signal.SIGKILL)

    said = eventually(lambda: "localstripe exited; restarted" in (out := dev.output()) and out, what="the restart line")
    (line,) = [line for line in said.splitlines() if "localstripe exited" in line]
    assert running.localstripe in line
    assert "intents" in line
    assert "gone" in line
    assert dev_state.running(dev.data_dir) == running  # same ports: nothing the functions or commands know changed
    stripe_api = running.localstripe
    listed = requests.get(f"{stripe_api}/v1/payment_intents", auth=("sk_test_loop", ""), timeout=10)
    assert listed.json()["data"] == []  # what it held is gone: it keeps it in memory

    # the webhook is registered again with the secret the functions verify: localstripe's own delivery is answered 200
    delivered = _webhook_200s(dev)
    requests.post(f"{stripe_api}/v1/customers", auth=("sk_test_loop", ""), timeout=10).raise_for_status()
    eventually(lambda: _webhook_200s(dev) > delivered, what="localstripe's signed customer.created answered 200")

    lost = refused(pay(dev, before["order_id"]))
    assert lost.startswith(f"error: no payment intent for order {before['order_id']} on localstripe")
    after = expect(place_order(api, customer, "loop-after", order_lines(product["product_id"])), 201)
    paid = pay(dev, after["order_id"])
    assert paid.returncode == 0, paid.stderr
    eventually(
        lambda: expect(api.get(f"/orders/{after['order_id']}", token=customer), 200)["status"] == "CONFIRMED",
        what="the order paid after the restart CONFIRMED",
    )
