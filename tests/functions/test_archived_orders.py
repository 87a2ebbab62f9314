"""An archived order over the orders function's HTTP routes, on moto and DynamoDB Local (S3: moto's, in-process
beside the moto table, moto's server beside DynamoDB Local): read from the archive by its owner or an admin,
404 for anyone else, 409 ORDER_ARCHIVED for a change, 503 while it is being archived."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from local_runtime.local_aws import LocalAws
from shop.config import settings
from shop.models import Order
from shop.repository import order_archive
from shop.repository.order_archive import ArchiveBucket, OrderArchivalRepository
from shop.repository.orders import OrderRepository
from tests.functions.apigw import ADMIN, ALICE, BOB, call

SHIPPED = "00-alice-shipped"  # events/seed.json: alice's order at version 3


@pytest.fixture
def bucket(api: Any, local_s3: LocalAws, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArchiveBucket]:
    client = local_s3.client("s3")  # moto's S3 server beside DynamoDB Local, where `api` is
    name = f"archive-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    monkeypatch.setenv("ARCHIVE_BUCKET", name)
    settings.cache_clear()
    monkeypatch.setattr(order_archive, "_client", client)
    yield ArchiveBucket(name, client)
    order_archive.reset_client()


def archive(api: Any, bucket: ArchiveBucket, order_id: str) -> Order:
    """What TTL and order_events do to a finished order, done directly."""
    order = OrderRepository(api.table).get(order_id)
    key = bucket.put(order, archived_at=order.updated_at)
    OrderArchivalRepository(api.table).mark_archived(order, archive_key=key, archived_at=order.updated_at)
    key_of = {"PK": {"S": f"ORDER#{order_id}"}}
    for sk in ("ORDER", *(f"HISTORY#{v:06d}" for v in range(1, order.version + 1))):
        api.client.delete_item(TableName=api.table_name, Key={**key_of, "SK": {"S": sk}})
    return order


@pytest.mark.dynamodb_semantics
def test_an_archived_order_reads_from_the_archive_for_its_owner_and_admins(api, bucket):
    before = call("GET", f"/orders/{SHIPPED}", claims=ALICE)
    assert (before.status, before.body["archived"]) == (200, False)
    archive(api, bucket, SHIPPED)
    read = call("GET", f"/orders/{SHIPPED}", claims=ALICE)
    assert read.status == 200, read.body
    assert read.body["archived"] is True
    assert {k: v for k, v in read.body.items() if k != "archived"} == {
        k: v for k, v in before.body.items() if k != "archived"
    }
    assert read.headers["etag"] == before.headers["etag"]
    assert call("GET", f"/orders/{SHIPPED}", claims=ADMIN).body["archived"] is True
    assert call("GET", f"/orders/{SHIPPED}", claims=BOB).code == "ORDER_NOT_FOUND"
    listed = call("GET", "/customers/alice/orders", claims=ALICE).body["items"]
    assert SHIPPED in [o["order_id"] for o in listed]


@pytest.mark.dynamodb_semantics
def test_an_archived_order_does_not_change(api, bucket):
    archive(api, bucket, SHIPPED)
    patched = call(
        "PATCH", f"/orders/{SHIPPED}", claims=ADMIN, body={"status": "DELIVERED"}, headers={"if-match": '"3"'}
    )
    assert (patched.status, patched.code) == (409, "ORDER_ARCHIVED")
    cancelled = call("POST", f"/orders/{SHIPPED}/cancel", claims=ALICE)
    assert (cancelled.status, cancelled.code) == (409, "ORDER_ARCHIVED")
    assert call("POST", f"/orders/{SHIPPED}/cancel", claims=BOB).code == "ORDER_NOT_FOUND"


@pytest.mark.dynamodb_semantics
def test_an_order_being_archived_is_503_with_retry_after(api, bucket):
    api.client.put_item(
        TableName=api.table_name,
        Item={"PK": {"S": f"ORDER#{SHIPPED}"}, "SK": {"S": "HISTORY#000002"}, "status": {"S": "CONFIRMED"}},
    )
    api.client.delete_item(TableName=api.table_name, Key={"PK": {"S": f"ORDER#{SHIPPED}"}, "SK": {"S": "ORDER"}})
    busy = call("GET", f"/orders/{SHIPPED}", claims=ALICE)
    assert (busy.status, busy.code, busy.headers.get("retry-after")) == (503, "SERVICE_UNAVAILABLE", "1")
