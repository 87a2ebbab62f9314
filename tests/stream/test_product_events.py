"""Product events on real stream records (moto and DynamoDB Local): replays change nothing.

The scenario drives stock through the services as production does (orders take it, an admin restocks)
and hands the table's own stream records to the handler: in order, replayed, reversed, duplicated.
Each crossing below the threshold is one alert and one StockLow id; stock moves alone publish nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.settings import STREAM_FILTERS
from local_runtime.events import stream_event as lambda_event
from local_runtime.filters import matches_any
from shop import keys, wiring
from shop.repository.store import to_item, values
from shop.repository.stream_records import StreamRecord
from shop.services.orders import RequestedLine
from shop.services.stream_outcome import Action
from tests.stream.conftest import dump
from tests.stream.test_processor import NoStore
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.streams import StreamReader, only

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def order(store: Any, product_id: str, quantity: int) -> None:
    wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(product_id, quantity)])


def product_events(bus: Any) -> dict[str, dict[str, Any]]:
    """The product events published, deduped on their id; a redelivered id must carry the same detail."""
    seen: dict[str, dict[str, Any]] = {}
    for event in bus.events:
        if event["source"] == "shop.products":
            assert seen.setdefault(event["id"], event) == event
    return seen


def alerts(store: Any) -> list[dict[str, Any]]:
    page = wiring.alert_service(store.table).newest(ADMIN, limit=100, next_token=None)
    return [alert.model_dump() for alert in page.items]


def no_failures(response: dict[str, Any]) -> None:
    assert response == {"batchItemFailures": []}


def crossing_twice(store: Any) -> tuple[str, list[dict[str, Any]]]:
    """6 -> 4 (crosses 5), 4 -> 3 (still low), restock to 10, 10 -> 3 (crosses again): its stream records."""
    pid = product(store.table, name="Espresso beans", stock=6)
    reader = StreamReader(store)
    order(store, pid, 2)
    order(store, pid, 1)
    wiring.catalog_service(store.table).adjust_stock(ADMIN, pid, 7)
    order(store, pid, 7)
    return pid, reader.read()


@pytest.mark.dynamodb_semantics
def test_two_crossings_are_two_alerts_and_stock_moves_publish_nothing(store, invoke, recorded_bus):
    pid, records = crossing_twice(store)
    assert len(only(records, entity="PRODUCT", event_name="MODIFY")) == 4
    no_failures(invoke(lambda_event(records)))

    events = product_events(recorded_bus)
    assert [event["type"] for event in events.values()] == ["ProductCreated", "StockLow", "StockLow"]
    lows = [
        (e["previous_stock"], e["stock"], e["low_stock_threshold"]) for e in events.values() if e["type"] == "StockLow"
    ]
    assert lows == [(6, 4, 5), (10, 3, 5)]
    listed = alerts(store)
    # newest first: by the records' time, then (within one second) by their sequence numbers
    assert [(a["previous_stock"], a["stock"]) for a in listed] == [(10, 3), (6, 4)]
    assert {a["alert_id"] for a in listed} == {e["id"] for e in events.values() if e["type"] == "StockLow"}
    assert all(a["product_id"] == pid and a["name"] == "Espresso beans" for a in listed)


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize(
    "delivery",
    [
        pytest.param(lambda rs: [rs, rs], id="replayed"),
        pytest.param(lambda rs: [list(reversed(rs))], id="reversed"),
        pytest.param(lambda rs: [[r for r in rs for _ in range(2)]], id="duplicated"),
        pytest.param(lambda rs: [rs[len(rs) // 2 :], rs, list(reversed(rs[: len(rs) // 2]))], id="split-and-replayed"),
    ],
)
def test_replays_write_and_publish_each_alert_and_event_once(store, invoke, recorded_bus, delivery):
    _, records = crossing_twice(store)
    product_records = only(records, entity="PRODUCT")
    for batch in delivery(product_records):
        no_failures(invoke(lambda_event(batch)))
    after = dump(store)
    events = product_events(recorded_bus)
    assert sorted(event["type"] for event in events.values()) == ["ProductCreated", "StockLow", "StockLow"]
    assert len(alerts(store)) == 2

    no_failures(invoke(lambda_event(list(reversed(product_records)) + product_records)))
    assert dump(store) == after
    assert product_events(recorded_bus) == events


@pytest.mark.dynamodb_semantics
def test_a_products_own_threshold_decides_the_crossing(store, invoke, recorded_bus):
    pid = product(store.table, stock=30)
    store.client.update_item(  # what an admin's threshold edit leaves on the item
        TableName=store.table_name,
        Key=to_item(keys.product_key(pid)),
        UpdateExpression="SET low_stock_threshold = :t",
        ExpressionAttributeValues=values(t=20),
    )
    reader = StreamReader(store)
    order(store, pid, 10)  # 30 -> 20: not below 20
    order(store, pid, 1)  # 20 -> 19: crosses
    order(store, pid, 5)  # 19 -> 14: stays low
    no_failures(invoke(lambda_event(reader.read())))
    [alert] = alerts(store)
    assert (alert["previous_stock"], alert["stock"], alert["low_stock_threshold"]) == (20, 19, 20)


@pytest.mark.dynamodb_semantics
def test_a_catalogue_edit_publishes_product_updated(store, invoke, recorded_bus):
    pid = product(store.table, stock=30)
    reader = StreamReader(store)
    reader.read()  # the INSERT (ProductCreated) is not this test's
    wiring.catalog_service(store.table).update(ADMIN, pid, {"price_cents": 1999})
    order(store, pid, 1)
    no_failures(invoke(lambda_event(reader.read())))
    [updated] = product_events(recorded_bus).values()
    assert (updated["type"], updated["changed"], updated["price_cents"]) == ("ProductUpdated", ["price_cents"], 1999)


@pytest.mark.dynamodb_semantics
def test_the_filter_lets_in_product_records_and_each_order_line_costs_one_skipped_record(store, invoke, monkeypatch):
    """What the mapping's filter admits per 3-line order (docs/performance.md, "Product events")."""

    pids = [product(store.table, name=f"Beans {n}", stock=100) for n in range(3)]
    wiring.catalog_service(store.table).review(ALICE, pids[0], rating=5, title="t", body="b")
    reader = StreamReader(store)
    admitted = [r for r in reader.read() if matches_any(STREAM_FILTERS, r)]
    assert [(r["eventName"], r["dynamodb"]["Keys"]["SK"]["S"]) for r in admitted] == [("INSERT", "PRODUCT")] * 3 + [
        ("MODIFY", "PRODUCT")  # the review's rating summary: a product MODIFY, skipped by the rule
    ]
    no_failures(invoke(lambda_event(admitted)))

    wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 2) for pid in pids])
    placed = [r for r in reader.read() if matches_any(STREAM_FILTERS, r)]
    stock_moves = only(placed, entity="PRODUCT", event_name="MODIFY")
    assert (len(placed), len(stock_moves)) == (4, 3)  # the order's INSERT, and one stock move per line
    service = wiring.order_events_service(store.table)
    monkeypatch.setattr(service.effects.table, "_client", NoStore())  # a skipped stock move calls nothing
    for record in stock_moves:
        assert service.handle(StreamRecord.from_lambda(record)).action is Action.SKIPPED
