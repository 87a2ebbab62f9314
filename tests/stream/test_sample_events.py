"""Every sample event in events/order_events/ runs through the handler with the expected outcome."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "events" / "order_events"
POISON = "100000000000000000005"

# file -> (batchItemFailures' identifiers, detail types published)
EXPECTED: dict[str, tuple[list[str], list[str]]] = {
    "new_order.json": ([], []),  # no such order in the table: the conditional confirm loses, nothing happens
    "status_change.json": ([], ["OrderStatusChanged"]),
    "session_ttl_removal.json": ([], ["CartAbandoned"]),
    "session_user_delete.json": ([], []),
    "order_ttl_removal.json": ([], []),  # archived to S3 (checked below); nothing is published
    "order_user_delete.json": ([], []),  # not TTL's: nothing to archive
    "poison_record.json": ([POISON], []),
    "mixed_batch.json": ([POISON], ["OrderStatusChanged", "CartAbandoned"]),
    "product_created.json": ([], ["ProductCreated"]),
    "product_stock_low.json": ([], ["StockLow"]),  # 6 -> 4 crosses the default threshold 5; 4 -> 3 stays low
    "product_stock_move.json": ([], []),  # an order's stock move above the threshold: skipped
    "product_archived.json": ([], ["ProductArchived"]),
    # issue 13: a return accepted (RETURN_REQUESTED -> RETURNED): the refund is due, the sales are taken back
    "order_returned.json": ([], ["OrderStatusChanged", "OrderRefundDue"]),
}

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def test_every_sample_has_an_expectation():
    assert sorted(p.name for p in SAMPLES.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_event_is_a_lambda_stream_event(name):
    event = json.loads((SAMPLES / name).read_text())
    for record in event["Records"]:
        assert {
            "eventID",
            "eventName",
            "eventVersion",
            "eventSource",
            "awsRegion",
            "dynamodb",
            "eventSourceARN",
        } <= set(record)
        assert record["eventSource"] == "aws:dynamodb"
        assert record["eventName"] in {"INSERT", "MODIFY", "REMOVE"}
        data = record["dynamodb"]
        assert {"ApproximateCreationDateTime", "Keys", "SequenceNumber", "SizeBytes", "StreamViewType"} <= set(data)
        assert ("NewImage" in data) == (record["eventName"] != "REMOVE")
        assert ("OldImage" in data) == (record["eventName"] != "INSERT")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_event_runs_through_the_handler(name, moto_store, invoke, recorded_bus, monkeypatch):
    failures, published = EXPECTED[name]
    event: dict[str, Any] = json.loads((SAMPLES / name).read_text())
    s3 = archive_bucket(monkeypatch)

    response = invoke(event)

    assert response == {"batchItemFailures": [{"itemIdentifier": i} for i in failures]}
    assert [e["type"] for e in recorded_bus.events] == published
    archived = [o["Key"] for o in s3.list_objects_v2(Bucket=ARCHIVE).get("Contents", [])]
    order_id = "01JDQ7W9A1B3C5D7E9F1G3H5J7"
    expected = [f"orders/year=2025/month=11/day=10/{order_id}.json"] if name == "order_ttl_removal.json" else []
    assert archived == expected


ARCHIVE = "shop-sample-archive"


def archive_bucket(monkeypatch: pytest.MonkeyPatch) -> Any:
    """An archive bucket in moto's S3 (inside moto_store's mock), the one order_events writes to."""
    import boto3

    from shop.repository import order_archive

    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=ARCHIVE)
    monkeypatch.setenv("ARCHIVE_BUCKET", ARCHIVE)
    monkeypatch.setattr(order_archive, "_client", client)
    return client
