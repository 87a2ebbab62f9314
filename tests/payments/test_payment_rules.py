"""The webhook's rule (PaymentService.apply_event) on moto and DynamoDB Local, with the in-memory provider.

Each event is applied at most once, in any order, guarded by the order's own state (no per-event mark, issue 26);
an event for an unknown, archived or other order writes nothing. Concurrent deliveries:
tests/payments/test_payment_stream.py.
"""

from __future__ import annotations

import pytest

from shop import errors, keys, wiring
from shop.models import OrderStatus
from shop.models.orders import PaymentStatus
from shop.models.payments import IntentStatus
from shop.services.payments import StepAction
from tests.stream.conftest import dump
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


def unchanged(store, before) -> bool:
    """Nothing was written since `before` (a dump of the table): no order change, no mark, no other item."""
    return dump(store) == before


@pytest.mark.parametrize("event_type", [AUTHORISED, SUCCEEDED])
def test_an_authorisation_confirms_the_unpaid_order_once(store, fake, event_type):
    _, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    authorised = event(event_type, unpaid)

    service.apply_event(authorised)
    after = order_item(store, unpaid.order_id)
    confirmed = dump(store)
    service.apply_event(authorised)  # Stripe's redelivery
    service.apply_event(event(event_type, unpaid))  # the same authorisation under another event id

    assert (after["status"], after["version"], after["payment"]["status"]) == ("CONFIRMED", 2, "AUTHORISED")
    assert after["confirmed_at"] == after["updated_at"]
    assert "payment_expires_at" not in after
    assert "client_secret" not in after["payment"]  # shown only while PENDING_PAYMENT: it leaves the order
    assert after["payment"]["intent_id"] == unpaid.intent_id
    # the window is left to its TTL (its removal finds the order settled: test_the_window_closing_after_...)
    assert item(store.table, keys.payment_due_key(unpaid.order_id)) is not None
    assert unchanged(store, confirmed)  # the redeliveries wrote nothing
    assert not [i for i in confirmed if i["PK"].startswith("WEBHOOK_EVENT#")]  # and no event mark exists


def test_a_failed_payment_fails_the_order_and_releases_its_stock(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    assert stock(store.table, pid) == 3

    wiring.payment_service(store.table, provider=fake).apply_event(event(FAILED, unpaid))

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("PAYMENT_FAILED", 2, "FAILED")
    assert stock(store.table, pid) == 5
    assert "client_secret" not in after["payment"]
    assert "expires_at" in after  # terminal: archived like CANCELLED (its TTL set in the same write)
    failed = dump(store)

    wiring.payment_service(store.table, provider=fake).apply_event(event(FAILED, unpaid))  # redelivered, new id
    assert unchanged(store, failed)  # the stock is released once


def test_a_late_failure_after_the_confirmation_changes_nothing(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    service.apply_event(event(AUTHORISED, unpaid))
    confirmed = order_item(store, unpaid.order_id)

    before = dump(store)
    service.apply_event(event(FAILED, unpaid))

    assert order_item(store, unpaid.order_id) == confirmed
    assert stock(store.table, pid) == 3
    assert unchanged(store, before)


def test_an_authorisation_after_the_failure_does_not_confirm_and_releases_the_money(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    service.apply_event(event(FAILED, unpaid))
    fake.authorise(unpaid.intent_id)  # the customer tried another card meanwhile: the amount is held

    authorised = event(AUTHORISED, unpaid)
    service.apply_event(authorised)
    cancelled = dump(store)
    service.apply_event(authorised)  # redelivered: the payment is recorded CANCELED, nothing to cancel

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["payment"]["status"]) == ("PAYMENT_FAILED", "CANCELED")
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert [call for call in fake.calls if call[0] == "cancel"] == [("cancel", f"shop-order-{unpaid.order_id}-cancel")]
    assert stock(store.table, pid) == 5  # released once
    assert unchanged(store, cancelled)


def test_a_crash_between_the_dead_orders_cancel_and_its_record_cancels_once_on_redelivery(store, fake, monkeypatch):
    """The intent of a dead order is cancelled at the provider, then the process dies before the CANCELED record:
    the redelivery (Stripe retries a failed delivery) cancels again under the same key and records it."""
    _, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    service.apply_event(event(FAILED, unpaid))
    fake.authorise(unpaid.intent_id)
    authorised = event(AUTHORISED, unpaid)

    def crash(*args, **kwargs):
        raise errors.ServiceUnavailable("the process died")

    monkeypatch.setattr(service.store, "record_payment", crash)
    with pytest.raises(errors.ServiceUnavailable):
        service.apply_event(authorised)
    monkeypatch.undo()
    assert order_item(store, unpaid.order_id)["payment"]["status"] == "FAILED"  # not recorded

    service.apply_event(authorised)  # the redelivery

    assert order_item(store, unpaid.order_id)["payment"]["status"] == "CANCELED"
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert {key for op, key in fake.calls if op == "cancel"} == {f"shop-order-{unpaid.order_id}-cancel"}


@pytest.mark.parametrize("event_type", [CANCELED, "charge.refunded", "customer.created"])
def test_other_event_types_write_nothing(store, fake, event_type):
    _, unpaid = unpaid_kettles(store, fake)
    before = dump(store)

    wiring.payment_service(store.table, provider=fake).apply_event(event(event_type, unpaid))

    assert unchanged(store, before)


def test_events_for_unknown_archived_or_other_orders_change_nothing(store, fake):
    pid, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    before = dump(store)
    other_intent = fake.create_intent("someone-else", 100, "eur", idempotency_key="k-other")

    unknown = event(AUTHORISED, order_id="no-such-order", intent_id=unpaid.intent_id)
    foreign = event(AUTHORISED, unpaid, intent_id=other_intent.intent_id)  # names our order, not our intent
    foreign_failure = event(FAILED, unpaid, intent_id=other_intent.intent_id)
    no_order = event(AUTHORISED, intent_id=unpaid.intent_id)  # an intent whose metadata names no order
    for evt in (unknown, foreign, foreign_failure, no_order):
        service.apply_event(evt)
    assert unchanged(store, before)

    # Archived: the order item is gone (its TTL), its marker stays (shop.services.archival).
    store.client.delete_item(
        TableName=store.table_name, Key={"PK": {"S": f"ORDER#{unpaid.order_id}"}, "SK": {"S": "ORDER"}}
    )
    archived = dump(store)
    service.apply_event(event(FAILED, unpaid))
    assert unchanged(store, archived)
    assert order_item(store, unpaid.order_id) is None
    assert stock(store.table, pid) == 3  # no release for an order that is not there


def test_an_event_read_before_a_concurrent_change_is_applied_to_the_order_as_it_is_now(store, fake, monkeypatch):
    """The order changed between the rule's read and its transaction (the version moved): the rule reads again."""
    _, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    real_current = service.store.current
    reads = []

    def current_then_cancelled(order_id, **kwargs):
        order = real_current(order_id, **kwargs)
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


def test_an_event_whose_intent_is_not_the_orders_is_refused_by_the_write_itself(store, fake, monkeypatch):
    """The order read before its intent was attached (a half-done checkout): the event's intent passes the read's
    check, but the conditional update finds another intent on the order by then and writes nothing."""
    _, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    read = service.store.current(unpaid.order_id)
    assert read is not None
    assert read.payment is not None
    half_done = read.model_copy(update={"payment": read.payment.model_copy(update={"intent_id": None})})
    monkeypatch.setattr(service.store, "current", lambda order_id, **kwargs: half_done)
    other = fake.create_intent(unpaid.order_id, 100, "eur", idempotency_key="k-second-intent")
    before = dump(store)

    with pytest.raises(errors.ServiceUnavailable):  # refused on every attempt: the order is not this intent's
        service.apply_event(event(AUTHORISED, unpaid, intent_id=other.intent_id))

    assert unchanged(store, before)


def test_the_window_closing_after_the_webhook_settled_the_order_reads_once_and_writes_nothing(store, fake):
    """The PAYMENT_DUE item is left to its TTL by the webhook: its removal's step looks once (eventually
    consistent) and skips the settled order, for the confirmed and the failed alike."""
    _, paid = unpaid_kettles(store, fake)
    _, failed = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    service.apply_event(event(AUTHORISED, paid))
    service.apply_event(event(FAILED, failed))
    before = dump(store)

    assert service.expire(paid.order_id).action is StepAction.SKIPPED
    assert service.expire(failed.order_id).action is StepAction.SKIPPED

    assert unchanged(store, before)
    assert [op for op, _ in fake.calls if op in ("get_intent", "cancel")] == []


def test_an_authorisation_for_an_expired_order_whose_cancel_failed_releases_the_money(store, fake, monkeypatch):
    """The window closed (EXPIRED, stock back) but its cancel at the provider failed; the customer then paid: the
    authorisation's delivery finds a dead order and cancels the intent itself, once."""
    pid, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    real_cancel = fake.cancel

    def down(*args, **kwargs):
        raise errors.PaymentProviderUnavailable("payment provider unavailable")

    monkeypatch.setattr(fake, "cancel", down)
    with pytest.raises(errors.PaymentProviderUnavailable):
        service.expire(unpaid.order_id)
    monkeypatch.setattr(fake, "cancel", real_cancel)
    assert order_item(store, unpaid.order_id)["status"] == "EXPIRED"
    fake.authorise(unpaid.intent_id)

    authorised = event(AUTHORISED, unpaid)
    service.apply_event(authorised)
    after = dump(store)
    service.apply_event(authorised)  # redelivered

    expired = order_item(store, unpaid.order_id)
    assert (expired["status"], expired["payment"]["status"]) == ("EXPIRED", "CANCELED")
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert stock(store.table, pid) == 5
    assert unchanged(store, after)
