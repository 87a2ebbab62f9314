"""The intent's attach to an unpaid order is one conditional write: concurrent attaches of different intents
leave exactly one (the others refused, to be cancelled); a repeat of the same intent is answered as done; an
order cancelled first refuses every intent. Real threads on DynamoDB Local (and moto)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import config, errors, keys, wiring
from shop.models import OrderStatus
from shop.repository import OrderRepository
from shop.repository.store import from_item, to_item
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ALICE, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream


@pytest.fixture
def unpaid(store, monkeypatch):
    monkeypatch.setenv("PAYMENTS", "stripe")
    config.payment_settings.cache_clear()
    pid = product(store.table, stock=5)
    service = wiring.order_service(store.table)
    service._payments = None  # the intent is not created here: the test attaches its own
    try:
        order = service._place(
            ALICE,
            address=ADDRESS,
            lines=[RequestedLine(pid, 1)],
            session_id=None,
            customer_cart=False,
            idempotency_key="k-attach",
        )
    finally:
        config.payment_settings.cache_clear()
    assert order.status is OrderStatus.PENDING_PAYMENT
    return order


def _stored_payment(store, order_id):
    item = store.client.get_item(TableName=store.table_name, Key=to_item(keys.order_key(order_id)), ConsistentRead=True)
    return from_item(item["Item"])["payment"]


def test_concurrent_attaches_of_different_intents_leave_exactly_one(store, unpaid):
    repository = OrderRepository(store.table)

    def attach(n):
        try:
            return repository.attach_intent(unpaid, f"pi_{n}", f"pi_{n}_secret").payment.intent_id
        except errors.PaymentRejected as refused:
            return refused

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(attach, range(6)))
    won = [o for o in outcomes if isinstance(o, str)]
    assert len(won) == 1
    assert all(o.details["intent_id"] == won[0] for o in outcomes if isinstance(o, errors.PaymentRejected))
    assert _stored_payment(store, unpaid.order_id)["intent_id"] == won[0]
    # the same intent again (a retry whose answer was lost) is answered as done
    again = repository.attach_intent(unpaid, won[0], f"{won[0]}_secret")
    assert again.payment.intent_id == won[0]
    assert again.version == unpaid.version  # no version moves: no status changed


def test_an_order_cancelled_first_refuses_its_intent_and_its_window_is_gone(store, unpaid):
    cancelled = wiring.order_service(store.table).cancel(ALICE, unpaid.order_id)
    assert cancelled.status is OrderStatus.CANCELLED
    missing = store.client.get_item(TableName=store.table_name, Key=to_item(keys.payment_due_key(unpaid.order_id)))
    assert "Item" not in missing
    with pytest.raises(errors.PaymentRejected) as refused:
        OrderRepository(store.table).attach_intent(unpaid, "pi_late", "pi_late_secret")
    assert refused.value.details["status"] == "CANCELLED"
    assert "intent_id" not in _stored_payment(store, unpaid.order_id)
