"""Archiving an order whose TTL passed (shop.services.archival), on an order's partition kept in memory: only the
TTL's REMOVE archives; the whole order goes to the archive, then the marker, then what is left is deleted; a retry
after the marker only finishes the deletes; history written between the first read and the marker is archived too.
When the TTL is set: test_archive_timing.py; the REMOVE through the stream processor: test_order_events.py; on
DynamoDB Local and S3: tests/stream/test_archival.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from shop.models import Order
from shop.services.archival import ArchivalService, Archived
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE
from tests.support.memory_store import MemoryStore
from tests.support.memory_stream import MemoryChange

AT = "2026-03-01T12:00:00.000000Z"


@dataclass(frozen=True)
class Left:
    archive_key: str | None
    history: list[dict[str, Any]]
    leftovers: list[dict[str, Any]]


@dataclass
class Partition:
    """ArchivalStore and ArchiveWriter over one order's items: history items, sales markers, the ARCHIVED marker;
    `late` history items appear when the marker is written (a replayed record's effects committed meanwhile)."""

    history: list[dict[str, Any]]
    sales: list[dict[str, Any]] = field(default_factory=list)
    late: list[dict[str, Any]] = field(default_factory=list)
    marker: tuple[str, str] | None = None  # (archive key, owner)
    objects: dict[str, Order] = field(default_factory=dict)
    puts: int = 0
    deleted: list[str] = field(default_factory=list)

    def remains(self, order_id: str) -> Left:
        return Left(self.marker[0] if self.marker else None, list(self.history), self.history + self.sales)

    def order(self, removed: Mapping[str, Any], history: list[dict[str, Any]]) -> Order:
        return Order.model_validate({**removed, "history": [item["entry"] for item in history]})

    def mark_archived(self, order: Order, *, archive_key: str, archived_at: str) -> bool:
        self.marker = (archive_key, order.customer_id)
        self.history += self.late
        return True

    def delete_history(self, order_id: str, history: list[dict[str, Any]]) -> int:
        keys = {item["SK"] for item in history}
        self.deleted += sorted(keys)
        self.history = [item for item in self.history if item["SK"] not in keys]
        self.sales = [item for item in self.sales if item["SK"] not in keys]
        return len(keys)

    def put(self, order: Order, *, archived_at: str) -> str:
        self.puts += 1
        key = f"orders/{order.order_id}.json"
        self.objects[key] = order
        return key


@pytest.fixture
def cancelled(memory: MemoryStore) -> Order:
    hammer = memory.catalog_service().create(
        ADMIN, name="Hammer", category="tools", price_cents=1500, description=None, stock=10
    )
    orders = memory.order_service()
    placed = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer.product_id, 1)])
    return orders.cancel(ALICE, placed.order_id)


def items(order: Order) -> list[dict[str, Any]]:
    return [{"SK": f"HISTORY#{n:02d}", "entry": entry.model_dump(mode="json")} for n, entry in enumerate(order.history)]


def removal(order: Order, *, by_ttl: bool = True) -> MemoryChange:
    """The order item's REMOVE (without its history: the table keeps that in its own items)."""
    image = order.model_dump(mode="json", exclude={"history", "archived"})
    return MemoryChange("REMOVE", "1", "ORDER", order.order_id, image, None, AT, removed_by_ttl=by_ttl)


def archival(partition: Partition) -> ArchivalService:
    return ArchivalService(partition, partition, now=lambda: AT)


def test_only_the_ttls_remove_archives(cancelled):
    partition = Partition(items(cancelled))
    assert archival(partition).order_removed(removal(cancelled, by_ttl=False)) is None
    assert (partition.puts, partition.marker, partition.deleted) == (0, None, [])


def test_the_whole_order_is_archived_then_marked_then_the_rest_deleted(cancelled):
    partition = Partition(items(cancelled), sales=[{"SK": "SALES#1"}])
    done = archival(partition).order_removed(removal(cancelled))
    key = f"orders/{cancelled.order_id}.json"
    assert done == Archived(cancelled.order_id, key, written=True, history_deleted=len(cancelled.history) + 1)
    assert partition.objects[key].model_dump(exclude={"archived"}) == cancelled.model_dump(exclude={"archived"})
    assert partition.marker == (key, ALICE.sub)
    assert (partition.history, partition.sales, partition.puts) == ([], [], 1)


def test_a_retry_after_the_marker_only_finishes_the_deletes(cancelled):
    partition = Partition(items(cancelled), marker=(f"orders/{cancelled.order_id}.json", ALICE.sub))
    done = archival(partition).order_removed(removal(cancelled))
    assert done is not None
    assert (done.written, done.history_deleted) == (False, len(cancelled.history))
    assert (partition.puts, partition.history) == (0, [])
    assert archival(partition).order_removed(removal(cancelled)) == Archived(
        cancelled.order_id, f"orders/{cancelled.order_id}.json", written=False, history_deleted=0
    )


def test_history_written_before_the_marker_is_archived_too_and_deleted_with_the_rest(cancelled):
    first, *rest = items(cancelled)
    partition = Partition([first], late=rest)  # the later entries' writes committed between the read and the marker
    done = archival(partition).order_removed(removal(cancelled))
    assert done is not None
    assert (done.written, done.history_deleted, partition.puts) == (True, len(cancelled.history), 2)
    archived = partition.objects[done.archive_key]
    assert [entry.status for entry in archived.history] == [entry.status for entry in cancelled.history]
    assert partition.history == []
