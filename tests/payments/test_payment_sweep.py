"""The payment windows' sweep on DynamoDB Local: payment_steps, invoked by its schedule (the sample event
events/payment_steps/payment_window_sweep.json, the shape `sam local generate-event cloudwatch scheduled-event`
gives), expires the unpaid orders whose window closed (the only way a window closes), reading them with one Query
per status shard whose key condition selects exactly them, and changes each order once, however often it runs."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any

import pytest

from shop import clock, wiring
from shop.repository.order_payments import OrderPaymentRepository
from tests.functions.apigw import REPO
from tests.payments.test_payment_stream import order_of, provided
from tests.stream.conftest import order_events_context
from tests.support.factories import product
from tests.support.fake_payments import FakePayments
from tests.support.unpaid_orders import WINDOW_S, place_unpaid, stock

pytestmark = [pytest.mark.filterwarnings("ignore:No application metrics"), pytest.mark.dynamodb_semantics]
BUILD = wiring.payment_service
SWEEP_EVENT = REPO / "events" / "payment_steps" / "payment_window_sweep.json"


def sweep_at(monkeypatch: pytest.MonkeyPatch, table: Any, fake: FakePayments, later: timedelta) -> dict[str, Any]:
    """payment_steps' handler on the schedule's event, its clock `later` than now."""
    from functions.payment_steps.handler import handler

    moment = clock.now() + later
    steps_function = sys.modules["functions.payment_steps.handler"]  # its rules, built at its import
    monkeypatch.setattr(steps_function, "payment_rules", BUILD(table, provider=fake, now=lambda: moment))
    return handler(json.loads(SWEEP_EVENT.read_text()), order_events_context())


def test_the_schedule_expires_the_overdue_orders_once_and_no_other(local_store, monkeypatch):
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=9)
    overdue = [place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 2)]) for _ in range(3)]
    longer = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 1)], window_s=WINDOW_S * 4)
    assert stock(local_store.table, pid) == 2

    past = timedelta(seconds=WINDOW_S + 5)
    assert sweep_at(monkeypatch, local_store.table, fake, past) == {"swept": 3}
    for order in overdue:
        assert order_of(local_store, order.order_id)["status"] == "EXPIRED"
    assert order_of(local_store, longer.order_id)["status"] == "PENDING_PAYMENT"  # its own window is longer
    assert stock(local_store.table, pid) == 8
    assert sweep_at(monkeypatch, local_store.table, fake, past) == {"swept": 0}  # again: nothing more
    assert stock(local_store.table, pid) == 8


def test_before_its_window_closes_the_sweep_leaves_an_order_waiting(local_store, monkeypatch):
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 1)])
    assert sweep_at(monkeypatch, local_store.table, fake, timedelta(seconds=WINDOW_S - 5)) == {"swept": 0}
    assert order_of(local_store, unpaid.order_id)["status"] == "PENDING_PAYMENT"


def test_the_overdue_query_reads_only_what_it_returns(local_store, monkeypatch):
    fake = FakePayments()
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=9)
    placed = {
        order.order_id: order
        for order in (place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 1)]) for _ in range(4))
    }
    repository = OrderPaymentRepository(local_store.table)
    client = local_store.table.client
    query = client.query
    answers: list[dict[str, Any]] = []

    def counted(**kwargs: Any) -> Any:
        answers.append(query(**kwargs))
        return answers[-1]

    monkeypatch.setattr(client, "query", counted)
    found = dict(repository.overdue(clock.iso(clock.now() + timedelta(seconds=1)), per_shard=25))
    assert found == {order_id: order.expires_at for order_id, order in placed.items()}
    assert len(answers) == repository.shards  # one Query per shard
    assert sum(a["ScannedCount"] for a in answers) == sum(a["Count"] for a in answers) == 4  # amplification 1.00
