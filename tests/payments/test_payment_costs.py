"""What a paid order's payment writes cost the table: the calls each makes (docs/payments.md, "What a paid
order's payment writes cost"), and the order item's size through its paid life (under 1 KB: issue 26), on
DynamoDB Local."""

from __future__ import annotations

from typing import Any

from bench.model import KB, item_size
from shop import clock, ids, keys, wiring
from shop.models import Order, OrderLine, OrderStatus
from shop.models.orders import OrderPayment
from shop.models.payments import IntentStatus, PaymentIntent
from shop.repository.orders import OrderRepository, payment_map
from shop.repository.store import to_item
from shop.services.orders import ShipmentIn
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.fake_payments import FakePayments
from tests.support.unpaid_orders import (
    AUTHORISED,
    CANCELED,
    DISPUTE_CREATED,
    FAILED,
    REFUNDED,
    event,
    place_unpaid,
)

# A Stripe PaymentIntent's id and client secret at their usual lengths (the fake's are shorter).
STRIPE_INTENT = "pi_3QxYzAbCdEfGhIjK1a2b3c4d"
STRIPE_SECRET = f"{STRIPE_INTENT}_secret_AbCdEfGhIjKlMnOpQrStUvWxYz0"


def test_the_webhooks_confirmation_reads_once_and_writes_one_item(store):
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    fake.authorise(unpaid.intent_id)
    service = wiring.payment_service(store.table, provider=fake)

    asked = len(fake.calls)
    with counting(store.client) as calls:
        service.apply_event(event(AUTHORISED, unpaid))
    assert calls.operations == ["GetItem", "UpdateItem"]  # the order; its paid transition (no mark, no window)
    assert [op for op, _ in fake.calls[asked:]] == ["get_intent"]  # between them: the provider's own record

    asked = len(fake.calls)
    with counting(store.client) as calls:
        service.apply_event(event(AUTHORISED, unpaid))  # a redelivery
    assert calls.operations == ["GetItem"]  # the order's state says it is done
    assert fake.calls[asked:] == []  # without asking the provider

    with counting(store.client) as calls:
        service.capture(unpaid.order_id)
    assert calls.operations == ["GetItem", "UpdateItem"]  # the order; its payment's record
    assert [op for op, _ in fake.calls[asked:]] == ["capture"]  # its answer says what was captured: no read

    with counting(store.client) as calls:
        service.expire(unpaid.order_id)  # a sweep that listed it just before the webhook settled it
    assert calls.operations == ["GetItem"]


def test_the_paid_checkout_reads_once_and_writes_one_transaction(store, monkeypatch):
    """Issue 26: the intent is created between the read and the transaction and written in it; no third call."""
    from shop import config
    from shop.services.orders import RequestedLine

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
    assert calls.operations == ["BatchGetItem", "GetItem", "TransactWriteItems"]  # + the checkout's settings
    assert fake.calls == [("create_intent", f"shop-order-{order.order_id}-authorise")]
    assert order.status is OrderStatus.PENDING_PAYMENT
    assert order.payment is not None
    stored = wiring.order_service(store.table).orders.get(order.order_id)
    assert stored.payment is not None
    assert stored.payment.intent_id == order.payment.intent_id


def test_a_cancelled_intent_fails_its_waiting_order_in_one_transaction_of_the_order_and_its_stock(store):
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    fake.cancel(unpaid.intent_id, idempotency_key="stripe-dashboard")
    service = wiring.payment_service(store.table, provider=fake)

    asked = len(fake.calls)
    with counting(store.client) as calls:
        service.apply_event(event(CANCELED, unpaid))
    assert calls.operations == ["GetItem", "TransactWriteItems"]  # the order; the order and the stock back
    assert fake.calls[asked:] == []  # a cancel is final at the provider: the event is not read back

    with counting(store.client) as calls:
        service.apply_event(event(CANCELED, unpaid))  # a redelivery
    assert calls.operations == ["GetItem"]


def test_a_failed_attempt_is_one_conditional_update_without_a_read(store):
    """The attempt's record is conditional on the order waiting, on the intent and on no later attempt recorded:
    no read first; a duplicate or older report is refused by that condition."""
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    service = wiring.payment_service(store.table, provider=fake)
    declined = event(FAILED, unpaid, failure_code="card_declined", failure_message="Your card was declined.")

    for _ in range(2):  # the attempt; its redelivery (refused by the condition: nothing written)
        with counting(store.client) as calls:
            service.apply_event(declined)
        assert calls.operations == ["UpdateItem"]
    assert [op for op, _ in fake.calls] == ["create_intent"]


def test_a_lapse_a_dashboard_refund_and_a_dispute_each_read_the_order_and_write_one_item(store):
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    lapsing = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    paid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    service = wiring.payment_service(store.table, provider=fake)
    for unpaid in (lapsing, paid):
        fake.authorise(unpaid.intent_id)
        service.apply_event(event(AUTHORISED, unpaid))
    service.capture(paid.order_id)
    fake.lapse(lapsing.intent_id)
    fake.dashboard_refund(paid.intent_id, 1000)
    dispute: dict[str, Any] = {"dispute_id": "dp_1", "dispute_status": "needs_response", "dispute_amount_cents": 2500}
    # A charge and a dispute carry no order id of their own: the intent's metadata names it (one provider read).
    charge_events = [
        event(REFUNDED, order_id=None, intent_id=paid.intent_id, amount_refunded_cents=1000),
        event(DISPUTE_CREATED, order_id=None, intent_id=paid.intent_id, **dispute),
    ]

    for delivered in [event(CANCELED, lapsing), *charge_events]:
        asked = len(fake.calls)
        with counting(store.client) as calls:
            service.apply_event(delivered)
        assert calls.operations == ["GetItem", "UpdateItem"], delivered.event_type  # the order; its payment's record
        expected = [] if delivered.event_type == CANCELED else ["get_intent"]
        assert [op for op, _ in fake.calls[asked:]] == expected, delivered.event_type

    with counting(store.client) as calls:  # redelivered: the order's record says each is applied
        service.apply_event(event(CANCELED, lapsing))
        service.apply_event(charge_events[0])
    assert calls.operations == ["GetItem", "GetItem"]
    with counting(store.client) as calls:  # a dispute report no later than the recorded one: refused by the write
        service.apply_event(charge_events[1])
    assert calls.operations == ["GetItem", "UpdateItem"]


def test_the_window_closing_reads_the_settled_order_eventually_consistent(store, monkeypatch):
    """0.5 RRU for the step every paid order's window makes: only a PENDING_PAYMENT order needs a strong read."""
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    service = wiring.payment_service(store.table, provider=fake)
    service.apply_event(event(AUTHORISED, unpaid))
    reads: list[bool] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        reads.append(bool(params.get("ConsistentRead")))

    store.client.meta.events.register("provide-client-params.dynamodb.GetItem", record)
    try:
        service.expire(unpaid.order_id)
    finally:
        store.client.meta.events.unregister("provide-client-params.dynamodb.GetItem", record)
    assert reads == [False]


def test_the_window_closing_on_an_order_gone_makes_sure_with_a_consistent_read(store):
    """An order archived before its window ended (ARCHIVE_AFTER_DAYS=0): absent at the first look, which is
    confirmed by a strong read before the step does nothing; the rare case pays the second read, not every order."""
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    store.client.delete_item(TableName=store.table_name, Key=to_item(keys.order_key(unpaid.order_id)))
    service = wiring.payment_service(store.table, provider=fake)

    with counting(store.client) as calls:
        assert service.expire(unpaid.order_id).action.value == "skipped"
    assert calls.operations == ["GetItem", "GetItem"]
    assert fake.calls == [("create_intent", f"shop-order-{unpaid.order_id}-authorise")]


def raw_size(store, order_id: str) -> int:
    got = store.client.get_item(TableName=store.table_name, Key=to_item(keys.order_key(order_id)), ConsistentRead=True)
    return item_size(got["Item"])


class HoldsTheBenchOrder:
    """The provider's record of the bench order's Stripe-sized intent, authorised for the order's amount (what the
    confirmation reads back)."""

    def __init__(self, order_id: str, amount_cents: int) -> None:
        self.intent = PaymentIntent(
            intent_id=STRIPE_INTENT,
            client_secret=STRIPE_SECRET,
            status=IntentStatus.REQUIRES_CAPTURE,
            amount_cents=amount_cents,
            currency="usd",
            order_id=order_id,
            amount_capturable_cents=amount_cents,
        )

    def get_intent(self, intent_id: str) -> PaymentIntent:
        assert intent_id == STRIPE_INTENT
        return self.intent


def test_a_paid_three_line_order_stays_under_1_kb_through_its_life(store):
    """The bench's order (3 lines, its address, the payment with a Stripe-sized intent): every write of it costs
    1 WRU (+ its GSI1 entry), from the checkout to the capture (issue 26: it crossed 1 KB at SHIPPED), a declined
    first card included (its failure is shown only while the order waits: it leaves the order with the secret)."""
    names = [f"Bench item {i:02d}" for i in range(3)]
    pids = [product(store.table, name=name, price_cents=1299, stock=10) for name in names]
    lines = [OrderLine.priced(pid, name, 1299, q) for pid, name, q in zip(pids, names, (1, 2, 1), strict=True)]
    at = clock.iso(clock.now())
    total = sum(line.line_total_cents for line in lines)
    order = Order(
        order_id=ids.new_id(),
        customer_id=ALICE.sub,
        status=OrderStatus.PENDING_PAYMENT,
        version=1,
        total_cents=total,
        created_at=at,
        updated_at=at,
        lines=lines,
        shipping_address=ADDRESS,
        history=[],
        payment=OrderPayment(amount_cents=total, currency="usd", intent_id=STRIPE_INTENT, client_secret=STRIPE_SECRET),
        payment_expires_at=clock.epoch(clock.now()) + 1800,
    )
    placed = OrderRepository(store.table).place(order)  # with its intent, as the checkout writes it
    sizes = {"checkout": raw_size(store, order.order_id)}
    service = wiring.payment_service(store.table, provider=HoldsTheBenchOrder(order.order_id, total))  # type: ignore[arg-type]
    # Stripe's decline for a card without the funds (the code and message its event carries)
    declined: dict[str, Any] = {
        "failure_code": "insufficient_funds",
        "failure_message": "Your card has insufficient funds.",
    }
    service.apply_event(event(FAILED, order_id=order.order_id, intent_id=STRIPE_INTENT, **declined))
    declined_size = raw_size(store, order.order_id)
    confirm = event(AUTHORISED, order_id=order.order_id, intent_id=STRIPE_INTENT)
    service.apply_event(confirm)
    sizes["confirmed"] = raw_size(store, order.order_id)
    wiring.order_service(store.table).change_status(
        ADMIN,
        order.order_id,
        OrderStatus.SHIPPED,
        expected_version=placed.version + 1,
        shipment=ShipmentIn(carrier="DHL", tracking_number="JD0146000062"),
    )
    sizes["shipped"] = raw_size(store, order.order_id)
    assert service.store.record_payment(order.order_id, expected=None, captured_cents=total)  # as the capture does
    sizes["captured"] = raw_size(store, order.order_id)

    assert all(size <= KB for size in sizes.values()), sizes
    assert declined_size > sizes["checkout"]  # recorded while it waited


def test_an_order_item_in_the_old_shape_reads_as_the_new_one(store):
    """Orders placed before issue 26 store every payment field (provider, 0 captured, 0 refunded): they read
    the same as the new, shorter map, through the order's Query and the steps' GetItem alike."""
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    orders = OrderRepository(store.table)
    payment = orders.get(unpaid.order_id).payment
    assert payment is not None

    def stored_as(shape: dict[str, Any]) -> None:
        store.client.update_item(
            TableName=store.table_name,
            Key=to_item(keys.order_key(unpaid.order_id)),
            UpdateExpression="SET payment = :shape",
            ExpressionAttributeValues={":shape": to_item({"v": shape})["v"]},
        )

    stored_as(payment_map(payment))
    assert set(payment_map(payment)) == {"status", "intent_id", "client_secret", "amount_cents", "currency"}
    new_shape = orders.get(unpaid.order_id)
    stored_as({**payment_map(payment), "provider": "stripe", "captured_cents": 0, "refunded_cents": 0})
    old_shape = orders.get(unpaid.order_id)
    current = wiring.payment_service(store.table, provider=fake).store.current(unpaid.order_id)
    assert current is not None
    assert old_shape.payment == new_shape.payment == current.payment
