"""Fixtures of the stream processor tests: the handler as Lambda calls it, table dumps, an archive bucket.
(`recorded_bus`, `deletions` and `local_s3`, which other folders use too: tests/conftest.py.)"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from local_runtime.events import stream_event as lambda_event
from local_runtime.functions import lambda_context
from local_runtime.in_process import declared_functions
from local_runtime.local_aws import LocalAws
from local_runtime.worker import LambdaContext
from shop import publishing, wiring
from shop.models import OrderStatus
from shop.repository import order_archive
from shop.repository.store import from_item
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE, parcel, product
from tests.support.streams import StreamReader, only


def order_events_context() -> LambdaContext:
    """The context Lambda passes order_events (local_runtime's, sized as infra.settings declares it)."""
    return lambda_context(declared_functions()["order_events"])


@pytest.fixture
def invoke() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Call order_events' handler the way Lambda does."""
    from functions.order_events.handler import handler

    def call(event: dict[str, Any]) -> dict[str, Any]:
        return handler(event, order_events_context())

    return call


@pytest.fixture(autouse=True)
def _fresh_events_client() -> Iterator[None]:
    publishing.reset_client()
    yield
    publishing.reset_client()


def dump(store: Any) -> list[dict[str, Any]]:
    """Every item of the test table, sorted by key (a Scan: tests only)."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": store.table_name, "ConsistentRead": True}
    while True:
        page = store.client.scan(**kwargs)
        items += [from_item(item) for item in page.get("Items", [])]
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return sorted(items, key=lambda item: (item["PK"], item["SK"]))


def emitted_metrics(output: str, dimensions: tuple[str, ...] = ("service",)) -> dict[str, float]:
    """Sum of each metric over the EMF documents Powertools printed with these dimensions (the function's own;
    ("service", "function_version"): the per-version counts a canary alarms on, shop.version_metrics)."""
    totals: dict[str, float] = {}
    for line in output.splitlines():
        if '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            if list(dimensions) not in directive["Dimensions"]:
                continue
            for metric in directive["Metrics"]:
                value = document[metric["Name"]]
                values = value if isinstance(value, list) else [value]
                totals[metric["Name"]] = totals.get(metric["Name"], 0) + sum(values)
    return totals


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[dict[str, Any]]]:
    """The handler's structured log lines (JSON), captured from its Powertools Logger."""
    import io

    from functions.order_events import handler

    buffer = io.StringIO()
    monkeypatch.setattr(handler.logger.registered_handler, "stream", buffer)
    return lambda: [json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")]


@dataclass
class Bucket:
    client: Any
    name: str

    def objects(self) -> dict[str, str]:
        listed = self.client.list_objects_v2(Bucket=self.name).get("Contents", [])
        return {
            o["Key"]: self.client.get_object(Bucket=self.name, Key=o["Key"])["Body"].read().decode() for o in listed
        }


@pytest.fixture
def s3(store: Any, local_s3: LocalAws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bucket]:
    """A fresh archive bucket (ARCHIVE_BUCKET) and the S3 client every archive call of the test uses
    (moto's S3 server beside DynamoDB Local, where `store` is)."""
    client = local_s3.client("s3")
    bucket = f"archive-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    monkeypatch.setenv("ARCHIVE_BUCKET", bucket)
    monkeypatch.setattr(order_archive, "_client", client)
    yield Bucket(client, bucket)
    order_archive.reset_client()


def shipped_order(store: Any, invoke: Any) -> tuple[str, dict[str, Any]]:
    """An order placed, confirmed and shipped; its SHIPPED record, not processed yet."""
    orders = wiring.order_service(store.table)
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(product(store.table), 1)])
    reader = StreamReader(store)
    invoke(lambda_event(reader.read()))
    invoke(lambda_event(reader.read()))
    orders.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    [shipped] = only(reader.read(), entity="ORDER", event_name="MODIFY")
    return order.order_id, shipped
