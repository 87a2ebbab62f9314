"""The stream processor's writes: each keyed deterministically and conditional, so replays are no-ops.

Every effect of an order record (history, notification, customer index, sales) is `guarded` by default: one
transaction with a ConditionCheck that the order's ARCHIVED marker does not exist: archival deletes the
once-per-version markers, so after it only the marker stops a replayed record from writing again
(docs/decisions.md, "Records of archived orders"). A fresh record's effects (`guarded=False`, its order cannot be
archived yet: shop.services.archive_timing.fresh_record) are the same writes without the check: a single-item
conditional write each (1 WRU where the transaction cost 4), the sales count a transaction without that item.
Either way a refused condition answers "done before" (False), so replays read the same answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from shop import errors, keys
from shop.config import StatusShardSwitch, settings
from shop.models import Notification, OrderStatus, OrderSummary, Shipment, StatusEntry
from shop.models.sales import Recorded, SalesChange
from shop.repository import unpaid_holds
from shop.repository.store import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    conditional_write,
    to_item,
    transact_write,
    translated_errors,
    values,
)


class SalesCounts(Protocol):
    """The sales counters a counting version's history entry is written with: shop.repository.sales.SalesRepository,
    handed in by shop.wiring. That module builds on this one's writes (write_once, not_archived), so this one does
    not import it: the layer has no import circle (tests/unit/test_architecture.py)."""

    def count_once(
        self, change: SalesChange, history: dict[str, Any], *, guarded: bool = True, legacy: bool = True
    ) -> tuple[bool, bool]: ...

    def begin_batch(self) -> None: ...

    def settle_batch(self) -> None: ...


def notification_id(order_id: str, version: int) -> str:
    return f"{order_id}-{version:06d}"


def not_archived(table: Table, order_id: str) -> dict[str, Any]:
    """The transaction item that holds only while the order is not archived (its marker is absent)."""
    return {
        "ConditionCheck": {
            "TableName": table.name,
            "Key": to_item(keys.order_archived_key(order_id)),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }


def write_once(table: Table, order_id: str, write: dict[str, Any], *, guarded: bool = True) -> bool:
    """`write` (a transaction item, Put or Update, with its own condition): guarded, in one transaction with the
    not-archived check (write_unless_archived); else alone, as a single-item write. False when its condition
    failed (done before)."""
    if guarded:
        return write_unless_archived(table, order_id, write)
    try:
        with conditional_write():
            if "Put" in write:
                table.client.put_item(**write["Put"])
            else:
                table.client.update_item(**write["Update"])
    except ConditionFailed:
        return False
    return True


def write_unless_archived(table: Table, order_id: str, write: dict[str, Any]) -> bool:
    """`write` (a transaction item with its own condition) and the not-archived check, in one transaction.

    False when the write's own condition failed (done before); OrderEffectsClosed when the order is archived."""
    try:
        transact_write(table, [write, not_archived(table, order_id)])
    except TransactionCancelled as cancelled:
        if cancelled.failed_condition(1):
            raise errors.OrderEffectsClosed(order_id) from cancelled
        if cancelled.failed_condition(0):
            return False
        raise cancelled.unexplained() from cancelled
    return True


def history_item(change: OrderSummary, entry: StatusEntry | None = None) -> dict[str, Any]:
    """The version's history entry; `entry` adds the change's carrier, tracking number, reason, and whether it
    shipped without its payment held."""
    recorded = {"carrier", "tracking_number", "reason", "shipped_without_payment"}
    details = entry.model_dump(include=recorded, exclude_none=True) if entry else {}
    return {
        **keys.order_history_key(change.order_id, change.version),
        "entity": "ORDER_HISTORY",
        "status": change.status.value,
        "version": change.version,
        "at": change.updated_at,
        **details,
    }


class OrderEffectsRepository:
    def __init__(self, table: Table, shards: int | None = None, *, sales: SalesCounts) -> None:
        """`shards` fixes the status index's count (tests, tools); else the settings, as OrderRepository reads
        them. The checkout's repository is not imported: it is most of what a first batch would load for nothing.
        `sales`: the counters a counting version's history entry is written with."""
        self.table = table
        self._switch = StatusShardSwitch(shards) if shards is not None else None
        self.sales = sales

    @property
    def shards(self) -> int:
        """The count new and changed orders are indexed under (OrderRepository.shards)."""
        return (self._switch if self._switch is not None else settings().status_switch).writes

    def confirm(self, order_id: str, *, version: int, confirmed_at: str, created_at: str) -> bool:
        """PENDING at `version` -> CONFIRMED at version + 1. False when that already happened or cannot."""
        gsi = keys.order_status_gsi(OrderStatus.CONFIRMED, order_id, created_at, self.shards)
        try:
            with conditional_write():
                self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.order_key(order_id)),
                    UpdateExpression="SET #status = :new, version = :next, updated_at = :at, confirmed_at = :at, "
                    "GSI1PK = :gpk",
                    ConditionExpression="#status = :pending AND version = :version",
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues=values(
                        new=OrderStatus.CONFIRMED.value,
                        next=version + 1,
                        at=confirmed_at,
                        gpk=gsi[keys.GSI1PK],
                        pending=OrderStatus.PENDING.value,
                        version=version,
                    ),
                )
        except ConditionFailed:
            return False
        return True

    def _put_once(self, order_id: str, item: dict[str, object], *, guarded: bool) -> bool:
        put = {
            "Put": {
                "TableName": self.table.name,
                "Item": to_item(item),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }
        return write_once(self.table, order_id, put, guarded=guarded)

    def begin_batch(self) -> None:
        """A stream batch starts: the sales counts leave their top-list refresh to settle_batch."""
        self.sales.begin_batch()

    def settle_batch(self) -> None:
        """The batch's deferred top-list refreshes (shop.repository.sales); raises when one failed."""
        self.sales.settle_batch()

    def customer_index_current(self, change: OrderSummary) -> bool:
        """Whether the customer's order entry shows exactly this version (an eventually consistent read is
        enough: a stale miss only costs writes that their conditions then refuse). The entry is written after
        the notification, so showing this version means both are done; a later version (this record replayed
        out of order) says nothing about this version's notification, so it is not current."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name,
                Key=to_item(keys.customer_order_key(change.customer_id, change.order_id)),
                ProjectionExpression="version",
            )
        item = response.get("Item")
        return item is not None and int(item["version"]["N"]) == change.version

    def counted_promotions(self, order_id: str) -> list[str]:
        """The order's promotions without a usage limit, from its DISCOUNTS item (strongly consistent: it was written
        with the order, and the change that counts them may follow at once); none when it has no such item."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name,
                Key=to_item(keys.order_discounts_key(order_id)),
                ProjectionExpression="counted",
                ConsistentRead=True,
            )
        counted = response.get("Item", {}).get("counted", {}).get("L", [])
        return [str(value["S"]) for value in counted]

    def append_history(
        self,
        change: OrderSummary,
        entry: StatusEntry | None = None,
        sales: SalesChange | None = None,
        *,
        guarded: bool = True,
        legacy: bool = True,
    ) -> Recorded:
        """The version's history entry, once; with `sales`, the version's sales counted in the same transaction
        (the entry is the count's once-only key, shop.repository.sales; `legacy`: it also checks the version's
        sales marker of older releases, which kept one per version)."""
        if sales is not None:
            item = history_item(change, entry)
            written, counted = self.sales.count_once(sales, item, guarded=guarded, legacy=legacy)
            return Recorded(written, counted)
        return Recorded(self._put_once(change.order_id, history_item(change, entry), guarded=guarded), False)

    def notify(
        self,
        change: OrderSummary,
        *,
        kind: str,
        message: str,
        shipment: Shipment | None = None,
        guarded: bool = True,
    ) -> Notification:
        notification = Notification(
            notification_id=notification_id(change.order_id, change.version),
            type=kind,
            order_id=change.order_id,
            message=message,
            created_at=change.updated_at,
            shipment=shipment,
        )
        self._put_once(
            change.order_id,
            {
                **keys.notification_key(change.customer_id, change.updated_at, notification.notification_id),
                "entity": "NOTIFICATION",
                "customer_id": change.customer_id,
                **notification.model_dump(exclude_none=True),
            },
            guarded=guarded,
        )
        return notification

    def update_customer_index(self, change: OrderSummary, *, guarded: bool = True) -> bool:
        """Newer versions only: an older or repeated record never moves the index backwards."""
        update = {
            "Update": {
                "TableName": self.table.name,
                "Key": to_item(keys.customer_order_key(change.customer_id, change.order_id)),
                "UpdateExpression": "SET #status = :status, version = :version, updated_at = :at",
                "ConditionExpression": "attribute_exists(PK) AND version < :version",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": values(
                    status=change.status.value, version=change.version, at=change.updated_at
                ),
            }
        }
        return write_once(self.table, change.order_id, update, guarded=guarded)

    def release_unpaid(self, customer_id: str, order_ids: Sequence[str], units: int) -> bool:
        """The orders out of their customer's unpaid hold (shop.repository.unpaid_holds.release): one UpdateItem,
        conditional on every id still being held, never guarded (a release is right whenever the id is held)."""
        return unpaid_holds.release(self.table, customer_id, order_ids, units)
