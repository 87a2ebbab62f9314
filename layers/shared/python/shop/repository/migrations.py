"""The table side of migrations: the Scan (the one Scan of the code, for migrations only), their writes
with the capacity they consumed, and the migration items (checkpoints per segment, the done record).

- ``MIGRATION#<name>`` / ``SEGMENT#<segments>#<segment>``: a segment's checkpoint (the Scan's last key,
  as JSON of its wire form, and the segment's counts), written after each page.
- ``MIGRATION#<name>`` / ``MIGRATION``: the migration applied (when, over how many segments, its counts).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from shop import clock, keys
from shop.migrations.changes import Change, Delete, Operation, Put, Update
from shop.migrations.runner import COUNTS, AlreadyApplied, Checkpoint, Progress, ScanPage
from shop.repository.categories import CategoryRepository
from shop.repository.store import (
    ConditionFailed,
    Table,
    conditional_write,
    error_code,
    from_item,
    to_item,
    translated_errors,
)


def _expression(operation: Operation, table: str) -> dict[str, Any]:
    request: dict[str, Any] = {"TableName": table}
    if isinstance(operation, Put):
        request["Item"] = to_item(operation.item)
    else:
        request["Key"] = to_item(operation.key)
    if isinstance(operation, Update):
        request["UpdateExpression"] = operation.expression
    if operation.condition:
        request["ConditionExpression"] = operation.condition
    if operation.names:
        request["ExpressionAttributeNames"] = operation.names
    if operation.values:
        request["ExpressionAttributeValues"] = to_item({f":{k}": v for k, v in operation.values.items()})
    return request


def _consumed(response: dict[str, Any]) -> float:
    capacity = response.get("ConsumedCapacity") or []
    if isinstance(capacity, dict):
        capacity = [capacity]
    return float(sum(entry.get("CapacityUnits", 0) for entry in capacity))


class MigrationRepository:
    def __init__(self, table: Table) -> None:
        self.table = table
        self.categories = CategoryRepository(table)

    def scan_page(self, *, segment: int, segments: int, start_key: dict[str, Any] | None, limit: int) -> ScanPage:
        kwargs: dict[str, Any] = {
            "TableName": self.table.name,
            "Segment": segment,
            "TotalSegments": segments,
            "Limit": limit,
            "ConsistentRead": True,
        }
        if start_key:
            kwargs["ExclusiveStartKey"] = start_key
        with translated_errors():
            page = self.table.client.scan(**kwargs)
        return ScanPage([from_item(item) for item in page.get("Items", [])], page.get("LastEvaluatedKey"))

    def category_paths(self, slugs: list[str]) -> dict[str, str]:
        return {slug: category.path for slug, category in self.categories.get_many(slugs).items()}

    def apply(self, change: Change) -> float:
        if len(change.operations) == 1:
            return self._apply_one(change.operations[0])
        items = []
        for operation in change.operations:
            kind = {Put: "Put", Update: "Update", Delete: "Delete"}[type(operation)]
            items.append({kind: _expression(operation, self.table.name)})
        try:
            with translated_errors():
                response = self.table.client.transact_write_items(TransactItems=items, ReturnConsumedCapacity="TOTAL")
        except ClientError as error:
            reasons = error.response.get("CancellationReasons", [])
            if error_code(error) == "TransactionCanceledException" and any(
                reason.get("Code") == "ConditionalCheckFailed" for reason in reasons
            ):
                raise AlreadyApplied() from error
            raise
        return _consumed(response)

    def _apply_one(self, operation: Operation) -> float:
        call = {
            Put: self.table.client.put_item,
            Update: self.table.client.update_item,
            Delete: self.table.client.delete_item,
        }[type(operation)]
        try:
            with conditional_write():
                response = call(**_expression(operation, self.table.name), ReturnConsumedCapacity="TOTAL")
        except ConditionFailed as failed:
            raise AlreadyApplied() from failed
        return _consumed(response)

    def checkpoint(self, name: str, segments: int, segment: int) -> Checkpoint:
        key = keys.migration_segment_key(name, segments, segment)
        with translated_errors():
            response = self.table.client.get_item(TableName=self.table.name, Key=to_item(key), ConsistentRead=True)
        if "Item" not in response:
            return Checkpoint()
        item = from_item(response["Item"])
        last_key = item.get("last_key")
        return Checkpoint(
            last_key=json.loads(last_key) if last_key else None,
            progress=Progress(**{count: int(item.get(count, 0)) for count in COUNTS}),
            done=bool(item.get("done")),
        )

    def save_checkpoint(self, name: str, segments: int, segment: int, checkpoint: Checkpoint) -> None:
        item = {
            **keys.migration_segment_key(name, segments, segment),
            "entity": "MIGRATION_SEGMENT",
            "migration": name,
            "segment": segment,
            "segments": segments,
            "done": checkpoint.done,
            "updated_at": clock.iso_now(),
            **checkpoint.progress.as_dict(),
        }
        if checkpoint.last_key:
            item["last_key"] = json.dumps(checkpoint.last_key, sort_keys=True)
        with translated_errors():
            self.table.client.put_item(TableName=self.table.name, Item=to_item(item))

    def record(self, name: str) -> dict[str, Any] | None:
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name, Key=to_item(keys.migration_key(name)), ConsistentRead=True
            )
        return from_item(response["Item"]) if "Item" in response else None

    def save_record(self, name: str, segments: int, progress: Progress) -> None:
        """Written once: a second finisher (a retried Step Functions state) leaves the first record."""
        item = {
            **keys.migration_key(name),
            "entity": "MIGRATION",
            "migration": name,
            "segments": segments,
            "applied_at": clock.iso_now(),
            **progress.as_dict(),
        }
        try:
            with conditional_write():
                self.table.client.put_item(
                    TableName=self.table.name, Item=to_item(item), ConditionExpression="attribute_not_exists(PK)"
                )
        except ConditionFailed:
            pass
