"""StockLow follows a product's total stock, stock shards included (issue 23, item 3), on real stream records.

The issue's scenario: stock 40, threshold 5, spread over 8 shards; spreading alerts nothing, selling 36
across the shards alerts once, at 4. Then: replays and reordering, concurrent crossings on two shards,
a restock and a second crossing, un-spreading and re-spreading, a crossing before the spread.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from infra.settings import STREAM_FILTERS
from local_runtime.events import stream_event as lambda_event
from local_runtime.filters import matches_any
from shop import ids, keys, wiring
from shop.models.stock import StockMove
from shop.repository import ProductRepository
from shop.repository import store as store_module
from shop.repository.store import to_item
from shop.services.orders import RequestedLine
from tests.stream.test_product_events import alerts, no_failures, product_events
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def sell(store: Any, product_id: str, quantity: int) -> str:
    return (
        wiring.order_service(store.table)
        .place(ALICE, address=ADDRESS, lines=[RequestedLine(product_id, quantity)])
        .order_id
    )


def stock_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the stream filter lets in of the product's stock: product and shard records."""
    return [
        r
        for r in records
        if matches_any(STREAM_FILTERS, r) and (only([r], entity="PRODUCT") or only([r], entity="STOCK"))
    ]


def spread_product(store: Any, invoke: Any, shards: int = 8, stock: int = 40) -> tuple[str, StreamReader]:
    pid = product(store.table, name="Headphones", stock=stock)  # the default threshold: 5
    reader = StreamReader(store)
    wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, shards)
    no_failures(invoke(lambda_event(stock_records(reader.read()))))
    return pid, reader


@pytest.mark.dynamodb_semantics
def test_spreading_the_stock_over_shards_alerts_nothing(store, invoke, recorded_bus):
    pid, reader = spread_product(store, invoke)
    assert alerts(store) == []  # not "stock 0, previous 40"

    wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 16)  # re-spread
    wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 1)  # un-spread
    wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 4)
    records = stock_records(reader.read())
    assert only(records, entity="STOCK")  # the re-spread's shard MODIFYs get through the filter
    no_failures(invoke(lambda_event(records)))
    assert alerts(store) == []
    assert [e for e in product_events(recorded_bus).values() if e["type"] == "StockLow"] == []


@pytest.mark.dynamodb_semantics
def test_selling_36_of_40_over_8_shards_alerts_once_at_4(store, invoke, recorded_bus):
    pid, reader = spread_product(store, invoke)
    for _ in range(9):
        sell(store, pid, 4)
    records = stock_records(reader.read())
    assert only(records, entity="STOCK")
    assert not only(records, entity="PRODUCT")  # the shards sold it all
    no_failures(invoke(lambda_event(records)))

    [alert] = alerts(store)
    assert (alert["product_id"], alert["name"]) == (pid, "Headphones")
    assert (alert["stock"], alert["previous_stock"], alert["low_stock_threshold"]) == (4, 8, 5)
    [low] = [e for e in product_events(recorded_bus).values() if e["type"] == "StockLow"]
    assert (low["id"], low["stock"]) == (alert["alert_id"], 4)


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize(
    "delivery",
    [
        pytest.param(lambda rs: [list(reversed(rs))], id="reversed"),
        pytest.param(lambda rs: [rs, rs], id="replayed"),
        pytest.param(lambda rs: [[r] for r in rs for _ in range(2)], id="duplicated"),
    ],
)
def test_replayed_and_reordered_shard_records_alert_once(store, invoke, recorded_bus, delivery):
    pid, reader = spread_product(store, invoke)
    for _ in range(9):
        sell(store, pid, 4)
    records = stock_records(reader.read())
    for batch in delivery(records):
        no_failures(invoke(lambda_event(batch)))
    [alert] = alerts(store)
    assert alert["stock"] == 4
    events = [e for e in product_events(recorded_bus).values() if e["type"] == "StockLow"]
    assert [e["id"] for e in events] == [alert["alert_id"]]

    no_failures(invoke(lambda_event(list(reversed(records)) + records)))
    assert alerts(store) == [alert]


@pytest.mark.integration
def test_concurrent_crossings_on_two_shards_alert_once(local_store, invoke, recorded_bus):
    """Two sales take the total from 6 to 4; their shard records are processed at once, as two instances
    reading two stream shards would: both read a low total, one writes the alert. On DynamoDB Local only:
    moto's transactions are not safe across threads (a cancelled one restores the table it copied)."""
    store = local_store
    pid, reader = spread_product(store, invoke, shards=2, stock=6)  # 3 + 3
    sell(store, pid, 1)
    sell(store, pid, 1)
    records = only(stock_records(reader.read()), entity="STOCK")
    assert len(records) == 2
    start = threading.Barrier(len(records))
    answers: list[dict[str, Any]] = []

    def process(record: dict[str, Any]) -> None:
        start.wait()
        answers.append(invoke(lambda_event([record])))

    threads = [threading.Thread(target=process, args=(record,)) for record in records]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers == [{"batchItemFailures": []}] * 2
    [alert] = alerts(store)
    assert alert["stock"] == 4


@pytest.mark.dynamodb_semantics
def test_a_restock_above_the_threshold_then_a_new_crossing_is_a_second_alert(store, invoke, recorded_bus):
    pid, reader = spread_product(store, invoke, shards=4, stock=8)  # 2 + 2 + 2 + 2
    orders = [sell(store, pid, 2), sell(store, pid, 2)]  # 8 -> 4: low
    no_failures(invoke(lambda_event(stock_records(reader.read()))))
    assert len(alerts(store)) == 1

    for order_id in orders:
        wiring.order_service(store.table).cancel(ALICE, order_id)  # back to 8, on the shards they came from
    no_failures(invoke(lambda_event(stock_records(reader.read()))))
    assert len(alerts(store)) == 1

    sell(store, pid, 2)
    sell(store, pid, 2)  # 8 -> 4 again: a new crossing
    records = stock_records(reader.read())
    no_failures(invoke(lambda_event(records)))
    no_failures(invoke(lambda_event(records)))
    assert [a["stock"] for a in alerts(store)] == [4, 4]


@pytest.mark.dynamodb_semantics
def test_a_product_low_before_it_is_spread_is_not_alerted_again(store, invoke, recorded_bus):
    pid = product(store.table, name="Headphones", stock=10)
    reader = StreamReader(store)
    sell(store, pid, 6)  # 10 -> 4 on the product item: the crossing, from its images
    wiring.catalog_service(store.table).set_stock_shards(ADMIN, pid, 2)  # 2 + 2
    sell(store, pid, 1)  # a shard sale: still low
    for record in stock_records(reader.read()):  # in the order they were written
        no_failures(invoke(lambda_event([record])))
    [alert] = alerts(store)
    assert (alert["stock"], alert["previous_stock"]) == (4, 10)


class TornReads:
    """The store's client as DynamoDB may serve it: a BatchGetItem reads each item committed, not a snapshot,
    so `between` (another transaction) is run once in the middle of the first one that reads `first`: the
    keys up to it see the table before, the rest after. A TransactGetItems is serializable: `between` runs
    before it, whole. Every read of either kind is counted."""

    def __init__(self, client: Any, first: dict[str, Any], between: Any) -> None:
        self._client, self._first, self._between = client, first, between
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _fire(self) -> None:
        between, self._between = self._between, None
        if between is not None:
            between()

    def batch_get_item(self, RequestItems: dict[str, Any], **extra: Any) -> dict[str, Any]:
        self.reads += 1
        [(table, request)] = RequestItems.items()
        wanted = request["Keys"]
        if self._between is None or self._first not in wanted:
            return self._client.batch_get_item(RequestItems=RequestItems, **extra)
        cut = wanted.index(self._first) + 1
        responses: list[dict[str, Any]] = []
        for part in (wanted[:cut], wanted[cut:]):
            if part:
                answer = self._client.batch_get_item(RequestItems={table: {**request, "Keys": part}}, **extra)
                assert not answer.get("UnprocessedKeys")
                responses += answer["Responses"].get(table, [])
            self._fire()
        return {"Responses": {table: responses}, "UnprocessedKeys": {}}

    def transact_get_items(self, **params: Any) -> dict[str, Any]:
        self.reads += 1
        self._fire()
        return self._client.transact_get_items(**params)


def tear_reads(monkeypatch: Any, store: Any, pid: str, between: Any) -> TornReads:
    """The stream processor's client, tearing its reads at shard 0 of `pid` with `between`."""
    torn = TornReads(store.client, to_item(keys.stock_shard_key(pid, 0)), between)
    monkeypatch.setattr(store_module, "dynamodb_client", lambda: torn)
    return torn


def gather(store: Any, pid: str, source: int, quantity: int) -> None:
    ProductRepository(store.table).gather_stock(
        [StockMove(pid, source=source, target=0, quantity=quantity)], token=ids.new_id()
    )


@pytest.mark.dynamodb_semantics
def test_an_orders_gathering_alerts_nothing_and_reads_nothing(store, invoke, recorded_bus, monkeypatch):
    """An order's gathering (issue 23, item 5) moves units between shards: the total (6, just above the
    threshold 5) is unchanged, so its shard records decide nothing and read nothing. Were they to read the
    total, a BatchGetItem torn by a second gathering would see shard 0 before it and shard 2 after it: 4."""
    pid, reader = spread_product(store, invoke, shards=3, stock=6)  # 2 + 2 + 2
    gather(store, pid, source=1, quantity=2)  # 4 + 0 + 2
    records = stock_records(reader.read())
    assert len(only(records, entity="STOCK", event_name="MODIFY")) == 2  # through the stream filter
    torn = tear_reads(monkeypatch, store, pid, lambda: gather(store, pid, source=2, quantity=2))

    no_failures(invoke(lambda_event(records)))

    assert alerts(store) == []
    assert [e for e in product_events(recorded_bus).values() if e["type"] == "StockLow"] == []
    assert torn.reads == 0  # a gathering draining 32 shards costs the stream no read of the total


@pytest.mark.dynamodb_semantics
def test_a_sale_reads_the_total_whole_while_a_gathering_commits(store, invoke, recorded_bus, monkeypatch):
    """A sale takes the total from 6 to 5 (the threshold: not low) while a gathering moves a shard's units
    into shard 0: read item by item, the total would lack them (a false StockLow); read as one
    serializable view, it is 5 and nothing is alerted."""
    pid, reader = spread_product(store, invoke, shards=3, stock=6)
    sell(store, pid, 1)
    records = stock_records(reader.read())
    assert len(only(records, entity="STOCK")) == 1
    layout = ProductRepository(store.table).stock_layout(pid, shards_hint=3)
    assert layout.shards[2] > 0
    torn = tear_reads(monkeypatch, store, pid, lambda: gather(store, pid, source=2, quantity=layout.shards[2]))

    no_failures(invoke(lambda_event(records)))

    assert torn.reads >= 1  # the sale left its shard below 5: the total was read (again when the hint missed shards)
    assert alerts(store) == []
    assert ProductRepository(store.table).stock_layout(pid, shards_hint=3).total == 5
