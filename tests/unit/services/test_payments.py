"""The payment rules (shop.services.payments) on the memory store and the fake provider: what each provider event
does to an order, in any order and any number of times, and what the payment steps record. The same rules on
DynamoDB Local and localstripe: tests/payments/test_payment_rules.py and test_payment_stream.py."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shop import config, errors
from shop.models import OrderStatus
from shop.models.events import DetailType
from shop.models.orders import PaymentStatus
from shop.models.payments import PaymentEvent, event_kind
from shop.services.orders import RequestedLine
from shop.services.payments import PaymentService, StepAction
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel
from tests.support.fake_payments import FakePayments
from tests.support.memory_stream import MemoryChange, MemoryStream
from tests.unit.services.test_orders import product, stock


def placed(memory, fake_payments, quantity: int = 2, price_cents: int = 1500) -> tuple[str, str, str]:
    """(order id, intent id, product id) of a PENDING_PAYMENT order."""
    pid = product(memory, price_cents=price_cents, stock=10)
    order = memory.order_service(payments=lambda: fake_payments).place(
        ALICE, address=ADDRESS, lines=[RequestedLine(pid, quantity)], idempotency_key=f"k-{pid}"
    )
    assert order.payment is not None
    assert order.payment.intent_id is not None
    return order.order_id, order.payment.intent_id, pid


def event(kind: str, order_id: str | None, intent_id: str | None, created: int = 100, **fields: Any) -> PaymentEvent:
    return PaymentEvent(
        event_id=f"evt_{kind}_{created}",
        event_type=kind,
        kind=event_kind(kind),
        created=created,
        order_id=order_id,
        intent_id=intent_id,
        **fields,
    )


def authorised(payment_rules: PaymentService, fake_payments: FakePayments, order_id: str, intent_id: str) -> None:
    fake_payments.authorise(intent_id)
    payment_rules.apply_event(event("payment_intent.amount_capturable_updated", order_id, intent_id))


def order(memory, order_id: str):
    return memory.state.orders[order_id]


def test_a_declined_attempt_is_recorded_and_the_order_keeps_waiting_with_its_stock(
    memory, fake_payments, payment_rules
):
    order_id, intent, pid = placed(memory, fake_payments)
    with pytest.raises(errors.PaymentDeclined):
        fake_payments.authorise(intent, "pm_card_chargeCustomerFail")
    for _ in range(3):
        payment_rules.apply_event(
            event("payment_intent.payment_failed", order_id, intent, 100, failure_code="card_declined")
        )
    waiting = order(memory, order_id)
    assert (waiting.status, waiting.version, stock(memory, pid)) == (OrderStatus.PENDING_PAYMENT, 1, 8)
    assert waiting.payment is not None
    assert waiting.payment.last_failure is not None
    assert waiting.payment.last_failure.code == "card_declined"
    authorised(payment_rules, fake_payments, order_id, intent)  # another card, the same intent
    assert order(memory, order_id).status is OrderStatus.CONFIRMED
    assert stock(memory, pid) == 8


def test_the_latest_failed_attempt_wins_whatever_the_delivery_order(memory, fake_payments, payment_rules):
    order_id, intent, _ = placed(memory, fake_payments)
    payment_rules.apply_event(
        event("payment_intent.payment_failed", order_id, intent, 200, failure_code="expired_card")
    )
    payment_rules.apply_event(
        event("payment_intent.payment_failed", order_id, intent, 100, failure_code="card_declined")
    )
    payment = order(memory, order_id).payment
    assert payment is not None
    assert payment.last_failure is not None
    assert payment.last_failure.code == "expired_card"


def test_a_failure_after_the_confirmation_changes_nothing(memory, fake_payments, payment_rules):
    order_id, intent, _ = placed(memory, fake_payments)
    authorised(payment_rules, fake_payments, order_id, intent)
    payment_rules.apply_event(
        event("payment_intent.payment_failed", order_id, intent, 300, failure_code="card_declined")
    )
    confirmed = order(memory, order_id)
    assert confirmed.status is OrderStatus.CONFIRMED
    assert confirmed.payment is not None
    assert confirmed.payment.last_failure is None


def test_an_authorisation_the_provider_does_not_hold_confirms_nothing(memory, fake_payments, payment_rules):
    order_id, intent, _ = placed(memory, fake_payments)
    for kind in ("payment_intent.amount_capturable_updated", "payment_intent.succeeded"):
        payment_rules.apply_event(event(kind, order_id, intent))  # signed, but the intent was never authorised
    assert order(memory, order_id).status is OrderStatus.PENDING_PAYMENT


def test_a_cancelled_intent_fails_a_waiting_order_once_and_gives_its_stock_back(memory, fake_payments, payment_rules):
    order_id, intent, pid = placed(memory, fake_payments)
    fake_payments.cancel(intent, idempotency_key="dashboard")
    for _ in range(3):
        payment_rules.apply_event(event("payment_intent.canceled", order_id, intent))
    failed = order(memory, order_id)
    assert (failed.status, failed.version, stock(memory, pid)) == (OrderStatus.PAYMENT_FAILED, 2, 10)
    assert failed.payment is not None
    assert failed.payment.status is PaymentStatus.CANCELED
    assert payment_rules.cancel(order_id).action is StepAction.ALREADY_DONE  # the stream's CANCEL step calls nothing


def test_a_lapsed_authorisation_is_recorded_once_and_the_capture_takes_nothing(memory, fake_payments, payment_rules):
    order_id, intent, _ = placed(memory, fake_payments)
    authorised(payment_rules, fake_payments, order_id, intent)
    fake_payments.lapse(intent)
    for _ in range(3):
        payment_rules.apply_event(event("payment_intent.canceled", order_id, intent))
    lapsed = order(memory, order_id)
    assert (lapsed.status, lapsed.version) == (OrderStatus.CONFIRMED, 2)
    assert lapsed.payment is not None
    assert lapsed.payment.status is PaymentStatus.LAPSED
    calls = len(fake_payments.calls)
    assert payment_rules.capture(order_id).action is StepAction.SKIPPED
    assert len(fake_payments.calls) == calls


def test_a_capture_that_finds_the_authorisation_cancelled_records_it_lapsed_not_captured(
    memory, fake_payments, payment_rules
):
    order_id, intent, _ = placed(memory, fake_payments)
    authorised(payment_rules, fake_payments, order_id, intent)
    fake_payments.lapse(intent)  # its event lost
    assert payment_rules.capture(order_id).action is StepAction.LAPSED
    payment = order(memory, order_id).payment
    assert payment is not None
    assert (payment.status, payment.captured_cents) == (PaymentStatus.LAPSED, 0)


def test_a_capture_records_what_the_provider_reports_captured(memory, fake_payments, payment_rules):
    order_id, intent, _ = placed(memory, fake_payments)
    authorised(payment_rules, fake_payments, order_id, intent)
    assert payment_rules.capture(order_id).action is StepAction.CAPTURED
    payment = order(memory, order_id).payment
    assert payment is not None
    assert (payment.status, payment.captured_cents) == (PaymentStatus.CAPTURED, 3000)
    assert fake_payments.captured_cents(intent) == 3000


def captured(memory, fake_payments, payment_rules) -> tuple[str, str]:
    order_id, intent, _ = placed(memory, fake_payments)
    authorised(payment_rules, fake_payments, order_id, intent)
    payment_rules.capture(order_id)
    return order_id, intent


def test_a_dashboard_refund_is_recorded_never_above_the_capture_in_any_order(memory, fake_payments, payment_rules):
    order_id, intent = captured(memory, fake_payments, payment_rules)
    fake_payments.dashboard_refund(intent, 1000)
    later = event("charge.refunded", order_id, intent, 200, amount_refunded_cents=1000)
    earlier = event("charge.refunded", order_id, intent, 100, amount_refunded_cents=400)
    for delivered in (later, earlier, later):
        payment_rules.apply_event(delivered)
    payment = order(memory, order_id).payment
    assert payment is not None
    assert payment.refunded_cents == 1000
    payment_rules.apply_event(event("charge.refunded", order_id, intent, 300, amount_refunded_cents=999_999))
    payment = order(memory, order_id).payment
    assert payment is not None
    assert payment.refunded_cents == 3000


def test_a_return_after_a_dashboard_refund_refunds_only_what_is_left(memory, fake_payments, payment_rules):
    order_id, intent = captured(memory, fake_payments, payment_rules)
    fake_payments.dashboard_refund(intent, 1000)
    payment_rules.apply_event(event("charge.refunded", order_id, intent, amount_refunded_cents=1000))
    outcome = payment_rules.refund(order_id, version=6, returned_at="2026-01-01T00:00:00Z")
    assert outcome.action is StepAction.REFUNDED
    assert [e.detail["amount_cents"] for e in outcome.events] == [2000]
    assert fake_payments.refunded_cents(intent) == 3000
    payment = order(memory, order_id).payment
    assert payment is not None
    assert (payment.refunded_cents, payment.return_refunded_cents) == (3000, 2000)
    again = payment_rules.refund(order_id, version=6, returned_at="2026-01-01T00:00:00Z")
    assert again.action is StepAction.ALREADY_DONE
    assert fake_payments.refunded_cents(intent) == 3000


def test_the_latest_dispute_report_wins(memory, fake_payments, payment_rules):
    order_id, intent = captured(memory, fake_payments, payment_rules)

    def dispute(status: str, created: int) -> PaymentEvent:
        kind = "charge.dispute.closed" if status in ("won", "lost") else "charge.dispute.created"
        return event(
            kind, order_id, intent, created, dispute_id="dp_1", dispute_status=status, dispute_amount_cents=3000
        )

    for delivered in (dispute("lost", 300), dispute("needs_response", 100), dispute("under_review", 200)):
        payment_rules.apply_event(delivered)
    payment = order(memory, order_id).payment
    assert payment is not None
    assert payment.dispute is not None
    assert (payment.dispute.dispute_id, payment.dispute.status) == ("dp_1", "lost")


def test_a_charge_event_finds_its_order_through_the_intent(memory, fake_payments, payment_rules):
    order_id, intent = captured(memory, fake_payments, payment_rules)
    fake_payments.dashboard_refund(intent, 500)
    payment_rules.apply_event(
        event("charge.refunded", None, intent, amount_refunded_cents=500)
    )  # a charge with no metadata
    payment = order(memory, order_id).payment
    assert payment is not None
    assert payment.refunded_cents == 500


def test_capture_on_confirm_captures_at_confirmation_and_refunds_a_cancel(memory, fake_payments, monkeypatch):
    monkeypatch.setenv("CAPTURE", "on_confirm")
    config.payment_settings.cache_clear()
    payment_rules = memory.payment_service(payments=lambda: fake_payments)
    stream = MemoryStream(memory)
    order_id, intent, _ = placed(memory, fake_payments)
    stream.read()
    authorised(payment_rules, fake_payments, order_id, intent)
    [confirmed] = [change for change in stream.read() if change.entity == "ORDER"]
    assert payment_rules.handle(confirmed).action is StepAction.CAPTURED
    assert fake_payments.captured_cents(intent) == 3000
    stream.read()
    memory.order_service().cancel(ALICE, order_id)
    [cancelled] = [change for change in stream.read() if change.entity == "ORDER"]
    outcome = payment_rules.handle(cancelled)
    assert outcome.action is StepAction.REFUNDED
    assert fake_payments.refunded_cents(intent) == 3000
    assert [e.detail_type for e in outcome.events] == [DetailType.ORDER_REFUNDED]


def swept_at(memory, fake_payments, moment: datetime) -> PaymentService:
    """The rules with the clock at `moment` (the sweep's view of time)."""
    return PaymentService(
        memory.order_payments,
        payments=lambda: fake_payments,
        settings=lambda: replace(config.settings(), archive_after_days=30, archive_grace_seconds=0),
        payment_settings=config.payment_settings,
        now=lambda: moment,
    )


def test_the_sweep_expires_an_order_once_its_window_closed(memory, fake_payments):
    order_id, intent, pid = placed(memory, fake_payments)
    unpaid = order(memory, order_id)
    assert unpaid.payment_expires_at is not None
    closes = datetime.fromtimestamp(unpaid.payment_expires_at, UTC)
    assert swept_at(memory, fake_payments, closes - timedelta(seconds=1)).sweep() == []  # not yet
    assert stock(memory, pid) == 8
    payment_rules = swept_at(memory, fake_payments, closes + timedelta(seconds=1))
    assert [o.action for o in payment_rules.sweep()] == [StepAction.EXPIRED]
    expired = order(memory, order_id)
    assert (expired.status, stock(memory, pid)) == (OrderStatus.EXPIRED, 10)
    assert fake_payments.get_intent(intent).status.value == "canceled"
    assert payment_rules.sweep() == []  # a second sweep: nothing more
    assert payment_rules.expire(order_id).action is StepAction.SKIPPED


def test_an_old_window_items_ttl_removal_is_no_step(memory, fake_payments):
    """A `PAYMENT_DUE` item written before decision 075 is removed by its TTL on a stage upgraded since: no filter
    lets its record through, and a replay that carries it anyway (an unfiltered `make replay`) changes nothing and
    asks the provider nothing; the sweep expires its order like any other."""
    order_id, _, pid = placed(memory, fake_payments)
    before, asked = order(memory, order_id), len(fake_payments.calls)
    removal = MemoryChange(
        "REMOVE", "9", "ORDER_PAYMENT_DUE", order_id, {"order_id": order_id}, None, "2026-01-01T00:00:00Z", True
    )
    assert swept_at(memory, fake_payments, datetime.now(UTC)).handle(removal).action is StepAction.SKIPPED
    assert (order(memory, order_id), stock(memory, pid), fake_payments.calls[asked:]) == (before, 8, [])


def test_the_sweep_confirms_an_order_whose_authorisation_event_was_lost(memory, fake_payments):
    order_id, intent, pid = placed(memory, fake_payments)
    fake_payments.authorise(intent)
    closes = datetime.fromtimestamp(order(memory, order_id).payment_expires_at or 0, UTC)
    payment_rules = swept_at(memory, fake_payments, closes + timedelta(minutes=5))
    assert [o.action for o in payment_rules.sweep()] == [StepAction.CONFIRMED]
    assert (order(memory, order_id).status, stock(memory, pid)) == (OrderStatus.CONFIRMED, 8)


def test_a_sweep_in_a_provider_outage_leaves_the_order_to_the_next_sweep(memory, fake_payments):
    order_id, _, pid = placed(memory, fake_payments)
    closes = datetime.fromtimestamp(order(memory, order_id).payment_expires_at or 0, UTC)
    payment_rules = swept_at(memory, fake_payments, closes + timedelta(minutes=5))
    fake_payments.fail_next(1)
    with pytest.raises(errors.ServiceUnavailable):
        payment_rules.sweep()
    assert order(memory, order_id).status is OrderStatus.PENDING_PAYMENT
    assert [o.action for o in payment_rules.sweep()] == [StepAction.EXPIRED]
    assert stock(memory, pid) == 10


def test_an_order_confirmed_before_a_switch_to_capture_on_confirm_is_captured_when_shipped(
    memory, fake_payments, monkeypatch
):
    stream = MemoryStream(memory)
    payment_rules = memory.payment_service(payments=lambda: fake_payments)
    order_id, intent, _ = placed(memory, fake_payments)
    authorised(payment_rules, fake_payments, order_id, intent)  # confirmed under on_ship: nothing captured
    stream.read()
    monkeypatch.setenv("CAPTURE", "on_confirm")
    config.payment_settings.cache_clear()
    memory.order_service().change_status(ADMIN, order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    [shipped] = [change for change in stream.read() if change.entity == "ORDER"]
    assert payment_rules.handle(shipped).action is StepAction.CAPTURED
    assert fake_payments.captured_cents(intent) == 3000
