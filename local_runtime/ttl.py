"""DynamoDB's Time to Live, emulated for DynamoDB Local, whose own TTL deletes are not enough.

DynamoDB Local deletes expired items of a TTL-enabled table itself, about every 10 seconds, but stops doing
so for a table while any expired item there lacks an index's keys, and names those deletes
`UNKNOWN_TO_SDK_VERSION` (`local_runtime.events` gives them the TTL service's identity).

`TtlEmulator.sweep()` deletes the items whose TTL attribute (a Number, epoch seconds) has passed, each
conditionally on the attribute still being expired then, as the TTL service does; `start()` sweeps every
`interval` seconds in a thread. Finding them is a Scan of the local table (keys and the attribute only):
this is local tooling on a small table, and a sparse index would make the local table differ from the
deployed one. Like the service, it skips values more than five years in the past.

The emulator's deletes are ordinary REMOVEs without `userIdentity`, so each is registered (`TtlDeletions`)
before it is made; the stream readers (`TtlDeletions.mark`, used by the poller and the tests' reader) give
the first REMOVE of that key whose OldImage holds the same TTL value the TTL service's identity, so the
mapping's filters and the processor see it as on AWS.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("local_runtime.ttl")

TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
FIVE_YEARS_S = 5 * 365 * 86_400
DEFAULT_INTERVAL_S = 2.0

KeyId = tuple[tuple[str, str], ...]  # an item's key in DynamoDB JSON, hashable: ((name, value), ...)


def key_id(key: Mapping[str, Any], names: tuple[str, ...] | None = None) -> KeyId:
    """The key's attributes (only `names` when given: DynamoDB Local's Keys may hold index keys too)."""
    return tuple(
        sorted((name, str(next(iter(value.values())))) for name, value in key.items() if names is None or name in names)
    )


class TtlDeletions:
    """The keys the emulator deleted (or is deleting), each with the TTL value it saw, until a reader marks them."""

    def __init__(self, attribute: str = "expires_at", key_names: tuple[str, ...] = ("PK", "SK")) -> None:
        self.attribute = attribute  # the table's TTL attribute, read from a REMOVE's OldImage
        self.key_names = key_names  # the table's key schema
        self._pending: dict[KeyId, str] = {}
        self._marked: set[str] = set()  # sequence numbers of the REMOVEs marked: a re-read marks them again
        self._lock = threading.Lock()

    def add(self, key: Mapping[str, Any], ttl_value: str) -> None:
        with self._lock:
            self._pending[key_id(key, self.key_names)] = ttl_value

    def discard(self, key: Mapping[str, Any]) -> None:
        with self._lock:
            self._pending.pop(key_id(key, self.key_names), None)

    def claim(self, key: Mapping[str, Any], ttl_value: str | None) -> bool:
        """True (once) when this REMOVE is the emulator's delete of `key`."""
        with self._lock:
            ident = key_id(key, self.key_names)
            if ttl_value is None or self._pending.get(ident) != ttl_value:
                return False
            del self._pending[ident]
            return True

    def mark(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records, each REMOVE of an emulator's delete given the TTL service's userIdentity (in place)."""
        for record in records:
            if record.get("eventName") != "REMOVE" or record.get("userIdentity"):
                continue
            data = record.get("dynamodb") or {}
            sequence = str(data.get("SequenceNumber"))
            value = (data.get("OldImage") or {}).get(self.attribute) or {}
            if sequence in self._marked or self.claim(
                data.get("Keys") or {}, value.get("N") if isinstance(value, dict) else None
            ):
                self._marked.add(sequence)  # the poller re-reads from its checkpoint after an error
                record["userIdentity"] = dict(TTL_IDENTITY)
        return records

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)


class TtlEmulator:
    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        attribute: str,
        key_names: tuple[str, ...],
        deletions: TtlDeletions,
        interval: float = DEFAULT_INTERVAL_S,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self.attribute = attribute
        self.key_names = key_names
        self.deletions = deletions
        self.interval = interval
        self.now = now
        self.deleted = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def expired(self) -> list[tuple[dict[str, Any], str]]:
        """(key, TTL value) of every item whose TTL passed (a Scan: local tooling only)."""
        now = int(self.now())
        names = {f"#k{i}": name for i, name in enumerate(self.key_names)} | {"#ttl": self.attribute}
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            # a TTL attribute that is not a Number is ignored, as the service does
            "FilterExpression": "attribute_type(#ttl, :number) AND #ttl <= :now AND #ttl >= :oldest",
            "ProjectionExpression": ", ".join(names),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {
                ":number": {"S": "N"},
                ":now": {"N": str(now)},
                ":oldest": {"N": str(now - FIVE_YEARS_S)},
            },
            "ConsistentRead": True,
        }
        found: list[tuple[dict[str, Any], str]] = []
        while True:
            page = self.client.scan(**kwargs)
            for item in page.get("Items", []):
                found.append(({k: item[k] for k in self.key_names}, item[self.attribute]["N"]))
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def sweep(self) -> int:
        """Delete every expired item once; how many were deleted."""
        deleted = 0
        for key, ttl_value in self.expired():
            self.deletions.add(key, ttl_value)  # before the delete: a reader may see its REMOVE at once
            try:
                self.client.delete_item(
                    TableName=self.table_name,
                    Key=key,
                    ConditionExpression="#ttl = :seen AND #ttl <= :now",
                    ExpressionAttributeNames={"#ttl": self.attribute},
                    ExpressionAttributeValues={":seen": {"N": ttl_value}, ":now": {"N": str(int(self.now()))}},
                )
            except self.client.exceptions.ConditionalCheckFailedException:
                self.deletions.discard(key)  # changed meanwhile (a new TTL, or deleted): not expired any more
                continue
            except Exception:
                self.deletions.discard(key)
                raise
            deleted += 1
        self.deleted += deleted
        return deleted

    def start(self) -> TtlEmulator:
        self._thread = threading.Thread(target=self._run, name="ttl-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                removed = self.sweep()
            except Exception:
                log.exception("TTL sweep failed; trying again in %.1f s", self.interval)
                continue
            if removed:
                log.info("TTL removed %d expired item(s)", removed)
