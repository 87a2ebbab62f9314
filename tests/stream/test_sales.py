"""Sales by date from the stream, on moto and DynamoDB Local: exactly once per order version whatever the
delivery: the same records replayed, reversed, and a processor that dies half way through a batch and is
retried all leave the same totals and the same top-seller list."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local_runtime.events import stream_event as lambda_event
from shop import clock, keys, wiring
from shop.limits import SALES_TOP_SHARDS
from shop.models import OrderStatus
from shop.models.sales import SalesChange, SalesLine
from shop.repository import sales as sales_module
from shop.repository.sales import SalesRepository, this_release
from shop.repository.store import dynamodb_client, to_item
from shop.services.orders import RequestedLine
from shop.services.sales import CUTOVER_MARGIN_SECONDS
from tests.stream.conftest import dump
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel, percent_code, product
from tests.support.streams import StreamReader, forget_instance_memo, only

# Each test's table is new: so is the processor instance's memo.
pytestmark = [
    pytest.mark.filterwarnings("ignore:No application metrics"),
    pytest.mark.usefixtures("fresh_sales_instance"),
]


class Crash(BaseException):
    """The invocation dies (not an exception a record handler catches): Lambda retries the whole batch."""


def record_cutover(store: Any, seconds_ago: float) -> None:
    """This release's cut-over on the table, as if its first count had been that long ago."""
    at = clock.iso(datetime.now(UTC) - timedelta(seconds=seconds_ago))
    item = {**keys.sales_cutover_key(this_release()), "entity": "SALES_CUTOVER", "cutover_at": at}
    store.client.put_item(TableName=store.table_name, Item=to_item(item))


@pytest.fixture(params=["fresh", "guarded", "after_cutover"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, store: Any) -> str:
    """Which path the records take: fresh (the default archival grace: the tests' records are seconds old, so
    their counts are transactions without the ARCHIVED check), guarded (ARCHIVE_GRACE_SECONDS=0: no record is
    fresh, every count checks the marker), after_cutover (fresh, on a table whose cut-over is older than its
    margin: the counts leave the legacy marker's check out too; on the other two the first count records the
    cut-over, and the records, seconds old, keep the check). Exactly once must hold on all."""
    from shop.config import settings

    if request.param == "guarded":
        monkeypatch.setenv("ARCHIVE_GRACE_SECONDS", "0")
    if request.param == "after_cutover":
        record_cutover(store, CUTOVER_MARGIN_SECONDS + 3600)
    settings.cache_clear()
    return str(request.param)


def path_flags(path: str) -> dict[str, bool]:
    """What count_once is told on each path."""
    return {"guarded": path == "guarded", "legacy": path != "after_cutover"}


def pump(store: Any, invoke: Any, reader: StreamReader, kept: list[dict[str, Any]]) -> None:
    """Deliver every new record until the stream is quiet; keep the order records delivered."""
    for _ in range(6):
        records = reader.read()
        if not records:
            return
        kept += only(records, entity="ORDER")
        assert invoke(lambda_event(records)) == {"batchItemFailures": []}


def totals(store: Any) -> dict[tuple[str, str], tuple[int, int, str | None]]:
    """(product, day) -> units and revenue of the counter, and the top list's sort key of its rank entry
    (which must agree with the counter)."""
    items = dump(store)
    ranks = {(i["product_id"], i["day"]): i for i in items if i.get("entity") == "SALES_RANK"}
    out = {}
    for item in (i for i in items if i.get("entity") == "SALES_DAY"):
        rank = ranks.get((item["product_id"], item["day"]), {})
        assert (rank.get("units"), rank.get("revenue_cents")) == (item["units"], item["revenue_cents"])
        out[(item["product_id"], item["day"])] = (item["units"], item["revenue_cents"], rank.get("GSI1SK"))
    return out


def wipe_sales(store: Any) -> None:
    """The sales items and the history entries (their once-only keys): the records count again."""
    for item in dump(store):
        if item.get("entity") in (
            "SALES_DAY",
            "SALES_RANK",
            "ORDER_SALES",
            "SALES_DAY_SHARD",
            "SALES_SHARDED",
            "ORDER_HISTORY",
        ):
            store.client.delete_item(TableName=store.table_name, Key={"PK": {"S": item["PK"]}, "SK": {"S": item["SK"]}})


@pytest.fixture
def history(store, invoke):
    """Four orders of products A (10.00) and B (2.50), every order record the processor was given:
    o1 A x2 + B x3 confirmed; o2 A x1 confirmed then cancelled; o3 B x5 confirmed, shipped, delivered,
    returned; o4 A x4 cancelled before confirmation (never counted)."""
    a = product(store.table, name="A", price_cents=1000, stock=50)
    b = product(store.table, name="B", price_cents=250, stock=50)
    orders = wiring.order_service(store.table)
    reader = StreamReader(store)
    kept: list[dict[str, Any]] = []

    def place(**lines: int) -> str:
        placed = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, qty) for pid, qty in lines.items()])
        return placed.order_id

    o4 = place(**{a: 4})
    orders.cancel(ALICE, o4)
    o1, o2, o3 = place(**{a: 2, b: 3}), place(**{a: 1}), place(**{b: 5})
    pump(store, invoke, reader, kept)  # confirmed, sales counted
    orders.cancel(ALICE, o2)
    orders.change_status(ADMIN, o3, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    orders.change_status(ADMIN, o3, OrderStatus.DELIVERED, expected_version=3)
    orders.request_return(ALICE, o3, "wrong size")
    orders.change_status(ADMIN, o3, OrderStatus.RETURNED, expected_version=5)
    pump(store, invoke, reader, kept)
    return {"a": a, "b": b, "o1": o1, "records": kept, "day": clock.iso_now()[:10]}


def expected(history: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int, str | None]]:
    day, a, b = history["day"], history["a"], history["b"]
    top = SALES_TOP_SHARDS
    return {
        (a, day): (2, 2000, keys.sales_top_gsi(day, a, 2, top)[keys.GSI1SK]),
        (b, day): (3, 750, keys.sales_top_gsi(day, b, 3, top)[keys.GSI1SK]),
    }


@pytest.mark.dynamodb_semantics
def test_sales_are_counted_once_per_order_version(store, history):
    assert totals(store) == expected(history)
    top = SalesRepository(store.table).top(history["day"], 10)
    assert [(t.product_id, t.units, t.revenue_cents) for t in top] == [(history["b"], 3, 750), (history["a"], 2, 2000)]
    # The versions that counted carry their sales day on their history entry, the count's once-only key.
    counted = [i for i in dump(store) if i.get("entity") == "ORDER_HISTORY" and "sales_day" in i]
    assert len(counted) == 5  # o1, o2 and o3 confirmed; o2 cancelled; o3 returned (o4 never confirmed)
    assert not [i for i in dump(store) if i.get("entity") == "ORDER_SALES"]  # no marker of their own


@pytest.mark.dynamodb_semantics
def test_the_same_records_replayed_change_nothing(path, store, history, invoke):
    before = dump(store)
    assert invoke(lambda_event(history["records"] + history["records"])) == {"batchItemFailures": []}
    assert dump(store) == before


@pytest.mark.dynamodb_semantics
def test_records_counted_again_in_reverse_order_give_the_same_totals(path, store, history, invoke):
    wipe_sales(store)
    assert invoke(lambda_event(list(reversed(history["records"])))) == {"batchItemFailures": []}
    assert totals(store) == expected(history)


@pytest.mark.dynamodb_semantics
def test_a_processor_dying_half_way_and_retried_gives_the_same_totals(path, store, history, invoke, monkeypatch):
    wipe_sales(store)
    records = history["records"]
    counted = {"n": 0}
    apply = SalesRepository.count_once

    def dies_after_the_second_count(
        self: SalesRepository, change: Any, history: Any, **taken: bool
    ) -> tuple[bool, bool]:
        assert taken == path_flags(path)  # the path under test, not another
        done = apply(self, change, history, **taken)
        counted["n"] += 1
        if counted["n"] == 2:
            raise Crash("the invocation died after its second count")
        return done

    monkeypatch.setattr(SalesRepository, "count_once", dies_after_the_second_count)
    with pytest.raises(Crash):
        invoke(lambda_event(records))
    units = {(i["product_id"], i["day"]): i["units"] for i in dump(store) if i.get("entity") == "SALES_DAY"}
    assert units != {key: value[0] for key, value in expected(history).items()}  # counted half way
    assert not [i for i in dump(store) if i.get("entity") == "SALES_RANK"]  # the top list waits for the batch's end
    monkeypatch.setattr(SalesRepository, "count_once", apply)
    assert invoke(lambda_event(records)) == {"batchItemFailures": []}  # Lambda delivers the batch again
    assert totals(store) == expected(history)
    assert invoke(lambda_event(records[::-1] + records)) == {"batchItemFailures": []}
    assert totals(store) == expected(history)


@pytest.mark.dynamodb_semantics
def test_a_count_failing_is_retried_alone_and_counts_once(path, store, history, invoke, monkeypatch):
    """A record whose count fails (the store is throttling) is reported failed; redelivered, it counts once."""
    from shop import errors

    wipe_sales(store)
    records = history["records"]
    apply = SalesRepository.count_once
    failed_once: set[tuple[str, int]] = set()

    def throttled_once(self: SalesRepository, change: Any, history: Any, **taken: bool) -> tuple[bool, bool]:
        assert taken == path_flags(path)
        done = apply(self, change, history, **taken)  # committed, then the answer is lost
        if (change.order_id, change.version) not in failed_once:
            failed_once.add((change.order_id, change.version))
            raise errors.ServiceUnavailable("lost answer")
        return done

    monkeypatch.setattr(SalesRepository, "count_once", throttled_once)
    response = invoke(lambda_event(records))
    assert response["batchItemFailures"]
    monkeypatch.setattr(SalesRepository, "count_once", apply)
    assert invoke(lambda_event(records)) == {"batchItemFailures": []}
    assert totals(store) == expected(history)


@pytest.mark.dynamodb_semantics
def test_a_processor_dying_between_the_count_and_the_top_list_catches_up_on_redelivery(
    store, history, invoke, monkeypatch
):
    wipe_sales(store)
    records = history["records"]
    refresh = SalesRepository._refresh_ranks

    def dies(self: SalesRepository, product_ids: list[str], day: str) -> None:
        raise Crash("died after the count's transaction, before the top list")

    monkeypatch.setattr(SalesRepository, "_refresh_ranks", dies)
    with pytest.raises(Crash):
        invoke(lambda_event(records))
    monkeypatch.setattr(SalesRepository, "_refresh_ranks", refresh)
    assert invoke(lambda_event(records)) == {"batchItemFailures": []}
    assert totals(store) == expected(history)


@pytest.fixture
def flash_history(store, invoke):
    """A flash-sale product F (4.00, 4 stock shards) and an ordinary product A (10.00): o1..o5 each F x1
    (o3 also A x2) confirmed, o2 then cancelled; every order record the processor was given."""
    f = product(store.table, name="F", price_cents=400, stock=40)
    a = product(store.table, name="A", price_cents=1000, stock=50)
    wiring.catalog_service(store.table).set_stock_shards(ADMIN, f, 4)
    orders = wiring.order_service(store.table)
    reader = StreamReader(store)
    kept: list[dict[str, Any]] = []
    placed = []
    for n in range(5):
        lines = [RequestedLine(f, 1)] + ([RequestedLine(a, 2)] if n == 2 else [])
        placed.append(orders.place(ALICE, address=ADDRESS, lines=lines).order_id)
    pump(store, invoke, reader, kept)
    orders.cancel(ALICE, placed[1])
    pump(store, invoke, reader, kept)
    return {"f": f, "a": a, "records": kept, "day": clock.iso_now()[:10]}


def sales_of(store: Any, pid: str, day: str) -> list[tuple[str, int, int]]:
    return [(d.date, d.units, d.revenue_cents) for d in SalesRepository(store.table).days(pid, day, day)]


@pytest.mark.dynamodb_semantics
def test_a_flash_sale_products_lines_land_on_counter_shards_and_its_read_sums_them(store, flash_history):
    f, a, day = flash_history["f"], flash_history["a"], flash_history["day"]
    shards = [i for i in dump(store) if i.get("entity") == "SALES_DAY_SHARD"]
    assert shards
    assert all(i["PK"].startswith(keys.sales_pk(f) + "#") for i in shards)
    assert not [i for i in dump(store) if i.get("entity") == "SALES_DAY" and i["product_id"] == f]
    assert sales_of(store, f, day) == [(day, 4, 1600)]  # 5 sold, 1 cancelled
    with counting(store.client) as calls:
        assert sales_of(store, a, day) == [(day, 2, 2000)]
    assert calls.operations == ["Query"]  # an ordinary product: one Query


@pytest.mark.dynamodb_semantics
def test_a_flash_sale_products_counts_are_exactly_once_replayed_reversed_and_redelivered(store, flash_history, invoke):
    f, day, records = flash_history["f"], flash_history["day"], flash_history["records"]
    assert invoke(lambda_event(records + records)) == {"batchItemFailures": []}
    assert sales_of(store, f, day) == [(day, 4, 1600)]
    wipe_sales(store)
    forget_instance_memo()  # a new processor instance
    assert invoke(lambda_event(list(reversed(records)))) == {"batchItemFailures": []}
    assert invoke(lambda_event(records)) == {"batchItemFailures": []}
    assert sales_of(store, f, day) == [(day, 4, 1600)]


def poisoned(record: dict[str, Any]) -> dict[str, Any]:
    """A copy of an order record whose new image the processor cannot read, under its own sequence number."""
    bad = copy.deepcopy(record)
    bad["eventID"] = "poison"
    bad["dynamodb"]["SequenceNumber"] = record["dynamodb"]["SequenceNumber"] + "5"
    bad["dynamodb"]["NewImage"]["status"] = {"S": "NOT_A_STATUS"}
    return bad


@pytest.mark.dynamodb_semantics
def test_a_poisoned_record_fails_alone_and_the_batch_around_it_counts_once(path, store, history, invoke):
    wipe_sales(store)
    records = history["records"]
    modify = next(r for r in records if r["eventName"] == "MODIFY")
    middle = len(records) // 2
    batch = [*records[:middle], poisoned(modify), *records[middle:]]
    for _ in range(3):  # Lambda retries the batch from the poisoned record: its records again, and again
        response = invoke(lambda_event(batch))
        assert response == {"batchItemFailures": [{"itemIdentifier": batch[middle]["dynamodb"]["SequenceNumber"]}]}
        assert totals(store) == expected(history)
        batch = batch[middle:]
        middle = 0


@pytest.mark.dynamodb_semantics
def test_two_processors_given_the_same_batch_at_once_count_it_once(path, store, history, invoke):
    """Two invocations on real threads with the same records (a retry racing a slow first attempt)."""
    wipe_sales(store)
    records = history["records"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda batch: invoke(lambda_event(batch)), [records, list(reversed(records))]))
    assert answers == [{"batchItemFailures": []}] * 2
    assert totals(store) == expected(history)
    assert len([i for i in dump(store) if i.get("entity") == "ORDER_HISTORY" and "sales_day" in i]) == 5


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("cutover", ["first_count", "within_margin", "check"])
def test_records_a_release_with_sales_markers_handled_are_not_counted_again(store, invoke, cutover, monkeypatch):
    """Deployed mid-stream. The release before counted on a marker per version and wrote a confirmation's
    history entry from the INSERT: o1 it counted and died before the history entry; o2's INSERT it handled
    (history entry, no count yet). This release's MODIFYs count o2 once and o1 not again: under `auto` the records
    are older than the cut-over + margin, whether this release's first count records it (first_count) or it was
    recorded almost a margin ago (within_margin); under `check` always."""
    if cutover == "within_margin":
        record_cutover(store, CUTOVER_MARGIN_SECONDS - 120)
    if cutover == "check":
        monkeypatch.setenv("SALES_LEGACY_MARKERS", "check")
    a = product(store.table, name="A", price_cents=1000, stock=50)
    orders = wiring.order_service(store.table)
    reader = StreamReader(store)
    o1 = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(a, 2)]).order_id
    o2 = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(a, 3)]).order_id
    assert invoke(lambda_event(reader.read())) == {"batchItemFailures": []}  # confirmed
    modifies = only(reader.read(), entity="ORDER", event_name="MODIFY")
    day = clock.iso_now()[:10]
    before = SalesRepository(store.table)
    o1_change = SalesChange(o1, 2, day, (SalesLine(a, 2, 2000),))
    assert before.apply(o1_change)  # the release before: o1 counted on its marker, then it died
    o2_history = {**keys.order_history_key(o2, 2), "entity": "ORDER_HISTORY", "status": "CONFIRMED", "version": 2}
    store.client.put_item(TableName=store.table_name, Item=to_item({**o2_history, "at": f"{day}T00:00:00Z"}))
    for _ in range(2):  # delivered, then redelivered
        assert invoke(lambda_event(modifies)) == {"batchItemFailures": []}
        assert [(d.units, d.revenue_cents) for d in SalesRepository(store.table).days(a, day, day)] == [(5, 5000)]
    assert {i["SK"] for i in dump(store) if i["PK"] == keys.order_pk(o1) and i.get("entity") == "ORDER_HISTORY"}


def four_orders_of_two_products(store: Any, invoke: Any) -> tuple[str, str, list[dict[str, Any]]]:
    """Four orders of A x1 and B x2, confirmed; their confirmations' MODIFYs (not delivered yet)."""
    a = product(store.table, name="A", price_cents=1000, stock=50)
    b = product(store.table, name="B", price_cents=250, stock=50)
    orders = wiring.order_service(store.table)
    reader = StreamReader(store)
    for _ in range(4):
        orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(a, 1), RequestedLine(b, 2)])
    assert invoke(lambda_event(reader.read())) == {"batchItemFailures": []}
    return a, b, only(reader.read(), entity="ORDER", event_name="MODIFY")


@pytest.mark.dynamodb_semantics
def test_a_batch_refreshes_each_products_top_list_entry_once(store, invoke):
    a, b, modifies = four_orders_of_two_products(store, invoke)
    assert len(modifies) == 4
    with counting(dynamodb_client()) as calls:
        assert invoke(lambda_event(modifies)) == {"batchItemFailures": []}
    # 4 counts (each its transaction), then one read of the 2 counters and a put per product: not 4 and 8. The
    # table's first count also records the cut-over (a GetItem, a PutItem), once for the batch.
    assert (calls.count("TransactWriteItems"), calls.count("BatchGetItem"), calls.count("PutItem")) == (4, 1, 3)
    assert calls.count("GetItem") == 4 + 4 + 1  # each record's DISCOUNTS and customer order entry; the cut-over
    day = clock.iso_now()[:10]
    top = SalesRepository(store.table).top(day, 10)
    assert [(t.product_id, t.units, t.revenue_cents) for t in top] == [(b, 8, 2000), (a, 4, 4000)]


@pytest.mark.dynamodb_semantics
def test_a_failed_top_list_refresh_fails_the_batchs_counting_records_and_their_redelivery_settles_it(
    store, invoke, monkeypatch
):
    from shop import errors

    a, b, modifies = four_orders_of_two_products(store, invoke)
    refresh = SalesRepository._refresh_ranks

    def throttled(self: SalesRepository, product_ids: list[str], day: str) -> None:
        raise errors.ServiceUnavailable("the top list's shard is throttled")

    monkeypatch.setattr(SalesRepository, "_refresh_ranks", throttled)
    response = invoke(lambda_event(modifies))
    failed = sorted(f["itemIdentifier"] for f in response["batchItemFailures"])
    assert failed == sorted(r["dynamodb"]["SequenceNumber"] for r in modifies)  # every counting record
    day = clock.iso_now()[:10]
    assert [(d.units, d.revenue_cents) for d in SalesRepository(store.table).days(a, day, day)] == [(4, 4000)]
    assert SalesRepository(store.table).top(day, 10) == []  # counted once; the list not refreshed
    monkeypatch.setattr(SalesRepository, "_refresh_ranks", refresh)
    for _ in range(2):  # Lambda redelivers from the first failed record; then once more
        assert invoke(lambda_event(modifies)) == {"batchItemFailures": []}
        assert totals(store) == {
            (a, day): (4, 4000, keys.sales_top_gsi(day, a, 4, SALES_TOP_SHARDS)[keys.GSI1SK]),
            (b, day): (8, 2000, keys.sales_top_gsi(day, b, 8, SALES_TOP_SHARDS)[keys.GSI1SK]),
        }


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize(
    "case",
    [
        ("auto", None, True, True),  # the first count records the cut-over now: the record is older than its margin
        ("auto", CUTOVER_MARGIN_SECONDS - 120, True, True),  # written within the margin
        ("auto", CUTOVER_MARGIN_SECONDS + 120, True, False),  # written after the cut-over + margin
        ("auto", CUTOVER_MARGIN_SECONDS + 120, False, True),  # a record of unknown time
        ("check", CUTOVER_MARGIN_SECONDS + 120, True, True),
        ("off", None, True, False),
    ],
)
def test_a_counts_transaction_checks_the_legacy_marker_only_where_an_older_release_can_have_counted(
    store, invoke, monkeypatch, case
):
    """(SALES_LEGACY_MARKERS, the cut-over's age when the test starts or None, whether the record carries its time,
    whether its count checks the legacy marker)."""
    setting, cutover_age, timed, checked = case
    monkeypatch.setenv("SALES_LEGACY_MARKERS", setting)
    if cutover_age is not None:
        record_cutover(store, cutover_age)
    a = product(store.table, name="A", price_cents=1000, stock=50)
    order = wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(a, 2)])
    reader = StreamReader(store)
    assert invoke(lambda_event(reader.read())) == {"batchItemFailures": []}  # the INSERT: confirmed
    [modify] = only(reader.read(), entity="ORDER", event_name="MODIFY")
    if not timed:
        del modify["dynamodb"]["ApproximateCreationDateTime"]
    sent: list[list[str]] = []
    transact = sales_module.transact_write

    def seen(table: Any, items: list[dict[str, Any]]) -> Any:
        sent.append(
            [f"{kind} {body.get('Key', body.get('Item'))['SK']['S']}" for item in items for kind, body in item.items()]
        )
        return transact(table, items)

    monkeypatch.setattr(sales_module, "transact_write", seen)
    for _ in range(2):  # delivered, then replayed: counted once
        assert invoke(lambda_event([modify])) == {"batchItemFailures": []}
    legacy = f"ConditionCheck {keys.order_sales_marker_key(order.order_id, 2)[keys.SK]}"
    assert [legacy in items for items in sent] == [checked, checked]
    assert sales_of(store, a, clock.iso_now()[:10]) == [(clock.iso_now()[:10], 2, 2000)]
    recorded = [i for i in dump(store) if i.get("entity") == "SALES_CUTOVER"]
    assert len(recorded) == (0 if setting != "auto" and cutover_age is None else 1)


@pytest.mark.dynamodb_semantics
def test_an_unlimited_codes_uses_are_counted_with_the_confirmations_exactly_once(store, invoke):
    """A code without a usage limit takes no write on the order's path: the stream processor counts a use with the
    order's confirmation (in its sales transaction, keyed by the version) and takes it back with a cancel after it;
    a cancel before confirmation and a return change nothing. Replayed and reversed, the count stays."""
    a = product(store.table, name="A", price_cents=1000, stock=50)
    orders = wiring.order_service(store.table)
    code = percent_code(orders.checkout, "OPEN10")
    reader = StreamReader(store)
    kept: list[dict[str, Any]] = []

    def place() -> str:
        placed = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(a, 1)], promo_code="open10")
        assert [p.promotion_id for p in placed.promotions] == [code.promotion_id]
        return placed.order_id

    def used() -> int | None:
        return orders.checkout.promotion(ADMIN, code.promotion_id).used_count

    never = place()
    orders.cancel(ALICE, never)  # before its confirmation: never counted
    place()  # confirmed and kept
    cancelled, returned = place(), place()
    assert not [i for i in dump(store) if str(i["PK"]).startswith(keys.PROMOTION_COUNT_PREFIX)]  # none at placement
    pump(store, invoke, reader, kept)
    assert used() == 3
    orders.cancel(ALICE, cancelled)
    orders.change_status(ADMIN, returned, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    orders.change_status(ADMIN, returned, OrderStatus.DELIVERED, expected_version=3)
    orders.request_return(ALICE, returned, "not for me")
    orders.change_status(ADMIN, returned, OrderStatus.RETURNED, expected_version=5)
    pump(store, invoke, reader, kept)
    assert used() == 2  # the kept one and the returned one: a return keeps its use, as a limited code's does
    assert invoke(lambda_event(kept + list(reversed(kept)))) == {"batchItemFailures": []}
    assert used() == 2
    counters = [i for i in dump(store) if str(i["PK"]).startswith(keys.PROMOTION_COUNT_PREFIX)]
    assert sum(int(i["used"]) for i in counters) == 2
