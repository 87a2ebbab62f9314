"""The webhook's rule (PaymentService.apply_event) on moto and DynamoDB Local, with the in-memory provider.

Each event is applied at most once (its mark in the order's transaction), in any order; an event for an unknown,
archived or other order changes nothing but its mark. Concurrent deliveries: tests/payments/test_payment_stream.py.
"""

from __future__ import annotations

import pytest

from shop import errors, keys, wiring
from shop.models import OrderStatus
from shop.models.orders import PaymentStatus
from shop.models.payments import IntentStatus
from shop.services.payments import StepAction
from tests.support.factories import ALICE, product
from tests.support.fake_payments import FakePayments
from tests.support.unpaid_orders import AUTHORISED, CANCELED, FAILED, SUCCEEDED, event, item, place_unpaid, stock


@pytest.fixture
def fake() -> FakePayments:
    return FakePayments()


def unpaid_kettles(store, fake, quantity=2):
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    return pid, place_unpaid(store.table, fake, [(pid, "Kettle", 2500, quantity)])


def order_item(store, order_id):
    return item(store.table, keys.order_key(order_id))


def marked(store, evt) -> bool:
    return item(store.table, keys.webhook_event_key("stripe", evt.event_id)) is not None


@pytest.mark.parametrize("event_type", [AUTHORISED, SUCCEEDED])
def test_an_authorisation_confirms_the_unpaid_order_once(store, fake, event_type):
    _, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    authorised = event(event_type, unpaid)

    service.apply_event(authorised)
    after = order_item(store, unpaid.order_id)
    service.apply_event(authorised)  # Stripe's redelivery

    assert (after["status"], after["version"], after["payment"]["status"]) == ("CONFIRMED", 2, "AUTHORISED")
    assert after["confirmed_at"] == after["updated_at"]
    assert "payment_expires_at" not in after
    assert item(store.table, keys.payment_due_key(unpaid.order_id)) is None  # the window is closed
    assert order_item(store, unpaid.order_id) == after
    assert marked(store, authorised)


def test_a_failed_payment_fails_the_order_and_releases_its_stock(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    assert stock(store.table, pid) == 3

    wiring.payment_service(store.table, provider=fake).apply_event(event(FAILED, unpaid))

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("PAYMENT_FAILED", 2, "FAILED")
    assert stock(store.table, pid) == 5
    assert item(store.table, keys.payment_due_key(unpaid.order_id)) is None
    assert "expires_at" in after  # terminal: archived like CANCELLED (its TTL set in the same write)


def test_a_late_failure_after_the_confirmation_changes_nothing(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    service.apply_event(event(AUTHORISED, unpaid))
    confirmed = order_item(store, unpaid.order_id)

    late = event(FAILED, unpaid)
    service.apply_event(late)

    assert order_item(store, unpaid.order_id) == confirmed
    assert stock(store.table, pid) == 3
    assert marked(store, late)


def test_an_authorisation_after_the_failure_does_not_confirm_and_releases_the_money(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    service.apply_event(event(FAILED, unpaid))
    fake.authorise(unpaid.intent_id)  # the customer tried another card meanwhile: the amount is held

    service.apply_event(event(AUTHORISED, unpaid))

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["payment"]["status"]) == ("PAYMENT_FAILED", "CANCELED")
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert [call for call in fake.calls if call[0] == "cancel"] == [("cancel", f"shop-order-{unpaid.order_id}-cancel")]
    assert stock(store.table, pid) == 5  # released once


@pytest.mark.parametrize("event_type", [CANCELED, "charge.refunded", "customer.created"])
def test_other_event_types_are_marked_and_change_nothing(store, fake, event_type):
    _, unpaid = unpaid_kettles(store, fake)
    before = order_item(store, unpaid.order_id)
    other = event(event_type, unpaid)

    wiring.payment_service(store.table, provider=fake).apply_event(other)

    assert order_item(store, unpaid.order_id) == before
    assert marked(store, other)


def test_events_for_unknown_archived_or_other_orders_change_nothing(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    before = order_item(store, unpaid.order_id)
    other_intent = fake.create_intent("someone-else", 100, "eur", idempotency_key="k-other")

    unknown = event(AUTHORISED, order_id="no-such-order", intent_id=unpaid.intent_id)
    foreign = event(AUTHORISED, unpaid, intent_id=other_intent.intent_id)  # names our order, not our intent
    no_order = event(AUTHORISED, intent_id=unpaid.intent_id)  # an intent whose metadata names no order
    for evt in (unknown, foreign, no_order):
        service.apply_event(evt)
        assert marked(store, evt)
    assert order_item(store, unpaid.order_id) == before

    # Archived: the order item is gone (its TTL), its marker stays (shop.services.archival).
    store.client.delete_item(
        TableName=store.table_name, Key={"PK": {"S": f"ORDER#{unpaid.order_id}"}, "SK": {"S": "ORDER"}}
    )
    archived = event(FAILED, unpaid)
    service.apply_event(archived)
    assert marked(store, archived)
    assert order_item(store, unpaid.order_id) is None
    assert stock(store.table, pid) == 3  # no release for an order that is not there


def test_an_event_read_before_a_concurrent_change_is_applied_to_the_order_as_it_is_now(store, fake, monkeypatch):
    """The order changed between the rule's read and its transaction (the version moved): the rule reads again."""
    _, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    real_current = service.store.current
    reads = []

    def current_then_cancelled(order_id):
        order = real_current(order_id)
        if not reads:  # the customer cancels right after the rule's first read
            wiring.order_service(store.table).cancel(ALICE, order_id)
        reads.append(order)
        return order

    monkeypatch.setattr(service.store, "current", current_then_cancelled)
    service.apply_event(event(AUTHORISED, unpaid))

    after = order_item(store, unpaid.order_id)
    assert after["status"] == "CANCELLED"  # the cancel won; the authorisation found a dead order
    assert after["payment"]["status"] == PaymentStatus.CANCELED  # and released the held money
    assert [order.status for order in reads] == [OrderStatus.PENDING_PAYMENT, OrderStatus.CANCELLED]


# -- the stream steps' refusals: each fails its record (retried, then the failure store) ----------------


def confirmed_paid(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    fake.authorise(unpaid.intent_id)
    service = wiring.payment_service(store.table, provider=fake)
    service.apply_event(event(AUTHORISED, unpaid))
    return pid, unpaid, service


def test_a_capture_while_the_provider_is_down_fails_and_records_nothing(store, fake):
    _, unpaid, service = confirmed_paid(store, fake)
    fake.fail_next()

    with pytest.raises(errors.PaymentProviderUnavailable):
        service.capture(unpaid.order_id)

    assert order_item(store, unpaid.order_id)["payment"]["status"] == "AUTHORISED"
    assert service.capture(unpaid.order_id).action is StepAction.CAPTURED  # the retry
    assert service.capture(unpaid.order_id).action is StepAction.ALREADY_DONE  # a replay
    assert [key for op, key in fake.calls if op == "capture"] == [f"shop-order-{unpaid.order_id}-capture"] * 2


def test_a_refund_waits_for_its_capture_to_be_recorded(store, fake):
    _, unpaid, service = confirmed_paid(store, fake)

    with pytest.raises(errors.ServiceUnavailable):
        service.refund(unpaid.order_id, version=6, returned_at="2026-01-01T00:00:00Z")

    assert [op for op, _ in fake.calls if op == "refund"] == []


def test_a_cancel_the_provider_refuses_on_a_captured_intent_is_surfaced_not_swallowed(store, fake):
    _, unpaid = unpaid_kettles(store, fake)
    fake.authorise(unpaid.intent_id)
    fake.capture(unpaid.intent_id, idempotency_key="captured-by-hand")  # outside the shop (the dashboard)
    wiring.order_service(store.table).cancel(ALICE, unpaid.order_id)
    service = wiring.payment_service(store.table, provider=fake)

    with pytest.raises(errors.PaymentRejected):  # the money was taken: a person must refund it
        service.cancel(unpaid.order_id)

    assert order_item(store, unpaid.order_id)["payment"]["status"] == "REQUIRES_PAYMENT"


def test_an_unpaid_order_cancelled_closes_its_window_and_its_intent(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)

    wiring.order_service(store.table).cancel(ALICE, unpaid.order_id)  # the customer's cancel, as before payments
    assert item(store.table, keys.payment_due_key(unpaid.order_id)) is None  # in the cancel's transaction
    assert stock(store.table, pid) == 5
    step = wiring.payment_service(store.table, provider=fake).cancel(unpaid.order_id)  # the CANCELLED record's step

    assert step.action is StepAction.CANCELLED
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert order_item(store, unpaid.order_id)["payment"]["status"] == "CANCELED"


def test_the_window_closing_expires_an_unpaid_order_whatever_its_payment_shows(store, fake):
    """An order whose intent was never written (a checkout that died before the provider answered) still
    expires: its stock must not stay held."""
    pid, unpaid = unpaid_kettles(store, fake)
    store.client.update_item(
        TableName=store.table_name,
        Key={"PK": {"S": f"ORDER#{unpaid.order_id}"}, "SK": {"S": "ORDER"}},
        UpdateExpression="REMOVE payment.intent_id, payment.client_secret",
    )
    service = wiring.payment_service(store.table, provider=fake)

    assert service.expire(unpaid.order_id).action is StepAction.EXPIRED
    assert service.expire(unpaid.order_id).action is StepAction.SKIPPED  # a replay

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("EXPIRED", 2, "REQUIRES_PAYMENT")
    assert stock(store.table, pid) == 5
    assert [op for op, _ in fake.calls if op in ("get_intent", "cancel")] == []
