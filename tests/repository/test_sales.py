"""The sales counters on the table (moto and DynamoDB Local): once per order version, never losing a
concurrent count, the top list in GSI1 sharded, sparse and never moved back by a late refresh."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import keys
from shop.models.sales import SalesChange, SalesLine
from shop.repository import sales as sales_module
from shop.repository.sales import SalesRepository
from shop.repository.store import from_item, to_item
from tests.support.calls import counting
from tests.support.streams import forget_instance_memo

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
# Each test's table is new: so is the instance's memo of markers and refreshes.
pytestmark = [pytest.mark.table_without_stream, pytest.mark.usefixtures("fresh_sales_instance")]

DAY = "2026-03-02"


def change(order_id: str, *lines: tuple[str, int, int], version: int = 2, day: str = DAY) -> SalesChange:
    return SalesChange(order_id, version, day, tuple(SalesLine(*line) for line in lines))


def read(store, key: dict[str, str]) -> dict:
    item = store.client.get_item(TableName=store.table_name, Key=to_item(key), ConsistentRead=True).get("Item")
    return from_item(item) if item else {}


def counter(store, product_id: str, day: str = DAY) -> dict:
    return read(store, keys.sales_day_key(product_id, day))


def rank(store, product_id: str, day: str = DAY) -> dict:
    return read(store, keys.sales_rank_key(product_id, day))


def history(order_id: str, version: int = 2, **extra: object) -> dict:
    """The version's history entry as shop.repository.order_effects.history_item builds it."""
    return {
        **keys.order_history_key(order_id, version),
        "entity": "ORDER_HISTORY",
        "status": "CONFIRMED",
        "version": version,
        "at": f"{DAY}T10:00:00Z",
        **extra,
    }


def entities(store, order_id: str) -> list[str]:
    items = store.client.query(
        TableName=store.table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": keys.order_pk(order_id)}},
        ConsistentRead=True,
    )["Items"]
    return sorted(from_item(i)["entity"] for i in items)


@pytest.mark.dynamodb_semantics
def test_a_version_counts_once_with_its_history_entry_then_moves_its_products_in_the_top_list(store):
    sales = SalesRepository(store.table)
    counted = change("o-1", ("hammer", 2, 3000), ("nails", 10, 2500))
    with counting(store.client) as calls:
        assert sales.count_once(counted, history("o-1")) == (True, True)
    # The transaction (history entry, 2 ADDs, the old marker's and the ARCHIVED marker's checks), the counters'
    # read (not the rank entries: their puts are conditional), a put per rank entry.
    assert calls.operations == ["TransactWriteItems", "BatchGetItem", "PutItem", "PutItem"]
    assert entities(store, "o-1") == ["ORDER_HISTORY"]  # no marker of its own: the entry is the key
    assert read(store, keys.order_history_key("o-1", 2))["sales_day"] == DAY
    with counting(store.client) as calls:
        assert sales.count_once(counted, history("o-1")) == (False, False)  # a replay
    assert calls.operations == ["TransactWriteItems", "BatchGetItem", "PutItem", "PutItem"]  # the puts refused
    assert sales.days("hammer", DAY, DAY)[0].model_dump() == {"date": DAY, "units": 2, "revenue_cents": 3000}
    assert (rank(store, "nails")["units"], rank(store, "nails")["changes"]) == (10, 1)
    taken_back = change("o-1", ("hammer", -2, -3000), ("nails", -10, -2500), version=3)
    assert sales.count_once(taken_back, history("o-1", 3, status="CANCELLED")) == (True, True)
    assert sales.days("hammer", DAY, DAY)[0].units == 0
    assert keys.GSI1PK not in rank(store, "hammer")


@pytest.mark.dynamodb_semantics
def test_a_version_a_release_before_counted_on_its_marker_is_not_counted_again(store):
    """Deployed mid-stream: the release before counted the version (its SALES# marker) and died before the
    history entry. The redelivered record writes the entry alone and counts nothing."""
    sales = SalesRepository(store.table)
    counted = change("o-1", ("hammer", 2, 3000))
    assert sales.apply(counted)  # the release before: marker and ADDs
    assert sales.count_once(counted, history("o-1")) == (True, False)
    assert sales.count_once(counted, history("o-1")) == (False, False)
    assert sales.days("hammer", DAY, DAY)[0].units == 2
    assert entities(store, "o-1") == ["ORDER_HISTORY", "ORDER_SALES"]


@pytest.mark.dynamodb_semantics
def test_a_history_entry_a_release_before_wrote_counts_the_version_on_its_marker_once(store):
    """The release before wrote a confirmation's history entry from the INSERT and counted on the MODIFY:
    deployed in between, the MODIFY meets an entry without `sales_day` and counts as that release did."""
    sales = SalesRepository(store.table)
    store.client.put_item(TableName=store.table_name, Item=to_item(history("o-1")))
    counted = change("o-1", ("hammer", 2, 3000))
    assert sales.count_once(counted, history("o-1")) == (False, True)
    assert sales.count_once(counted, history("o-1")) == (False, False)  # its marker refuses the replay
    assert sales.days("hammer", DAY, DAY)[0].units == 2
    assert rank(store, "hammer")["units"] == 2


@pytest.mark.dynamodb_semantics
def test_without_the_legacy_check_the_count_checks_only_the_history_entry_and_the_archive(store, monkeypatch):
    """legacy=False (SALES_LEGACY_MARKERS=off, or auto for a record written after the cut-over): no ConditionCheck
    on the old marker, and a replay is still refused by the history entry."""
    sent: list[list[str]] = []
    transact = sales_module.transact_write

    def named(item):
        kind, body = next(iter(item.items()))
        return f"{kind} {body['Key']['SK']['S']}" if kind == "ConditionCheck" else kind

    def seen(table, items):
        sent.append([named(item) for item in items])
        return transact(table, items)

    monkeypatch.setattr(sales_module, "transact_write", seen)
    sales = SalesRepository(store.table)
    assert sales.count_once(change("o-1", ("hammer", 2, 3000)), history("o-1")) == (True, True)
    assert sales.count_once(change("o-2", ("hammer", 2, 3000)), history("o-2"), legacy=False) == (True, True)
    assert sales.count_once(change("o-2", ("hammer", 2, 3000)), history("o-2"), legacy=False) == (False, False)
    legacy, archived = keys.order_sales_marker_key("o-1", 2)[keys.SK], keys.order_archived_key("o-1")[keys.SK]
    assert sent == [
        ["Put", "Update", f"ConditionCheck {legacy}", f"ConditionCheck {archived}"],
        ["Put", "Update", f"ConditionCheck {archived}"],
        ["Put", "Update", f"ConditionCheck {archived}"],
    ]
    assert sales.days("hammer", DAY, DAY)[0].units == 4


def test_the_first_count_records_the_cut_over_once_even_with_concurrent_processors(local_store):
    """Real threads against DynamoDB Local: 8 processors of one release reach their first count at once, each with
    its own clock; one records the cut-over, every one answers the winner's."""
    table = local_store.table
    moments = [f"2026-03-02T10:00:0{n}Z" for n in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda now: SalesRepository(table, release="7").cutover_at(now), moments))
    [winner] = set(answers)
    assert winner in moments
    recorded = read(local_store, keys.sales_cutover_key("7"))
    assert (recorded["cutover_at"], recorded["entity"], recorded["release"]) == (winner, "SALES_CUTOVER", "7")


@pytest.mark.dynamodb_semantics
def test_the_cut_over_is_read_once_per_instance_and_recorded_once_per_release(store):
    sales = SalesRepository(store.table, release="7")
    with counting(store.client) as first:
        assert sales.cutover_at("2026-03-02T10:00:00Z") == "2026-03-02T10:00:00Z"
    assert first.operations == ["GetItem", "PutItem"]  # none yet: recorded
    with counting(store.client) as again:
        assert SalesRepository(store.table, release="7").cutover_at("2026-03-02T11:00:00Z") == "2026-03-02T10:00:00Z"
    assert again.operations == []  # the instance keeps it for its life
    forget_instance_memo()  # a new instance
    with counting(store.client) as restarted:
        assert SalesRepository(store.table, release="7").cutover_at("2026-03-02T12:00:00Z") == "2026-03-02T10:00:00Z"
    assert restarted.operations == ["GetItem"]
    assert SalesRepository(store.table, release="8").cutover_at("2026-03-02T12:00:00Z") == "2026-03-02T12:00:00Z"


@pytest.mark.dynamodb_semantics
def test_a_processor_losing_the_race_to_record_the_cut_over_takes_the_winners(store, monkeypatch):
    """Another processor records it between this one's read and its put: the refused put returns the winner's."""
    sales = SalesRepository(store.table, release="7")
    read_item = SalesRepository._item
    raced_once: list[str] = []

    def raced(self, key):
        found = read_item(self, key)
        if not raced_once:  # the other processor, between this one's read and its put
            raced_once.append("racing")
            other = SalesRepository(store.table, release="7")
            raced_once[0] = other._read_or_record_cutover("2026-03-02T09:00:00Z")
        return found

    monkeypatch.setattr(SalesRepository, "_item", raced)
    assert sales.cutover_at("2026-03-02T10:00:00Z") == "2026-03-02T09:00:00Z"
    assert raced_once == ["2026-03-02T09:00:00Z"]


def test_concurrent_processors_counting_the_same_version_count_it_once(local_store):
    """Real threads against DynamoDB Local: 8 processors given the same record at once."""
    sales = SalesRepository(local_store.table)
    counted = change("o-1", ("hammer", 2, 3000), ("nails", 1, 100))
    with ThreadPoolExecutor(max_workers=8) as pool:
        done = list(pool.map(lambda _: sales.count_once(counted, history("o-1")), range(8)))
    assert sorted(done) == [(False, False)] * 7 + [(True, True)]
    assert counter(local_store, "hammer")["units"] == 2
    assert (rank(local_store, "hammer")["units"], rank(local_store, "nails")["units"]) == (2, 1)


@pytest.mark.dynamodb_semantics
def test_a_version_counted_on_its_own_marker_counts_once(store):
    """apply: the marker's way (a version whose history entry a release before wrote)."""
    sales = SalesRepository(store.table)
    with counting(store.client) as calls:
        assert sales.apply(change("o-1", ("hammer", 2, 3000), ("nails", 10, 2500)))
    assert calls.operations == ["TransactWriteItems", "BatchGetItem", "PutItem", "PutItem"]
    assert not sales.apply(change("o-1", ("hammer", 2, 3000), ("nails", 10, 2500)))
    assert sales.days("hammer", DAY, DAY)[0].model_dump() == {"date": DAY, "units": 2, "revenue_cents": 3000}


def test_concurrent_counts_of_one_product_and_day_are_all_kept(local_store):
    """Real threads against DynamoDB Local (moto does not serialise concurrent transactions and conditions)."""
    store = local_store
    sales = SalesRepository(store.table)
    with ThreadPoolExecutor(max_workers=8) as pool:
        done = list(pool.map(lambda n: sales.apply(change(f"o-{n}", ("hammer", 1, 1500))), range(16)))
    assert all(done)
    assert (counter(store, "hammer")["units"], counter(store, "hammer")["revenue_cents"]) == (16, 16 * 1500)
    assert (rank(store, "hammer")["units"], rank(store, "hammer")["changes"]) == (16, 16)


@pytest.mark.dynamodb_semantics
def test_the_top_list_is_sharded_by_product_and_sparse(store):
    sales = SalesRepository(store.table)
    sales.apply(change("o-1", ("hammer", 2, 3000), ("nails", 10, 2500), ("saw", 10, 9000)))
    assert keys.GSI1PK not in counter(store, "hammer")  # counts write no index entry; the rank entry is indexed
    assert rank(store, "hammer")[keys.GSI1PK] == keys.sales_top_pk(DAY, keys.sales_top_shard("hammer", sales.shards))
    assert [(t.product_id, t.units) for t in sales.top(DAY, 2)] == [("nails", 10), ("saw", 10)]
    sales.apply(change("o-1", ("nails", -10, -2500), version=3))  # the order cancelled: nails leave the list
    assert keys.GSI1PK not in rank(store, "nails")
    assert [(t.product_id, t.units) for t in sales.top(DAY, 5)] == [("saw", 10), ("hammer", 2)]


@pytest.mark.dynamodb_semantics
def test_days_reads_one_range_of_one_product(store):
    sales = SalesRepository(store.table)
    for n, day in enumerate(("2026-02-28", "2026-03-01", "2026-03-02", "2026-03-03")):
        sales.apply(change(f"o-{n}", ("hammer", n + 1, 100), day=day))
    sales.apply(change("o-x", ("hammerhead", 5, 100)))
    with counting(store.client) as calls:
        days = sales.days("hammer", "2026-03-01", "2026-03-02")
    assert calls.operations == ["Query"]
    assert [(d.date, d.units) for d in days] == [("2026-03-01", 2), ("2026-03-02", 3)]


@pytest.mark.dynamodb_semantics
def test_a_late_refresh_never_moves_a_product_back(store):
    sales = SalesRepository(store.table)
    sales.apply(change("o-1", ("hammer", 2, 3000)))
    stale = counter(store, "hammer")
    sales.apply(change("o-2", ("hammer", 5, 7500)))
    sales._put_rank("hammer", DAY, stale)  # a refresh that read before o-2 was counted lands last
    assert (rank(store, "hammer")["units"], rank(store, "hammer")["changes"]) == (7, 2)


def hot(order_id: str, units: int, shard: int, version: int = 2, day: str = DAY) -> SalesChange:
    """A flash-sale product's line: it took its stock from stock shard `shard`."""
    return SalesChange(order_id, version, day, (SalesLine("flash", units, units * 100, shard),))


@pytest.mark.dynamodb_semantics
def test_a_flash_sale_products_lines_land_on_the_counter_shards_of_their_stock_shards(store):
    sales = SalesRepository(store.table)
    assert sales.apply(hot("o-1", 2, 7))
    assert sales.apply(hot("o-2", 3, 21))
    assert not sales.apply(hot("o-2", 3, 21))  # a replay counts nothing
    assert counter(store, "flash") == {}
    assert read(store, keys.sales_shard_day_key("flash", 7, DAY))["units"] == 2
    assert read(store, keys.sales_shard_day_key("flash", 21, DAY))["units"] == 3
    assert sorted(read(store, keys.sales_sharded_key("flash", DAY))["shards"]) == [7, 21]


@pytest.mark.dynamodb_semantics
def test_a_flash_sale_products_days_sum_the_base_counter_and_the_shards_named_by_the_markers(store):
    sales = SalesRepository(store.table)
    sales.apply(change("o-0", ("flash", 4, 400)))  # before it had stock shards: the base counter
    sales.apply(hot("o-1", 2, 7))
    sales.apply(hot("o-2", 3, 21))
    sales.apply(hot("o-3", 1, 7, day="2026-03-03"))
    with counting(store.client) as calls:
        days = sales.days("flash", "2026-03-01", "2026-03-03")
    assert sorted(calls.operations) == ["Query", "Query", "Query"]  # the base, then shards 07 and 21
    assert [(d.date, d.units, d.revenue_cents) for d in days] == [("2026-03-02", 9, 900), ("2026-03-03", 1, 100)]


@pytest.mark.dynamodb_semantics
def test_a_flash_sale_products_rank_is_refreshed_at_most_once_a_second_and_sums_every_counter(store, monkeypatch):
    from shop.repository import sales as module

    sales = SalesRepository(store.table)
    sales.apply(change("o-0", ("flash", 4, 400)))
    sales.apply(hot("o-1", 2, 7))
    assert (rank(store, "flash")["units"], rank(store, "flash")["changes"]) == (6, 2)
    with counting(store.client) as calls:
        sales.apply(hot("o-2", 3, 21))  # within the second: counted, the rank left as it was
    assert calls.operations == ["UpdateItem", "TransactWriteItems"]  # the marker names shard 21, the count
    assert rank(store, "flash")["units"] == 6
    monkeypatch.setattr(module, "RANK_REFRESH_SECONDS", 0.0)
    sales.apply(hot("o-3", 1, 21))
    assert (rank(store, "flash")["units"], rank(store, "flash")["changes"]) == (10, 4)
    assert [(t.product_id, t.units) for t in sales.top(DAY, 1)] == [("flash", 10)]


@pytest.mark.dynamodb_semantics
def test_an_order_of_several_flash_sale_products_refreshes_each_rank_from_every_counter(store):
    # Three hot products: each rank refresh reads its entry, its base counter and 32 counter shards (102 keys).
    sales = SalesRepository(store.table)
    lines = tuple(SalesLine(f"flash-{n}", n + 1, (n + 1) * 100, 3 * n) for n in range(3))
    assert sales.apply(SalesChange("o-1", 2, DAY, lines))
    for n in range(3):
        assert (rank(store, f"flash-{n}")["units"], rank(store, f"flash-{n}")["changes"]) == (n + 1, 1)
    assert [(t.product_id, t.units) for t in sales.top(DAY, 3)] == [("flash-2", 3), ("flash-1", 2), ("flash-0", 1)]


@pytest.mark.dynamodb_semantics
def test_a_replay_is_told_from_an_older_releases_entry_even_when_the_store_does_not_return_it(store, monkeypatch):
    """Without the refused Put's old item (ReturnValuesOnConditionCheckFailure unanswered), the entry is read."""
    from shop.repository.store import TransactionCancelled

    sales = SalesRepository(store.table)
    counted = change("o-1", ("hammer", 2, 3000))
    assert sales.count_once(counted, history("o-1")) == (True, True)
    monkeypatch.setattr(TransactionCancelled, "old_item", lambda self, index: None)
    assert sales.count_once(counted, history("o-1")) == (False, False)
    assert sales.days("hammer", DAY, DAY)[0].units == 2


@pytest.mark.dynamodb_semantics
def test_a_fresh_records_count_leaves_the_archived_check_out_and_keeps_every_answer(store, monkeypatch):
    """guarded=False (a fresh record: its order cannot be archived yet): the same transaction without the ARCHIVED
    marker's check, and the same answers: counted, a replay, a version the release before counted (the entry
    alone, a plain put), an entry the release before wrote (counted on its marker, once)."""
    checked: list[list[str]] = []  # per transaction, the sort keys its ConditionChecks name
    transact = sales_module.transact_write

    def seen(table, items):
        checked.append([item["ConditionCheck"]["Key"]["SK"]["S"] for item in items if "ConditionCheck" in item])
        return transact(table, items)

    monkeypatch.setattr(sales_module, "transact_write", seen)
    sales = SalesRepository(store.table)
    counted = change("o-1", ("hammer", 2, 3000))
    assert sales.count_once(counted, history("o-1"), guarded=False) == (True, True)
    assert sales.count_once(counted, history("o-1"), guarded=False) == (False, False)  # a replay
    legacy = keys.order_sales_marker_key("o-1", 2)[keys.SK]
    assert checked == [[legacy], [legacy]]  # the legacy marker's check only, no ARCHIVED

    before = change("o-2", ("hammer", 2, 3000))
    assert sales.apply(before)  # the release before counted o-2 on its marker, then died (guarded: its own path)
    with counting(store.client) as calls:
        assert sales.count_once(before, history("o-2"), guarded=False) == (True, False)
    assert calls.operations[:2] == ["TransactWriteItems", "PutItem"]  # refused, then the entry alone
    assert sales.count_once(before, history("o-2"), guarded=False) == (False, False)

    store.client.put_item(TableName=store.table_name, Item=to_item(history("o-3")))  # the release before's entry
    older = change("o-3", ("hammer", 2, 3000))
    del checked[:]
    assert sales.count_once(older, history("o-3"), guarded=False) == (False, True)
    assert sales.count_once(older, history("o-3"), guarded=False) == (False, False)  # its marker refuses it
    assert keys.order_archived_key("o-3")[keys.SK] not in {sk for sks in checked for sk in sks}
    assert sales.days("hammer", DAY, DAY)[0].units == 6
