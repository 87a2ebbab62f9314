"""A failed (unpaid) order is final: archived as a cancelled one is, after which its provider events and its
replayed records change nothing. Real stream records and the local TTL emulator, on moto and DynamoDB Local;
the archive in moto's S3."""

from __future__ import annotations

import time
from typing import Any

import pytest

from local_runtime.ttl import TtlEmulator
from shop import keys, wiring
from shop.models.payments import IntentStatus
from tests.payments.test_payment_stream import consume, provided, run_order_events, run_payment_steps
from tests.stream.conftest import dump, s3  # noqa: F401 - the fixture
from tests.support.factories import ADMIN, product
from tests.support.fake_payments import FakePayments
from tests.support.streams import StreamReader
from tests.support.unpaid_orders import AUTHORISED, CANCELED, FAILED, event, item, place_unpaid, stock

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def removals(reader: StreamReader) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for _ in range(50):  # DynamoDB Local can show a delete's record a moment after the delete
        records += reader.read()
        if any(r["eventName"] == "REMOVE" for r in records):
            return records
        time.sleep(0.1)
    return records


@pytest.mark.usefixtures("s3")
def test_events_and_replays_for_an_archived_failed_order_change_nothing(store, monkeypatch):
    from local_runtime.ttl import TtlDeletions
    from shop.config import settings

    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    monkeypatch.setenv("ARCHIVE_GRACE_SECONDS", "0")
    settings.cache_clear()
    fake = FakePayments()
    provided(monkeypatch, fake)
    deletions = TtlDeletions("expires_at")
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 2)])
    reader = StreamReader(store, ttl_deletions=deletions)
    fake.cancel(unpaid.intent_id, idempotency_key="stripe-dashboard")  # nothing can be charged on it any more
    cancelled = event(CANCELED, unpaid)
    wiring.payment_service(store.table).apply_event(cancelled)  # the waiting order fails
    failed_records = consume(reader)  # history, notification; the CANCEL step finds it recorded
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED

    swept = TtlEmulator(
        store.client,
        store.table_name,
        attribute="expires_at",
        key_names=("PK", "SK"),
        deletions=deletions,
        now=lambda: time.time() + 1,
    ).sweep()
    assert swept == 1  # the order (ARCHIVE_AFTER_DAYS=0)
    archiving = removals(reader)
    assert run_order_events(archiving) == {"batchItemFailures": []}
    assert run_payment_steps(archiving) == {"batchItemFailures": []}
    archived = wiring.order_service(store.table).get(ADMIN, unpaid.order_id)
    assert archived.archived is True
    # the archive keeps the payment (GET /orders/{id}/payment reads it there), never its client secret
    assert archived.payment is not None
    assert (archived.payment.status.value, archived.payment.amount_cents) == ("CANCELED", 5000)
    assert archived.payment.intent_id == unpaid.intent_id
    assert archived.payment.client_secret is None
    payment, secret_shown = wiring.order_service(store.table).payment_of(ADMIN, unpaid.order_id)
    assert (payment.status.value, secret_shown) == ("CANCELED", False)
    table = dump(store)

    for late in (event(AUTHORISED, unpaid), cancelled, event(CANCELED, unpaid), event(FAILED, unpaid)):
        wiring.payment_service(store.table).apply_event(late)  # late events, replays, for the archived order
    assert run_payment_steps(failed_records) == {"batchItemFailures": []}  # the PAYMENT_FAILED record replayed
    assert run_order_events(failed_records) == {"batchItemFailures": []}

    assert dump(store) == table  # nothing written: no event mark either (issue 26)
    assert item(store.table, keys.order_key(unpaid.order_id)) is None
    assert stock(store.table, pid) == 5
    assert [op for op, _ in fake.calls].count("cancel") == 1
