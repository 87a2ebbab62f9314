"""The customer's unpaid hold on DynamoDB Local (shop.repository.unpaid_holds; docs/payments.md, "Hoarding"): the
placement transaction's condition on the string set's size and on the units, its refusal writing nothing and naming
what the hold held (ReturnValuesOnConditionCheckFailure), the release's `contains` condition under replays, and the
one consistent read of the held orders. The rules on the memory store: tests/unit/services/test_orders.py (the release: test_order_events.py)."""

from __future__ import annotations

from typing import Any

import pytest

from shop import clock, errors, ids, keys
from shop.models import Order, OrderLine, OrderStatus
from shop.models.orders import OrderPayment, UnpaidLimits
from shop.repository.orders import OrderRepository
from shop.repository.store import from_item, to_item
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ALICE, BOB, product

# Reads no stream record (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = [pytest.mark.table_without_stream, pytest.mark.dynamodb_semantics]

LIMITS = UnpaidLimits(orders=2, units=5)


def unpaid_order(pid: str, quantity: int, customer_id: str = ALICE.sub) -> Order:
    """A PENDING_PAYMENT order as the paid checkout builds it (its intent's ids are made up: no provider here)."""
    now = clock.now()
    at = clock.iso(now)
    lines = [OrderLine.priced(pid, "Widget", 1000, quantity)]
    order_id = ids.new_id()
    return Order(
        order_id=order_id,
        customer_id=customer_id,
        status=OrderStatus.PENDING_PAYMENT,
        version=1,
        lines=lines,
        total_cents=1000 * quantity,
        shipping_address=ADDRESS,
        created_at=at,
        updated_at=at,
        history=[],
        payment=OrderPayment(
            intent_id=f"pi_{order_id}", client_secret="secret", amount_cents=1000 * quantity, currency="usd"
        ),
        payment_expires_at=clock.epoch(now) + 1800,
    )


def item(store: Any, key: dict[str, str]) -> Any:
    found = store.client.get_item(TableName=store.table.name, Key=to_item(key), ConsistentRead=True).get("Item")
    return from_item(found) if found else None


def hold(store: Any, customer_id: str = ALICE.sub) -> tuple[set[str], int] | None:
    held = item(store, keys.unpaid_hold_key(customer_id))
    return (set(held.get("order_ids") or ()), int(held["units"])) if held else None


def stock(store: Any, pid: str) -> int:
    found = item(store, keys.product_key(pid))
    assert found is not None
    return int(found["stock"])


def test_the_placement_transaction_holds_the_order_and_refuses_past_either_limit_writing_nothing(store):
    pid = product(store.table, stock=20)
    orders = OrderRepository(store.table)
    first = orders.place(unpaid_order(pid, 2), unpaid=LIMITS)
    assert hold(store) == ({first.order_id}, 2)
    assert item(store, keys.unpaid_hold_key(ALICE.sub))["entity"] == "CUSTOMER_UNPAID"

    # Units: 2 held + 4 > 5. The refusal names what was held, from the cancelled transaction itself.
    over_units = unpaid_order(pid, 4)
    with counting(store.client) as calls, pytest.raises(errors.UnpaidOrderLimit) as refused:
        orders.place(over_units, unpaid=LIMITS)
    assert calls.operations == ["TransactWriteItems"]  # no read to explain it
    assert refused.value.details == {
        "max_unpaid_orders": 2,
        "max_unpaid_units": 5,
        "order_units": 4,
        "unpaid_order_ids": [first.order_id],
        "unpaid_units": 2,
    }
    second = orders.place(unpaid_order(pid, 3), unpaid=LIMITS)  # 2 + 3 = 5: exactly the limit
    assert hold(store) == ({first.order_id, second.order_id}, 5)

    # Orders: two held, a third refused whatever its units (the hold's units are full too: both conditions fail).
    third = unpaid_order(pid, 1)
    with pytest.raises(errors.UnpaidOrderLimit) as refused:
        orders.place(third, unpaid=UnpaidLimits(orders=2, units=100))
    assert refused.value.details["unpaid_order_ids"] == sorted([first.order_id, second.order_id])
    # Nothing of the refused placements was written: orders, their customer entries, the stock.
    for refused_order in (over_units, third):
        assert item(store, keys.order_key(refused_order.order_id)) is None
        assert item(store, keys.customer_order_key(ALICE.sub, refused_order.order_id)) is None
    assert stock(store, pid) == 15
    assert hold(store) == ({first.order_id, second.order_id}, 5)
    # Another customer's hold is their own.
    orders.place(unpaid_order(pid, 5, customer_id=BOB.sub), unpaid=LIMITS)
    assert hold(store, BOB.sub) is not None


def test_a_release_is_conditional_on_the_id_so_a_replay_releases_nothing(store):
    pid = product(store.table, stock=20)
    orders = OrderRepository(store.table)
    kept = orders.place(unpaid_order(pid, 2), unpaid=LIMITS)
    leaving = orders.place(unpaid_order(pid, 3), unpaid=LIMITS)

    assert orders.release_unpaid(ALICE.sub, [leaving.order_id], 3) is True
    assert hold(store) == ({kept.order_id}, 2)
    for _ in range(3):  # replayed, and after the other releaser (a placement) did it: nothing written
        assert orders.release_unpaid(ALICE.sub, [leaving.order_id], 3) is False
    assert hold(store) == ({kept.order_id}, 2)
    # Several ids at once: all or nothing.
    again = orders.place(unpaid_order(pid, 1), unpaid=LIMITS)
    assert orders.release_unpaid(ALICE.sub, [kept.order_id, leaving.order_id], 5) is False
    assert hold(store) == ({kept.order_id, again.order_id}, 3)
    assert orders.release_unpaid(ALICE.sub, [kept.order_id, again.order_id], 3) is True
    # The set's last id gone, the attribute goes with it (DynamoDB keeps no empty set): the next placement is held.
    assert hold(store) == (set(), 0)
    assert "order_ids" not in item(store, keys.unpaid_hold_key(ALICE.sub))
    after = orders.place(unpaid_order(pid, 5), unpaid=LIMITS)
    assert hold(store) == ({after.order_id}, 5)
    # A customer who never held anything: nothing to release, nothing written.
    assert orders.release_unpaid("nobody", [after.order_id], 5) is False
    assert item(store, keys.unpaid_hold_key("nobody")) is None


def test_the_held_orders_are_read_once_consistently_with_their_status_and_units(store):
    pid = product(store.table, stock=20)
    orders = OrderRepository(store.table)
    waiting = orders.place(unpaid_order(pid, 2), unpaid=LIMITS)
    paid = orders.place(unpaid_order(pid, 3), unpaid=LIMITS)
    orders.change_status(paid, OrderStatus.CONFIRMED, updated_at=clock.iso_now())
    with counting(store.client) as calls:
        held = orders.held_unpaid([waiting.order_id, paid.order_id, "01ARCHIVEDORDER000000000000"])
    assert calls.operations == ["BatchGetItem"]
    assert held == {waiting.order_id: (OrderStatus.PENDING_PAYMENT, 2), paid.order_id: (OrderStatus.CONFIRMED, 3)}


def test_payments_off_no_hold_is_written(store):
    pid = product(store.table, stock=20)
    order = unpaid_order(pid, 2).model_copy(
        update={"status": OrderStatus.PENDING, "payment": None, "payment_expires_at": None}
    )
    OrderRepository(store.table).place(order)
    assert item(store, keys.unpaid_hold_key(ALICE.sub)) is None
