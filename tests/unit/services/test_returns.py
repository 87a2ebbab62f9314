"""Returns per line on the memory store (shop.services.returns, OrderService.request_return and the admin's decision,
PaymentService.refund per return): which units a return may ask for, where an accepted one leaves the order, its
stock and its refund, and that an order's returns refund what was captured, exactly, each by its own key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shop import errors
from shop.models import OrderLine, OrderStatus
from shop.models.orders import OrderReturn, RefundedLine, ReturnLine
from shop.services.orders import RequestedLine, ShipmentIn
from shop.services.payments import StepAction
from shop.services.sales import sales_lines
from tests.support.factories import ADDRESS, ADMIN, ALICE
from tests.unit.services.test_orders import product, stock
from tests.unit.services.test_payments import authorised, event

DELIVERY = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PARCEL = ShipmentIn("DHL", "JD014600006281234567")


def three_lines(memory):
    """Three products: 12.99 (2 bought), 5.00 (1), 3.33 (3): a total that does not divide evenly."""
    return [
        product(memory, name="Shirt", price_cents=1299),
        product(memory, name="Cap", price_cents=500),
        product(memory, name="Socks", price_cents=333),
    ]


def delivered(orders, at, pids):
    """The three products' order (2, 1 and 3 units), placed three days before DELIVERY and confirmed."""
    at(DELIVERY - timedelta(days=3))
    shirt, cap, socks = pids
    order = orders.place(
        ALICE, address=ADDRESS, lines=[RequestedLine(shirt, 2), RequestedLine(cap, 1), RequestedLine(socks, 3)]
    )
    version = order.version
    if order.status is OrderStatus.PENDING:
        orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=version)
        version += 1
    return order, version


def ship_and_deliver(orders, at, order_id, version):
    orders.change_status(ADMIN, order_id, OrderStatus.SHIPPED, expected_version=version, shipment=PARCEL)
    at(DELIVERY)
    orders.change_status(ADMIN, order_id, OrderStatus.DELIVERED, expected_version=version + 1)
    return version + 2


def test_a_three_line_order_returned_in_two_parts(memory, orders, at):
    pids = three_lines(memory)
    shirt, cap, socks = pids
    order, version = delivered(orders, at, pids)
    version = ship_and_deliver(orders, at, order.order_id, version)
    assert [stock(memory, pid) for pid in pids] == [8, 9, 7]

    first = orders.request_return(
        ALICE,
        order.order_id,
        "too small",
        [ReturnLine(variant_id=shirt, quantity=1), ReturnLine(variant_id=socks, quantity=2)],
    )
    assert first.status is OrderStatus.RETURN_REQUESTED
    assert first.return_request is not None
    assert {(line.variant_id, line.quantity) for line in first.return_request.lines} == {(shirt, 1), (socks, 2)}
    assert [stock(memory, pid) for pid in pids] == [8, 9, 7]  # nothing back before an admin accepts

    part = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 1)
    assert (part.status, part.return_request) == (OrderStatus.PARTIALLY_RETURNED, None)
    assert [stock(memory, pid) for pid in pids] == [9, 9, 9]
    assert len(part.returns) == 1
    # 12.99 of the shirt's 25.98, and 6.66 of the socks' 9.99 (two thirds, rounded down): no shipping yet
    assert {(line.variant_id, line.refund_cents) for line in part.returns[0].lines} == {(shirt, 1299), (socks, 666)}
    assert (part.returns[0].shipping_refund_cents, part.returns[0].refund_cents) == (0, 1965)

    rest = orders.request_return(ALICE, order.order_id, "the rest")  # no lines: every unit left
    assert rest.return_request is not None
    assert {(line.variant_id, line.quantity) for line in rest.return_request.lines} == {
        (shirt, 1),
        (cap, 1),
        (socks, 1),
    }
    done = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 3)
    assert done.status is OrderStatus.RETURNED
    assert [stock(memory, pid) for pid in pids] == [10, 10, 10]
    assert sum(accepted.refund_cents for accepted in done.returns) == done.total_cents
    assert orders.get(ALICE, order.order_id).returns == done.returns


def test_a_return_asks_only_for_units_the_order_has_left(memory, orders, at):
    pids = three_lines(memory)
    shirt = pids[0]
    order, version = delivered(orders, at, pids)
    ship_and_deliver(orders, at, order.order_id, version)
    with pytest.raises(errors.InvalidReturnLines) as unknown:
        orders.request_return(ALICE, order.order_id, "?", [ReturnLine(variant_id="not-a-line", quantity=1)])
    assert unknown.value.code == "RETURN_LINES_INVALID"
    with pytest.raises(errors.ReturnQuantityExceeded) as over:  # two entries of one variant add up: 3 of 2 shirts
        orders.request_return(
            ALICE,
            order.order_id,
            "?",
            [ReturnLine(variant_id=shirt, quantity=2), ReturnLine(variant_id=shirt, quantity=1)],
        )
    assert over.value.details == {"left": {shirt: 2}, "asked": {shirt: 3}}
    summed = orders.request_return(
        ALICE,
        order.order_id,
        "both",
        [ReturnLine(variant_id=shirt, quantity=1), ReturnLine(variant_id=shirt, quantity=1)],
    )
    assert summed.return_request is not None
    assert [(line.variant_id, line.quantity) for line in summed.return_request.lines] == [(shirt, 2)]
    accepted = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=summed.version)
    with pytest.raises(errors.ReturnQuantityExceeded):
        orders.request_return(ALICE, order.order_id, "again", [ReturnLine(variant_id=shirt, quantity=1)])
    assert orders.get(ALICE, order.order_id).version == accepted.version  # nothing written


def test_a_rejection_after_a_partial_return_keeps_the_order_partly_returned(memory, orders, at):
    pids = three_lines(memory)
    shirt, _, socks = pids
    order, version = delivered(orders, at, pids)
    version = ship_and_deliver(orders, at, order.order_id, version)
    orders.request_return(ALICE, order.order_id, "one", [ReturnLine(variant_id=shirt, quantity=1)])
    orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 1)
    at(DELIVERY + timedelta(days=5))
    orders.request_return(ALICE, order.order_id, "two", [ReturnLine(variant_id=socks, quantity=1)])
    rejected = orders.change_status(
        ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=version + 3, reason="worn"
    )
    assert (rejected.status, rejected.return_request, len(rejected.returns)) == (
        OrderStatus.PARTIALLY_RETURNED,
        None,
        1,
    )
    assert stock(memory, socks) == 7
    at(DELIVERY + timedelta(days=31))  # the window runs from the delivery, for every return
    with pytest.raises(errors.ReturnWindowClosed):
        orders.request_return(ALICE, order.order_id, "late", [ReturnLine(variant_id=socks, quantity=1)])


def test_an_accepts_retry_after_a_lost_answer_is_answered_as_done(memory, orders, at):
    pids = three_lines(memory)
    shirt = pids[0]
    order, version = delivered(orders, at, pids)
    version = ship_and_deliver(orders, at, order.order_id, version)
    orders.request_return(ALICE, order.order_id, "one", [ReturnLine(variant_id=shirt, quantity=1)])
    first = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 1)
    again = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 1)
    assert (again.status, again.version, len(again.returns)) == (first.status, first.version, 1)
    assert stock(memory, shirt) == 9  # restocked once


def test_an_admin_cannot_move_an_order_to_partly_returned_without_a_return(memory, orders, at):
    pids = three_lines(memory)
    order, version = delivered(orders, at, pids)
    version = ship_and_deliver(orders, at, order.order_id, version)
    with pytest.raises(errors.InvalidTransition):
        orders.change_status(ADMIN, order.order_id, OrderStatus.PARTIALLY_RETURNED, expected_version=version)


def test_each_return_is_refunded_by_its_own_key_and_they_sum_to_the_capture(
    memory, fake_payments, paid_orders, payment_rules, at
):
    pids = three_lines(memory)
    socks = pids[2]
    order, _ = delivered(paid_orders, at, pids)
    intent = order.payment.intent_id
    authorised(payment_rules, fake_payments, order.order_id, intent)
    version = ship_and_deliver(paid_orders, at, order.order_id, 2)
    payment_rules.capture(order.order_id)
    captured = fake_payments.captured_cents(intent)
    assert captured == order.total_cents

    paid_orders.request_return(ALICE, order.order_id, "one", [ReturnLine(variant_id=socks, quantity=1)])
    first = paid_orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 1)
    outcome = payment_rules.refund(order.order_id, version=first.version, returned_at=first.updated_at)
    assert outcome.action is StepAction.REFUNDED
    assert [event.detail["amount_cents"] for event in outcome.events] == [333]
    replay = payment_rules.refund(order.order_id, version=first.version, returned_at=first.updated_at)
    assert (replay.action, fake_payments.refunded_cents(intent)) == (StepAction.ALREADY_DONE, 333)

    paid_orders.request_return(ALICE, order.order_id, "rest")
    last = paid_orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=first.version + 1)
    payment_rules.refund(order.order_id, version=last.version, returned_at=last.updated_at)
    assert fake_payments.refunded_cents(intent) == captured
    stored = memory.state.orders[order.order_id]
    assert [accepted.refunded_cents for accepted in stored.returns] == [333, captured - 333]
    assert stored.payment is not None
    assert stored.payment.refunded_cents == captured
    assert len({refund.refund_id for refund in fake_payments.refunds(intent)}) == 2


def test_a_dashboard_refund_counts_against_the_returns_never_past_the_capture(
    memory, fake_payments, paid_orders, payment_rules, at
):
    pids = three_lines(memory)
    order, _ = delivered(paid_orders, at, pids)
    intent = order.payment.intent_id
    authorised(payment_rules, fake_payments, order.order_id, intent)
    version = ship_and_deliver(paid_orders, at, order.order_id, 2)
    payment_rules.capture(order.order_id)
    fake_payments.dashboard_refund(intent, 1000)
    payment_rules.apply_event(event("charge.refunded", order.order_id, intent, amount_refunded_cents=1000))
    paid_orders.request_return(ALICE, order.order_id, "all")
    last = paid_orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 1)
    outcome = payment_rules.refund(order.order_id, version=last.version, returned_at=last.updated_at)
    assert [event.detail["amount_cents"] for event in outcome.events] == [order.total_cents - 1000]
    assert fake_payments.refunded_cents(intent) == order.total_cents


# -- sales: an accepted return takes its units' share of their line's total off the day ------------------------


@settings(max_examples=60, deadline=None)
@given(
    quantity=st.integers(1, 99),
    unit=st.integers(0, 100_000),
    parts=st.lists(st.integers(1, 99), min_size=1, max_size=6),
)
def test_a_lines_returns_take_back_its_whole_total_never_more(quantity, unit, parts):
    line = OrderLine.priced("p1", "Shirt", unit, quantity)
    returns: list[OrderReturn] = []
    taken = 0
    left = quantity
    for version, part in enumerate(parts, start=10):
        units = min(part, left)
        if units == 0:
            break
        left -= units
        returns.append(
            OrderReturn(
                version=version,
                accepted_at="2026-03-02T00:00:00.000000Z",
                lines=[RefundedLine(variant_id="p1", quantity=units, refund_cents=0)],
                shipping_refund_cents=0,
                refund_cents=0,
            )
        )
        (counted,) = sales_lines([line], returns, version)
        assert counted.quantity == units
        taken += counted.line_total_cents
        assert taken <= line.line_total_cents
    if left == 0:
        assert taken == line.line_total_cents


def test_without_payments_each_accepted_return_publishes_its_own_refund_due_and_takes_its_sales_back(
    memory, memory_stream, orders, at
):
    from shop.models.events import DetailType
    from tests.support.memory_stream import order_events_service

    pids = three_lines(memory)
    shirt, _, socks = pids
    processor = order_events_service(memory, memory_stream)

    def run() -> list[dict]:
        published = []
        for _ in range(3):
            for change in memory_stream.read():
                published += [
                    e.detail for e in processor.handle(change).events if e.detail_type is DetailType.ORDER_REFUND_DUE
                ]
        return published

    at(DELIVERY - timedelta(days=3))
    order = orders.place(
        ALICE, address=ADDRESS, lines=[RequestedLine(shirt, 2), RequestedLine(pids[1], 1), RequestedLine(socks, 3)]
    )
    run()  # each change reaches the processor before the next (the memory stream shows an item's latest image)
    orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=PARCEL)
    run()
    at(DELIVERY)
    orders.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=3)
    run()
    version = 4
    day = memory.sales.days(shirt, "2000-01-01", "2999-12-31")[0].date
    orders.request_return(ALICE, order.order_id, "one", [ReturnLine(variant_id=shirt, quantity=1)])
    run()
    first = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 1)
    assert [e["amount_cents"] for e in run()] == [first.returns[0].refund_cents] == [1299]
    assert [(d.units, d.revenue_cents) for d in memory.sales.days(shirt, day, day)] == [(1, 1299)]
    orders.request_return(ALICE, order.order_id, "rest")
    run()
    last = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=first.version + 1)
    assert [e["amount_cents"] for e in run()] == [last.returns[1].refund_cents]
    assert first.returns[0].refund_cents + last.returns[1].refund_cents == order.total_cents
    assert [(d.units, d.revenue_cents) for d in memory.sales.days(socks, day, day)] == [(0, 0)]
    assert [(d.units, d.revenue_cents) for d in memory.sales.days(shirt, day, day)] == [(0, 0)]


def test_an_order_takes_at_most_its_limit_of_returns_the_last_of_them_anything_left(memory, orders, at):
    from shop.limits import MAX_RETURNS_PER_ORDER

    many = product(memory, name="Buttons", price_cents=10, stock=MAX_RETURNS_PER_ORDER + 5)
    at(DELIVERY - timedelta(days=3))
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(many, MAX_RETURNS_PER_ORDER + 2)])
    orders.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    version = ship_and_deliver(orders, at, order.order_id, 2)
    for _ in range(MAX_RETURNS_PER_ORDER - 1):
        orders.request_return(ALICE, order.order_id, "one", [ReturnLine(variant_id=many, quantity=1)])
        accepted = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=version + 1)
        version = accepted.version
    with pytest.raises(errors.TooManyReturns) as limited:  # the tenth takes every unit left
        orders.request_return(ALICE, order.order_id, "one", [ReturnLine(variant_id=many, quantity=1)])
    assert limited.value.details == {"max_returns": MAX_RETURNS_PER_ORDER, "left": {many: 3}}
    last = orders.request_return(ALICE, order.order_id, "the rest", [ReturnLine(variant_id=many, quantity=3)])
    assert last.return_request is not None
    assert [line.quantity for line in last.return_request.lines] == [3]
    rejected = orders.change_status(
        ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=last.version, reason="keep them"
    )
    assert rejected.status is OrderStatus.PARTIALLY_RETURNED
    orders.request_return(ALICE, order.order_id, "again")  # a rejected request is not a return
    done = orders.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=rejected.version + 1)
    assert (done.status, len(done.returns)) == (OrderStatus.RETURNED, MAX_RETURNS_PER_ORDER)
    with pytest.raises(errors.InvalidTransition):
        orders.request_return(ALICE, order.order_id, "more")
    assert sum(r.refund_cents for r in done.returns) == done.total_cents
