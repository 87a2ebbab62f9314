"""Per-product daily sales: counters written exactly once per order version, the reports admins read.

A counter item per (product, UTC day) holds `units`, `revenue_cents` and `changes` (how many order
versions it counts). Counting one order version is one read and one transaction:

- BatchGetItem (consistent) of the version's counters;
- TransactWriteItems: the version's marker (`ORDER#<id>` / `SALES#<version>`, attribute_not_exists)
  and each counter put at its new totals, conditional on `changes` being what was read.

The marker makes the count exactly once however often the record is replayed; the `changes` condition
makes concurrent counts of one product's day (other orders, other stream shards) never lose each other:
the loser re-reads and tries again. Totals are computed here rather than ADDed because the counter is
also the day's top-seller entry in GSI1, whose sort key is the padded units (DynamoDB cannot pad a
number into a string). A counter at 0 units or below leaves the top list (no GSI1 attributes).
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from shop import errors, keys
from shop.limits import MAX_PARALLEL_QUERIES, SALES_TOP_SHARDS
from shop.models.sales import DaySales, SalesChange, SalesLine, TopSeller
from shop.repository.store import (
    Table,
    TransactionCancelled,
    from_item,
    to_item,
    transact_write,
    translated_errors,
    values,
)

# Transactions one count tries when other counts of the same product's day keep landing in between.
COUNT_ATTEMPTS = 5
COUNTER_ENTITY = "SALES_DAY"
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
        for _ in range(COUNT_ATTEMPTS):
            counters = self._counters(list(lines), change.day)
            items = [self._marker_put(change)] + [
                self._counter_put(line, change.day, counters.get(line.product_id)) for line in lines.values()
            ]
            try:
                transact_write(self.table, items)
            except TransactionCancelled as cancelled:
                if cancelled.failed_condition(0):
                    return False  # this version was counted before: a replay
                if any(cancelled.failed_condition(i) for i in range(1, len(items))):
                    continue  # another count of one of these days landed since the read
                raise cancelled.unexplained() from cancelled
            return True
        raise errors.ServiceUnavailable("the sales counters keep changing, retry later")

    def _counters(self, product_ids: list[str], day: str) -> dict[str, dict[str, Any]]:
        request: dict[str, Any] = {
            self.table.name: {
                "Keys": [to_item(keys.sales_day_key(pid, day)) for pid in product_ids],
                "ConsistentRead": True,
            }
        }
        found: dict[str, dict[str, Any]] = {}
        while request:
            with translated_errors():
                response = self.table.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self.table.name, []):
                plain = from_item(item)
                found[plain["product_id"]] = plain
            request = response.get("UnprocessedKeys") or {}
        return found

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

    def _counter_put(self, line: SalesLine, day: str, current: dict[str, Any] | None) -> dict[str, Any]:
        units = int(current["units"]) if current else 0
        revenue = int(current["revenue_cents"]) if current else 0
        changes = int(current["changes"]) if current else 0
        units, revenue = units + line.units, revenue + line.revenue_cents
        item: dict[str, Any] = {
            **keys.sales_day_key(line.product_id, day),
            "entity": COUNTER_ENTITY,
            "product_id": line.product_id,
            "day": day,
            "units": units,
            "revenue_cents": revenue,
            "changes": changes + 1,
        }
        if units > 0:
            item.update(keys.sales_top_gsi(day, line.product_id, units, self.shards))
        put: dict[str, Any] = {"TableName": self.table.name, "Item": to_item(item)}
        if current is None:
            put["ConditionExpression"] = "attribute_not_exists(PK)"
        else:
            put["ConditionExpression"] = "changes = :changes"
            put["ExpressionAttributeValues"] = values(changes=changes)
        return {"Put": put}

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
