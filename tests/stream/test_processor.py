"""The stream processor on real stream records read from the table's stream, on moto and DynamoDB Local."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local_runtime.events import stream_event as lambda_event
from shop import wiring
from shop.models import OrderStatus
from shop.repository import OrderEffectsRepository, stream_records
from shop.repository import store as store_module
from shop.repository.stream_records import StreamRecord
from shop.services.order_events import Action, OrderEventsService
from shop.services.orders import RequestedLine
from tests.stream.conftest import dump, emitted_metrics, order_events_context
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB, parcel, product
from tests.support.streams import StreamReader, only, ttl_removal

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def place(store: Any, actor: Any = ALICE, *, quantity: int = 2, price_cents: int = 1250) -> str:
    pid = product(store.table, name=f"Widget {quantity}", price_cents=price_cents, stock=50)
    return (
        wiring.order_service(store.table).place(actor, address=ADDRESS, lines=[RequestedLine(pid, quantity)]).order_id
    )


def notifications(store: Any, customer_id: str = "alice") -> list[Any]:
    return wiring.customer_service(store.table).notifications(ADMIN, customer_id, limit=100, next_token=None).items


def history(store: Any, order_id: str) -> list[str]:
    return [entry.status.value for entry in wiring.order_service(store.table).get(ADMIN, order_id).history]


def no_failures(response: dict[str, Any]) -> None:
    assert response == {"batchItemFailures": []}


@pytest.mark.dynamodb_semantics
def test_new_order_is_confirmed_with_notification_and_history_once(store, invoke, capsys):
    order_id = place(store)
    reader = StreamReader(store)
    placed = reader.read()
    assert only(placed, entity="ORDER", event_name="INSERT"), "the placement's INSERT is on the stream"

    no_failures(invoke(lambda_event(placed)))

    order = wiring.order_service(store.table).get(ALICE, order_id)
    assert (order.status, order.version) == (OrderStatus.CONFIRMED, 2)
    assert order.updated_at > order.created_at
    assert [entry.status for entry in order.history] == [OrderStatus.PENDING, OrderStatus.CONFIRMED]
    assert order.history[1].at == order.updated_at
    [note] = notifications(store)
    assert (note.type, note.order_id, note.created_at) == ("ORDER_CONFIRMED", order_id, order.updated_at)
    assert "total 25.00" in note.message
    assert "1 line (2 items)" in note.message
    [listed] = wiring.order_service(store.table).list_for_customer(ALICE, "alice", limit=10, next_token=None).items
    assert (listed.status, listed.version) == (OrderStatus.CONFIRMED, 2)
    assert emitted_metrics(capsys.readouterr().out).get("OrdersConfirmed") == 1

    # The confirmation's own records (order MODIFY, notification, index) come next: the MODIFY writes the
    # version's history entry with its sales (its product's counter and top-list entry of the day) in one
    # transaction, the entry being the count's once-only key (issue 26: no marker of its own). The table's first
    # count also records the release's sales cut-over (SALES_LEGACY_MARKERS=auto).
    confirmed = reader.read()
    assert only(confirmed, entity="ORDER", event_name="MODIFY"), "the confirmation's MODIFY is on the stream"
    before = dump(store)
    no_failures(invoke(lambda_event(confirmed)))
    added = [item for item in dump(store) if item not in before]
    assert sorted(item["entity"] for item in added) == ["ORDER_HISTORY", "SALES_CUTOVER", "SALES_DAY", "SALES_RANK"]
    assert emitted_metrics(capsys.readouterr().out) == {"StatusChanges": 1, "SalesCounted": 1}
    before = dump(store)

    # The same records delivered again, together and in any split: nothing changes.
    no_failures(invoke(lambda_event(placed + confirmed)))
    no_failures(invoke(lambda_event(placed)))
    assert dump(store) == before
    assert len(notifications(store)) == 1
    assert history(store, order_id) == ["PENDING", "CONFIRMED"]
    metrics = emitted_metrics(capsys.readouterr().out)
    assert "OrdersConfirmed" not in metrics
    assert "StatusChanges" not in metrics


@pytest.mark.dynamodb_semantics
def test_admin_status_change_records_history_notification_and_index(store, invoke):
    order_id = place(store)
    reader = StreamReader(store)
    no_failures(invoke(lambda_event(reader.read())))
    no_failures(invoke(lambda_event(reader.read())))

    wiring.order_service(store.table).change_status(
        ADMIN, order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel()
    )
    shipped = reader.read()
    no_failures(invoke(lambda_event(shipped)))

    assert history(store, order_id) == ["PENDING", "CONFIRMED", "SHIPPED"]
    types = [(n.type, n.order_id) for n in notifications(store)]
    assert sorted(types) == [("ORDER_CONFIRMED", order_id), ("ORDER_STATUS_CHANGED", order_id)]
    changed = next(n for n in notifications(store) if n.type == "ORDER_STATUS_CHANGED")
    assert "shipped" in changed.message
    [listed] = wiring.order_service(store.table).list_for_customer(ALICE, "alice", limit=10, next_token=None).items
    assert (listed.status, listed.version) == (OrderStatus.SHIPPED, 3)

    before = dump(store)
    no_failures(invoke(lambda_event(shipped)))
    no_failures(invoke(lambda_event(reader.read())))
    assert dump(store) == before


@pytest.mark.dynamodb_semantics
def test_order_cancelled_before_confirmation_is_not_confirmed(store, invoke):
    order_id = place(store)
    wiring.order_service(store.table).cancel(ALICE, order_id)
    reader = StreamReader(store)
    no_failures(invoke(lambda_event(reader.read())))

    order = wiring.order_service(store.table).get(ALICE, order_id)
    assert (order.status, order.version) == (OrderStatus.CANCELLED, 2)
    assert history(store, order_id) == ["PENDING", "CANCELLED"]
    assert [n.type for n in notifications(store)] == ["ORDER_STATUS_CHANGED"]
    [listed] = wiring.order_service(store.table).list_for_customer(ALICE, "alice", limit=10, next_token=None).items
    assert listed.status is OrderStatus.CANCELLED


def poison_of(record: dict[str, Any]) -> dict[str, Any]:
    """An order INSERT we must handle but cannot read (no customer, a version that is no number)."""
    poison = copy.deepcopy(record)
    image = poison["dynamodb"]["NewImage"]
    del image["customer_id"]
    image["version"] = {"S": "one"}
    poison["eventID"] = "poison"
    poison["dynamodb"]["SequenceNumber"] = "4" + record["dynamodb"]["SequenceNumber"][1:]
    return poison


@pytest.mark.dynamodb_semantics
def test_poison_record_in_the_middle_fails_alone(store, invoke, capsys, logs):
    first, second = place(store), place(store, BOB, quantity=3)
    records = StreamReader(store).read()
    inserts = only(records, entity="ORDER", event_name="INSERT")
    poison = poison_of(inserts[0])
    batch = [*records[:3], poison, *records[3:]]

    response = invoke(lambda_event(batch))

    assert response == {"batchItemFailures": [{"itemIdentifier": poison["dynamodb"]["SequenceNumber"]}]}
    for order_id in (first, second):
        assert wiring.order_service(store.table).get(ADMIN, order_id).status is OrderStatus.CONFIRMED
    output = capsys.readouterr().out
    # (the history entries, StatusChanges, are the confirmations' own MODIFYs', not in this batch)
    assert emitted_metrics(output) == {"OrdersConfirmed": 2, "RecordsFailed": 1}
    # the failed record counts for the version that failed it too: a canary of a new version rolls back on it
    assert emitted_metrics(output, ("service", "function_version")) == {"RecordsFailed": 1}
    poisoned_order = poison["dynamodb"]["Keys"]["PK"]["S"].split("#", 1)[1]
    [failure] = [line for line in logs() if line["level"] == "ERROR"]
    assert failure["order_id"] == poisoned_order
    assert failure["sequence_number"] == poison["dynamodb"]["SequenceNumber"]
    confirmed = [line for line in logs() if line["message"] == "confirmed"]
    assert sorted(line["order_id"] for line in confirmed) == sorted([first, second])


class ThrottledStore:
    """The store refusing every call as DynamoDB does when it throttles (after the client's own retries)."""

    def __init__(self, client: Any) -> None:
        self.meta = client.meta  # where shop.aws_config registers its retry and deadline hooks

    def __getattr__(self, name: str) -> Any:
        def refused(**kwargs: Any) -> Any:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, name)

        return refused


def throttled(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    refusing = ThrottledStore(store.client)
    monkeypatch.setattr(store_module, "dynamodb_client", lambda: refusing)


def nearly_timed_out() -> Any:
    """order_events' context with less time left than a store attempt needs: shop.aws_config's guard refuses
    the attempt (DeadlineExceeded), as when earlier records of the batch ate the time."""
    context = order_events_context()
    context._deadline = time.monotonic() + 0.1
    return context


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("failure", ["throttled", "out_of_time"])
def test_poison_and_a_store_failure_only_the_poison_counts_for_the_version(store, invoke, capsys, monkeypatch, failure):
    """The canary judges a release by the records it fails: not the ones the store throttled or stalled."""
    place(store)
    [insert] = only(StreamReader(store).read(), entity="ORDER", event_name="INSERT")
    poison = poison_of(insert)
    if failure == "throttled":
        throttled(store, monkeypatch)
        response = invoke(lambda_event([insert, poison]))
    else:
        from functions.order_events.handler import handler

        response = handler(lambda_event([insert, poison]), nearly_timed_out())

    assert len(response["batchItemFailures"]) == 2
    output = capsys.readouterr().out
    assert emitted_metrics(output)["RecordsFailed"] == 2  # every failure, for the stream's alarm
    assert emitted_metrics(output, ("service", "function_version")) == {"RecordsFailed": 1}


@pytest.mark.dynamodb_semantics
def test_store_failures_alone_count_nothing_for_the_version(store, invoke, capsys, monkeypatch):
    place(store)
    [insert] = only(StreamReader(store).read(), entity="ORDER", event_name="INSERT")
    throttled(store, monkeypatch)

    response = invoke(lambda_event([insert]))

    assert len(response["batchItemFailures"]) == 1
    output = capsys.readouterr().out
    assert emitted_metrics(output)["RecordsFailed"] == 1
    assert emitted_metrics(output, ("service", "function_version")) == {}


class Crash(BaseException):
    """The function dying mid-batch (timeout, out of memory): not an Exception the processor catches."""


@pytest.mark.dynamodb_semantics
def test_crash_after_half_the_batch_then_full_retry_confirms_each_order_once(store, invoke, monkeypatch):
    order_ids = [place(store, quantity=q) for q in (1, 2, 3, 4)]
    reader = StreamReader(store)
    records = reader.read()
    assert len(only(records, entity="ORDER", event_name="INSERT")) == 4

    real_handle = OrderEventsService.handle
    seen = {"orders": 0}

    def dying_handle(self: OrderEventsService, record: Any) -> Any:
        if record.entity == "ORDER":
            seen["orders"] += 1
            if seen["orders"] == 3:
                raise Crash("killed after half the orders")
        return real_handle(self, record)

    monkeypatch.setattr(OrderEventsService, "handle", dying_handle)
    with pytest.raises(Crash):
        invoke(lambda_event(records))
    monkeypatch.setattr(OrderEventsService, "handle", real_handle)
    assert [wiring.order_service(store.table).get(ADMIN, o).status for o in order_ids].count(OrderStatus.CONFIRMED) == 2

    no_failures(invoke(lambda_event(records)))  # Lambda retries the whole batch
    no_failures(invoke(lambda_event(reader.read())))  # then the confirmations' own records

    for order_id in order_ids:
        order = wiring.order_service(store.table).get(ADMIN, order_id)
        assert (order.status, order.version) == (OrderStatus.CONFIRMED, 2)
        assert history(store, order_id) == ["PENDING", "CONFIRMED"]
    confirmations = [n.order_id for n in notifications(store) if n.type == "ORDER_CONFIRMED"]
    assert sorted(confirmations) == sorted(order_ids)


@pytest.mark.dynamodb_semantics
def test_crash_between_confirming_and_notifying_is_completed_by_the_modify_record(store, invoke, monkeypatch):
    order_id = place(store)
    reader = StreamReader(store)
    placed = reader.read()

    def dying(self: Any, change: Any, **_: Any) -> Any:
        raise Crash("killed after the confirmation was written")

    monkeypatch.setattr(OrderEffectsRepository, "notify", dying)
    with pytest.raises(Crash):
        invoke(lambda_event(placed))
    monkeypatch.undo()
    assert notifications(store) == []

    no_failures(invoke(lambda_event(placed)))  # the retry loses the conditional confirm: no effects
    assert notifications(store) == []
    no_failures(invoke(lambda_event(reader.read())))  # the confirmation's MODIFY writes them, same keys

    assert history(store, order_id) == ["PENDING", "CONFIRMED"]
    [note] = notifications(store)
    assert note.type == "ORDER_CONFIRMED"
    assert note.created_at == wiring.order_service(store.table).get(ADMIN, order_id).updated_at


def session_with_cart(store: Any) -> str:
    sessions = wiring.session_service(store.table)
    session_id = sessions.create().session_id
    sessions.set_quantity(session_id, product(store.table, name="Gadget", price_cents=300), 2)
    sessions.set_quantity(session_id, product(store.table, name="Gizmo", price_cents=450), 1)
    return session_id


@pytest.mark.dynamodb_semantics
def test_session_deleted_by_its_holder_publishes_nothing(store, invoke, recorded_bus):
    session_id = session_with_cart(store)
    reader = StreamReader(store)
    reader.read()
    wiring.session_service(store.table).delete(session_id)
    [removal] = reader.read()
    assert removal["eventName"] == "REMOVE"
    assert "userIdentity" not in removal

    no_failures(invoke(lambda_event([removal])))
    assert recorded_bus.calls == []


@pytest.mark.dynamodb_semantics
def test_session_removed_by_ttl_with_a_cart_publishes_cart_abandoned(store, invoke, recorded_bus, capsys):
    session_id = session_with_cart(store)
    reader = StreamReader(store)
    reader.read()
    wiring.session_service(store.table).delete(session_id)
    [removal] = reader.read()
    ttl = ttl_removal(session_id, removal["dynamodb"]["OldImage"])  # the real image, TTL's identity

    no_failures(invoke(lambda_event([ttl])))

    [event] = recorded_bus.events
    assert event["type"] == "CartAbandoned"
    assert event["session_id"] == session_id
    assert [(line["name"], line["quantity"]) for line in event["lines"]] == [("Gadget", 2), ("Gizmo", 1)]
    assert event["subtotal_cents"] == 2 * 300 + 450
    assert event["id"] == f"{session_id}:2"
    assert emitted_metrics(capsys.readouterr().out) == {"CartsAbandoned": 1}


@pytest.mark.dynamodb_semantics
def test_ttl_removal_of_an_empty_cart_publishes_nothing(store, invoke, recorded_bus):
    session_id = wiring.session_service(store.table).create().session_id
    reader = StreamReader(store)
    reader.read()
    wiring.session_service(store.table).delete(session_id)
    [removal] = reader.read()
    no_failures(invoke(lambda_event([ttl_removal(session_id, removal["dynamodb"]["OldImage"])])))
    assert recorded_bus.calls == []


class NoStore:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"store call {name} for a record that is not ours")


@pytest.mark.dynamodb_semantics
def test_records_that_are_not_ours_cost_no_store_call(store, monkeypatch):
    place(store)
    records = StreamReader(store).read()
    inserts = only(records, entity="ORDER", event_name="INSERT") + only(records, entity="PRODUCT", event_name="INSERT")
    others = [r for r in records if r not in inserts]
    assert only(others, entity="PRODUCT"), "the order's stock move and the customer's order index are there too"
    service = wiring.order_events_service(store.table)
    monkeypatch.setattr(service.effects.table, "_client", NoStore())  # any store call would now fail loudly
    [order_insert, product_insert] = inserts
    with pytest.raises(AssertionError, match="store call"):  # the guard works
        service.handle(StreamRecord.from_lambda(order_insert))
    assert service.handle(StreamRecord.from_lambda(product_insert)).action is Action.PRODUCT_CHANGED  # no call
    monkeypatch.setattr(stream_records, "from_item", None)  # and so would deserialising an image
    for record in others:
        assert service.handle(StreamRecord.from_lambda(record)).action is Action.SKIPPED


@pytest.mark.dynamodb_semantics
def test_order_modify_without_a_status_change_is_skipped_without_store_calls(store, invoke, monkeypatch):
    place(store)
    reader = StreamReader(store)
    invoke(lambda_event(reader.read()))
    [modify] = only(reader.read(), entity="ORDER", event_name="MODIFY")
    modify["dynamodb"]["OldImage"]["status"] = modify["dynamodb"]["NewImage"]["status"]
    service = wiring.order_events_service(store.table)
    monkeypatch.setattr(service.effects.table, "_client", NoStore())
    outcome = service.handle(StreamRecord.from_lambda(modify))
    assert outcome.action is Action.SKIPPED
    assert outcome.events == ()
