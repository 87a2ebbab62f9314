"""Write request units as DynamoDB bills them, from the stream's before/after images of every write.

DynamoDB Local undercounts multi-item transactions, so each written item is priced from its NEW_AND_OLD_IMAGES
stream record, and each ConditionCheck of a transaction (which writes nothing, so has no record) from the checked
item's size; the rules: docs/performance.md, "How each figure is measured".
"""

from __future__ import annotations

import math
from typing import Any

from bench.hooks import Call, Measurement, TransactAction, key_of, unrecorded
from local_runtime.streams import StreamReader

KB = 1024
GSI_KEYS = ("GSI1PK", "GSI1SK")


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").lstrip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def value_size(value: dict[str, Any]) -> int:
    """Approximate DynamoDB attribute value size (the documented rules, without the rounding details)."""
    if not value:
        return 0
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":
        return _number_size(str(inner))
    if kind == "B":
        return len(inner) if isinstance(inner, bytes | bytearray) else len(str(inner)) * 3 // 4
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in inner)
    if kind == "SS":
        return sum(len(str(v).encode()) for v in inner)
    if kind == "NS":
        return sum(_number_size(str(v)) for v in inner)
    return 0


def item_size(item: dict[str, Any] | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def _units(size: int) -> int:
    return max(1, math.ceil(size / KB))


def condition_check_units(size: int | None) -> int:
    """What DynamoDB bills one ConditionCheck of a TransactWriteItems: a transactional write of the checked item,
    2 WRU per started KB of its size, an absent item (``None``) counted as 1 KB: never under 2."""
    return 2 * _units(size or 0)


def _gsi_key(item: dict[str, Any] | None) -> tuple[str, str] | None:
    if not item or any(k not in item for k in GSI_KEYS):
        return None
    return str(item["GSI1PK"].get("S")), str(item["GSI1SK"].get("S"))


def record_units(record: dict[str, Any]) -> tuple[int, int]:
    """(table, GSI1) write units of one stream record, before any transactional multiplier."""
    table, gsi_writes = record_partitions(record)
    return table, sum(units for _, units in gsi_writes)


def record_partitions(record: dict[str, Any]) -> tuple[int, list[tuple[str, int]]]:
    """The table's write units of one stream record, and each GSI1 partition key it writes with its units
    (an item moving to another index key: a delete under the old key, a put under the new one)."""
    ddb = record.get("dynamodb", {})
    old, new = ddb.get("OldImage"), ddb.get("NewImage")
    table = _units(max(item_size(old), item_size(new)))
    old_key, new_key = _gsi_key(old), _gsi_key(new)
    gsi: list[tuple[str, int]] = []
    if old_key and new_key and old_key == new_key:
        gsi.append((new_key[0], _units(item_size(new))))
    else:
        if old_key:
            gsi.append((old_key[0], _units(item_size(old))))
        if new_key:
            gsi.append((new_key[0], _units(item_size(new))))
    return table, gsi


class Accountant:
    """Reads every stream record (no filters) and prices it onto the call that wrote the item; then prices each
    ConditionCheck of the calls' transactions onto its transaction."""

    def __init__(self, dynamodb: Any, streams: Any, table_name: str) -> None:
        self.dynamodb = dynamodb
        self.reader = StreamReader(dynamodb, streams, table_name)
        self.unattributed = 0

    def skip(self) -> None:
        self.reader.skip_to_now()

    def attribute(self, measurement: Measurement) -> None:
        records = self.reader.read()
        for call in measurement.calls:
            if call.is_write and call.error == "ConditionalCheckFailedException":
                call.modelled_wru += 1
        # Records come in write order; several writes to one key (the idempotency record's put, then its
        # update) get the records of that key one by one, in call order.
        queues: dict[str, list[Any]] = {}
        for call in measurement.calls:
            if call.is_write and not call.error:
                for written in dict.fromkeys(call.write_keys):
                    queues.setdefault(written, []).append(call)
        position = {id(call): i for i, call in enumerate(measurement.calls)}
        writes: dict[str, list[tuple[int, dict[str, Any]]]] = {}  # key -> (its writer's position, record)
        for record in records:
            key = key_of(record.get("dynamodb", {}).get("Keys"))
            owners = queues.get(key or "")
            if not owners:
                self.unattributed += 1
                continue
            owner = owners.pop(0) if len(owners) > 1 else owners[0]
            writes.setdefault(key or "", []).append((position[id(owner)], record))
            table, gsi_writes = record_partitions(record)
            factor = 2 if owner.transactional else 1
            owner.modelled_wru += factor * (table + sum(units for _, units in gsi_writes))
            ddb = record.get("dynamodb", {})
            owner.written_items.append(
                {
                    "pk": (key or "").split("|", 1)[0],
                    "sk": (key or "").split("|", 1)[-1],
                    "table_wru": factor * table,
                    "gsi1": [(pk, factor * units) for pk, units in gsi_writes],
                }
            )
            owner.written_bytes.append(max(item_size(ddb.get("OldImage")), item_size(ddb.get("NewImage"))))
        self._price_condition_checks(measurement.calls, writes)

    def _price_condition_checks(self, calls: list[Call], writes: dict[str, list[tuple[int, dict[str, Any]]]]) -> None:
        """Each ConditionCheck of a transaction that went through, at 2 WRU per started KB of the checked item as
        it was then (absent: 1 KB). A cancelled transaction is priced as before (its error, no check)."""
        stored: dict[tuple[str, str], int | None] = {}
        for position, call in enumerate(calls):
            if not call.transactional or call.error or call.checked_items:  # priced once, whoever attributes again
                continue
            for check in call.condition_checks:
                size = self._size_when_checked(check, position, writes.get(check.key, []), stored)
                units = condition_check_units(size)
                call.modelled_wru += units
                call.checked_items.append(
                    {"key": check.key, "pk": check.key.split("|", 1)[0], "item_bytes": size, "wru": units}
                )

    def _size_when_checked(
        self,
        check: TransactAction,
        position: int,
        writes: list[tuple[int, dict[str, Any]]],
        stored: dict[tuple[str, str], int | None],
    ) -> int | None:
        """The checked item's size at its check: the old image of the first later write of it among the calls
        (the item as the check saw it), else the item as stored now, read consistently by the bench itself,
        outside the measured calls. None: no such item."""
        later = [record for writer, record in writes if writer > position]
        if later:
            old = later[0].get("dynamodb", {}).get("OldImage")
            return item_size(old) if old else None
        cache = (check.table, check.key)
        if cache not in stored:
            with unrecorded():
                found = self.dynamodb.get_item(TableName=check.table, Key=check.raw_key, ConsistentRead=True)
            stored[cache] = item_size(found["Item"]) if found.get("Item") else None
        return stored[cache]
