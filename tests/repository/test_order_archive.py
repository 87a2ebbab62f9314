"""The order store's side of archival on moto and DynamoDB Local: the TTL written with a status change, and
what a read of an archived (or being archived) order raises."""

from __future__ import annotations

from typing import Any

import pytest

from shop import errors, wiring
from shop.models import OrderStatus
from shop.repository import OrderRepository
from shop.repository.order_archive import OrderArchivalRepository, object_key
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ALICE, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream


def placed(store: Any) -> Any:
    pid = product(store.table, stock=5)
    return wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])


def ttl_of(store: Any, order_id: str) -> int | None:
    item = store.client.get_item(
        TableName=store.table_name, Key={"PK": {"S": f"ORDER#{order_id}"}, "SK": {"S": "ORDER"}}, ConsistentRead=True
    )["Item"]
    return int(item["expires_at"]["N"]) if "expires_at" in item else None


@pytest.mark.dynamodb_semantics
def test_a_status_change_sets_or_clears_the_ttl_in_its_own_write(store):
    orders = OrderRepository(store.table)
    order = placed(store)
    confirmed = orders.change_status(order, OrderStatus.CONFIRMED, updated_at=order.updated_at, expires_at=None)
    assert ttl_of(store, order.order_id) is None
    cancelled = orders.change_status(
        confirmed, OrderStatus.CANCELLED, updated_at=confirmed.updated_at, restock=order.lines, expires_at=1_900_000_000
    )
    assert ttl_of(store, order.order_id) == 1_900_000_000
    assert cancelled.status is OrderStatus.CANCELLED


@pytest.mark.dynamodb_semantics
def test_a_ttl_is_cleared_by_a_change_without_one(store):
    orders = OrderRepository(store.table)
    order = placed(store)
    confirmed = orders.change_status(
        order, OrderStatus.CONFIRMED, updated_at=order.updated_at, expires_at=1_900_000_000
    )
    orders.change_status(confirmed, OrderStatus.SHIPPED, updated_at=confirmed.updated_at)
    assert ttl_of(store, order.order_id) is None


def remove_order_item(store: Any, order_id: str) -> None:
    store.client.delete_item(TableName=store.table_name, Key={"PK": {"S": f"ORDER#{order_id}"}, "SK": {"S": "ORDER"}})


@pytest.mark.dynamodb_semantics
def test_an_archived_order_reads_as_archived_with_its_key_and_owner(store):
    order = placed(store)
    archival = OrderArchivalRepository(store.table)
    key = object_key(order.order_id, order.created_at)
    assert archival.mark_archived(order, archive_key=key, archived_at=order.updated_at)
    assert not archival.mark_archived(order, archive_key=key, archived_at=order.updated_at)  # once
    remove_order_item(store, order.order_id)
    with pytest.raises(errors.OrderArchived) as archived:
        OrderRepository(store.table).get(order.order_id)
    assert (archived.value.archive_key, archived.value.customer_id) == (key, "alice")


@pytest.mark.dynamodb_semantics
def test_an_order_between_its_removal_and_its_archive_is_unavailable_not_missing(store):
    order = placed(store)
    store.client.put_item(
        TableName=store.table_name,
        Item={"PK": {"S": f"ORDER#{order.order_id}"}, "SK": {"S": "HISTORY#000002"}, "status": {"S": "CANCELLED"}},
    )
    remove_order_item(store, order.order_id)
    with pytest.raises(errors.ServiceUnavailable):
        OrderRepository(store.table).get(order.order_id)
    with pytest.raises(errors.OrderNotFound):
        OrderRepository(store.table).get("no-such-order")


@pytest.mark.dynamodb_semantics
def test_history_is_deleted_in_batches(store):
    order = placed(store)
    history = [{"SK": f"HISTORY#{v:06d}"} for v in range(2, 60)]
    for item in history:
        store.client.put_item(
            TableName=store.table_name, Item={"PK": {"S": f"ORDER#{order.order_id}"}, "SK": {"S": item["SK"]}}
        )
    archival = OrderArchivalRepository(store.table)
    left = archival.remains(order.order_id)
    assert (left.archive_key, len(left.history)) == (None, 58)
    assert archival.delete_history(order.order_id, left.history) == 58
    assert archival.delete_history(order.order_id, left.history) == 58  # again: nothing left, no error
    assert archival.remains(order.order_id).history == []
