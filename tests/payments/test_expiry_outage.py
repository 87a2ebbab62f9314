"""A provider outage while an unpaid order's window closes, on DynamoDB Local's real stream records: the expiry
step fails its record (it must read the intent: its authorisation's event may have been lost), the mapping's
retries run out, the batch is kept in the failure store, and its replay expires the order and gives its stock
back once the provider answers again. No order holds stock after the replay."""

from __future__ import annotations

import pytest

from local_runtime.ttl import TtlDeletions
from shop.models.payments import IntentStatus
from tests.payments.test_payment_stream import (
    consume,
    kept_then_replayed,
    order_of,
    provided,
    run_payment_steps,
    sweep_after_the_window,
    window_removals,
)
from tests.support.factories import product
from tests.support.fake_payments import FakePayments
from tests.support.streams import StreamReader
from tests.support.unpaid_orders import place_unpaid, stock

pytestmark = [
    pytest.mark.filterwarnings("ignore:No application metrics"),
    pytest.mark.dynamodb_semantics,
    pytest.mark.usefixtures("recorded_bus"),  # events go to a recording bus
]


def test_an_expiry_that_failed_in_an_outage_is_applied_by_its_replay(local_store, monkeypatch, tmp_path):
    deletions = TtlDeletions("expires_at")
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 3)])
    reader = StreamReader(local_store, ttl_deletions=deletions)
    consume(reader)
    assert stock(local_store.table, pid) == 2

    assert sweep_after_the_window(local_store, deletions) == 1
    removals = window_removals(reader)
    fake.fail_next(3)  # the provider is down for every retry the mapping makes
    for _ in range(3):
        assert len(run_payment_steps(removals)["batchItemFailures"]) == 1
    assert order_of(local_store, unpaid.order_id)["status"] == "PENDING_PAYMENT"  # its PAYMENT_DUE item is gone
    assert stock(local_store.table, pid) == 2

    _, key, report = kept_then_replayed(tmp_path, removals)
    assert (report.replayed, report.failed) == ([key], [])
    after = order_of(local_store, unpaid.order_id)
    assert (after["status"], after["payment"]["status"]) == ("EXPIRED", "CANCELED")
    assert stock(local_store.table, pid) == 5
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED

    # Replayed again (a second `make replay` of a copy): nothing more.
    assert run_payment_steps(removals) == {"batchItemFailures": []}
    assert stock(local_store.table, pid) == 5
