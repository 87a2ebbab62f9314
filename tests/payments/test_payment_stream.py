"""The payment steps on DynamoDB Local's real stream records, through the functions as Lambda calls them.

payment_steps (functions/payment_steps) and order_events both read each batch, as the table's two consumers
do (each handler skips the records that are not its own, which the deployed mapping's filter also drops).
Where the provider matters the steps run on localstripe, whose objects are counted: localstripe ignores
idempotency keys, so one capture and one refund there are the shop's own conditions at work.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from local_runtime import failures
from local_runtime.events import stream_event
from local_runtime.localstripe import TEST_SECRET_KEY
from shop import clock, errors, keys, wiring
from shop.models import OrderStatus
from shop.models.payments import IntentStatus
from shop.repository.order_payments import OrderPaymentRepository
from shop.repository.store import from_item
from shop.services.payments import StepAction
from tests.payments.conftest import _stripe_authorise
from tests.stream.conftest import dump, order_events_context
from tests.support.factories import ADMIN, ALICE, parcel, product
from tests.support.fake_payments import FakePayments
from tests.support.recording_events import RecordingEvents
from tests.support.streams import StreamReader
from tests.support.unpaid_orders import (
    AUTHORISED,
    CANCELED,
    DISPUTE_CLOSED,
    DISPUTE_CREATED,
    DISPUTE_UPDATED,
    FAILED,
    REFUNDED,
    WINDOW_S,
    event,
    item,
    place_unpaid,
    stock,
)

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


class Counting:
    """The Payments port under test, with every call that returned (operation, idempotency key) recorded."""

    def __init__(self, port: Any) -> None:
        self.port = port
        self.made: list[tuple[str, str | None]] = []
        self.authorise: Any = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.port, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            answer = attr(*args, **kwargs)
            self.made.append((name, kwargs.get("idempotency_key")))
            return answer

        return call

    def count(self, operation: str) -> int:
        return sum(1 for made, _ in self.made if made == operation)


@pytest.fixture
def stripe(localstripe: Any, monkeypatch: pytest.MonkeyPatch) -> Counting:
    """The Stripe adapter on localstripe, counted, as the functions' provider; `authorise` is the browser's."""
    from shop.payments.stripe_adapter import StripePayments

    port = Counting(StripePayments(TEST_SECRET_KEY, api_base=localstripe.endpoint))
    port.authorise = _stripe_authorise(localstripe)
    provided(monkeypatch, port)
    return port


def provided(monkeypatch: pytest.MonkeyPatch, port: Any) -> None:
    """The functions' `wiring.payments()` is `port` (what PAYMENTS=stripe builds from the environment)."""
    monkeypatch.setattr(wiring, "payments", lambda: port)


def run_order_events(records: list[dict[str, Any]]) -> dict[str, Any]:
    from functions.order_events.handler import handler

    return handler(stream_event(records), order_events_context())


def run_payment_steps(records: list[dict[str, Any]]) -> dict[str, Any]:
    from functions.payment_steps.handler import handler

    return handler(stream_event(records), order_events_context())


def consume(reader: StreamReader) -> list[dict[str, Any]]:
    """The new records, through both consumers (each must take the whole batch)."""
    records = reader.read()
    assert run_order_events(records) == {"batchItemFailures": []}
    assert run_payment_steps(records) == {"batchItemFailures": []}
    return records


def order_of(store: Any, order_id: str) -> dict[str, Any]:
    found = item(store.table, keys.order_key(order_id))
    assert found is not None
    return found


def order_writes(records: list[dict[str, Any]], order_id: str) -> list[dict[str, Any]]:
    """The records of the order item's changes (its new images, as the stream's view type gives them)."""
    key = {"PK": {"S": f"ORDER#{order_id}"}, "SK": {"S": "ORDER"}}
    return [r["dynamodb"]["NewImage"] for r in records if r["eventName"] == "MODIFY" and r["dynamodb"]["Keys"] == key]


def units_sold(store: Any, product_id: str) -> int:
    """The product's sales over every day (its sales items: PK SALES#..., read whole)."""
    day = time.strftime("%Y-%m-%d", time.gmtime())
    sales = wiring.sales_service(store.table).product_sales(ADMIN, product_id, day, day)
    return sum(d.units for d in sales.days)


# -- the webhook under concurrent deliveries -------------------------------------------------------


@pytest.mark.parametrize("event_type", [AUTHORISED, CANCELED, FAILED])
def test_five_concurrent_deliveries_of_one_event_apply_it_once(local_store, recorded_bus, event_type, monkeypatch):
    fake = FakePayments()
    provided(monkeypatch, fake)  # the PAYMENT_FAILED version's CANCEL step
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 2)])
    reader = StreamReader(local_store)
    consume(reader)  # the placement: nothing to do for either consumer
    if event_type == AUTHORISED:
        fake.authorise(unpaid.intent_id)  # the browser: the provider holds the amount the event announces
    elif event_type == CANCELED:
        fake.cancel(unpaid.intent_id, idempotency_key="stripe-dashboard")  # cancelled at the provider
    delivered = (
        event(event_type, unpaid, failure_code="card_declined") if event_type == FAILED else event(event_type, unpaid)
    )
    start, raised = threading.Barrier(5), []

    def deliver() -> None:
        service = wiring.payment_service(local_store.table, provider=fake)  # each delivery its own invocation
        start.wait()
        try:
            service.apply_event(delivered)
        except Exception as error:
            raised.append(error)

    threads = [threading.Thread(target=deliver) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [e for e in raised if not isinstance(e, errors.ServiceUnavailable)] == []  # a 503 at most: redelivered
    after = order_of(local_store, unpaid.order_id)
    if event_type == AUTHORISED:
        assert (after["status"], after["version"]) == ("CONFIRMED", 2)
        assert stock(local_store.table, pid) == 3
    elif event_type == CANCELED:
        assert (after["status"], after["version"], after["payment"]["status"]) == ("PAYMENT_FAILED", 2, "CANCELED")
        assert stock(local_store.table, pid) == 5  # released once, not five times
    else:  # one failed attempt: recorded, the order keeps waiting with its stock
        assert (after["status"], after["version"]) == ("PENDING_PAYMENT", 1)
        assert after["payment"]["last_failure"]["code"] == "card_declined"
        assert stock(local_store.table, pid) == 3
    records = consume(reader)
    assert len(order_writes(records, unpaid.order_id)) == 1  # one write of the order of the five deliveries
    assert run_order_events(records) == {"batchItemFailures": []}  # the batch again: a replay
    assert units_sold(local_store, pid) == (2 if event_type == AUTHORISED else 0)  # counted once
    if event_type == CANCELED:  # the failed order's intent is cancelled, so no later authorisation holds money
        assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
        assert [op for op, _ in fake.calls].count("cancel") == 1  # the provider's: the CANCEL step finds it recorded
    if event_type == FAILED:
        # an attempt publishes nothing
        assert [e for e in recorded_bus.events if e["id"].startswith(unpaid.order_id)] == []
    else:
        kind = "OrderConfirmed" if event_type == AUTHORISED else "OrderStatusChanged"
        # one change, one id
        assert {e["id"] for e in recorded_bus.events if e["type"] == kind} == {f"{unpaid.order_id}:2"}


def test_an_authorisation_racing_a_failure_leaves_one_outcome_and_no_money_held(local_store, recorded_bus, monkeypatch):
    """Five deliveries of each, all at once: the order ends CONFIRMED with its stock taken, or PAYMENT_FAILED with
    its stock back once and its intent cancelled (the authorisation that lost released the money)."""
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 2)])
    fake.authorise(unpaid.intent_id)
    authorised, failed = event(AUTHORISED, unpaid), event(FAILED, unpaid)
    start, raised = threading.Barrier(10), []

    def deliver(delivered: Any) -> None:
        service = wiring.payment_service(local_store.table, provider=fake)
        start.wait()
        for _ in range(3):  # Stripe redelivers after a 503
            try:
                service.apply_event(delivered)
                return
            except errors.ServiceUnavailable as error:
                raised.append(error)

    threads = [threading.Thread(target=deliver, args=(e,)) for e in [authorised, failed] * 5]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    after = order_of(local_store, unpaid.order_id)
    assert after["version"] == 2
    if after["status"] == "CONFIRMED":
        assert stock(local_store.table, pid) == 3
        assert fake.get_intent(unpaid.intent_id).status is IntentStatus.REQUIRES_CAPTURE
    else:
        assert after["status"] == "PAYMENT_FAILED"
        assert stock(local_store.table, pid) == 5
        assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    settled = dump(local_store)
    assert not [i for i in settled if i["PK"].startswith("WEBHOOK_EVENT#")]  # the order's state is the guard
    for delivered in (failed, authorised):  # each delivered again later (reordered): nothing more happens
        wiring.payment_service(local_store.table, provider=fake).apply_event(delivered)
    assert dump(local_store) == settled


# -- a paid order's life on localstripe ------------------------------------------------------------


def test_a_paid_orders_life_captures_once_and_refunds_once_whatever_the_replays(local_store, stripe, recorded_bus):
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, stripe, [(pid, "Kettle", 2500, 2)])
    reader = StreamReader(local_store)
    orders = wiring.order_service(local_store.table)

    stripe.authorise(unpaid.intent_id, "pm_card_visa")  # the browser; localstripe announces nothing (docs/payments.md)
    wiring.payment_service(local_store.table).apply_event(event(AUTHORISED, unpaid))
    consume(reader)
    assert units_sold(local_store, pid) == 2

    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    shipped = consume(reader)
    assert run_payment_steps(shipped) == {"batchItemFailures": []}  # replayed
    assert run_payment_steps(shipped) == {"batchItemFailures": []}
    payment = order_of(local_store, unpaid.order_id)["payment"]
    assert (payment["status"], payment["captured_cents"]) == ("CAPTURED", 5000)
    assert stripe.count("capture") == 1
    assert stripe.port.get_intent(unpaid.intent_id).status is IntentStatus.SUCCEEDED

    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.DELIVERED, expected_version=3)
    orders.request_return(ALICE, unpaid.order_id, "too loud")
    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.RETURNED, expected_version=5)
    returned = consume(reader)
    assert run_payment_steps(returned) == {"batchItemFailures": []}  # replayed

    refunds = stripe.port.refunds(unpaid.intent_id)
    assert [r.amount_cents for r in refunds] == [5000]
    assert order_of(local_store, unpaid.order_id)["payment"]["refunded_cents"] == 5000
    kinds = [e["type"] for e in recorded_bus.events]
    assert "OrderRefundDue" not in kinds
    refunded = [e for e in recorded_bus.events if e["type"] == "OrderRefunded"]
    assert {(e["id"], e["amount_cents"], e["currency"]) for e in refunded} == {(f"{unpaid.order_id}:6", 5000, "eur")}
    assert stock(local_store.table, pid) == 5  # the return put it back
    assert units_sold(local_store, pid) == 0  # and took the sale back


def crash_once_after_the_provider(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The next record of a step's outcome dies (the function crashed after the provider's call)."""
    crashed: list[str] = []
    real = OrderPaymentRepository.record_payment

    def record_payment(self: OrderPaymentRepository, order_id: str, **kwargs: Any) -> bool:
        if not crashed:
            crashed.append(order_id)
            raise errors.ServiceUnavailable("the function died here")
        return real(self, order_id, **kwargs)

    monkeypatch.setattr(OrderPaymentRepository, "record_payment", record_payment)
    return crashed


def test_a_crash_between_the_provider_and_the_record_captures_and_refunds_once(
    local_store, stripe, recorded_bus, monkeypatch
):
    pid = product(local_store.table, name="Kettle", price_cents=1999, stock=5)
    unpaid = place_unpaid(local_store.table, stripe, [(pid, "Kettle", 1999, 1)])
    reader = StreamReader(local_store)
    orders = wiring.order_service(local_store.table)
    stripe.authorise(unpaid.intent_id, "pm_card_visa")
    wiring.payment_service(local_store.table).apply_event(event(AUTHORISED, unpaid))
    consume(reader)

    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    shipped = reader.read()
    crashed = crash_once_after_the_provider(monkeypatch)
    failed = run_payment_steps(shipped)
    assert crashed == [unpaid.order_id]
    assert len(failed["batchItemFailures"]) == 1
    assert order_of(local_store, unpaid.order_id)["payment"]["status"] == "AUTHORISED"  # captured, not recorded
    assert run_payment_steps(shipped) == {"batchItemFailures": []}  # the stream's retry: the same keyed call
    assert order_of(local_store, unpaid.order_id)["payment"]["status"] == "CAPTURED"
    assert stripe.count("capture") == 1  # localstripe refused the second capture: the intent says it is done
    assert run_order_events(shipped) == {"batchItemFailures": []}

    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.DELIVERED, expected_version=3)
    orders.request_return(ALICE, unpaid.order_id, "broken")
    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.RETURNED, expected_version=5)
    returned = reader.read()
    crashed = crash_once_after_the_provider(monkeypatch)
    assert len(run_payment_steps(returned)["batchItemFailures"]) == 1
    assert run_payment_steps(returned) == {"batchItemFailures": []}
    assert [r.amount_cents for r in stripe.port.refunds(unpaid.intent_id)] == [1999]  # one refund, right amount
    assert order_of(local_store, unpaid.order_id)["payment"]["refunded_cents"] == 1999


def kept_then_replayed(
    folder: Any, records: list[dict[str, Any]]
) -> tuple[failures.DirectoryStore, str, failures.ReplayReport]:
    """The batch the mapping gave up (its retries exhausted), kept as its on-failure destination keeps it (the local
    poller's shape), then `make replay`'s work on it: sent to payment_steps, the consumer that gave it up."""
    kept = failures.DirectoryStore(folder)
    key = failures.object_key("PaymentStepsMapping", "shard-0", dt.datetime.now(dt.UTC))
    kept.write(key, {"version": "1.0", "payload": json.dumps(stream_event(records))})

    def invoke(event_: dict[str, Any]) -> failures.Outcome:
        return failures.Outcome(ok=True, payload=run_payment_steps(event_["Records"]))

    def wrong_consumer(event_: dict[str, Any]) -> failures.Outcome:
        raise AssertionError("a payment_steps batch replayed through order_events")

    return kept, key, failures.replay(kept, wrong_consumer, routes={"PaymentStepsMapping": invoke})


def test_a_step_that_keeps_failing_is_kept_in_the_failure_store_and_replay_applies_it(
    local_store, recorded_bus, monkeypatch, tmp_path
):
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 1)])
    reader = StreamReader(local_store)
    fake.authorise(unpaid.intent_id)
    wiring.payment_service(local_store.table).apply_event(event(AUTHORISED, unpaid))
    consume(reader)
    wiring.order_service(local_store.table).change_status(
        ADMIN, unpaid.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel()
    )
    shipped = reader.read()
    assert run_order_events(shipped) == {"batchItemFailures": []}

    fake.fail_next(3)  # the provider is down for every retry the mapping makes
    for _ in range(3):
        assert len(run_payment_steps(shipped)["batchItemFailures"]) == 1
    assert order_of(local_store, unpaid.order_id)["payment"]["status"] == "AUTHORISED"
    kept, key, report = kept_then_replayed(tmp_path, shipped)

    assert (report.replayed, report.failed) == ([key], [])
    assert order_of(local_store, unpaid.order_id)["payment"]["status"] == "CAPTURED"
    assert fake.captured_cents(unpaid.intent_id) == 2500
    assert list(kept.object_keys()) == []  # moved to replayed/


# -- expiry by the windows' sweep --------------------------------------------------------------------


def sweep_after_the_window(store: Any, provider: Any) -> list[StepAction]:
    """One run of the windows' sweep (payment_steps' schedule), its clock past the payment window."""
    later = clock.now() + dt.timedelta(seconds=WINDOW_S + 5)
    return [step.action for step in wiring.payment_service(store.table, provider=provider, now=lambda: later).sweep()]


def test_an_unpaid_order_expires_by_the_sweep_with_its_stock_back_and_its_intent_cancelled(
    local_store, stripe, recorded_bus
):
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, stripe, [(pid, "Kettle", 2500, 3)])
    reader = StreamReader(local_store)
    consume(reader)
    assert stock(local_store.table, pid) == 2

    assert sweep_after_the_window(local_store, stripe) == [StepAction.EXPIRED]
    assert sweep_after_the_window(local_store, stripe) == []  # again: nothing more

    after = order_of(local_store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("EXPIRED", 2, "CANCELED")
    assert stock(local_store.table, pid) == 5
    assert stripe.port.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert stripe.count("cancel") == 1
    consume(reader)  # the EXPIRED version: order_events publishes OrderExpired, the CANCEL step finds it done
    expired = [e for e in recorded_bus.events if e["type"] == "OrderExpired"]
    assert [(e["id"], e["total_cents"]) for e in expired] == [(f"{unpaid.order_id}:2", 7500)]
    assert stripe.count("cancel") == 1
    assert units_sold(local_store, pid) == 0


def test_an_order_whose_intent_is_authorised_when_the_window_closes_is_confirmed(local_store, stripe, recorded_bus):
    """The authorisation's event was lost (or, locally, never sent): the intent says the money is held."""
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, stripe, [(pid, "Kettle", 2500, 1)])
    reader = StreamReader(local_store)
    consume(reader)
    stripe.authorise(unpaid.intent_id, "pm_card_visa")

    assert sweep_after_the_window(local_store, stripe) == [StepAction.CONFIRMED]

    after = order_of(local_store, unpaid.order_id)
    assert (after["status"], after["payment"]["status"]) == ("CONFIRMED", "AUTHORISED")
    assert stock(local_store.table, pid) == 4
    assert stripe.port.get_intent(unpaid.intent_id).status is IntentStatus.REQUIRES_CAPTURE
    consume(reader)
    assert units_sold(local_store, pid) == 1  # PENDING_PAYMENT -> CONFIRMED counted, once
    assert [e["type"] for e in recorded_bus.events].count("OrderConfirmed") == 1


def test_a_window_closing_after_the_order_was_paid_costs_nothing(local_store, recorded_bus, monkeypatch):
    """A settled order (confirmed or failed) has left the PENDING_PAYMENT shards: the sweep after its window
    neither reads it nor asks the provider, and a paid order's life holds no window item at all."""
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 1)])
    failed = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 1)])
    reader = StreamReader(local_store)
    fake.authorise(unpaid.intent_id)
    wiring.payment_service(local_store.table).apply_event(event(AUTHORISED, unpaid))
    fake.cancel(failed.intent_id, idempotency_key="stripe-dashboard")
    wiring.payment_service(local_store.table).apply_event(event(CANCELED, failed))
    consume(reader)  # the confirmation's and the failure's effects; the failed order's CANCEL step
    cancels, asked = [call for call, _ in fake.calls].count("cancel"), len(fake.calls)
    before = [order_of(local_store, o.order_id) for o in (unpaid, failed)]
    assert sweep_after_the_window(local_store, fake) == []
    assert [order_of(local_store, o.order_id) for o in (unpaid, failed)] == before
    assert stock(local_store.table, pid) == 4  # the failed order's unit back once, the paid one's still taken
    assert [call for call, _ in fake.calls].count("cancel") == cancels == 1  # the failed order's, at its failure
    assert fake.calls[asked:] == []  # the sweep asked the provider nothing
    assert not [item for item in dump(local_store) if item.get("entity") == "ORDER_PAYMENT_DUE"]  # no window item


# -- the new event kinds (issue 39) concurrently with the shop's own steps: real threads on DynamoDB Local ------
#
# Each event is delivered five times, its deliveries shuffled, all at once with one of the shop's steps (the
# window's expiry, the customer's cancel, the capture step). Stripe redelivers after a 503, so a delivery answered
# 503 is delivered again. The same kinds delivered in sequence: tests/payments/test_payment_rules.py.


def at_once(*steps: Callable[[], Any]) -> list[Exception]:
    """Runs every step in its own thread, released together; what they raised."""
    start, raised = threading.Barrier(len(steps)), []

    def run(step: Callable[[], Any]) -> None:
        start.wait()
        try:
            step()
        except Exception as error:
            raised.append(error)

    threads = [threading.Thread(target=run, args=(step,)) for step in steps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return raised


def delivery(store: Any, fake: Any, delivered: Any, refused: threading.Event | None = None) -> Callable[[], None]:
    """One of Stripe's deliveries of `delivered`, to its own invocation, delivered again after each 503."""

    def deliver() -> None:
        service = wiring.payment_service(store.table, provider=fake)
        for _ in range(200):
            try:
                service.apply_event(delivered)
                return
            except errors.ServiceUnavailable:
                if refused is not None:
                    refused.set()
                time.sleep(0.01)
        raise AssertionError("never applied")

    return deliver


def five_each(*events: Any, seed: int = 39) -> list[Any]:
    deliveries = [e for e in events for _ in range(5)]
    random.Random(seed).shuffle(deliveries)
    return deliveries


def images(records: list[dict[str, Any]], order_id: str) -> list[dict[str, Any]]:
    return [from_item(image) for image in order_writes(records, order_id)]


def about(bus: RecordingEvents, order_id: str, kind: str) -> list[dict[str, Any]]:
    return [e for e in bus.events if e["type"] == kind and e.get("order_id") == order_id]


def paid_and_shipped(store: Any, fake: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, StreamReader, list[Any]]:
    """A confirmed order of two kettles (5,000 cents), shipped: its SHIPPED records, the capture step's to run."""
    provided(monkeypatch, fake)
    pid = product(store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(store.table, fake, [(pid, "Kettle", 2500, 2)])
    reader = StreamReader(store)
    fake.authorise(unpaid.intent_id)
    wiring.payment_service(store.table, provider=fake).apply_event(event(AUTHORISED, unpaid))
    consume(reader)
    wiring.order_service(store.table).change_status(
        ADMIN, unpaid.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel()
    )
    shipped = reader.read()
    assert run_order_events(shipped) == {"batchItemFailures": []}
    return unpaid, reader, shipped


@pytest.mark.dynamodb_semantics
def test_failed_attempts_racing_the_windows_expiry_expire_the_order_once(local_store, recorded_bus, monkeypatch):
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 2)])
    reader = StreamReader(local_store)
    consume(reader)
    now = clock.epoch(clock.now())
    attempts = [event(FAILED, unpaid, created=now + i, failure_code=f"decline_{i}") for i in range(3)]

    def window_closes() -> None:  # the windows' sweep's step on the order
        wiring.payment_service(local_store.table, provider=fake).expire(unpaid.order_id)

    raised = at_once(window_closes, *(delivery(local_store, fake, e) for e in five_each(*attempts)))

    assert raised == []
    after = order_of(local_store, unpaid.order_id)
    assert (after["status"], after["version"], after["payment"]["status"]) == ("EXPIRED", 2, "CANCELED")
    assert stock(local_store.table, pid) == 5  # released once
    records = consume(reader)  # OrderExpired; the EXPIRED record's CANCEL step finds it recorded
    written = images(records, unpaid.order_id)
    expired_at = next(i for i, image in enumerate(written) if image["status"] == "EXPIRED")
    recorded = [image["payment"]["last_failure"]["at"] for image in written[:expired_at]]
    assert recorded == sorted(set(recorded))  # each attempt at most once, never an older one over a newer one
    assert all(
        image["payment"].get("last_failure") == written[expired_at]["payment"].get("last_failure")
        for image in written[expired_at:]
    )  # no attempt recorded once the order expired
    assert run_order_events(records) == {"batchItemFailures": []}  # replayed
    assert {e["id"] for e in about(recorded_bus, unpaid.order_id, "OrderExpired")} == {f"{unpaid.order_id}:2"}
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED
    assert [op for op, _ in fake.calls].count("cancel") == 1  # the expiry's, under the CANCEL key


@pytest.mark.dynamodb_semantics
def test_a_cancelled_intent_racing_the_customers_cancel_and_the_windows_expiry_releases_its_stock_once(
    local_store, recorded_bus, monkeypatch
):
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 2)])
    reader = StreamReader(local_store)
    consume(reader)
    fake.cancel(unpaid.intent_id, idempotency_key="stripe-dashboard")  # Stripe cancels it: its event follows
    cancelled = event(CANCELED, unpaid)

    def customer_cancels() -> None:
        with contextlib.suppress(errors.DomainError):  # over already: refused, nothing written
            wiring.order_service(local_store.table).cancel(ALICE, unpaid.order_id)

    def window_closes() -> None:
        wiring.payment_service(local_store.table, provider=fake).expire(unpaid.order_id)

    raised = at_once(customer_cancels, window_closes, *(delivery(local_store, fake, cancelled) for _ in range(5)))

    assert raised == []
    after = order_of(local_store, unpaid.order_id)
    assert after["status"] in ("PAYMENT_FAILED", "CANCELLED", "EXPIRED")
    assert after["version"] == 2  # one status change of the seven
    assert stock(local_store.table, pid) == 5  # released once, not up to seven times
    records = consume(reader)  # the dead order's CANCEL step: the intent is cancelled already
    assert len({image["status"] for image in images(records, unpaid.order_id)}) == 1
    assert run_order_events(records) == {"batchItemFailures": []}  # replayed
    assert run_payment_steps(records) == {"batchItemFailures": []}
    assert order_of(local_store, unpaid.order_id)["payment"]["status"] == "CANCELED"
    assert units_sold(local_store, pid) == 0
    assert {e["id"] for e in recorded_bus.events if e.get("order_id") == unpaid.order_id} == {f"{unpaid.order_id}:2"}


@pytest.mark.dynamodb_semantics
def test_a_lapse_racing_the_capture_step_is_recorded_once_and_nothing_is_captured(
    local_store, recorded_bus, monkeypatch
):
    fake = FakePayments()
    unpaid, reader, shipped = paid_and_shipped(local_store, fake, monkeypatch)
    fake.lapse(unpaid.intent_id)  # Stripe let the authorisation go before the capture reached it

    def capture_step() -> None:
        assert run_payment_steps(shipped) == {"batchItemFailures": []}

    lapse = event(CANCELED, unpaid)
    raised = at_once(capture_step, *(delivery(local_store, fake, lapse) for _ in range(5)))

    assert raised == []
    payment = order_of(local_store, unpaid.order_id)["payment"]
    assert payment["status"] == "LAPSED"
    assert "captured_cents" not in payment  # no money recorded that is not held
    records = reader.read()
    assert [image["payment"]["status"] for image in images(records, unpaid.order_id)] == ["LAPSED"]  # one write
    assert run_order_events(records) == {"batchItemFailures": []}
    assert run_payment_steps(shipped) == {"batchItemFailures": []}  # the SHIPPED record replayed: skipped
    lapsed = about(recorded_bus, unpaid.order_id, "OrderPaymentLapsed")
    assert [e["id"] for e in lapsed] == [f"{unpaid.order_id}:lapsed"]  # published once
    assert [op for op, _ in fake.calls].count("capture") <= 1  # the step's one try (refused), never again


class CaptureThen:
    """The provider, whose capture is followed (before the capture step records it) by `then`: what Stripe does
    meanwhile (a dashboard refund, a dispute) and the deliveries of its events. `then` returns once some delivery
    met the order before the capture's record."""

    def __init__(self, fake: FakePayments, then: Callable[[str], None]) -> None:
        self.fake = fake
        self.then = then

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)

    def capture(self, intent_id: str, *, idempotency_key: str) -> Any:
        captured = self.fake.capture(intent_id, idempotency_key=idempotency_key)
        self.then(intent_id)
        return captured


@pytest.mark.dynamodb_semantics
def test_dashboard_refunds_racing_the_capture_steps_record_are_recorded_once_never_above_the_capture(
    local_store, recorded_bus, monkeypatch
):
    fake = FakePayments()
    unpaid, reader, shipped = paid_and_shipped(local_store, fake, monkeypatch)
    now = clock.epoch(clock.now())
    reports = [
        event(REFUNDED, order_id=None, intent_id=unpaid.intent_id, created=now, amount_refunded_cents=1000),
        event(REFUNDED, order_id=None, intent_id=unpaid.intent_id, created=now + 5, amount_refunded_cents=2500),
    ]
    go, refused = threading.Event(), threading.Event()

    def refunds_in_the_dashboard(intent_id: str) -> None:
        fake.dashboard_refund(intent_id, 1000)
        fake.dashboard_refund(intent_id, 1500)
        go.set()
        assert refused.wait(30)  # a report met the order before the capture's record: 503, delivered again

    provided(monkeypatch, CaptureThen(fake, refunds_in_the_dashboard))

    def capture_step() -> None:
        assert run_payment_steps(shipped) == {"batchItemFailures": []}

    def after_go(deliver: Callable[[], None]) -> Callable[[], None]:
        def delivered_after_the_refunds() -> None:
            go.wait(30)
            deliver()

        return delivered_after_the_refunds

    raised = at_once(capture_step, *(after_go(delivery(local_store, fake, e, refused)) for e in five_each(*reports)))

    assert raised == []
    payment = order_of(local_store, unpaid.order_id)["payment"]
    assert (payment["status"], payment["captured_cents"], payment["refunded_cents"]) == ("CAPTURED", 5000, 2500)
    records = reader.read()
    refunded = [image["payment"].get("refunded_cents", 0) for image in images(records, unpaid.order_id)]
    assert refunded == sorted(set(refunded))  # only ever raised, each figure once
    assert refunded[-1] == 2500
    assert run_order_events(records) == {"batchItemFailures": []}
    assert run_order_events(records) == {"batchItemFailures": []}  # replayed
    at_provider = {e["id"]: e["amount_cents"] for e in about(recorded_bus, unpaid.order_id, "OrderRefunded")}
    assert sum(at_provider.values()) == 2500  # each rise published once (under its id), the capture's never

    # The return: only what is left is refunded; Stripe's report of it, five times, adds nothing.
    orders = wiring.order_service(local_store.table)
    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.DELIVERED, expected_version=3)
    orders.request_return(ALICE, unpaid.order_id, "too loud")
    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.RETURNED, expected_version=5)
    consume(reader)
    full = event(REFUNDED, order_id=None, intent_id=unpaid.intent_id, created=now + 9, amount_refunded_cents=5000)
    assert at_once(*(delivery(local_store, fake, e) for e in five_each(full, *reports))) == []
    consume(reader)

    stored = order_of(local_store, unpaid.order_id)
    assert (stored["payment"]["refunded_cents"], stored["returns"][0]["refunded_cents"]) == (5000, 2500)
    assert fake.refunded_cents(unpaid.intent_id) == 5000 == fake.captured_cents(unpaid.intent_id)
    published = {e["id"]: e["amount_cents"] for e in about(recorded_bus, unpaid.order_id, "OrderRefunded")}
    assert published[f"{unpaid.order_id}:6"] == 2500  # the return's
    assert sum(published.values()) == 5000  # every cent refunded, published once


@pytest.mark.dynamodb_semantics
def test_dispute_reports_racing_the_capture_steps_record_keep_both_and_the_latest_report(
    local_store, recorded_bus, monkeypatch
):
    fake = FakePayments()
    unpaid, reader, shipped = paid_and_shipped(local_store, fake, monkeypatch)
    now = clock.epoch(clock.now())
    fields: dict[str, Any] = {"dispute_id": "du_1", "dispute_reason": "fraudulent", "dispute_amount_cents": 5000}
    reports = [
        event(kind, order_id=None, intent_id=unpaid.intent_id, created=now + i * 10, dispute_status=status, **fields)
        for i, (kind, status) in enumerate(
            [(DISPUTE_CREATED, "needs_response"), (DISPUTE_UPDATED, "under_review"), (DISPUTE_CLOSED, "lost")]
        )
    ]
    go, recorded = threading.Event(), threading.Event()

    def disputed(intent_id: str) -> None:
        go.set()
        assert recorded.wait(30)  # a report recorded on the payment before the capture's record

    provided(monkeypatch, CaptureThen(fake, disputed))

    def capture_step() -> None:
        assert run_payment_steps(shipped) == {"batchItemFailures": []}

    def after_go(deliver: Callable[[], None]) -> Callable[[], None]:
        def delivered_after_the_capture() -> None:
            go.wait(30)
            deliver()
            recorded.set()

        return delivered_after_the_capture

    raised = at_once(capture_step, *(after_go(delivery(local_store, fake, e)) for e in five_each(*reports)))

    assert raised == []
    payment = order_of(local_store, unpaid.order_id)["payment"]
    assert (payment["status"], payment["captured_cents"]) == ("CAPTURED", 5000)  # neither write lost the other's
    assert (payment["dispute"]["status"], payment["dispute"]["updated_at"]) == ("lost", clock.iso_from_epoch(now + 20))
    records = reader.read()
    written = [
        image["payment"]["dispute"]["status"]
        for image in images(records, unpaid.order_id)
        if "dispute" in image["payment"]
    ]
    order = {"needs_response": 0, "under_review": 1, "lost": 2}
    assert [order[s] for s in dict.fromkeys(written)] == sorted(order[s] for s in set(written))  # never back
    assert written[-1] == "lost"
    assert run_order_events(records) == {"batchItemFailures": []}
    assert run_order_events(records) == {"batchItemFailures": []}  # replayed
    ids = [e["id"] for e in about(recorded_bus, unpaid.order_id, "OrderDisputed")]
    assert set(ids) == {f"{unpaid.order_id}:du_1:{status}" for status in set(written)}
    assert ids[-1] == f"{unpaid.order_id}:du_1:lost"


@pytest.mark.dynamodb_semantics
def test_a_crash_between_the_returns_refund_and_its_record_publishes_the_refund_once_in_full(
    local_store, recorded_bus, monkeypatch
):
    """A dashboard refund first, then the return: its step refunds the rest at the provider and dies before its
    record. The stream's retry finds the refund made (the provider lists it) and calls nothing, and still records
    and publishes what the return refunded: once, in full."""
    fake = FakePayments()
    unpaid, reader, shipped = paid_and_shipped(local_store, fake, monkeypatch)
    assert run_payment_steps(shipped) == {"batchItemFailures": []}  # captured
    fake.dashboard_refund(unpaid.intent_id, 1000)
    wiring.payment_service(local_store.table, provider=fake).apply_event(
        event(REFUNDED, order_id=None, intent_id=unpaid.intent_id, amount_refunded_cents=1000)
    )
    orders = wiring.order_service(local_store.table)
    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.DELIVERED, expected_version=3)
    orders.request_return(ALICE, unpaid.order_id, "too loud")
    orders.change_status(ADMIN, unpaid.order_id, OrderStatus.RETURNED, expected_version=5)
    returned = reader.read()
    assert run_order_events(returned) == {"batchItemFailures": []}

    crashed = crash_once_after_the_provider(monkeypatch)
    assert len(run_payment_steps(returned)["batchItemFailures"]) == 1
    assert crashed == [unpaid.order_id]
    assert run_payment_steps(returned) == {"batchItemFailures": []}  # the stream's retry
    assert run_payment_steps(returned) == {"batchItemFailures": []}  # a replay
    consume(reader)

    assert sorted(r.amount_cents for r in fake.refunds(unpaid.intent_id)) == [1000, 4000]  # refunded once
    stored = order_of(local_store, unpaid.order_id)
    assert (stored["payment"]["refunded_cents"], stored["returns"][0]["refunded_cents"]) == (5000, 4000)
    published = {e["id"]: e["amount_cents"] for e in about(recorded_bus, unpaid.order_id, "OrderRefunded")}
    assert published == {f"{unpaid.order_id}:refunded:1000": 1000, f"{unpaid.order_id}:6": 4000}
