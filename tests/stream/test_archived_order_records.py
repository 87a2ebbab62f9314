"""Records of an archived order change nothing (issue 23, item 2).

Archival deletes the once-per-version markers (history entries, sales markers) that made each effect exactly
once, so a record re-driven from the failure store after archival must be stopped by the ARCHIVED marker:
every effect of an order record (sales, history, notification, the customer's list, published events, a
return's refund) is checked here on its own, then all of them at once, then the race of a replay with
archival itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from local_runtime.events import stream_event as lambda_event
from shop import keys, wiring
from shop.models import OrderStatus
from shop.repository import order_archive
from shop.services.orders import RequestedLine
from tests.stream.conftest import dump
from tests.stream.test_archival import expire, order_removals
from tests.stream.test_lifecycle_events import deliver
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


@dataclass
class Archived:
    order_id: str
    product_id: str
    day: str
    placed: dict[str, Any]  # the INSERT
    confirmed: dict[str, Any]  # the processor's confirmation (MODIFY PENDING -> CONFIRMED)
    cancelled: dict[str, Any]  # the cancellation (MODIFY CONFIRMED -> CANCELLED)
    removal: dict[str, Any]  # the TTL's REMOVE


@pytest.fixture(autouse=True)
def archive_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """ARCHIVE_AFTER_DAYS=0 and no grace: a finished order's TTL is its last change, and every record is guarded
    (the safe degenerate case of the grace: no record is fresh)."""
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    monkeypatch.setenv("ARCHIVE_GRACE_SECONDS", "0")
    from shop.config import settings

    settings.cache_clear()


def cancelled_order(store: Any, invoke: Any, reader: StreamReader) -> tuple[str, str, Any, Any, Any]:
    """An order of 2 x 1500, placed, confirmed and cancelled, each record processed: its id, its product's id and
    its three records (INSERT, the confirming MODIFY, the cancelling MODIFY)."""
    pid = product(store.table, name="Lamp", price_cents=1500, stock=10)
    service = wiring.order_service(store.table)
    order_id = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 2)]).order_id
    [placed] = only(reader.read(), entity="ORDER", event_name="INSERT")
    assert invoke(lambda_event([placed])) == {"batchItemFailures": []}
    [confirmed] = only(reader.read(), entity="ORDER", event_name="MODIFY")
    assert invoke(lambda_event([confirmed])) == {"batchItemFailures": []}
    service.cancel(ALICE, order_id)
    [cancelled] = only(reader.read(), entity="ORDER", event_name="MODIFY")
    assert invoke(lambda_event([cancelled])) == {"batchItemFailures": []}
    return order_id, pid, placed, confirmed, cancelled


def archived_order(store: Any, invoke: Any, deletions: Any) -> Archived:
    """The issue's order: 2 x 1500, confirmed, cancelled, then archived; every record it made, kept."""
    reader = StreamReader(store, ttl_deletions=deletions)
    order_id, pid, placed, confirmed, cancelled = cancelled_order(store, invoke, reader)
    assert expire(store, deletions) == 1
    [removal] = order_removals(reader)
    assert invoke(lambda_event([removal])) == {"batchItemFailures": []}
    assert wiring.order_service(store.table).get(ADMIN, order_id).archived is True
    day = confirmed["dynamodb"]["NewImage"]["updated_at"]["S"][:10]
    return Archived(order_id, pid, day, placed, confirmed, cancelled, removal)


def sales(store: Any, order: Archived) -> tuple[int, int]:
    [day] = wiring.sales_service(store.table).product_sales(ADMIN, order.product_id, order.day, order.day).days
    return day.units, day.revenue_cents


def order_partition(store: Any, order_id: str) -> list[str]:
    return [item["SK"] for item in dump(store) if item["PK"] == keys.order_pk(order_id)]


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_a_replayed_cancellation_counts_no_sales_and_leaves_no_markers(store, invoke, deletions, monkeypatch):
    order = archived_order(store, invoke, deletions)
    assert sales(store, order) == (0, 0)

    assert invoke(lambda_event([order.cancelled])) == {"batchItemFailures": []}

    assert sales(store, order) == (0, 0)  # not -2 units / -3000 cents
    assert order_partition(store, order.order_id) == ["ARCHIVED"]  # no SALES#, no HISTORY# beside it


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_a_replayed_confirmation_counts_no_sales_again(store, invoke, deletions, monkeypatch):
    order = archived_order(store, invoke, deletions)

    assert invoke(lambda_event([order.confirmed])) == {"batchItemFailures": []}

    assert sales(store, order) == (0, 0)  # not +2 units / +3000 cents
    assert order_partition(store, order.order_id) == ["ARCHIVED"]


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_a_replayed_record_writes_no_history(store, invoke, deletions, monkeypatch):
    order = archived_order(store, invoke, deletions)

    for record in (order.placed, order.confirmed, order.cancelled):
        assert invoke(lambda_event([record])) == {"batchItemFailures": []}

    assert not [sk for sk in order_partition(store, order.order_id) if sk.startswith(keys.HISTORY_PREFIX)]
    assert wiring.order_service(store.table).get(ADMIN, order.order_id).archived is True


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_a_replayed_record_does_not_write_its_notification_again(store, invoke, deletions, monkeypatch):
    order = archived_order(store, invoke, deletions)
    [note] = [i for i in dump(store) if i["PK"] == "CUSTOMER#alice" and i.get("type") == "ORDER_STATUS_CHANGED"]
    store.client.delete_item(  # gone since (a customer's notification is not the order's to keep)
        TableName=store.table_name, Key={"PK": {"S": note["PK"]}, "SK": {"S": note["SK"]}}
    )

    assert invoke(lambda_event([order.cancelled])) == {"batchItemFailures": []}

    assert not [i for i in dump(store) if i["PK"] == "CUSTOMER#alice" and i.get("type") == "ORDER_STATUS_CHANGED"]


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_a_replayed_record_does_not_move_the_customers_list(store, invoke, deletions, monkeypatch):
    order = archived_order(store, invoke, deletions)
    key = {"PK": {"S": "CUSTOMER#alice"}, "SK": {"S": f"ORDER#{order.order_id}"}}
    store.client.update_item(  # an entry left behind (its last update lost): a replay must not rewrite it
        TableName=store.table_name,
        Key=key,
        UpdateExpression="SET #status = :s, version = :v",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":s": {"S": "CONFIRMED"}, ":v": {"N": "2"}},
    )

    assert invoke(lambda_event([order.cancelled])) == {"batchItemFailures": []}

    entry = store.client.get_item(TableName=store.table_name, Key=key)["Item"]
    assert (entry["status"]["S"], entry["version"]["N"]) == ("CONFIRMED", "2")


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_a_replayed_record_publishes_nothing(store, invoke, deletions, monkeypatch, recorded_bus):
    order = archived_order(store, invoke, deletions)
    recorded_bus.calls.clear()

    for record in (order.placed, order.confirmed, order.cancelled):
        assert invoke(lambda_event([record])) == {"batchItemFailures": []}

    assert recorded_bus.events == []


@pytest.mark.dynamodb_semantics
def test_every_record_of_an_archived_order_replayed_changes_nothing(store, s3, invoke, deletions, recorded_bus):
    order = archived_order(store, invoke, deletions)
    table, archive = dump(store), s3.objects()
    recorded_bus.calls.clear()

    records = [order.placed, order.confirmed, order.cancelled, order.removal]
    assert invoke(lambda_event(records)) == {"batchItemFailures": []}
    assert invoke(lambda_event(records[::-1])) == {"batchItemFailures": []}

    assert dump(store) == table
    assert s3.objects() == archive
    assert recorded_bus.events == []


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_a_replay_racing_archival_leaves_nothing_beside_the_marker(store, invoke, deletions, monkeypatch):
    """The cancellation's record failed for good (it waits in the failure store); the TTL removes the order;
    while archival runs, after its first read and before its marker, the record is re-driven and writes its
    effects (the order is not archived yet: they are its first). Archival must see them, archive the history
    entry and delete them: no orphan beside the marker, and the sales counted once."""
    reader = StreamReader(store, ttl_deletions=deletions)
    pid = product(store.table, name="Lamp", price_cents=1500, stock=10)
    service = wiring.order_service(store.table)
    order_id = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 2)]).order_id
    assert invoke(lambda_event(reader.read())) == {"batchItemFailures": []}
    [confirmed] = only(reader.read(), entity="ORDER", event_name="MODIFY")
    assert invoke(lambda_event([confirmed])) == {"batchItemFailures": []}
    day = confirmed["dynamodb"]["NewImage"]["updated_at"]["S"][:10]
    service.cancel(ALICE, order_id)
    [cancelled] = only(reader.read(), entity="ORDER", event_name="MODIFY")  # not processed: failed for good
    assert expire(store, deletions) == 1
    [removal] = order_removals(reader)

    real = order_archive.OrderArchivalRepository.remains
    reads = {"n": 0}

    def remains_then_replay(self: Any, oid: str) -> Any:
        found = real(self, oid)
        reads["n"] += 1
        if reads["n"] == 1:  # between archival's read and its marker: the re-driven record
            assert invoke(lambda_event([cancelled])) == {"batchItemFailures": []}
        return found

    monkeypatch.setattr(order_archive.OrderArchivalRepository, "remains", remains_then_replay)
    assert invoke(lambda_event([removal])) == {"batchItemFailures": []}
    monkeypatch.setattr(order_archive.OrderArchivalRepository, "remains", real)
    assert reads["n"] == 2  # archival read again after its marker

    assert order_partition(store, order_id) == ["ARCHIVED"]
    archived = wiring.order_service(store.table).get(ADMIN, order_id)
    assert archived.archived is True
    assert [entry.status for entry in archived.history] == [
        OrderStatus.PENDING,
        OrderStatus.CONFIRMED,
        OrderStatus.CANCELLED,
    ]
    [counted] = wiring.sales_service(store.table).product_sales(ADMIN, pid, day, day).days
    assert (counted.units, counted.revenue_cents) == (0, 0)

    assert invoke(lambda_event([cancelled])) == {"batchItemFailures": []}  # and once more, after archival
    assert order_partition(store, order_id) == ["ARCHIVED"]
    [counted] = wiring.sales_service(store.table).product_sales(ADMIN, pid, day, day).days
    assert (counted.units, counted.revenue_cents) == (0, 0)


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_a_replayed_return_takes_back_no_sales_and_publishes_no_refund(store, invoke, deletions, recorded_bus):
    reader = StreamReader(store, ttl_deletions=deletions)
    order_id, orders = deliver(store, invoke, reader)
    orders.request_return(ALICE, order_id, "Too small.")
    orders.change_status(ADMIN, order_id, OrderStatus.RETURNED, expected_version=5)
    modified = only(reader.read(), entity="ORDER", event_name="MODIFY")
    [returned] = [r for r in modified if r["dynamodb"]["NewImage"]["status"]["S"] == "RETURNED"]
    assert invoke(lambda_event([returned])) == {"batchItemFailures": []}
    assert expire(store, deletions) == 1  # RETURNED is final: archived at once (ARCHIVE_AFTER_DAYS=0)
    assert invoke(lambda_event(order_removals(reader))) == {"batchItemFailures": []}
    assert wiring.order_service(store.table).get(ADMIN, order_id).archived is True
    table = dump(store)
    recorded_bus.calls.clear()

    assert invoke(lambda_event([returned])) == {"batchItemFailures": []}

    assert recorded_bus.events == []  # no second OrderRefundDue
    assert dump(store) == table  # its sales not taken back again, nothing beside the marker
