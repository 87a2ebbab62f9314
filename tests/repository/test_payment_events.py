"""Provider events are marked applied once per event id, whatever the deliveries: alone or in a transaction."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import keys
from shop.limits import MAX_PAYMENT_EVENT_ID_LENGTH
from shop.models.payments import PaymentEvent, PaymentEventKind
from shop.repository.payment_events import PaymentEventRepository
from shop.repository.store import TransactionCancelled, from_item, transact_write
from tests.support.fake_payments import MemoryPaymentEventLog

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream

EXPIRES_AT = 1_900_000_000


def _event(event_id: str = "evt_1") -> PaymentEvent:
    return PaymentEvent(
        event_id=event_id,
        event_type="payment_intent.succeeded",
        kind=PaymentEventKind.AUTHORISED,
        created=1_800_000_000,
        intent_id="pi_1",
        order_id="ord-1",
    )


@pytest.fixture(params=["memory", "table"])
def log(request, store):
    return MemoryPaymentEventLog() if request.param == "memory" else PaymentEventRepository(store.table)


def test_an_event_is_marked_once(log):
    assert [log.mark_applied(_event(), expires_at=EXPIRES_AT) for _ in range(5)] == [True, False, False, False, False]
    assert log.mark_applied(_event("evt_2"), expires_at=EXPIRES_AT)


@pytest.mark.dynamodb_semantics
def test_the_mark_expires_with_the_tables_ttl(store):
    PaymentEventRepository(store.table).mark_applied(_event(), expires_at=EXPIRES_AT)

    item = store.client.get_item(TableName=store.table_name, Key=_key("evt_1"))["Item"]

    assert from_item(item) == {
        **keys.webhook_event_key("stripe", "evt_1"),
        "entity": "WEBHOOK_EVENT",
        "event_type": "payment_intent.succeeded",
        "intent_id": "pi_1",
        "order_id": "ord-1",
        "created": 1_800_000_000,
        keys.TTL_ATTRIBUTE: EXPIRES_AT,
    }


def _key(event_id: str) -> dict:
    return {name: {"S": value} for name, value in keys.webhook_event_key("stripe", event_id).items()}


@pytest.mark.dynamodb_semantics
def test_the_longest_event_id_fits(store):
    assert PaymentEventRepository(store.table).mark_applied(_event("e" * MAX_PAYMENT_EVENT_ID_LENGTH), expires_at=1)


@pytest.mark.dynamodb_semantics
def test_a_transaction_holding_the_mark_of_an_applied_event_writes_nothing(store):
    repository = PaymentEventRepository(store.table)
    other = {"Put": {"TableName": store.table_name, "Item": {"PK": {"S": "SIDE#1"}, "SK": {"S": "SIDE"}}}}
    transact_write(store.table, [repository.mark_put(_event(), expires_at=EXPIRES_AT), other])
    store.client.delete_item(TableName=store.table_name, Key={"PK": {"S": "SIDE#1"}, "SK": {"S": "SIDE"}})

    with pytest.raises(TransactionCancelled) as cancelled:
        transact_write(store.table, [repository.mark_put(_event(), expires_at=EXPIRES_AT), other])

    assert cancelled.value.failed_condition(0)
    assert "Item" not in store.client.get_item(TableName=store.table_name, Key=other["Put"]["Item"])


@pytest.mark.integration
def test_five_concurrent_deliveries_of_one_event_mark_it_once(local_store):
    repository = PaymentEventRepository(local_store.table)
    start = threading.Barrier(5)

    def deliver(_: int) -> bool:
        start.wait()
        return repository.mark_applied(_event("evt_concurrent"), expires_at=EXPIRES_AT)

    with ThreadPoolExecutor(max_workers=5) as pool:
        outcomes = list(pool.map(deliver, range(5)))

    assert sorted(outcomes) == [False, False, False, False, True]
