"""The product rules of the stream processor on hand-made records and the in-memory alert store.

StockLow fires once per crossing below the threshold, whatever the order or number of deliveries;
stock moves alone publish nothing. The same rules on real stream records: tests/stream/test_product_events.py.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from shop.repository import stream_records
from shop.repository.stream_records import StreamRecord
from shop.services.product_events import ProductEventsService
from shop.services.stream_outcome import Action
from tests.support.factories import ADMIN
from tests.support.memory_store import MemoryStore

PID = "01JDQ7SZ0000000000000000P1"
_sequence = itertools.count(100000000000000000001)


def image(stock: int, **fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "PK": {"S": f"PRODUCT#{PID}"},
        "SK": {"S": "PRODUCT"},
        "entity": {"S": "PRODUCT"},
        "product_id": {"S": PID},
        "name": {"S": fields.pop("name", "Widget")},
        "category": {"S": "widgets"},
        "price_cents": {"N": str(fields.pop("price_cents", 1250))},
        "stock": {"N": str(stock)},
        "created_at": {"S": "2026-01-01T00:00:00.000000Z"},
        "updated_at": {"S": fields.pop("updated_at", "2026-01-01T00:00:00.000000Z")},
    }
    for name, value in fields.items():
        item[name] = {"N": str(value)} if isinstance(value, int) else {"S": value}
    return item


def raw(event_name: str, new: dict[str, Any], old: dict[str, Any] | None = None, at: int = 1795683600) -> dict:
    data: dict[str, Any] = {
        "ApproximateCreationDateTime": at,
        "Keys": {"PK": {"S": f"PRODUCT#{PID}"}, "SK": {"S": "PRODUCT"}},
        "NewImage": new,
        "SequenceNumber": str(next(_sequence)),
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if old is not None:
        data["OldImage"] = old
    return {"eventID": data["SequenceNumber"], "eventName": event_name, "dynamodb": data}


def moves(*stocks: int, **fields: Any) -> list[dict[str, Any]]:
    """The MODIFY records of stock going through `stocks` in turn (at one second apart)."""
    return [
        raw("MODIFY", image(after, **fields), image(before, **fields), at=1795683600 + n)
        for n, (before, after) in enumerate(itertools.pairwise(stocks))
    ]


def run(store: MemoryStore, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event the records publish, as detail type + detail."""
    service = ProductEventsService(store.alerts)
    published = []
    for record in records:
        outcome = service.handle(StreamRecord.from_lambda(record))
        published += [{"type": event.detail_type, **event.detail} for event in outcome.events]
    return published


def alerts(store: MemoryStore) -> list[tuple[int, int]]:
    """(previous stock, stock) of every alert, newest first, as an admin reads them."""
    page = store.alert_service().newest(ADMIN, limit=100, next_token=None)
    return [(alert.previous_stock, alert.stock) for alert in page.items]


def by_id(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Events deduped on their id, as a consumer would; a redelivered id must carry the same detail."""
    seen: dict[str, dict[str, Any]] = {}
    for event in events:
        assert seen.setdefault(event["id"], event) == event
    return seen


def test_stock_low_fires_once_per_crossing_not_per_order_below():
    store = MemoryStore()
    # 6 -> 4 crosses (default threshold 5); 4 -> 3 -> 1 stay low; restock to 10; 10 -> 3 crosses again
    records = moves(6, 4, 3, 1, 10, 7, 3)
    events = by_id(run(store, records))
    lows = [e for e in events.values() if e["type"] == "StockLow"]
    assert [(e["previous_stock"], e["stock"], e["low_stock_threshold"]) for e in lows] == [(6, 4, 5), (7, 3, 5)]
    assert [e["type"] for e in events.values()] == ["StockLow", "StockLow"]  # stock moves alone: nothing else
    assert alerts(store) == [(7, 3), (6, 4)]  # newest first


@pytest.mark.parametrize(
    "delivery",
    [
        pytest.param(lambda rs: rs + rs, id="replayed"),
        pytest.param(lambda rs: list(reversed(rs)), id="reversed"),
        pytest.param(lambda rs: [r for r in rs for _ in range(3)], id="each-duplicated"),
        pytest.param(lambda rs: list(reversed(rs)) + rs[2:] + rs[:3], id="reversed-then-partial-replays"),
    ],
)
def test_each_crossing_is_one_alert_and_one_event_id_however_delivered(delivery):
    records = moves(6, 4, 10, 3, 2)
    once = MemoryStore()
    expected = by_id(run(once, records))

    store = MemoryStore()
    events = run(store, delivery(records))
    assert by_id(events) == expected
    assert sorted(alerts(store)) == sorted(alerts(once)) == [(6, 4), (10, 3)]


def test_the_boundary_is_below_the_threshold():
    store = MemoryStore()
    run(store, moves(6, 5, 4))  # 5 is not low with threshold 5; 4 is
    assert alerts(store) == [(5, 4)]


def test_the_products_own_threshold_counts_and_zero_never_alerts():
    store = MemoryStore()
    run(store, moves(30, 20, 19, low_stock_threshold=20))
    run(store, moves(3, 0, low_stock_threshold=0))
    assert alerts(store) == [(20, 19)]


def test_a_threshold_raised_above_the_stock_is_a_crossing_and_an_update():
    store = MemoryStore()
    record = raw("MODIFY", image(8, low_stock_threshold=10, updated_at="b"), image(8, updated_at="a"))
    events = run(store, [record])
    assert [(e["type"], e.get("changed")) for e in events] == [
        ("ProductUpdated", ["low_stock_threshold"]),
        ("StockLow", None),
    ]
    assert alerts(store) == [(8, 8)]


def test_stock_moves_alone_are_skipped_without_reading_the_images(monkeypatch):
    monkeypatch.setattr(stream_records, "from_item", None)  # deserialising an image would fail
    service = ProductEventsService(MemoryStore().alerts)
    for record in moves(50, 49, 20, 30):
        assert service.handle(StreamRecord.from_lambda(record)).action is Action.SKIPPED
    rated = raw("MODIFY", image(9, rating_count=1, rating_sum=5), image(9))
    assert service.handle(StreamRecord.from_lambda(rated)).action is Action.SKIPPED


def test_created_updated_and_archived():
    store = MemoryStore()
    created = raw("INSERT", image(2))  # created low: no crossing, nothing to alert
    edited = raw("MODIFY", image(2, price_cents=999, updated_at="b"), image(2))
    archived = raw("MODIFY", image(2, price_cents=999, status="ARCHIVED", updated_at="c"), image(2, price_cents=999))
    events = run(store, [created, edited, archived])
    assert [(e["type"], e["changed"], e["status"], e["price_cents"]) for e in events] == [
        ("ProductCreated", [], "ACTIVE", 1250),
        ("ProductUpdated", ["price_cents"], "ACTIVE", 999),
        ("ProductArchived", ["status"], "ARCHIVED", 999),
    ]
    assert events[0]["id"] == f"{PID}:{created['dynamodb']['SequenceNumber']}:created"
    assert events[0]["categories"] == ["widgets"]
    assert alerts(store) == []


def test_an_archived_product_archived_again_publishes_nothing():
    record = raw("MODIFY", image(2, status="ARCHIVED"), image(2, status="ARCHIVED"))
    assert run(MemoryStore(), [record]) == []
