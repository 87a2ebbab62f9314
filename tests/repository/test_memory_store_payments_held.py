"""The memory store keeps the repositories' contract for issue 39's order changes and reads: the same scenarios on
it, moto and DynamoDB Local (as tests/repository/test_memory_store.py does for the rest)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from shop import clock, errors, ids
from shop.models import Order, OrderStatus, Product, StatusDetails, StatusEntry
from shop.models.orders import OrderLine, OrderPayment, PaymentStatus, Shipment
from shop.repository import OrderRepository, ProductRepository
from shop.repository.order_payments import OrderPaymentRepository
from tests.support.factories import ADDRESS
from tests.support.memory_store import MemoryStore

pytestmark = pytest.mark.table_without_stream


@dataclass
class Stores:
    products: Any
    orders: Any  # OrderStore
    payments: Any  # OrderPayments: the webhook's record of a lapse


@pytest.fixture(params=["memory", "moto", pytest.param("local", marks=pytest.mark.integration)])
def payment_stores(request: pytest.FixtureRequest) -> Stores:
    if request.param == "memory":
        memory = MemoryStore()
        return Stores(memory.products, memory.orders, memory.order_payments)
    table = request.getfixturevalue(f"{request.param}_store").table
    return Stores(ProductRepository(table), OrderRepository(table, shards=1), OrderPaymentRepository(table))


def new_product(stores: Stores) -> Product:
    now = clock.iso_now()
    product = Product(
        product_id=ids.new_id(),
        name="Hammer",
        category="tools",
        price_cents=1000,
        stock=50,
        created_at=now,
        updated_at=now,
    )
    return stores.products.create(product, ["tools"])


def paid_order(stores: Stores, hammer: Product, *, created_at: str | None = None) -> Order:
    """An order with a payment, confirmed (version 2)."""
    at = created_at or clock.iso_now()
    order = Order(
        order_id=ids.new_id(),
        customer_id="alice",
        status=OrderStatus.PENDING,
        version=1,
        lines=[OrderLine.priced(hammer.product_id, hammer.name, hammer.price_cents, 1)],
        total_cents=hammer.price_cents,
        shipping_address=ADDRESS,
        created_at=at,
        updated_at=at,
        history=[StatusEntry(status=OrderStatus.PENDING, at=at)],
        payment=OrderPayment(
            status=PaymentStatus.AUTHORISED, intent_id="pi_1", amount_cents=hammer.price_cents, currency="usd"
        ),
    )
    placed = stores.orders.place(order)
    return stores.orders.change_status(placed, OrderStatus.CONFIRMED, updated_at=clock.iso_now())


def test_a_lapse_recorded_after_the_read_refuses_the_guarded_change_and_the_unguarded_one_records_it(payment_stores):
    order = paid_order(payment_stores, new_product(payment_stores))
    assert payment_stores.payments.record_payment(
        order.order_id, expected=PaymentStatus.AUTHORISED, status=PaymentStatus.LAPSED
    )
    shipment = Shipment(carrier="DHL", tracking_number="T1", shipped_at=clock.iso_now())
    with pytest.raises(errors.PaymentNotHeld) as refused:
        payment_stores.orders.change_status(
            order,
            OrderStatus.SHIPPED,
            updated_at=clock.iso_now(),
            details=StatusDetails(shipment=shipment),
            unless_payment=PaymentStatus.LAPSED,
        )
    assert refused.value.details == {"order_id": order.order_id, "payment_status": "LAPSED"}
    stale = order.model_copy(update={"version": 1})
    with pytest.raises(errors.VersionMismatch):  # another change, not the lapse: as before
        payment_stores.orders.change_status(
            stale, OrderStatus.SHIPPED, updated_at=clock.iso_now(), unless_payment=PaymentStatus.LAPSED
        )
    shipped = payment_stores.orders.change_status(
        order,
        OrderStatus.SHIPPED,
        updated_at=clock.iso_now(),
        details=StatusDetails(shipment=shipment, without_payment=True),
    )
    assert (shipped.version, shipped.shipped_without_payment, shipped.history[-1].shipped_without_payment) == (
        3,
        True,
        True,
    )
    read = payment_stores.orders.get(order.order_id)
    assert (read.status, read.shipped_without_payment, read.history[-1].shipped_without_payment) == (
        OrderStatus.SHIPPED,
        True,
        True,
    )
    assert read.payment is not None
    assert read.payment.status is PaymentStatus.LAPSED


def test_a_held_payment_passes_the_guard_and_records_nothing(payment_stores):
    order = paid_order(payment_stores, new_product(payment_stores))
    shipped = payment_stores.orders.change_status(
        order, OrderStatus.SHIPPED, updated_at=clock.iso_now(), unless_payment=PaymentStatus.LAPSED
    )
    assert (shipped.status, shipped.version, shipped.shipped_without_payment) == (OrderStatus.SHIPPED, 3, None)
    assert payment_stores.orders.get(order.order_id).shipped_without_payment is None


def test_confirmed_orders_before_a_cutoff_oldest_first_with_their_payment(payment_stores):
    hammer = new_product(payment_stores)
    now = clock.now()

    def at(days: int) -> str:
        return clock.iso(now - timedelta(days=days))

    old = [paid_order(payment_stores, hammer, created_at=at(10 - n)) for n in range(3)]  # 10, 9 and 8 days ago
    assert payment_stores.payments.record_payment(
        old[1].order_id, expected=PaymentStatus.AUTHORISED, status=PaymentStatus.LAPSED
    )
    paid_order(payment_stores, hammer, created_at=at(2))  # after the cutoff
    payment_stores.orders.change_status(  # before it, but shipped
        paid_order(payment_stores, hammer, created_at=at(9)), OrderStatus.SHIPPED, updated_at=clock.iso_now()
    )
    cutoff = clock.iso(now - timedelta(days=6))
    seen, token = [], None
    while True:
        page = payment_stores.orders.list_confirmed_before(cutoff, limit=2, next_token=token)
        assert len(page.items) <= 2
        seen += [(o.order_id, o.status, o.payment_status) for o in page.items]
        token = page.next_token
        if token is None:
            break
    assert seen == [
        (old[0].order_id, OrderStatus.CONFIRMED, PaymentStatus.AUTHORISED),
        (old[1].order_id, OrderStatus.CONFIRMED, PaymentStatus.LAPSED),
        (old[2].order_id, OrderStatus.CONFIRMED, PaymentStatus.AUTHORISED),
    ]
    with pytest.raises(errors.InvalidNextToken):
        payment_stores.orders.list_confirmed_before(cutoff, limit=2, next_token="not-a-token")
