"""DynamoDB's Time to Live, emulated for DynamoDB Local, whose own TTL deletes are not enough.

DynamoDB Local deletes expired items of a TTL-enabled table itself, about every 10 seconds, but stops doing
so for a table while any expired item there lacks an index's keys, and names those deletes
`UNKNOWN_TO_SDK_VERSION` (`local_runtime.events` gives them the TTL service's identity).

`TtlEmulator.sweep()` deletes the items whose TTL attribute (a Number, epoch seconds) has passed, each
conditionally on the attribute still being expired then, as the TTL service does; `start()` sweeps every
`interval` seconds in a thread. Finding them is a Scan of the local table (keys and the attribute only): a
sparse index would make the local table differ from the deployed one. Fed the table's stream records
(`observe`, by the pollers), it keeps each key's latest TTL instead and scans only to fill that watch, at its
first sweep, every `rescan_s` and after a failed sweep. Like the service, it skips values more than five years
in the past.

The emulator's deletes are ordinary REMOVEs without `userIdentity`, so each is registered (`TtlDeletions`)
before it is made; the stream readers (`TtlDeletions.mark`, used by the poller and the tests' reader) give
the first REMOVE of that key whose OldImage holds the same TTL value the TTL service's identity, so the
mapping's filters and the processor see it as on AWS.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("local_runtime.ttl")

TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
FIVE_YEARS_S = 5 * 365 * 86_400
DEFAULT_INTERVAL_S = 2.0
# Fed by the stream, the emulator scans the table only at its first sweep and then this often, as a safety net: a
# Scan of 20,000 items took DynamoDB Local 0.65 s of CPU, so one every 2 s kept a core a third busy.
DEFAULT_RESCAN_S = 300.0
NEW_IMAGE_VIEWS = ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")  # the stream views whose records carry an item's TTL

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
        fed_by_stream: bool = False,
        rescan_s: float = DEFAULT_RESCAN_S,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self.attribute = attribute
        self.key_names = key_names
        self.deletions = deletions
        self.interval = interval
        self.now = now
        # With `observe` given every record of the table's stream (the pollers do), each interval deletes what came
        # due among the TTLs seen, and a Scan runs only at the first sweep and every `rescan_s`; else every sweep
        # is a Scan.
        self.fed_by_stream = fed_by_stream
        self.rescan_s = rescan_s
        self.deleted = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._current: dict[KeyId, tuple[str, dict[str, Any]]] = {}  # each key's TTL value as last seen, its key
        self._due: list[tuple[int, int, KeyId, str]] = []  # a heap: (epoch second, tie, key, TTL value)
        self._ties = itertools.count()

    # -- the TTLs seen on the stream ----------------------------------------------------------------
    def observe(self, records: list[dict[str, Any]]) -> None:
        """The table's stream records as a poller reads them (all of them, before its mapping's filters)."""
        for record in records:
            data = record.get("dynamodb") or {}
            if data.get("StreamViewType") not in NEW_IMAGE_VIEWS:
                continue  # no new image to read the TTL from: the rescans keep such a table's TTLs
            key = {name: value for name, value in (data.get("Keys") or {}).items() if name in self.key_names}
            if len(key) != len(self.key_names):
                continue
            value = ((data.get("NewImage") or {}).get(self.attribute) or {}).get("N")
            self._expect(key, value if isinstance(value, str) else None)

    def _expect(self, key: dict[str, Any], value: str | None) -> None:
        ident = key_id(key, self.key_names)
        with self._lock:
            if value is None:
                self._current.pop(ident, None)
                return
            if self._current.get(ident, (None,))[0] == value:
                return
            self._current[ident] = (value, key)
            heapq.heappush(self._due, (_epoch(value), next(self._ties), ident, value))
            if len(self._due) > 2 * len(self._current) + 1024:  # superseded TTLs: keep only the current ones
                self._due = [(_epoch(v), next(self._ties), i, v) for i, (v, _) in self._current.items()]
                heapq.heapify(self._due)

    def seed(self) -> None:
        """Every TTL in the table (a Scan), as if each item had just been seen on the stream."""
        for key, value in self.expired(every=True):
            self._expect(key, value)

    def came_due(self) -> list[tuple[dict[str, Any], str]]:
        """(key, TTL value) of the TTLs seen whose time has come, each taken off the watch."""
        now = int(self.now())
        found = []
        with self._lock:
            while self._due and self._due[0][0] <= now:
                at, _, ident, value = heapq.heappop(self._due)
                current = self._current.get(ident)
                if current is None or current[0] != value:
                    continue  # superseded, or gone
                del self._current[ident]
                if at >= now - FIVE_YEARS_S:  # the service ignores values over five years old
                    found.append((current[1], value))
        return found

    def sweep_due(self) -> int:
        """Delete the items whose TTL seen has passed; how many were deleted. One the item's change had not
        reached the watch yet (its condition fails) is read again and watched at the TTL it has."""
        return self._delete(self.came_due(), reread=True)

    def expired(self, *, every: bool = False) -> list[tuple[dict[str, Any], str]]:
        """(key, TTL value) of every item whose TTL passed (`every`: of every item with a TTL within five years of
        now, passed or not) (a Scan: local tooling only)."""
        now = int(self.now())
        names = {f"#k{i}": name for i, name in enumerate(self.key_names)} | {"#ttl": self.attribute}
        # a TTL attribute that is not a Number is ignored, as the service does
        condition = "attribute_type(#ttl, :number) AND #ttl >= :oldest"
        values = {":number": {"S": "N"}, ":oldest": {"N": str(now - FIVE_YEARS_S)}}
        if not every:
            condition += " AND #ttl <= :now"
            values[":now"] = {"N": str(now)}
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": condition,
            "ProjectionExpression": ", ".join(names),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
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
        """Delete every expired item once (a Scan); how many were deleted."""
        return self._delete(self.expired(), reread=False)

    def _delete(self, expired: list[tuple[dict[str, Any], str]], *, reread: bool) -> int:
        deleted = 0
        for key, ttl_value in expired:
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
                if reread:
                    self._reread(key)
                continue
            except Exception:
                self.deletions.discard(key)
                raise
            deleted += 1
        self.deleted += deleted
        return deleted

    def _reread(self, key: dict[str, Any]) -> None:
        item = self.client.get_item(
            TableName=self.table_name,
            Key=key,
            ProjectionExpression="#ttl",
            ExpressionAttributeNames={"#ttl": self.attribute},
            ConsistentRead=True,
        ).get("Item")
        value = ((item or {}).get(self.attribute) or {}).get("N")
        self._expect(key, value if isinstance(value, str) else None)

    def start(self) -> TtlEmulator:
        self._thread = threading.Thread(target=self._run, name="ttl-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        rescan_at = 0.0
        while not self._stop.wait(self.interval):
            try:
                if self.fed_by_stream:
                    if time.monotonic() >= rescan_at:
                        self.seed()
                        rescan_at = time.monotonic() + self.rescan_s
                    removed = self.sweep_due()
                else:
                    removed = self.sweep()
            except Exception:
                log.exception("TTL sweep failed; trying again in %.1f s", self.interval)
                rescan_at = 0.0  # what came due may have been taken off the watch before the failure
                continue
            if removed:
                log.info("TTL removed %d expired item(s)", removed)


def _epoch(value: str) -> int:
    try:
        return int(float(value))
    except ValueError:
        return 0
