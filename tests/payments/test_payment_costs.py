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
