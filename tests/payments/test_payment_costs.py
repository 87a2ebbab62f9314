"""What a paid order's payment steps cost the table: the calls each makes (docs/payments.md, "What a paid
order's stream steps cost"), on moto and DynamoDB Local."""

from __future__ import annotations

from shop import wiring
from tests.support.calls import counting
from tests.support.factories import product
from tests.support.fake_payments import FakePayments
from tests.support.unpaid_orders import AUTHORISED, event, place_unpaid


def test_the_webhooks_confirmation_reads_once_and_writes_one_transaction(store):
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    fake.authorise(unpaid.intent_id)
    service = wiring.payment_service(store.table, provider=fake)

    with counting(store.client) as calls:
        service.apply_event(event(AUTHORISED, unpaid))
    assert calls.operations == ["GetItem", "TransactWriteItems"]  # the order; order, PAYMENT_DUE, mark

    with counting(store.client) as calls:
        service.capture(unpaid.order_id)
    assert calls.operations == ["GetItem", "UpdateItem"]  # the order; its payment's record
    assert [op for op, _ in fake.calls if op not in ("create_intent",)] == ["capture"]


def test_the_paid_checkout_reads_once_and_writes_one_transaction(store, monkeypatch):
    """Issue 26: the intent is created between the read and the transaction and written in it; no third call."""
    from shop import config
    from shop.models import OrderStatus
    from shop.services.orders import RequestedLine
    from tests.support.factories import ADDRESS, ALICE

    monkeypatch.setenv("PAYMENTS", "stripe")
    config.payment_settings.cache_clear()
    fake = FakePayments()
    monkeypatch.setattr(wiring, "payments", lambda: fake)
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    try:
        with counting(store.client) as calls:
            order = wiring.order_service(store.table).place(
                ALICE, address=ADDRESS, lines=[RequestedLine(pid, 2)], idempotency_key="k-cost"
            )
    finally:
        config.payment_settings.cache_clear()
    assert calls.operations == ["BatchGetItem", "TransactWriteItems"]
    assert fake.calls == [("create_intent", f"shop-order-{order.order_id}-authorise")]
    assert order.status is OrderStatus.PENDING_PAYMENT
    assert order.payment is not None
    stored = wiring.order_service(store.table).orders.get(order.order_id)
    assert stored.payment is not None
    assert stored.payment.intent_id == order.payment.intent_id
