"""The paid checkout's order of calls (PAYMENTS=stripe; docs/payments.md, "Checkout") on the memory store and the
fake provider: the read, then the intent for the order id the placement chose, then the one transaction
holding the order with its intent. What the read shows refused never reaches the provider; what the
transaction refuses after the intent exists cancels that intent; a provider outage writes nothing."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from shop import config, errors
from shop.limits import MAX_QUANTITY
from shop.models import OrderStatus
from shop.models.payments import IntentStatus
from shop.services.orders import REPRICE_ATTEMPTS, RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE
from tests.support.fake_payments import FakePayments
from tests.unit.test_order_rules import product, repriced_after_each_read, stock


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePayments]:
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "30")
    config.payment_settings.cache_clear()
    yield FakePayments()
    config.payment_settings.cache_clear()


@pytest.fixture
def orders(memory, fake):
    return memory.order_service(payments=lambda: fake)


def place(orders, lines: dict[str, int], key: str | None = "k"):
    return orders.place(
        ALICE,
        address=ADDRESS,
        lines=[RequestedLine(pid, qty) for pid, qty in lines.items()],
        idempotency_key=key,
    )


def statuses(fake: FakePayments) -> dict[str, IntentStatus]:
    return {intent_id: record.intent.status for intent_id, record in fake.intents.items()}


def placed_orders(orders) -> list[str]:
    return [o.order_id for o in orders.list_for_customer(ALICE, "alice", limit=10, next_token=None).items]


def test_the_order_is_written_once_with_the_intent_created_for_its_id(memory, orders, fake):
    hammer = product(memory, price_cents=1500, stock=5)
    order = place(orders, {hammer: 2})
    assert order.status is OrderStatus.PENDING_PAYMENT
    (intent,) = (record.intent for record in fake.intents.values())
    assert fake.calls == [("create_intent", f"shop-order-{order.order_id}-authorise")]
    assert (intent.order_id, intent.amount_cents, intent.currency) == (order.order_id, 3000, "usd")
    assert order.payment is not None
    assert (order.payment.intent_id, order.payment.client_secret) == (intent.intent_id, intent.client_secret)
    assert memory.orders.get(order.order_id).payment == order.payment  # stored with it, in the one write
    assert memory.state.payment_due[order.order_id] == order.payment_expires_at


@pytest.mark.parametrize(
    "refused",
    ["unknown product", "archived product", "over the quantity limit", "visibly out of stock", "no lines"],
)
def test_what_the_read_shows_refused_never_reaches_the_provider(memory, orders, fake, refused):
    hammer = product(memory, stock=3)
    lines = {
        "unknown product": [RequestedLine("ghost", 1)],
        "archived product": [RequestedLine(hammer, 1)],
        "over the quantity limit": [RequestedLine(hammer, MAX_QUANTITY), RequestedLine(hammer, 1)],
        "visibly out of stock": [RequestedLine(hammer, 4)],
        "no lines": [],
    }[refused]
    if refused == "archived product":
        memory.catalog_service().archive(ADMIN, hammer)
    with pytest.raises(errors.DomainError) as raised:
        orders.place(ALICE, address=ADDRESS, lines=lines, idempotency_key="k")
    assert (
        raised.value.code
        == {
            "unknown product": "PRODUCT_NOT_FOUND",
            "archived product": "PRODUCT_UNAVAILABLE",
            "over the quantity limit": "VALIDATION_ERROR",
            "visibly out of stock": "OUT_OF_STOCK",
            "no lines": "VALIDATION_ERROR",
        }[refused]
    )
    assert fake.calls == []
    assert placed_orders(orders) == []


def test_an_empty_cart_never_reaches_the_provider(memory, orders, fake):
    session = memory.session_service().create()
    with pytest.raises(errors.CartEmpty):
        orders.place(ALICE, address=ADDRESS, session_id=session.session_id, idempotency_key="k")
    with pytest.raises(errors.CartEmpty):
        orders.place(ALICE, address=ADDRESS, customer_cart=True, idempotency_key="k2")
    assert fake.calls == []


def test_a_provider_outage_writes_nothing_and_the_repeat_places_normally(memory, orders, fake):
    hammer = product(memory, stock=5)
    fake.fail_next()
    with pytest.raises(errors.PaymentProviderUnavailable):
        place(orders, {hammer: 2}, key="k-down")
    assert (placed_orders(orders), stock(memory, hammer), memory.state.payment_due) == ([], 5, {})
    assert memory.state.placements == {}
    order = place(orders, {hammer: 2}, key="k-down")
    assert placed_orders(orders) == [order.order_id]
    assert stock(memory, hammer) == 3
    assert list(statuses(fake).values()) == [IntentStatus.REQUIRES_PAYMENT_METHOD]


def test_a_cart_changed_after_the_intent_is_refused_and_the_intent_cancelled(memory, orders, fake, monkeypatch):
    hammer = product(memory)
    sessions = memory.session_service()
    session = sessions.create()
    sessions.set_quantity(session.session_id, hammer, 1)
    created = fake.create_intent

    def create_while_the_cart_changes(*args, **kwargs):
        intent = created(*args, **kwargs)
        sessions.set_quantity(session.session_id, hammer, 3)
        return intent

    monkeypatch.setattr(fake, "create_intent", create_while_the_cart_changes)
    with pytest.raises(errors.SessionNotFound):
        orders.place(ALICE, address=ADDRESS, session_id=session.session_id, idempotency_key="k")
    ((intent_id, status),) = statuses(fake).items()
    assert status is IntentStatus.CANCELED
    (order_id,) = {fake.intents[intent_id].intent.order_id}
    assert ("cancel", f"shop-order-{order_id}-cancel-{intent_id}") in fake.calls
    assert (placed_orders(orders), stock(memory, hammer)) == ([], 10)


def test_out_of_stock_found_by_the_transaction_cancels_the_intent(memory, orders, fake, monkeypatch):
    hammer = product(memory, stock=2)
    created = fake.create_intent

    def create_while_another_buys(*args, **kwargs):
        intent = created(*args, **kwargs)
        memory.state.products[hammer].move(None, -2)  # another customer took the last two meanwhile
        return intent

    monkeypatch.setattr(fake, "create_intent", create_while_another_buys)
    with pytest.raises(errors.OutOfStock):
        place(orders, {hammer: 2})
    assert list(statuses(fake).values()) == [IntentStatus.CANCELED]
    assert placed_orders(orders) == []


def test_a_reprice_that_moves_the_total_gives_the_order_an_intent_for_the_new_total(memory, orders, fake, monkeypatch):
    hammer = product(memory, price_cents=1000, stock=5)
    monkeypatch.setattr(memory.products, "get_many", repriced_after_each_read(memory, hammer, times=1))
    order = place(orders, {hammer: 1})
    assert order.total_cents == 1100
    first, second = (record.intent for record in fake.intents.values())
    assert (first.amount_cents, first.status) == (1000, IntentStatus.CANCELED)
    assert (second.amount_cents, second.status) == (1100, IntentStatus.REQUIRES_PAYMENT_METHOD)
    assert order.payment is not None
    assert order.payment.intent_id == second.intent_id
    assert [key for op, key in fake.calls if op == "create_intent"] == [
        f"shop-order-{order.order_id}-authorise",
        f"shop-order-{order.order_id}-authorise-reprice-1",
    ]


def test_a_price_that_keeps_moving_leaves_every_intent_cancelled(memory, orders, fake, monkeypatch):
    hammer = product(memory, price_cents=1000, stock=5)
    monkeypatch.setattr(memory.products, "get_many", repriced_after_each_read(memory, hammer, times=REPRICE_ATTEMPTS))
    with pytest.raises(errors.PriceChanged):
        place(orders, {hammer: 1})
    assert len(fake.intents) == REPRICE_ATTEMPTS
    assert set(statuses(fake).values()) == {IntentStatus.CANCELED}
    assert (placed_orders(orders), stock(memory, hammer)) == ([], 5)


def test_a_placement_claim_taken_meanwhile_answers_that_order_and_cancels_this_runs_intent(
    memory, orders, fake, monkeypatch
):
    hammer = product(memory, stock=5)
    first = place(orders, {hammer: 1}, key="k-twice")
    # The same Idempotency-Key again (its record lost): the read passes, an intent is made for a new order id,
    # the transaction finds the claim taken and answers the first order.
    again = place(orders, {hammer: 1}, key="k-twice")
    assert again == first
    assert stock(memory, hammer) == 4
    assert list(statuses(fake).values()) == [IntentStatus.REQUIRES_PAYMENT_METHOD, IntentStatus.CANCELED]
    assert first.payment is not None
    assert fake.intents[first.payment.intent_id].intent.status is IntentStatus.REQUIRES_PAYMENT_METHOD


def test_a_failed_cancel_is_logged_and_the_client_gets_the_same_refusal(memory, orders, fake, monkeypatch, caplog):
    hammer = product(memory, stock=2)
    created = fake.create_intent

    def create_then_sold_out_and_the_provider_down(*args, **kwargs):
        intent = created(*args, **kwargs)
        memory.state.products[hammer].move(None, -2)
        fake.fail_next()
        return intent

    monkeypatch.setattr(fake, "create_intent", create_then_sold_out_and_the_provider_down)
    with caplog.at_level(logging.WARNING, logger="shop.services.orders"), pytest.raises(errors.OutOfStock):
        place(orders, {hammer: 2})
    assert list(statuses(fake).values()) == [IntentStatus.REQUIRES_PAYMENT_METHOD]  # never given out
    assert [r.getMessage() for r in caplog.records] == ["checkout_intent_cancel_failed"]


def test_a_store_outage_at_the_transaction_keeps_the_intent_and_the_repeat_places_a_new_order(
    memory, orders, fake, monkeypatch, caplog
):
    hammer = product(memory, stock=5)
    write = memory.orders.place
    down = {"n": 1}

    def store_down_once(*args, **kwargs):
        if down["n"]:
            down["n"] -= 1
            raise errors.ServiceUnavailable("the store did not answer")
        return write(*args, **kwargs)

    monkeypatch.setattr(memory.orders, "place", store_down_once)
    with caplog.at_level(logging.WARNING, logger="shop.services.orders"), pytest.raises(errors.ServiceUnavailable):
        place(orders, {hammer: 1}, key="k-store")
    # The outcome is unknown to the service: the intent is not cancelled (it may be the order's), only logged.
    assert [r.getMessage() for r in caplog.records] == ["checkout_intent_left_unconfirmed"]
    order = place(orders, {hammer: 1}, key="k-store")
    orphan, held = (record.intent for record in fake.intents.values())
    assert order.payment is not None
    assert (held.intent_id, held.order_id) == (order.payment.intent_id, order.order_id)
    assert orphan.order_id != order.order_id  # an intent whose client secret no one ever got
    assert (placed_orders(orders), stock(memory, hammer)) == ([order.order_id], 4)


def test_a_transaction_the_store_cancelled_cancels_the_intent(memory, orders, fake, monkeypatch):
    """A colliding transaction or a throttled item: the store says nothing was written (WriteCancelled), so the
    intent is cancelled as for any refusal; the client's retry (503) places under a new order id."""
    hammer = product(memory, stock=5)
    write = memory.orders.place
    busy = {"n": 1}

    def cancelled_once(*args, **kwargs):
        if busy["n"]:
            busy["n"] -= 1
            raise errors.WriteCancelled("the store is busy with these items, retry later")
        return write(*args, **kwargs)

    monkeypatch.setattr(memory.orders, "place", cancelled_once)
    with pytest.raises(errors.WriteCancelled):
        place(orders, {hammer: 1}, key="k-busy")
    assert list(statuses(fake).values()) == [IntentStatus.CANCELED]
    order = place(orders, {hammer: 1}, key="k-busy")
    assert list(statuses(fake).values()) == [IntentStatus.CANCELED, IntentStatus.REQUIRES_PAYMENT_METHOD]
    assert order.payment is not None
    assert fake.intents[order.payment.intent_id].intent.order_id == order.order_id


def test_a_total_of_zero_is_refused_before_the_provider_and_nothing_is_written(memory, orders, fake):
    """Found by the fuzz test on a payments=stripe stack: a free product ordered alone reached Stripe, which
    refuses an intent of 0 cents, and the client got an undocumented PAYMENT_REJECTED without a provider code."""
    sample = product(memory, name="Free sample", price_cents=0, stock=5)
    hammer = product(memory, price_cents=1500, stock=5)
    with pytest.raises(errors.NothingToPay) as raised:
        place(orders, {sample: 2})
    assert (raised.value.code, raised.value.details) == ("NOTHING_TO_PAY", {"product_ids": [sample]})
    session = memory.session_service()
    cart = session.create()
    session.set_quantity(cart.session_id, sample, 1)
    with pytest.raises(errors.NothingToPay):
        orders.place(ALICE, address=ADDRESS, session_id=cart.session_id, idempotency_key="k-cart")
    assert fake.calls == []
    assert (placed_orders(orders), stock(memory, sample), memory.state.payment_due) == ([], 5, {})
    # a free product beside a paid one is an ordinary paid order
    order = place(orders, {sample: 1, hammer: 1}, key="k-both")
    assert (order.status, order.total_cents) == (OrderStatus.PENDING_PAYMENT, 1500)


def test_a_reprice_to_zero_cancels_the_intent_made_for_the_old_total(memory, orders, fake, monkeypatch):
    sample = product(memory, name="Sample", price_cents=300, stock=5)
    read = memory.products.get_many

    def read_then_make_it_free(product_ids, **options):
        found = read(product_ids, **options)
        current = memory.products.get(sample)
        if current.price_cents:
            memory.products.update(current, {"price_cents": 0}, current.updated_at + "x", current._listed_in)
        return found

    monkeypatch.setattr(memory.products, "get_many", read_then_make_it_free)
    with pytest.raises(errors.NothingToPay):
        place(orders, {sample: 1})
    assert list(statuses(fake).values()) == [IntentStatus.CANCELED]
    assert (placed_orders(orders), stock(memory, sample)) == ([], 5)
