"""Per-product daily sales: counters written exactly once per order version, the reports admins read.

Counting one order version (the stream processor, on the record that moved the order):

1. One TransactWriteItems: the version's history entry (`ORDER#<id>` / `HISTORY#<version>`,
   attribute_not_exists, carrying `sales_day`) and, per line, `ADD units, revenue_cents, changes` on the
   (product, day) counter (`SALES#<product>` / `DAY#<day>`). The history entry is written once per version
   anyway, so it is the count's once-only key: a replay fails its condition and changes nothing; ADD never
   loses a concurrent count of the same counter (other orders, other stream shards). A ConditionCheck that
   the order's ARCHIVED marker is absent closes the count once archival has deleted the history entries;
   a fresh record's count (`guarded=False`: its order cannot be archived yet, shop.services.archive_timing) leaves
   it out.
   When the record may have been handled by a release before (`legacy=True`: shop.services.sales.LegacyMarkerCheck
   decides, from the table's cut-over), a ConditionCheck that the version's sales marker of those releases
   (`ORDER#<id>` / `SALES#<version>`) is absent too: a version those releases counted (and died before writing its
   history entry) is not counted again; its history entry is then written alone.
   A history entry there without `sales_day` was written by those releases, which counted on the marker:
   the version is counted as they did (`apply`: the marker and the ADDs in one transaction).
2. The day's top list follows (in a stream batch, once per (product, day) at its end: begin_batch,
   settle_batch): one consistent BatchGetItem of the lines' counters, then per counter one
   PutItem of the rank entry (`SALES#<product>` / `TOP#<day>`, in GSI1 under the padded units) conditional
   on being older (`changes` smaller): a late or repeated refresh never puts an entry back, so the rank
   entries are not read first (a refused put costs 1 WRU, on replays only; reading them cost 1 RRU each on
   every count). Step 2 runs on replays too, so a processor that died between the two steps catches up
   when the record is delivered again. A transaction returns no values, so the new totals are read.

The rank entry is a separate item so the counter's ADDs write no index entries; only a rank refresh
moves the product in GSI1 (delete + put). A product at 0 units or below has a rank entry outside GSI1.

The cut-over (`SALES_CUTOVER` / `VERSION#<function version>`, `cutover_at`): the first count of a release on the
table records it (a PutItem attribute_not_exists: the first processor wins, the others get the winner's); each
instance reads it once (one consistent GetItem) and keeps it for its life (cutover_at).

A flash-sale product's line (it took stock from stock shards) is ADDed on the counter shard of its stock
shard (`SALES#<product>#<nn>` / `DAY#<day>`) in the same transaction. Before it, once per (product, day,
shard) per instance, the day's marker (`SALES#<product>` / `DAY#<day>#SHARDED`, inside the days' range)
gets the shard's label ADDed to its set: the days' one Query sees which shards to Query too. Its rank
entry is refreshed at most once per RANK_REFRESH_SECONDS per (product, day) per instance, from the base
counter and every counter shard (one BatchGetItem per 100 keys).
"""

from __future__ import annotations

import contextvars
import os
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from shop import errors, keys
from shop.keys import Key
from shop.limits import MAX_PARALLEL_QUERIES, MAX_PROMO_USE_SHARDS, MAX_STOCK_SHARDS, SALES_TOP_SHARDS
from shop.models.sales import DaySales, SalesChange, SalesLine, TopSeller
from shop.repository.order_effects import not_archived, write_once
from shop.repository.store import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    batch_get,
    conditional_write,
    from_item,
    put_new,
    to_item,
    transact_write,
    translated_errors,
    values,
)

COUNTER_ENTITY = "SALES_DAY"
PROMOTION_COUNT_ENTITY = "PROMOTION_COUNT"  # a promotion without a usage limit: its confirmed orders, on one counter
RANK_ENTITY = "SALES_RANK"
MARKER_ENTITY = "ORDER_SALES"
SHARD_ENTITY = "SALES_DAY_SHARD"
SHARDED_ENTITY = "SALES_SHARDED"
CUTOVER_ENTITY = "SALES_CUTOVER"
# A flash-sale product's rank entry: refreshed at most this often per (product, day) per instance.
RANK_REFRESH_SECONDS = 1.0
_MARKED: dict[str, set[tuple[str, str, int]]] = {}
_REFRESHED: dict[str, dict[tuple[str, str], float]] = {}
_CUTOVER: dict[tuple[str, str], str] = {}  # (table, release) -> the release's cut-over on the table


def this_release() -> str:
    """The version of the function Lambda runs (each deploy publishes one); `$LATEST` locally and in tests."""
    return os.environ.get("AWS_LAMBDA_FUNCTION_VERSION") or "$LATEST"


@cache
def _top_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=MAX_PARALLEL_QUERIES, thread_name_prefix="sales-top-shard")


def merged_lines(lines: tuple[SalesLine, ...]) -> dict[str, SalesLine]:
    """One line per product (an order holds each product once; a hand-made change may not)."""
    merged: dict[str, SalesLine] = {}
    for line in lines:
        before = merged.get(line.product_id)
        merged[line.product_id] = (
            line
            if before is None
            else SalesLine(
                line.product_id,
                before.units + line.units,
                before.revenue_cents + line.revenue_cents,
                before.shard if before.shard is not None else line.shard,
            )
        )
    return merged


class SalesRepository:
    def __init__(self, table: Table, shards: int = SALES_TOP_SHARDS, *, release: str | None = None) -> None:
        self.table = table
        self.shards = shards
        self.release = this_release() if release is None else release
        # A stream batch in progress (begin_batch): (day -> products) whose rank entries settle_batch refreshes.
        self._deferred: dict[str, set[str]] | None = None

    # Per instance (the module outlives an invocation's repository), per table; the table's name is read at the first
    # use, not when the repository is built (a handler builds its services at import, before its settings are read).
    @property
    def _marked(self) -> set[tuple[str, str, int]]:
        """(product, day, shard): the day's marker names."""
        return _MARKED.setdefault(self.table.name, set())

    @property
    def _refreshed(self) -> dict[tuple[str, str], float]:
        """(product, day) -> its rank's last refresh."""
        return _REFRESHED.setdefault(self.table.name, {})

    # -- counting (the stream processor) ----------------------------------------------------------

    def count_once(
        self, change: SalesChange, history: dict[str, Any], *, guarded: bool = True, legacy: bool = True
    ) -> tuple[bool, bool]:
        """The version's history entry (`history`, a whole item) and its sales in one transaction, then the
        top list. (history written, sales counted): (False, False) on a replay; OrderEffectsClosed when the
        order is archived (`guarded`: the transaction checks its ARCHIVED marker; a fresh record's does not).
        `legacy`: the transaction checks that a release before did not count the version on its sales marker.
        A history entry of the releases before (no `sales_day`) counts as they did."""
        lines = merged_lines(change.lines)
        for line in lines.values():
            if line.shard is not None:
                self._mark_sharded(line.product_id, change.day, line.shard)
        once = {
            "Put": {
                "TableName": self.table.name,
                "Item": to_item({**history, "sales_day": change.day}),
                "ConditionExpression": "attribute_not_exists(PK)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
        items = [once] + [self._counter_add(line, change.day) for line in lines.values()] + self._promotion_adds(change)
        legacy_at = len(items) if legacy else None
        if legacy_at is not None:
            items.append(self._no_legacy_marker(change))
        archived = len(items) if guarded else None
        if archived is not None:
            items.append(not_archived(self.table, change.order_id))
        written = counted = False
        try:
            transact_write(self.table, items)
            written = counted = True
        except TransactionCancelled as cancelled:
            if archived is not None and cancelled.failed_condition(archived):
                raise errors.OrderEffectsClosed(change.order_id) from cancelled
            if cancelled.failed_condition(0):
                before = cancelled.old_item(0)
                if before is None:  # a store that does not return it: read it (replays only)
                    before = self._item(history)
                if "sales_day" not in before:  # written by a release that counted on its marker
                    counted = self._count(change, lines, guarded=guarded)
            elif legacy_at is not None and cancelled.failed_condition(legacy_at):
                # Counted by a release before, which died before the history entry: the entry alone.
                written = write_once(self.table, change.order_id, {"Put": {**once["Put"]}}, guarded=guarded)
            else:
                raise cancelled.unexplained() from cancelled
        self._refresh_due(change, lines)
        return written, counted

    def cutover_at(self, now: str) -> str:
        """This release's cut-over on the table (ISO-8601): read once per instance (one consistent GetItem); the
        first time ever, recorded as `now` (a PutItem attribute_not_exists: of processors racing to record it,
        the first wins and the others take the winner's)."""
        memo = (self.table.name, self.release)
        known = _CUTOVER.get(memo)
        if known is None:
            known = _CUTOVER[memo] = self._read_or_record_cutover(now)
        return known

    def _read_or_record_cutover(self, now: str) -> str:
        key = keys.sales_cutover_key(self.release)
        recorded = self._item(key)
        if recorded:
            return str(recorded["cutover_at"])
        item = {**key, "entity": CUTOVER_ENTITY, "release": self.release, "cutover_at": now}
        try:
            put_new(self.table, item)
        except ConditionFailed as lost:  # another processor recorded it first: its instant is the cut-over
            winner = lost.item if lost.item is not None else self._item(key)
            return str(winner["cutover_at"])
        return now

    def _item(self, key: dict[str, Any]) -> dict[str, Any]:
        """The item at `key`'s PK and SK, read consistently; {} when there is none."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name,
                Key=to_item({keys.PK: key[keys.PK], keys.SK: key[keys.SK]}),
                ConsistentRead=True,
            )
        return from_item(response["Item"]) if "Item" in response else {}

    def _no_legacy_marker(self, change: SalesChange) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self.table.name,
                "Key": to_item(keys.order_sales_marker_key(change.order_id, change.version)),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }

    def apply(self, change: SalesChange) -> bool:
        """Count `change` under its own sales marker (`ORDER#<id>` / `SALES#<version>`), as the releases that
        kept a marker per version did: for a version whose history entry such a release wrote. False on a replay."""
        lines = merged_lines(change.lines)
        for line in lines.values():
            if line.shard is not None:
                self._mark_sharded(line.product_id, change.day, line.shard)
        counted = self._count(change, lines)
        self._refresh_due(change, lines)
        return counted

    def _refresh_due(self, change: SalesChange, lines: dict[str, SalesLine]) -> None:
        due = [pid for pid, line in lines.items() if line.shard is None or self._rank_due(pid, change.day)]
        if due and self._deferred is not None:
            self._deferred.setdefault(change.day, set()).update(due)
        elif due:
            self._refresh_ranks(due, change.day)

    def begin_batch(self) -> None:
        """From now on a count leaves its top-list refresh to settle_batch: once per (product, day) a batch."""
        self._deferred = {}

    def settle_batch(self) -> None:
        """Refresh the rank entries of every (product, day) the batch counted (one read of their counters per
        100 keys, a put per product), then count one by one again. Raises when a refresh failed: the caller
        fails the batch's counting records, whose redelivery refreshes again."""
        deferred, self._deferred = self._deferred or {}, None
        for day, product_ids in sorted(deferred.items()):
            self._refresh_ranks(sorted(product_ids), day)

    def _mark_sharded(self, product_id: str, day: str, shard: int) -> None:
        """The day's marker names the shard (a set ADD: a retry or another instance's is harmless)."""
        if (product_id, day, shard) in self._marked:
            return
        with translated_errors():
            self.table.client.update_item(
                TableName=self.table.name,
                Key=to_item(keys.sales_sharded_key(product_id, day)),
                UpdateExpression="SET entity = :entity, product_id = :pid, #day = :day ADD shards :shard",
                ExpressionAttributeNames={"#day": "day"},
                ExpressionAttributeValues=values(entity=SHARDED_ENTITY, pid=product_id, day=day, shard={shard}),
            )
        self._marked.add((product_id, day, shard))

    def _rank_due(self, product_id: str, day: str) -> bool:
        now = time.monotonic()
        last = self._refreshed.get((product_id, day))
        if last is not None and now - last < RANK_REFRESH_SECONDS:
            return False
        self._refreshed[(product_id, day)] = now
        return True

    def _sharded(self, product_id: str, day: str) -> bool:
        return any(pid == product_id and d == day for pid, d, _ in self._marked)

    def _count(self, change: SalesChange, lines: dict[str, SalesLine], *, guarded: bool = True) -> bool:
        items = [self._marker_put(change)] + [self._counter_add(line, change.day) for line in lines.values()]
        items += self._promotion_adds(change)
        if guarded:
            items.append(not_archived(self.table, change.order_id))
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
            if guarded and cancelled.failed_condition(len(items) - 1):
                raise errors.OrderEffectsClosed(change.order_id) from cancelled
            if cancelled.failed_condition(0):
                return False  # this version was counted before: a replay
            raise cancelled.unexplained() from cancelled
        return True

    def _marker_put(self, change: SalesChange) -> dict[str, Any]:
        item = {
            **keys.order_sales_marker_key(change.order_id, change.version),
            "entity": MARKER_ENTITY,
            "day": change.day,
            "lines": len(change.lines),
        }
        return {
            "Put": {
                "TableName": self.table.name,
                "Item": to_item(item),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }

    def _promotion_adds(self, change: SalesChange) -> list[dict[str, Any]]:
        """The version's use of each promotion without a usage limit, on one of its counters (the order's own, by
        its id: a cancel takes back where the confirmation added)."""
        shard = keys.status_shard(change.order_id, MAX_PROMO_USE_SHARDS)
        return [
            {
                "Update": {
                    "TableName": self.table.name,
                    "Key": to_item(keys.promotion_count_key(promotion_id, shard)),
                    "UpdateExpression": "SET entity = :entity ADD used :delta",
                    "ExpressionAttributeValues": values(entity=PROMOTION_COUNT_ENTITY, delta=change.promotion_delta),
                }
            }
            for promotion_id in change.promotions
        ]

    def _counter_add(self, line: SalesLine, day: str) -> dict[str, Any]:
        if line.shard is None:
            key, entity = keys.sales_day_key(line.product_id, day), COUNTER_ENTITY
        else:
            key, entity = keys.sales_shard_day_key(line.product_id, line.shard, day), SHARD_ENTITY
        return {
            "Update": {
                "TableName": self.table.name,
                "Key": to_item(key),
                "UpdateExpression": "SET entity = :entity, product_id = :pid, #day = :day "
                "ADD units :units, revenue_cents :revenue, changes :one",
                "ExpressionAttributeNames": {"#day": "day"},
                "ExpressionAttributeValues": values(
                    entity=entity,
                    pid=line.product_id,
                    day=day,
                    units=line.units,
                    revenue=line.revenue_cents,
                    one=1,
                ),
            }
        }

    def _refresh_ranks(self, product_ids: list[str], day: str) -> None:
        """Bring each product's rank entry of the day up to its counters (one read of the counters, a put per
        product that its condition refuses when the entry is current): the base counter, and every counter
        shard of a product counted on shards in this instance."""
        wanted: list[Key] = []
        counters: dict[str, list[Key]] = {}
        for pid in product_ids:
            counters[pid] = [keys.sales_day_key(pid, day)]
            if self._sharded(pid, day):
                counters[pid] += [keys.sales_shard_day_key(pid, n, day) for n in range(MAX_STOCK_SHARDS)]
            wanted += counters[pid]
        found = batch_get(self.table, wanted)
        for pid in product_ids:
            parts = [found[k] for k in (_pair(key) for key in counters[pid]) if k in found]
            if parts:
                self._put_rank(
                    pid, day, {f: sum(int(p[f]) for p in parts) for f in ("units", "revenue_cents", "changes")}
                )

    def _put_rank(self, product_id: str, day: str, counter: dict[str, int]) -> None:
        units = int(counter["units"])
        item: dict[str, Any] = {
            **keys.sales_rank_key(product_id, day),
            "entity": RANK_ENTITY,
            "product_id": product_id,
            "day": day,
            "units": units,
            "revenue_cents": int(counter["revenue_cents"]),
            "changes": int(counter["changes"]),
        }
        if units > 0:
            item.update(keys.sales_top_gsi(day, product_id, units, self.shards))
        try:
            with conditional_write():
                self.table.client.put_item(
                    TableName=self.table.name,
                    Item=to_item(item),
                    ConditionExpression="attribute_not_exists(PK) OR changes < :changes",
                    ExpressionAttributeValues=values(changes=item["changes"]),
                )
        except ConditionFailed:
            pass  # a refresh from a later count landed first: it is newer than this one

    # -- reports (admins) -------------------------------------------------------------------------

    def days(self, product_id: str, first: str, last: str) -> list[DaySales]:
        """One Query: the product's counters from `first` to `last` (at most 366 small items, one page) and
        the days' shard markers; with markers, one more Query per counter shard named, in parallel."""
        items = self._query_days(keys.sales_pk(product_id), first, last)
        shards = sorted({int(n) for item in items if item["entity"] == SHARDED_ENTITY for n in item["shards"]})
        if shards:
            pks = [keys.sales_shard_day_key(product_id, n, first)[keys.PK] for n in shards]
            pending = [
                _top_pool().submit(contextvars.copy_context().run, self._query_days, pk, first, last) for pk in pks
            ]
            items += [item for future in pending for item in future.result()]
        totals: dict[str, tuple[int, int]] = {}
        for item in items:
            if item["entity"] != SHARDED_ENTITY:
                units, revenue = totals.get(item["day"], (0, 0))
                totals[item["day"]] = (units + int(item["units"]), revenue + int(item["revenue_cents"]))
        return [DaySales(date=day, units=u, revenue_cents=r) for day, (u, r) in sorted(totals.items())]

    def _query_days(self, pk: str, first: str, last: str) -> list[dict[str, Any]]:
        low, high = keys.sales_days_range(first, last)
        with translated_errors():
            response = self.table.client.query(
                TableName=self.table.name,
                KeyConditionExpression="PK = :pk AND SK BETWEEN :first AND :last",
                ExpressionAttributeValues=values(pk=pk, first=low, last=high),
            )
        return [from_item(i) for i in response.get("Items", [])]

    def top(self, day: str, limit: int) -> list[TopSeller]:
        """One Query per shard of the day's list, in parallel, each for its `limit` best; merged."""

        def query_shard(shard: int) -> list[dict[str, Any]]:
            with translated_errors():
                response = self.table.client.query(
                    TableName=self.table.name,
                    IndexName=keys.GSI1,
                    KeyConditionExpression="GSI1PK = :pk",
                    ExpressionAttributeValues=values(pk=keys.sales_top_pk(day, shard)),
                    Limit=limit,
                )
            return [from_item(i) for i in response.get("Items", [])]

        # Each query runs in a copy of this context: the invocation's deadline (shop.aws_config) holds there too.
        pending = [_top_pool().submit(contextvars.copy_context().run, query_shard, s) for s in range(self.shards)]
        entries = [item for future in pending for item in future.result()]
        entries.sort(key=lambda item: item[keys.GSI1SK])
        return [
            TopSeller(product_id=item["product_id"], units=item["units"], revenue_cents=item["revenue_cents"])
            for item in entries[:limit]
        ]


def _pair(key: Key) -> tuple[str, str]:
    return key[keys.PK], key[keys.SK]
