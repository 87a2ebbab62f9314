"""Archival: when a finished order leaves the table (its TTL) and what the stream processor does then.

- A status change sets the order's TTL in the same write (`expires_at`): CANCELLED and RETURNED are
  final at once (and PAYMENT_FAILED and EXPIRED, an unpaid order's ends), DELIVERED once the return window is over, so they expire ARCHIVE_AFTER_DAYS after
  the change (DELIVERED: after the change + RETURN_WINDOW_DAYS). Any other status clears the TTL.
- Never sooner than ARCHIVE_GRACE_SECONDS after that change. When, and which records are fresh:
  shop.services.archive_timing (loaded without this module, which only the TTL's REMOVE needs).
- When DynamoDB's TTL removes the order item (a REMOVE whose userIdentity is the TTL service), the
  processor reads what is left of the order (one Query: history items, the marker), writes the whole
  order with its history to S3, writes the marker (the object's key, the owner), then deletes the
  history items. Every step is idempotent: the object key follows from the order, the marker is written
  once and, once there, means the object is complete (a retry only deletes what is left).
- Once the marker is there, no record of the order writes anything (each effect of a record that is not fresh
  checks that the marker is absent in its transaction; a fresh record cannot meet an archived order). A replayed record whose effects committed between the first read and the marker
  is caught by a second read after the marker: its history entry is added to the object, and what it wrote
  is deleted with the rest, so nothing is left beside the marker.
  An S3 or table failure raises: the record fails, is retried, then kept by the on-failure destination.
- The customer's order list entry (under the customer, no TTL) is never touched: the list keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shop import clock

if TYPE_CHECKING:
    from shop.services.ports import ArchivalStore, ArchiveWriter, StreamChange


@dataclass(frozen=True)
class Archived:
    order_id: str
    archive_key: str
    written: bool  # False: a retry found the order already archived and only finished the deletes
    history_deleted: int


class ArchivalService:
    def __init__(self, remains: ArchivalStore, bucket: ArchiveWriter, now: Callable[[], str] = clock.iso_now) -> None:
        self.remains = remains
        self.bucket = bucket
        self.now = now

    def order_removed(self, record: StreamChange) -> Archived | None:
        """Archive the order a TTL REMOVE took away; None for any other delete (nothing to do)."""
        if not record.removed_by_ttl:
            return None
        removed = record.old_item()
        left = self.remains.remains(record.entity_id)
        if left.archive_key is not None:
            return Archived(record.entity_id, left.archive_key, False, self._delete(record.entity_id, left.leftovers))
        order = self.remains.order(removed, left.history)
        archived_at = self.now()
        key = self.bucket.put(order, archived_at=archived_at)
        self.remains.mark_archived(order, archive_key=key, archived_at=archived_at)
        settled = self.remains.remains(record.entity_id)  # nothing can be written from here on
        if _history_keys(settled.history) != _history_keys(left.history):
            self.bucket.put(self.remains.order(removed, settled.history), archived_at=archived_at)
        return Archived(order.order_id, key, True, self._delete(order.order_id, settled.leftovers))

    def _delete(self, order_id: str, history: list[dict[str, Any]]) -> int:
        return self.remains.delete_history(order_id, history) if history else 0


def _history_keys(history: list[dict[str, Any]]) -> set[str]:
    return {str(item["SK"]) for item in history}
