"""Fresh records write their effects without the ARCHIVED check; every other record keeps it (issue 26).

An order is never archivable sooner than ARCHIVE_GRACE_SECONDS after the change that finished it, so a record
younger than the grace less FRESH_RECORD_MARGIN_SECONDS when its processing starts cannot meet an archived order:
its notification, customer entry and history entry are single conditional writes, its count a transaction
without the ARCHIVED ConditionCheck. A record that old or older, or of unknown age, takes the guarded path
exactly as before (tests/stream/test_archived_order_records.py runs that path with no grace at all). The clock
the processor measures a record's age with is shop.clock's, frozen here per invocation.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import shop.repository.sales as sales_module
from local_runtime.events import stream_event as lambda_event
from shop import clock, keys, wiring
from shop.limits import DEFAULT_ARCHIVE_GRACE_SECONDS
from shop.models import OrderStatus
from shop.repository.store import dynamodb_client
from shop.services.archive_timing import FRESH_RECORD_MARGIN_SECONDS
from shop.services.orders import RequestedLine
from tests.stream.conftest import dump, shipped_order
from tests.stream.test_archival import expire, order_removals
from tests.stream.test_archived_order_records import cancelled_order
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")

GRACE = DEFAULT_ARCHIVE_GRACE_SECONDS
OLDEST_FRESH_S = GRACE - FRESH_RECORD_MARGIN_SECONDS  # a record this old is no longer fresh
PLAIN = ["PutItem", "UpdateItem", "PutItem"]  # notification, customer entry, history entry
GUARDED = ["TransactWriteItems"] * 3  # the same, each with the ARCHIVED check


@pytest.fixture(autouse=True)
def archive_after_0_days(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """ARCHIVE_AFTER_DAYS=0 with the default grace: a finished order is archivable exactly GRACE after it."""
    from shop.config import settings

    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    monkeypatch.delenv("ARCHIVE_GRACE_SECONDS", raising=False)
    settings.cache_clear()
    yield
    settings.cache_clear()


def written_at(record: dict[str, Any]) -> datetime:
    return datetime.fromtimestamp(record["dynamodb"]["ApproximateCreationDateTime"], UTC)


def processed_at(monkeypatch: pytest.MonkeyPatch, moment: datetime) -> None:
    """The processor's clock (shop.clock) reads `moment` from now on."""
    monkeypatch.setattr(clock, "now", lambda: moment)


@pytest.mark.dynamodb_semantics
def test_the_records_time_is_the_one_dynamodb_set_and_it_survives_the_local_reader(store):
    before = clock.now().replace(microsecond=0)
    wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    [placed] = only(StreamReader(store).read(), entity="ORDER", event_name="INSERT")
    assert before - timedelta(seconds=60) <= written_at(placed) <= clock.now() + timedelta(seconds=60)


@pytest.mark.dynamodb_semantics
def test_a_record_younger_than_the_grace_less_the_margin_writes_plainly(store, invoke, monkeypatch):
    order_id, shipped = shipped_order(store, invoke)
    processed_at(monkeypatch, written_at(shipped) + timedelta(seconds=OLDEST_FRESH_S - 1))
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event([shipped])) == {"batchItemFailures": []}
    assert calls.operations == PLAIN
    history = wiring.order_service(store.table).get(ALICE, order_id).history
    assert [h.status for h in history] == [OrderStatus.PENDING, OrderStatus.CONFIRMED, OrderStatus.SHIPPED]


@pytest.mark.dynamodb_semantics
def test_a_record_exactly_the_grace_less_the_margin_old_is_guarded(store, invoke, monkeypatch):
    _, shipped = shipped_order(store, invoke)
    processed_at(monkeypatch, written_at(shipped) + timedelta(seconds=OLDEST_FRESH_S))
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event([shipped])) == {"batchItemFailures": []}
    assert calls.operations == GUARDED
    table = dump(store)
    processed_at(monkeypatch, written_at(shipped))  # the same record replayed fresh: its writes refused
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event([shipped])) == {"batchItemFailures": []}
    assert calls.operations == PLAIN
    assert dump(store) == table


@pytest.mark.dynamodb_semantics
def test_a_record_without_its_time_is_guarded(store, invoke):
    _, shipped = shipped_order(store, invoke)
    del shipped["dynamodb"]["ApproximateCreationDateTime"]
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event([shipped])) == {"batchItemFailures": []}
    assert calls.operations == GUARDED


@pytest.mark.dynamodb_semantics
def test_with_no_grace_every_record_is_guarded(store, invoke, monkeypatch):
    from shop.config import settings

    monkeypatch.setenv("ARCHIVE_GRACE_SECONDS", "0")
    settings.cache_clear()
    _, shipped = shipped_order(store, invoke)
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event([shipped])) == {"batchItemFailures": []}
    assert calls.operations == GUARDED


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("age_s", [0, OLDEST_FRESH_S - 1, OLDEST_FRESH_S])
def test_a_counting_records_transaction_holds_the_archived_check_only_when_it_is_not_fresh(
    store, invoke, monkeypatch, age_s
):
    """The confirmation's MODIFY counts in one transaction: history entry, counter ADD, the legacy marker's
    check (the record is in the table's first hour on the release: SALES_LEGACY_MARKERS=auto keeps it), and the
    ARCHIVED marker's check only on the guarded path."""
    orders = wiring.order_service(store.table)
    orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    reader = StreamReader(store)
    invoke(lambda_event(reader.read()))
    [confirmed] = only(reader.read(), entity="ORDER", event_name="MODIFY")
    sent: list[list[str]] = []
    transact = sales_module.transact_write

    def seen(table: Any, items: list[dict[str, Any]], **extra: Any) -> None:
        sent.append(
            [
                next(iter(item)) + (":" + item["ConditionCheck"]["Key"]["SK"]["S"] if "ConditionCheck" in item else "")
                for item in items
            ]
        )
        transact(table, items, **extra)

    monkeypatch.setattr(sales_module, "transact_write", seen)
    processed_at(monkeypatch, written_at(confirmed) + timedelta(seconds=age_s))
    assert invoke(lambda_event([confirmed])) == {"batchItemFailures": []}
    legacy = "ConditionCheck:" + keys.order_sales_marker_key("x", 2)[keys.SK]
    archived = "ConditionCheck:" + keys.order_archived_key("x")[keys.SK]
    guarded = age_s >= OLDEST_FRESH_S
    assert sent == [["Put", "Update", legacy, *([archived] if guarded else [])]]


@pytest.mark.dynamodb_semantics
@pytest.mark.usefixtures("s3")
def test_an_order_is_archived_no_sooner_than_the_grace_and_its_old_records_are_refused(
    store, invoke, deletions, *, recorded_bus, monkeypatch, logs
):
    """ARCHIVE_AFTER_DAYS=0: the cancelled order stays through the grace, then TTL and archival take it. Its
    records, re-driven at the first moment they are not fresh and days later, are refused by the ARCHIVED
    check exactly as before the grace existed: nothing written, counted or published."""
    reader = StreamReader(store, ttl_deletions=deletions)
    order_id, _, placed, confirmed, cancelled = cancelled_order(store, invoke, reader)

    assert expire(store, deletions, later_s=GRACE - FRESH_RECORD_MARGIN_SECONDS) == 0  # the grace holds it
    assert expire(store, deletions, later_s=GRACE + 2) == 1
    assert invoke(lambda_event(order_removals(reader))) == {"batchItemFailures": []}
    assert wiring.order_service(store.table).get(ADMIN, order_id).archived is True
    table = dump(store)
    recorded_bus.calls.clear()

    records = [placed, confirmed, cancelled]
    for age_s in (GRACE + 2, GRACE + 3 * 86_400):  # past every record's freshness: replays, days later
        processed_at(monkeypatch, written_at(placed) + timedelta(seconds=age_s))
        assert invoke(lambda_event(records)) == {"batchItemFailures": []}

    assert dump(store) == table  # no history entry, notification, count or entry beside the marker
    assert [i["SK"] for i in table if i["PK"] == keys.order_pk(order_id)] == ["ARCHIVED"]
    assert recorded_bus.events == []
    outcomes = [line["message"] for line in logs() if line.get("order_id") == order_id]
    assert outcomes.count("order_archived") == 4  # both MODIFYs, twice; the INSERT finds nothing to confirm


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("stamp", [1e300, -1e300, "2026-01-01", True, 4_102_444_800 * 10])
def test_a_record_whose_time_is_unreadable_or_far_ahead_is_guarded_and_still_handled(store, invoke, stamp):
    """A damaged or hand-made record (a replay edited by hand): its time says nothing, so its effects keep the
    check; the record is handled, not failed."""
    _, shipped = shipped_order(store, invoke)
    shipped["dynamodb"]["ApproximateCreationDateTime"] = stamp
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event([shipped])) == {"batchItemFailures": []}
    assert calls.operations == GUARDED
