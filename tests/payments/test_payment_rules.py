"""The webhook's rule (PaymentService.apply_event) on moto and DynamoDB Local, with the in-memory provider.

Each event is applied at most once, in any order, guarded by the order's own state (no per-event mark, issue 26);
an event for an unknown, archived or other order writes nothing. Concurrent deliveries:
tests/payments/test_payment_stream.py.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest

from shop import clock, errors, keys, wiring
from shop.models import OrderStatus
from shop.models.orders import PaymentStatus
from shop.models.payments import IntentStatus
from shop.repository.store import from_item
from shop.services.payments import StepAction
from tests.stream.conftest import dump
from tests.support.factories import ALICE, product
from tests.support.fake_payments import FakePayments
from tests.support.streams import StreamReader
from tests.support.unpaid_orders import (
    AUTHORISED,
    CANCELED,
    DISPUTE_CLOSED,
    DISPUTE_CREATED,
    DISPUTE_UPDATED,
    FAILED,
    REFUNDED,
    SUCCEEDED,
    event,
    item,
    place_unpaid,
    stock,
)


@pytest.fixture
def fake_provider() -> FakePayments:
    return FakePayments()


def unpaid_kettles(store, fake, quantity=2):
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    return pid, place_unpaid(store.table, fake, [(pid, "Kettle", 2500, quantity)])


def order_item(store, order_id):
    return item(store.table, keys.order_key(order_id))


# Each event kind the shop acts on, with the fields its provider object gives.
EVENT_FIELDS: dict[str, dict[str, Any]] = {
    AUTHORISED: {},
    FAILED: {"failure_code": "card_declined"},
    CANCELED: {},
    REFUNDED: {"amount_refunded_cents": 1000},
    DISPUTE_CREATED: {"dispute_id": "dp_1", "dispute_status": "needs_response", "dispute_amount_cents": 5000},
}


def unchanged(store, before) -> bool:
    """Nothing was written since `before` (a dump of the table): no order change, no mark, no other item."""
    return dump(store) == before


@pytest.mark.parametrize("event_type", [AUTHORISED, SUCCEEDED])
def test_an_authorisation_confirms_the_unpaid_order_once(store, fake_provider, event_type):
    _, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    authorised = event(event_type, unpaid)
    waiting = dump(store)
    service.apply_event(authorised)  # signed, but the provider holds nothing for the intent yet: a notice, not a proof
    assert unchanged(store, waiting)
    fake_provider.authorise(unpaid.intent_id)  # the customer's browser confirms the card

    service.apply_event(authorised)  # Stripe's redelivery, the amount now held
    after = order_item(store, unpaid.order_id)
    confirmed = dump(store)
    service.apply_event(authorised)  # Stripe's redelivery
    service.apply_event(event(event_type, unpaid))  # the same authorisation under another event id

    assert (after["status"], after["version"], after["payment"]["status"]) == ("CONFIRMED", 2, "AUTHORISED")
    assert after["confirmed_at"] == after["updated_at"]
    assert "payment_expires_at" not in after
    assert "client_secret" not in after["payment"]  # shown only while PENDING_PAYMENT: it leaves the order
    assert after["payment"]["intent_id"] == unpaid.intent_id
    assert unchanged(store, confirmed)  # the redeliveries wrote nothing
    assert not [i for i in confirmed if i["PK"].startswith("WEBHOOK_EVENT#")]  # and no event mark exists
    # the intent is read back at the provider until the order is confirmed, never after
    assert [op for op, _ in fake_provider.calls].count("get_intent") == 2


def test_a_failed_attempt_is_recorded_and_the_order_keeps_waiting_with_its_stock(store, fake_provider):
    """A declined card is one attempt: the latest is recorded on the payment, the order keeps its stock and its
    client secret, and another card pays it."""
    pid, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    with pytest.raises(errors.PaymentDeclined):
        fake_provider.authorise(unpaid.intent_id, "pm_card_chargeCustomerFail")
    now = clock.epoch(clock.now())
    declined = event(
        FAILED, unpaid, created=now, failure_code="card_declined", failure_message="Your card was declined."
    )

    service.apply_event(declined)

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("PENDING_PAYMENT", 1, "REQUIRES_PAYMENT")
    assert after["payment"]["last_failure"] == {
        "code": "card_declined",
        "message": "Your card was declined.",
        "at": clock.iso_from_epoch(now),
    }
    assert after["payment"]["client_secret"] == fake_provider.get_intent(unpaid.intent_id).client_secret  # to pay again
    assert stock(store.table, pid) == 3  # still held
    assert "expires_at" not in after  # not final: no archive TTL
    recorded = dump(store)
    service.apply_event(declined)  # redelivered
    service.apply_event(event(FAILED, unpaid, created=now))  # the same attempt under another event id
    service.apply_event(event(FAILED, unpaid, created=now - 30, failure_code="expired_card"))  # an older one, late
    assert unchanged(store, recorded)

    fake_provider.authorise(unpaid.intent_id)  # another card, the same intent
    service.apply_event(event(AUTHORISED, unpaid))
    paid = order_item(store, unpaid.order_id)
    assert (paid["status"], paid["version"], paid["payment"]["status"]) == ("CONFIRMED", 2, "AUTHORISED")
    assert "last_failure" not in paid["payment"]  # shown only while the order waits, as its client secret
    assert stock(store.table, pid) == 3  # held throughout, never released and taken again


def test_a_cancelled_intent_fails_the_waiting_order_and_releases_its_stock_once(store, fake_provider):
    pid, unpaid = unpaid_kettles(store, fake_provider)
    assert stock(store.table, pid) == 3
    # cancelled at the provider: nothing to charge
    fake_provider.cancel(unpaid.intent_id, idempotency_key="stripe-dashboard")
    service = wiring.payment_service(store.table, provider=fake_provider)

    service.apply_event(event(CANCELED, unpaid))

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("PAYMENT_FAILED", 2, "CANCELED")
    assert stock(store.table, pid) == 5
    assert "client_secret" not in after["payment"]
    assert "expires_at" in after  # terminal: archived like CANCELLED (its TTL set in the same write)
    failed = dump(store)

    service.apply_event(event(CANCELED, unpaid))  # redelivered, new id
    assert unchanged(store, failed)  # the stock is released once
    assert service.cancel(unpaid.order_id).action is StepAction.ALREADY_DONE  # the PAYMENT_FAILED record's step
    assert unchanged(store, failed)
    assert [op for op, _ in fake_provider.calls].count("cancel") == 1  # the provider's own: the shop cancels nothing


def test_a_late_failure_after_the_confirmation_changes_nothing(store, fake_provider):
    pid, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    fake_provider.authorise(unpaid.intent_id)
    service.apply_event(event(AUTHORISED, unpaid))
    confirmed = order_item(store, unpaid.order_id)

    before = dump(store)
    service.apply_event(event(FAILED, unpaid))

    assert order_item(store, unpaid.order_id) == confirmed
    assert stock(store.table, pid) == 3
    assert unchanged(store, before)


def test_an_authorisation_after_the_orders_cancel_does_not_confirm_and_releases_the_money(store, fake_provider):
    """The customer cancelled the unpaid order (stock back in the cancel's transaction) and, before its CANCEL step
    reached the provider, paid with the client secret still in the browser: the authorisation finds a dead order."""
    pid, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    wiring.order_service(store.table).cancel(ALICE, unpaid.order_id)
    fake_provider.authorise(unpaid.intent_id)  # the amount is held for an order that is over

    authorised = event(AUTHORISED, unpaid)
    service.apply_event(authorised)
    cancelled = dump(store)
    service.apply_event(authorised)  # redelivered: the payment is recorded CANCELED, nothing to cancel

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("CANCELLED", 2, "CANCELED")
    assert fake_provider.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert [call for call in fake_provider.calls if call[0] == "cancel"] == [
        ("cancel", f"shop-order-{unpaid.order_id}-cancel")
    ]
    assert stock(store.table, pid) == 5  # released once
    assert unchanged(store, cancelled)


def test_a_crash_between_the_dead_orders_cancel_and_its_record_cancels_once_on_redelivery(
    store, fake_provider, monkeypatch
):
    """The intent of a dead order is cancelled at the provider, then the process dies before the CANCELED record:
    the redelivery (Stripe retries a failed delivery) cancels again under the same key and records it."""
    _, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    wiring.order_service(store.table).cancel(ALICE, unpaid.order_id)  # its own CANCEL step not run yet
    fake_provider.authorise(unpaid.intent_id)
    authorised = event(AUTHORISED, unpaid)

    def crash(*args, **kwargs):
        raise errors.ServiceUnavailable("the process died")

    monkeypatch.setattr(service.store, "record_payment", crash)
    with pytest.raises(errors.ServiceUnavailable):
        service.apply_event(authorised)
    monkeypatch.undo()
    assert order_item(store, unpaid.order_id)["payment"]["status"] == "REQUIRES_PAYMENT"  # not recorded

    service.apply_event(authorised)  # the redelivery

    assert order_item(store, unpaid.order_id)["payment"]["status"] == "CANCELED"
    assert fake_provider.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert {key for op, key in fake_provider.calls if op == "cancel"} == {f"shop-order-{unpaid.order_id}-cancel"}


@pytest.mark.parametrize("event_type", ["payment_intent.created", "charge.succeeded", "customer.created"])
def test_other_event_types_write_nothing(store, fake_provider, event_type):
    _, unpaid = unpaid_kettles(store, fake_provider)
    before = dump(store)

    wiring.payment_service(store.table, provider=fake_provider).apply_event(event(event_type, unpaid))

    assert unchanged(store, before)


def test_events_for_unknown_archived_or_other_orders_change_nothing(store, fake_provider):
    pid, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    before = dump(store)
    other_intent = fake_provider.create_intent("someone-else", 100, "eur", idempotency_key="k-other")

    unknown = event(AUTHORISED, order_id="no-such-order", intent_id=unpaid.intent_id)
    foreign = event(AUTHORISED, unpaid, intent_id=other_intent.intent_id)  # names our order, not our intent
    foreign_failure = event(FAILED, unpaid, intent_id=other_intent.intent_id)
    no_order = event(AUTHORISED, intent_id=unpaid.intent_id)  # an intent whose metadata names no order
    for evt in (unknown, foreign, foreign_failure, no_order):
        service.apply_event(evt)
    for kind, fields in EVENT_FIELDS.items():  # each kind the shop acts on, about another order's intent or nobody's
        service.apply_event(event(kind, unpaid, intent_id=other_intent.intent_id, **fields))
        service.apply_event(event(kind, order_id="no-such-order", intent_id=unpaid.intent_id, **fields))
    assert unchanged(store, before)

    # Archived: the order item is gone (its TTL), its marker stays (shop.services.archival).
    store.client.delete_item(
        TableName=store.table_name, Key={"PK": {"S": f"ORDER#{unpaid.order_id}"}, "SK": {"S": "ORDER"}}
    )
    archived = dump(store)
    for kind, fields in EVENT_FIELDS.items():
        service.apply_event(event(kind, unpaid, **fields))
    assert unchanged(store, archived)
    assert order_item(store, unpaid.order_id) is None
    assert stock(store.table, pid) == 3  # no release for an order that is not there


def test_an_event_read_before_a_concurrent_change_is_applied_to_the_order_as_it_is_now(
    store, fake_provider, monkeypatch
):
    """The order changed between the rule's read and its transaction (the version moved): the rule reads again."""
    _, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    real_current = service.store.current
    reads = []

    def current_then_cancelled(order_id, **kwargs):
        order = real_current(order_id, **kwargs)
        if not reads:  # the customer cancels right after the rule's first read
            wiring.order_service(store.table).cancel(ALICE, order_id)
        reads.append(order)
        return order

    monkeypatch.setattr(service.store, "current", current_then_cancelled)
    fake_provider.authorise(unpaid.intent_id)
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


def test_a_capture_while_the_provider_is_down_fails_and_records_nothing(store, fake_provider):
    _, unpaid, service = confirmed_paid(store, fake_provider)
    fake_provider.fail_next()

    with pytest.raises(errors.PaymentProviderUnavailable):
        service.capture(unpaid.order_id)

    assert order_item(store, unpaid.order_id)["payment"]["status"] == "AUTHORISED"
    assert service.capture(unpaid.order_id).action is StepAction.CAPTURED  # the retry
    assert service.capture(unpaid.order_id).action is StepAction.ALREADY_DONE  # a replay
    assert [key for op, key in fake_provider.calls if op == "capture"] == [f"shop-order-{unpaid.order_id}-capture"] * 2


def test_a_refund_waits_for_its_capture_to_be_recorded(store, fake_provider):
    _, unpaid, service = confirmed_paid(store, fake_provider)

    with pytest.raises(errors.ServiceUnavailable):
        service.refund(unpaid.order_id, version=6, returned_at="2026-01-01T00:00:00Z")

    assert [op for op, _ in fake_provider.calls if op == "refund"] == []


def test_a_cancel_the_provider_refuses_on_a_captured_intent_is_surfaced_not_swallowed(store, fake_provider):
    _, unpaid = unpaid_kettles(store, fake_provider)
    fake_provider.authorise(unpaid.intent_id)
    fake_provider.capture(unpaid.intent_id, idempotency_key="captured-by-hand")  # outside the shop (the dashboard)
    wiring.order_service(store.table).cancel(ALICE, unpaid.order_id)
    service = wiring.payment_service(store.table, provider=fake_provider)

    with pytest.raises(errors.PaymentRejected):  # the money was taken: a person must refund it
        service.cancel(unpaid.order_id)

    assert order_item(store, unpaid.order_id)["payment"]["status"] == "REQUIRES_PAYMENT"


def test_an_unpaid_order_cancelled_gives_its_stock_back_and_closes_its_intent(store, fake_provider):
    pid, unpaid = unpaid_kettles(store, fake_provider)

    wiring.order_service(store.table).cancel(ALICE, unpaid.order_id)  # the customer's cancel, as before payments
    assert order_item(store, unpaid.order_id)["status"] == "CANCELLED"  # off the PENDING_PAYMENT shards: unswept
    assert stock(store.table, pid) == 5
    # the CANCELLED record's step
    step = wiring.payment_service(store.table, provider=fake_provider).cancel(unpaid.order_id)

    assert step.action is StepAction.CANCELLED
    assert fake_provider.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert order_item(store, unpaid.order_id)["payment"]["status"] == "CANCELED"


def test_the_window_closing_expires_an_unpaid_order_whatever_its_payment_shows(store, fake_provider):
    """An order whose intent was never written (a checkout that died before the provider answered) still
    expires: its stock must not stay held."""
    pid, unpaid = unpaid_kettles(store, fake_provider)
    store.client.update_item(
        TableName=store.table_name,
        Key={"PK": {"S": f"ORDER#{unpaid.order_id}"}, "SK": {"S": "ORDER"}},
        UpdateExpression="REMOVE payment.intent_id, payment.client_secret",
    )
    service = wiring.payment_service(store.table, provider=fake_provider)

    assert service.expire(unpaid.order_id).action is StepAction.EXPIRED
    assert service.expire(unpaid.order_id).action is StepAction.SKIPPED  # a replay

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("EXPIRED", 2, "REQUIRES_PAYMENT")
    assert stock(store.table, pid) == 5
    assert [op for op, _ in fake_provider.calls if op in ("get_intent", "cancel")] == []


def test_an_event_whose_intent_is_not_the_orders_is_refused_by_the_write_itself(store, fake_provider, monkeypatch):
    """The order read before its intent was attached (a half-done checkout): the event's intent passes the read's
    check, but the conditional update finds another intent on the order by then and writes nothing."""
    _, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    read = service.store.current(unpaid.order_id)
    assert read is not None
    assert read.payment is not None
    half_done = read.model_copy(update={"payment": read.payment.model_copy(update={"intent_id": None})})
    monkeypatch.setattr(service.store, "current", lambda order_id, **kwargs: half_done)
    other = fake_provider.create_intent(unpaid.order_id, unpaid.total_cents, "eur", idempotency_key="k-second-intent")
    # the provider holds the order's amount on it: only the write can refuse it
    fake_provider.authorise(other.intent_id)
    before = dump(store)

    with pytest.raises(errors.ServiceUnavailable):  # refused on every attempt: the order is not this intent's
        service.apply_event(event(AUTHORISED, unpaid, intent_id=other.intent_id))

    assert unchanged(store, before)


def test_a_sweep_that_listed_an_order_before_the_webhook_settled_it_reads_once_and_writes_nothing(store, fake_provider):
    """The sweep lists PENDING_PAYMENT orders from the index, which the webhook may settle a moment later: its step
    looks once (eventually consistent) and skips the settled order, for the confirmed and the failed alike."""
    _, paid = unpaid_kettles(store, fake_provider)
    _, failed = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    fake_provider.authorise(paid.intent_id)
    service.apply_event(event(AUTHORISED, paid))
    fake_provider.cancel(failed.intent_id, idempotency_key="stripe-dashboard")
    service.apply_event(event(CANCELED, failed))
    before, asked = dump(store), len(fake_provider.calls)

    assert service.expire(paid.order_id).action is StepAction.SKIPPED
    assert service.expire(failed.order_id).action is StepAction.SKIPPED

    assert unchanged(store, before)
    assert [op for op, _ in fake_provider.calls[asked:] if op in ("get_intent", "cancel")] == []


def test_an_authorisation_for_an_expired_order_whose_cancel_failed_releases_the_money(
    store, fake_provider, monkeypatch
):
    """The window closed (EXPIRED, stock back) but its cancel at the provider failed; the customer then paid: the
    authorisation's delivery finds a dead order and cancels the intent itself, once."""
    pid, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    real_cancel = fake_provider.cancel

    def down(*args, **kwargs):
        raise errors.PaymentProviderUnavailable("payment provider unavailable")

    monkeypatch.setattr(fake_provider, "cancel", down)
    with pytest.raises(errors.PaymentProviderUnavailable):
        service.expire(unpaid.order_id)
    monkeypatch.setattr(fake_provider, "cancel", real_cancel)
    assert order_item(store, unpaid.order_id)["status"] == "EXPIRED"
    fake_provider.authorise(unpaid.intent_id)

    authorised = event(AUTHORISED, unpaid)
    service.apply_event(authorised)
    after = dump(store)
    service.apply_event(authorised)  # redelivered

    expired = order_item(store, unpaid.order_id)
    assert (expired["status"], expired["payment"]["status"]) == ("EXPIRED", "CANCELED")
    assert fake_provider.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert stock(store.table, pid) == 5
    assert unchanged(store, after)


# -- the new event kinds (issue 39): each delivered five times, out of order, with the shop's own steps ---------
#
# Sequential here, so every interleaving named is the one run; the same kinds concurrently (threads):
# tests/payments/test_payment_stream.py. The order's writes are read from the table's stream: each state is
# written at most once, and no later write goes back to an earlier state.


def order_images(reader: StreamReader, order_id: str) -> list[dict[str, Any]]:
    """The order item's new images among the stream's new records, in order."""
    key = {"PK": {"S": f"ORDER#{order_id}"}, "SK": {"S": "ORDER"}}
    return [
        from_item(r["dynamodb"]["NewImage"])
        for r in reader.read()
        if r["eventName"] == "MODIFY" and r["dynamodb"]["Keys"] == key
    ]


def five_times_shuffled(*events: Any, seed: int = 39) -> list[Any]:
    deliveries = [e for e in events for _ in range(5)]
    random.Random(seed).shuffle(deliveries)
    return deliveries


@pytest.mark.dynamodb_semantics
def test_failed_attempts_delivered_five_times_out_of_order_record_the_latest_once(store, fake_provider):
    pid, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    reader = StreamReader(store)
    reader.read()  # the placement's records
    now = clock.epoch(clock.now())
    attempts = [
        event(FAILED, unpaid, created=now + offset, failure_code=code)
        for offset, code in ((0, "card_declined"), (10, "expired_card"), (20, "insufficient_funds"))
    ]

    for delivered in five_times_shuffled(*attempts):
        service.apply_event(delivered)

    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], stock(store.table, pid)) == ("PENDING_PAYMENT", 1, 3)
    assert after["payment"]["last_failure"] == {"code": "insufficient_funds", "at": clock.iso_from_epoch(now + 20)}
    recorded = [image["payment"]["last_failure"]["at"] for image in order_images(reader, unpaid.order_id)]
    assert 1 <= len(recorded) <= 3  # at most once per attempt, of fifteen deliveries
    assert recorded == sorted(set(recorded))  # never an older attempt over a newer one
    assert recorded[-1] == clock.iso_from_epoch(now + 20)

    # The intent is cancelled at the provider; its event comes five times among the attempts delivered again.
    fake_provider.cancel(unpaid.intent_id, idempotency_key="stripe-dashboard")
    for delivered in five_times_shuffled(event(CANCELED, unpaid), *attempts, seed=40):
        service.apply_event(delivered)

    (failed,) = order_images(reader, unpaid.order_id)  # one write: the order failed; no attempt after it
    assert (failed["status"], failed["version"], failed["payment"]["status"]) == ("PAYMENT_FAILED", 2, "CANCELED")
    assert stock(store.table, pid) == 5  # released once


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("first", ["provider_cancel", "window_expiry", "customer_cancel"])
def test_a_cancelled_intent_delivered_five_times_around_the_expiry_and_the_customers_cancel_releases_once(
    store, fake_provider, first
):
    """The intent cancelled at the provider while the window closes and the customer cancels: whichever comes
    first settles the order (PAYMENT_FAILED, EXPIRED or CANCELLED), its stock back once; the rest change nothing."""
    pid, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    orders = wiring.order_service(store.table)
    reader = StreamReader(store)
    reader.read()
    fake_provider.cancel(unpaid.intent_id, idempotency_key="stripe-dashboard")
    cancelled = event(CANCELED, unpaid)

    def customer_cancel() -> None:
        with contextlib.suppress(errors.DomainError):  # the order is over already: refused, nothing written
            orders.cancel(ALICE, unpaid.order_id)

    steps = {
        "provider_cancel": lambda: service.apply_event(cancelled),
        "window_expiry": lambda: service.expire(unpaid.order_id),
        "customer_cancel": customer_cancel,
    }
    steps[first]()
    rest = [*(["provider_cancel"] * 5), "window_expiry", "customer_cancel", "window_expiry"]
    random.Random(first).shuffle(rest)
    for name in rest:
        steps[name]()
    service.cancel(unpaid.order_id)  # the dead order's CANCEL step (its record's), replayed
    service.cancel(unpaid.order_id)

    expected = {"provider_cancel": "PAYMENT_FAILED", "window_expiry": "EXPIRED", "customer_cancel": "CANCELLED"}
    after = order_item(store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == (expected[first], 2, "CANCELED")
    assert stock(store.table, pid) == 5  # released once
    statuses = [image["status"] for image in order_images(reader, unpaid.order_id)]
    assert statuses[0] == expected[first]
    assert set(statuses) == {expected[first]}  # one status change; later writes only record the payment
    assert len(statuses) <= 2  # the change, and at most the CANCELED record of the shop's own cancel step


@pytest.mark.dynamodb_semantics
def test_a_lapse_delivered_five_times_with_the_authorisation_is_recorded_once_and_the_capture_takes_nothing(
    store, fake_provider
):
    _, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    fake_provider.authorise(unpaid.intent_id)
    authorised = event(AUTHORISED, unpaid)
    service.apply_event(authorised)
    reader = StreamReader(store)
    reader.read()
    fake_provider.lapse(unpaid.intent_id)  # Stripe lets the uncaptured authorisation go (about 7 days)

    for delivered in five_times_shuffled(event(CANCELED, unpaid), authorised):  # the authorisation redelivered too
        service.apply_event(delivered)
    asked = len(fake_provider.calls)
    assert service.capture(unpaid.order_id).action is StepAction.SKIPPED  # the shipping record's step

    (lapsed,) = order_images(reader, unpaid.order_id)  # one write of ten deliveries
    assert (lapsed["status"], lapsed["version"], lapsed["payment"]["status"]) == ("CONFIRMED", 2, "LAPSED")
    assert "captured_cents" not in lapsed["payment"]
    assert fake_provider.calls[asked:] == []  # nothing held: the capture asks nothing


@pytest.mark.dynamodb_semantics
def test_a_lapse_delivered_before_the_authorisation_fails_the_waiting_order_and_holds_no_money(store, fake_provider):
    """Out of order: the authorisation's event is late, the lapse's cancel comes first. The order waits, so the
    cancel fails it (stock back); the authorisation, five times, finds a dead order whose intent is cancelled."""
    pid, unpaid = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    fake_provider.authorise(unpaid.intent_id)
    fake_provider.lapse(unpaid.intent_id)
    reader = StreamReader(store)
    reader.read()

    for delivered in [
        event(CANCELED, unpaid),
        *five_times_shuffled(event(AUTHORISED, unpaid), event(CANCELED, unpaid)),
    ]:
        service.apply_event(delivered)

    (failed,) = order_images(reader, unpaid.order_id)
    assert (failed["status"], failed["version"], failed["payment"]["status"]) == ("PAYMENT_FAILED", 2, "CANCELED")
    assert stock(store.table, pid) == 5
    # nothing to release: the provider's record says so
    assert [op for op, _ in fake_provider.calls].count("cancel") == 0


def captured_kettles(store, fake) -> tuple[Any, Any]:
    """A confirmed, captured order of two kettles (5,000 cents) and its rules."""
    _, unpaid = unpaid_kettles(store, fake)
    service = wiring.payment_service(store.table, provider=fake)
    fake.authorise(unpaid.intent_id)
    service.apply_event(event(AUTHORISED, unpaid))
    assert service.capture(unpaid.order_id).action is StepAction.CAPTURED
    return unpaid, service


@pytest.mark.dynamodb_semantics
def test_dashboard_refunds_reported_five_times_out_of_order_raise_the_record_never_above_the_capture(
    store, fake_provider
):
    unpaid, service = captured_kettles(store, fake_provider)
    reader = StreamReader(store)
    reader.read()
    now = clock.epoch(clock.now())
    fake_provider.dashboard_refund(unpaid.intent_id, 1000)
    fake_provider.dashboard_refund(unpaid.intent_id, 1500)
    reports = [
        event(REFUNDED, order_id=None, intent_id=unpaid.intent_id, created=now, amount_refunded_cents=1000),
        event(REFUNDED, order_id=None, intent_id=unpaid.intent_id, created=now + 5, amount_refunded_cents=2500),
    ]

    for delivered in five_times_shuffled(*reports):
        service.apply_event(delivered)

    assert order_item(store, unpaid.order_id)["payment"]["refunded_cents"] == 2500
    # The return refunds only what is left; the report of that refund, five times, changes nothing.
    outcome = service.refund(unpaid.order_id, version=6, returned_at=clock.iso(clock.now()))
    assert [e.detail["amount_cents"] for e in outcome.events] == [2500]
    full = event(REFUNDED, order_id=None, intent_id=unpaid.intent_id, created=now + 9, amount_refunded_cents=5000)
    for delivered in five_times_shuffled(full, *reports, seed=41):
        service.apply_event(delivered)

    payment = order_item(store, unpaid.order_id)["payment"]
    assert (payment["refunded_cents"], payment["return_refunded_cents"], payment["captured_cents"]) == (
        5000,
        2500,
        5000,
    )
    assert fake_provider.refunded_cents(unpaid.intent_id) == 5000
    refunded = [image["payment"]["refunded_cents"] for image in order_images(reader, unpaid.order_id)]
    assert refunded == sorted(set(refunded))  # only ever raised, each figure written once
    assert refunded[-1] == 5000
    assert len(refunded) <= 3


@pytest.mark.dynamodb_semantics
def test_dispute_reports_five_times_out_of_order_keep_the_latest(store, fake_provider):
    unpaid, service = captured_kettles(store, fake_provider)
    reader = StreamReader(store)
    reader.read()
    now = clock.epoch(clock.now())

    def report(kind: str, status: str, at: int) -> Any:
        return event(
            kind,
            order_id=None,
            intent_id=unpaid.intent_id,
            created=at,
            dispute_id="du_1",
            dispute_status=status,
            dispute_reason="fraudulent",
            dispute_amount_cents=5000,
        )

    reports = [
        report(DISPUTE_CREATED, "needs_response", now),
        report(DISPUTE_UPDATED, "under_review", now + 10),
        report(DISPUTE_CLOSED, "lost", now + 20),
        report(DISPUTE_UPDATED, "under_review", now + 20),  # at the closing's second: the closed status wins
    ]
    for delivered in five_times_shuffled(*reports):
        service.apply_event(delivered)

    payment = order_item(store, unpaid.order_id)["payment"]
    assert payment["dispute"] == {
        "dispute_id": "du_1",
        "status": "lost",
        "reason": "fraudulent",
        "amount_cents": 5000,
        "updated_at": clock.iso_from_epoch(now + 20),
    }
    assert (payment["status"], payment["captured_cents"]) == ("CAPTURED", 5000)  # the capture's record kept
    written = [
        (i["payment"]["dispute"]["updated_at"], i["payment"]["dispute"]["status"])
        for i in order_images(reader, unpaid.order_id)
    ]
    assert len(written) == len(set(written)) <= 4  # each report written at most once
    assert [at for at, _ in written] == sorted(at for at, _ in written)  # never an older report over a newer one
    assert written[-1] == (clock.iso_from_epoch(now + 20), "lost")


@pytest.mark.dynamodb_semantics
def test_a_refund_report_for_an_authorisation_released_uncaptured_records_nothing_and_is_answered(store, fake_provider):
    """Stripe API versions before 2025-03-31 report a released authorisation (the intent cancelled while
    requires_capture: the shop's cancel of a confirmed order, a lapse) as a refund of the whole charge. Nothing was
    captured, so nothing is recorded, and the delivery is answered 200: a 503 would have Stripe deliver it for three
    days for a capture that will never come. Only an AUTHORISED payment, whose capture may still be recorded, waits."""
    _, cancelled = unpaid_kettles(store, fake_provider)
    _, lapsing = unpaid_kettles(store, fake_provider)
    _, shipping = unpaid_kettles(store, fake_provider)
    service = wiring.payment_service(store.table, provider=fake_provider)
    for unpaid in (cancelled, lapsing, shipping):
        fake_provider.authorise(unpaid.intent_id)
        service.apply_event(event(AUTHORISED, unpaid))
    wiring.order_service(store.table).cancel(ALICE, cancelled.order_id)  # confirmed, then cancelled by its owner
    assert service.cancel(cancelled.order_id).action is StepAction.CANCELLED  # the CANCELLED record's step
    fake_provider.lapse(lapsing.intent_id)
    service.apply_event(event(CANCELED, lapsing))
    before = dump(store)

    for unpaid in (cancelled, lapsing):
        for _ in range(2):
            service.apply_event(event(REFUNDED, order_id=None, intent_id=unpaid.intent_id, amount_refunded_cents=5000))
    assert unchanged(store, before)
    assert [order_item(store, u.order_id)["payment"]["status"] for u in (cancelled, lapsing)] == ["CANCELED", "LAPSED"]

    with pytest.raises(errors.ServiceUnavailable):  # authorised, its capture not recorded yet: Stripe redelivers
        service.apply_event(event(REFUNDED, order_id=None, intent_id=shipping.intent_id, amount_refunded_cents=1000))
