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
from shop.services.catalog import CatalogService
from shop.services.orders import OrderService, RequestedLine
from tests.stream.test_product_events import alerts, no_failures, product_events
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def sell(store: Any, product_id: str, quantity: int) -> str:
    return OrderService(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(product_id, quantity)]).order_id


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
    CatalogService(store.table).set_stock_shards(ADMIN, pid, shards)
    no_failures(invoke(lambda_event(stock_records(reader.read()))))
    return pid, reader


def test_spreading_the_stock_over_shards_alerts_nothing(store, invoke, recorded_bus):
    pid, reader = spread_product(store, invoke)
    assert alerts(store) == []  # not "stock 0, previous 40"

    CatalogService(store.table).set_stock_shards(ADMIN, pid, 16)  # re-spread
    CatalogService(store.table).set_stock_shards(ADMIN, pid, 1)  # un-spread
    CatalogService(store.table).set_stock_shards(ADMIN, pid, 4)
    records = stock_records(reader.read())
    assert only(records, entity="STOCK")  # the re-spread's shard MODIFYs get through the filter
    no_failures(invoke(lambda_event(records)))
    assert alerts(store) == []
    assert [e for e in product_events(recorded_bus).values() if e["type"] == "StockLow"] == []


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


def test_a_restock_above_the_threshold_then_a_new_crossing_is_a_second_alert(store, invoke, recorded_bus):
    pid, reader = spread_product(store, invoke, shards=4, stock=8)  # 2 + 2 + 2 + 2
    orders = [sell(store, pid, 2), sell(store, pid, 2)]  # 8 -> 4: low
    no_failures(invoke(lambda_event(stock_records(reader.read()))))
    assert len(alerts(store)) == 1

    for order_id in orders:
        OrderService(store.table).cancel(ALICE, order_id)  # back to 8, on the shards they came from
    no_failures(invoke(lambda_event(stock_records(reader.read()))))
    assert len(alerts(store)) == 1

    sell(store, pid, 2)
    sell(store, pid, 2)  # 8 -> 4 again: a new crossing
    records = stock_records(reader.read())
    no_failures(invoke(lambda_event(records)))
    no_failures(invoke(lambda_event(records)))
    assert [a["stock"] for a in alerts(store)] == [4, 4]


def test_a_product_low_before_it_is_spread_is_not_alerted_again(store, invoke, recorded_bus):
    pid = product(store.table, name="Headphones", stock=10)
    reader = StreamReader(store)
    sell(store, pid, 6)  # 10 -> 4 on the product item: the crossing, from its images
    CatalogService(store.table).set_stock_shards(ADMIN, pid, 2)  # 2 + 2
    sell(store, pid, 1)  # a shard sale: still low
    for record in stock_records(reader.read()):  # in the order they were written
        no_failures(invoke(lambda_event([record])))
    [alert] = alerts(store)
    assert (alert["stock"], alert["previous_stock"]) == (4, 10)
