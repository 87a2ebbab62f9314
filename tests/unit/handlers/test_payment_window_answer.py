"""`payment_expires_at` in the order's answer (issue 39): when an unpaid order's payment window closes, as an RFC 3339
instant while the order is PENDING_PAYMENT, null otherwise; the order holds it as epoch seconds (what the windows'
sweep compares). The handlers on the in-memory store with the fake provider."""

from __future__ import annotations

from datetime import datetime, timedelta

from shop import clock
from shop.models import Order
from tests.functions.apigw import ADMIN, ALICE
from tests.unit.handlers.test_payment_handlers import deliver, place


def test_an_unpaid_order_answers_when_its_window_closes_and_null_once_paid(paying):
    before = clock.now()
    order = place(paying, "window-answer-1")
    after = clock.now()
    closes = datetime.fromisoformat(order["payment_expires_at"])
    # the window is PAYMENT_WINDOW_MINUTES=30 (the fixture) from the placement, to the second the order holds
    assert before + timedelta(minutes=30) - timedelta(seconds=1) <= closes <= after + timedelta(minutes=30)
    stored = paying.wiring.store.state.orders[order["order_id"]].payment_expires_at
    assert order["payment_expires_at"] == clock.iso_from_epoch(stored)
    for claims in (ALICE, ADMIN):
        got = paying.call("GET", f"/orders/{order['order_id']}", claims=claims)
        assert got.body["payment_expires_at"] == order["payment_expires_at"]

    intent = order["payment"]["intent_id"]
    paying.wiring.payments.authorise(intent)
    paid = deliver(paying, "evt_window_paid", "payment_intent.amount_capturable_updated", intent, order["order_id"])
    assert paid.status == 200
    confirmed = paying.call("GET", f"/orders/{order['order_id']}", claims=ALICE).body
    assert (confirmed["status"], confirmed["payment_expires_at"]) == ("CONFIRMED", None)


def test_a_cancelled_unpaid_order_answers_null(paying):
    order = place(paying, "window-answer-2")
    cancelled = paying.call("POST", f"/orders/{order['order_id']}/cancel", claims=ALICE)
    assert (cancelled.status, cancelled.body["status"]) == (200, "CANCELLED")
    assert cancelled.body["payment_expires_at"] is None


def test_an_order_taken_without_payment_answers_null(handlers):
    got = handlers.call("GET", "/orders/00-alice-pending", claims=ALICE)
    assert got.status == 200
    assert got.body["payment_expires_at"] is None


def test_the_answer_reads_back_as_the_epoch_seconds_the_order_holds(paying):
    order = place(paying, "window-answer-3")
    stored = paying.wiring.store.state.orders[order["order_id"]]
    answered = Order.model_validate(paying.call("GET", f"/orders/{order['order_id']}", claims=ALICE).body)
    assert answered.payment_expires_at == stored.payment_expires_at
    assert stored.model_dump()["payment_expires_at"] == stored.payment_expires_at  # Python's dump keeps seconds
