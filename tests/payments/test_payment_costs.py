"""What a paid order's payment writes cost the table: the calls each makes (docs/payments.md, "What a paid
order's payment writes cost"), and the order item's size through its paid life (under 1 KB: issue 26), on
DynamoDB Local."""

from __future__ import annotations

from typing import Any

from bench.model import KB, item_size
from shop import clock, ids, keys, wiring
from shop.models import Order, OrderLine, OrderStatus
from shop.models.orders import OrderPayment
from shop.repository.orders import OrderRepository, payment_map
from shop.repository.store import to_item
from shop.services.orders import ShipmentIn
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.fake_payments import FakePayments
from tests.support.unpaid_orders import AUTHORISED, FAILED, event, place_unpaid

# A Stripe PaymentIntent's id and client secret at their usual lengths (the fake's are shorter).
STRIPE_INTENT = "pi_3QxYzAbCdEfGhIjK1a2b3c4d"
STRIPE_SECRET = f"{STRIPE_INTENT}_secret_AbCdEfGhIjKlMnOpQrStUvWxYz0"


def test_the_webhooks_confirmation_reads_once_and_writes_one_item(store):
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    fake.authorise(unpaid.intent_id)
    service = wiring.payment_service(store.table, provider=fake)

    with counting(store.client) as calls:
        service.apply_event(event(AUTHORISED, unpaid))
    assert calls.operations == ["GetItem", "UpdateItem"]  # the order; its paid transition (no mark, no window)

    with counting(store.client) as calls:
        service.apply_event(event(AUTHORISED, unpaid))  # a redelivery
    assert calls.operations == ["GetItem"]  # the order's state says it is done

    with counting(store.client) as calls:
        service.capture(unpaid.order_id)
    assert calls.operations == ["GetItem", "UpdateItem"]  # the order; its payment's record
    assert [op for op, _ in fake.calls if op not in ("create_intent",)] == ["capture"]

    with counting(store.client) as calls:
        service.expire(unpaid.order_id)  # its PAYMENT_DUE item's removal by TTL, 30 minutes after the checkout
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
    assert calls.operations == ["BatchGetItem", "TransactWriteItems"]
    assert fake.calls == [("create_intent", f"shop-order-{order.order_id}-authorise")]
    assert order.status is OrderStatus.PENDING_PAYMENT
    assert order.payment is not None
    stored = wiring.order_service(store.table).orders.get(order.order_id)
    assert stored.payment is not None
    assert stored.payment.intent_id == order.payment.intent_id


def test_a_failed_payment_is_one_transaction_of_the_order_and_its_stock(store):
    fake = FakePayments()
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 1)])
    service = wiring.payment_service(store.table, provider=fake)

    with counting(store.client) as calls:
        service.apply_event(event(FAILED, unpaid))
    assert calls.operations == ["GetItem", "TransactWriteItems"]  # the order; the order and the stock back


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


def test_a_paid_three_line_order_stays_under_1_kb_through_its_life(store):
    """The bench's order (3 lines, its address, the payment with a Stripe-sized intent): every write of it costs
    1 WRU (+ its GSI1 entry), from the checkout to the capture (issue 26: it crossed 1 KB at SHIPPED)."""
    fake = FakePayments()
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
    fake_intent = fake.create_intent(order.order_id, total, "usd", idempotency_key="k")
    fake.authorise(fake_intent.intent_id)
    service = wiring.payment_service(store.table, provider=fake)
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
