"""Per-product daily sales: counters written exactly once per order version, the reports admins read.

Counting one order version:

1. One TransactWriteItems: the version's marker (`ORDER#<id>` / `SALES#<version>`, attribute_not_exists)
   and, per line, `ADD units, revenue_cents, changes` on the (product, day) counter (`SALES#<product>` /
   `DAY#<day>`). The marker makes the count exactly once however often a record is replayed; ADD never
   loses a concurrent count of the same counter (other orders, other stream shards).
2. The day's top list follows: one consistent BatchGetItem of the lines' counters and rank entries, then
   per counter whose rank entry is behind, one PutItem of the rank entry (`SALES#<product>` / `TOP#<day>`,
   in GSI1 under the padded units) conditional on being older (`changes` smaller): a late or repeated
   refresh never puts an entry back. Step 2 runs on replays too, so a processor that died between the two
   steps catches up when the record is delivered again.

The rank entry is a separate item so the counter's ADDs write no index entries; only a rank refresh
moves the product in GSI1 (delete + put). A product at 0 units or below has a rank entry outside GSI1.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from shop import keys
from shop.limits import MAX_PARALLEL_QUERIES, SALES_TOP_SHARDS
from shop.models.sales import DaySales, SalesChange, SalesLine, TopSeller
from shop.repository.store import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    conditional_write,
    from_item,
    to_item,
    transact_write,
    translated_errors,
    values,
)

COUNTER_ENTITY = "SALES_DAY"
RANK_ENTITY = "SALES_RANK"
MARKER_ENTITY = "ORDER_SALES"


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
            else SalesLine(line.product_id, before.units + line.units, before.revenue_cents + line.revenue_cents)
        )
    return merged


class SalesRepository:
    def __init__(self, table: Table, shards: int = SALES_TOP_SHARDS) -> None:
        self.table = table
        self.shards = shards

    # -- counting (the stream processor) ----------------------------------------------------------

    def apply(self, change: SalesChange) -> bool:
        lines = merged_lines(change.lines)
        counted = self._count(change, lines)
        self._refresh_ranks(list(lines), change.day)
        return counted

    def _count(self, change: SalesChange, lines: dict[str, SalesLine]) -> bool:
        items = [self._marker_put(change)] + [self._counter_add(line, change.day) for line in lines.values()]
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
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

    def _counter_add(self, line: SalesLine, day: str) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self.table.name,
                "Key": to_item(keys.sales_day_key(line.product_id, day)),
                "UpdateExpression": "SET entity = :entity, product_id = :pid, #day = :day "
                "ADD units :units, revenue_cents :revenue, changes :one",
                "ExpressionAttributeNames": {"#day": "day"},
                "ExpressionAttributeValues": values(
                    entity=COUNTER_ENTITY,
                    pid=line.product_id,
                    day=day,
                    units=line.units,
                    revenue=line.revenue_cents,
                    one=1,
                ),
            }
        }

    def _refresh_ranks(self, product_ids: list[str], day: str) -> None:
        """Bring each product's rank entry of the day up to its counter (one read, a write per entry behind)."""
        wanted = [keys.sales_day_key(pid, day) for pid in product_ids] + [
            keys.sales_rank_key(pid, day) for pid in product_ids
        ]
        request: dict[str, Any] = {self.table.name: {"Keys": [to_item(key) for key in wanted], "ConsistentRead": True}}
        found: dict[tuple[str, str], dict[str, Any]] = {}
        while request:
            with translated_errors():
                response = self.table.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self.table.name, []):
                plain = from_item(item)
                found[(plain["PK"], plain["SK"])] = plain
            request = response.get("UnprocessedKeys") or {}
        for pid in product_ids:
            counter_key, rank_key = keys.sales_day_key(pid, day), keys.sales_rank_key(pid, day)
            counter = found.get((counter_key[keys.PK], counter_key[keys.SK]))
            rank = found.get((rank_key[keys.PK], rank_key[keys.SK]))
            if counter is not None and (rank is None or int(rank["changes"]) < int(counter["changes"])):
                self._put_rank(pid, day, counter)

    def _put_rank(self, product_id: str, day: str, counter: dict[str, Any]) -> None:
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
        """One Query: the product's counters from `first` to `last` (at most 366 small items, one page)."""
        with translated_errors():
            response = self.table.client.query(
                TableName=self.table.name,
                KeyConditionExpression="PK = :pk AND SK BETWEEN :first AND :last",
                ExpressionAttributeValues=values(
                    pk=keys.sales_pk(product_id),
                    first=keys.sales_day_key(product_id, first)[keys.SK],
                    last=keys.sales_day_key(product_id, last)[keys.SK],
                ),
            )
        return [
            DaySales(date=item["day"], units=item["units"], revenue_cents=item["revenue_cents"])
            for item in (from_item(i) for i in response.get("Items", []))
        ]

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
