"""Count and cost every DynamoDB call made in this process, from any client.

Wraps ``botocore.client.BaseClient._make_api_call`` rather than one client's hooks, so the shop's and Powertools'
clients are both seen (docs/performance.md, "How each figure is measured").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

IDEMPOTENCY_PREFIX = "IDEMPOTENCY#"
WRITE_OPERATIONS = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "ExecuteStatement"}
)


@dataclass(frozen=True)
class TransactAction:
    """One action of a TransactWriteItems request: Put, Update, Delete or ConditionCheck, on a table and key
    (``key`` as ``PK|SK``, ``raw_key`` the request's own attribute values of the primary key)."""

    kind: str
    table: str
    key: str
    raw_key: dict[str, Any]


@dataclass
class Call:
    operation: str
    index: str | None
    idempotency: bool
    capacity: float
    table_capacity: float
    gsi_capacity: float
    count: int | None
    scanned: int | None
    error: str | None
    transact_items: int
    started: float
    seconds: float
    write_keys: list[str] = field(default_factory=list)
    modelled_wru: float = 0.0
    thread: int = 0
    written_bytes: list[int] = field(default_factory=list)
    # One entry per item the write changed (bench/model.py, from its stream record): the partition keys
    # it wrote on the table and GSI1, with the write units each took (bench/heat.py reads these).
    written_items: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    # A TransactWriteItems' actions in request order, each with its kind, table and key: its ConditionChecks
    # produce no stream record, so bench/model.py prices them from here.
    transact_actions: list[TransactAction] = field(default_factory=list)
    # One entry per ConditionCheck the transaction made, priced by bench/model.py: the checked key, the
    # item's size when checked (None: absent) and the write units DynamoDB bills for it.
    checked_items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def transactional(self) -> bool:
        return self.operation == "TransactWriteItems"

    @property
    def is_write(self) -> bool:
        return self.operation in WRITE_OPERATIONS

    @property
    def condition_checks(self) -> list[TransactAction]:
        return [a for a in self.transact_actions if a.kind == "ConditionCheck"]

    def condition_check_wru(self) -> float:
        return float(sum(item["wru"] for item in self.checked_items))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"operation": self.operation, "capacity": self.capacity}
        if self.is_write:
            out["modelled_wru"] = self.modelled_wru
            if self.written_bytes:
                out["item_bytes"] = self.written_bytes
        if self.index:
            out["index"] = self.index
        if self.idempotency:
            out["idempotency_record"] = True
        if self.gsi_capacity:
            out["table_capacity"] = self.table_capacity
            out["gsi_capacity"] = self.gsi_capacity
        if self.transact_items:
            out["transact_items"] = self.transact_items
        if self.checked_items:
            out["condition_checks"] = [
                {"key": item["key"], "item_bytes": item["item_bytes"], "wru": item["wru"]}
                for item in self.checked_items
            ]
        if self.count is not None:
            out["count"] = self.count
            out["scanned_count"] = self.scanned
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class Measurement:
    calls: list[Call] = field(default_factory=list)
    # The function invocations measured (bench.bill.Invocation: function, seconds, records) and the events their
    # stream effects published: what the whole bill prices besides DynamoDB (bench/bill.py).
    invocations: list[Any] = field(default_factory=list)
    events: int = 0

    @property
    def operations(self) -> list[str]:
        return [c.operation for c in self.calls]

    def store_calls(self) -> list[Call]:
        return [c for c in self.calls if not c.idempotency]

    def idempotency_calls(self) -> list[Call]:
        return [c for c in self.calls if c.idempotency]

    def scans(self) -> int:
        return sum(1 for c in self.calls if c.operation == "Scan")

    def wcu(self) -> float:
        return sum(c.capacity for c in self.calls if c.is_write)

    def modelled_wru(self) -> float:
        return sum(c.modelled_wru for c in self.calls if c.is_write)

    def condition_checks(self) -> list[dict[str, Any]]:
        """The priced ConditionChecks of the calls' transactions (bench/model.py), in call order."""
        return [item for c in self.calls for item in c.checked_items]

    def condition_check_wru(self) -> float:
        return sum(c.condition_check_wru() for c in self.calls)

    def rcu(self) -> float:
        return sum(c.capacity for c in self.calls if not c.is_write)

    def returned(self) -> int:
        return sum(c.count or 0 for c in self.calls if c.count is not None)

    def scanned(self) -> int:
        return sum(c.scanned or 0 for c in self.calls if c.scanned is not None)

    def parallelism(self) -> dict[str, Any]:
        """How the calls were issued: from how many threads, and how much their time in flight overlapped."""
        if not self.calls:
            return {"threads": 0, "overlap": 0.0, "parallel": False}
        span = max(c.started + c.seconds for c in self.calls) - min(c.started for c in self.calls)
        busy = sum(c.seconds for c in self.calls)
        threads = len({c.thread for c in self.calls})
        overlap = round(busy / span, 2) if span > 0 else 1.0
        return {"threads": threads, "overlap": overlap, "parallel": threads > 1 and overlap > 1.0}

    def concurrent(self) -> bool:
        return bool(self.parallelism()["parallel"])

    def summary(self) -> dict[str, Any]:
        return {
            "round_trips": len(self.store_calls()),
            "idempotency_calls": len(self.idempotency_calls()),
            "operations": self.operations,
            "scans": self.scans(),
            "wcu": round(self.wcu(), 2),
            "modelled_wru": round(self.modelled_wru(), 2),
            "rcu": round(self.rcu(), 2),
            "calls": [c.as_dict() for c in self.calls],
        }


def _is_idempotency(params: dict[str, Any]) -> bool:
    for field_name in ("Key", "Item"):
        value = params.get(field_name)
        if isinstance(value, dict):
            pk = value.get("PK")
            if isinstance(pk, dict) and str(pk.get("S", "")).startswith(IDEMPOTENCY_PREFIX):
                return True
    return False


def key_of(item: Any) -> str | None:
    if not isinstance(item, dict) or "PK" not in item:
        return None
    return f"{item['PK'].get('S')}|{(item.get('SK') or {}).get('S')}"


def actions_of(params: dict[str, Any]) -> list[TransactAction]:
    """A TransactWriteItems request's actions, in request order, with the primary key each names."""
    actions = []
    for entry in params.get("TransactItems", []):
        for kind, body in entry.items():
            item = body.get("Item") if kind == "Put" else body.get("Key")
            key = key_of(item)
            if key is None or not isinstance(item, dict):
                continue
            raw = {name: item[name] for name in ("PK", "SK") if name in item}
            actions.append(TransactAction(kind, str(body.get("TableName", "")), key, raw))
    return actions


def write_keys(operation: str, params: dict[str, Any]) -> list[str]:
    """The primary keys a write request changes (for attributing stream records to it): a transaction's
    ConditionChecks write nothing, so their keys are not among them (bench/model.py prices them apart)."""
    found: list[Any] = []
    if operation == "PutItem":
        found.append(params.get("Item"))
    elif operation in ("UpdateItem", "DeleteItem"):
        found.append(params.get("Key"))
    elif operation == "TransactWriteItems":
        return [a.key for a in actions_of(params) if a.kind != "ConditionCheck"]
    elif operation == "BatchWriteItem":
        for requests in params.get("RequestItems", {}).values():
            for request in requests:
                body = request.get("PutRequest", {}).get("Item") or request.get("DeleteRequest", {}).get("Key")
                found.append(body)
    return [k for k in (key_of(i) for i in found) if k]


def _capacity(consumed: Any) -> tuple[float, float, float]:
    entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    total = table = gsi = 0.0
    for entry in entries:
        total += float(entry.get("CapacityUnits", 0.0))
        table += float((entry.get("Table") or {}).get("CapacityUnits", 0.0))
        for index in (entry.get("GlobalSecondaryIndexes") or {}).values():
            gsi += float(index.get("CapacityUnits", 0.0))
    return total, table, gsi


_bench_own = threading.local()


@contextmanager
def unrecorded() -> Iterator[None]:
    """The bench's own calls in this thread (bench/model.py reading a checked item's size): never recorded,
    whatever measurement is open."""
    previous = getattr(_bench_own, "active", False)
    _bench_own.active = True
    try:
        yield
    finally:
        _bench_own.active = previous


class Recorder:
    """Installs the wrapper; ``measure()`` collects the calls made (by any thread) inside a block."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: list[Measurement] = []
        self._original: Any = None

    def install(self) -> Recorder:
        from botocore.client import BaseClient

        if self._original is not None:
            return self
        original = BaseClient._make_api_call
        recorder = self

        def make_api_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            if client.meta.service_model.service_name != "dynamodb":
                return original(client, operation_name, api_params)
            return recorder._call(original, client, operation_name, api_params)

        self._original = original
        BaseClient._make_api_call = make_api_call
        return self

    def uninstall(self) -> None:
        from botocore.client import BaseClient

        if self._original is not None:
            BaseClient._make_api_call = self._original
            self._original = None

    def __enter__(self) -> Recorder:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()

    @contextmanager
    def measure(self) -> Iterator[Measurement]:
        measurement = Measurement()
        with self._lock:
            self._active.append(measurement)
        try:
            yield measurement
        finally:
            with self._lock:
                self._active.remove(measurement)

    def _call(self, original: Any, client: Any, operation: str, params: dict[str, Any]) -> Any:
        with self._lock:
            listening = bool(self._active) and not getattr(_bench_own, "active", False)
        if not listening:
            return original(client, operation, params)
        members = client.meta.service_model.operation_model(operation).input_shape.members
        if "ReturnConsumedCapacity" in members:
            params = {**params, "ReturnConsumedCapacity": "INDEXES"}
        started = time.perf_counter()
        error: str | None = None
        response: dict[str, Any] = {}
        try:
            response = original(client, operation, params)
            return response
        except Exception as exc:
            response = getattr(exc, "response", {}) or {}
            error = str(response.get("Error", {}).get("Code") or type(exc).__name__)
            raise
        finally:
            total, table, gsi = _capacity(response.get("ConsumedCapacity"))
            call = Call(
                operation=operation,
                index=params.get("IndexName"),
                idempotency=_is_idempotency(params),
                capacity=total,
                table_capacity=table,
                gsi_capacity=gsi,
                count=response.get("Count") if operation in ("Query", "Scan") else None,
                scanned=response.get("ScannedCount") if operation in ("Query", "Scan") else None,
                error=error,
                transact_items=len(params.get("TransactItems", [])),
                started=started,
                seconds=time.perf_counter() - started,
                write_keys=write_keys(operation, params) if operation in WRITE_OPERATIONS else [],
                thread=threading.get_ident(),
                params=params,
                transact_actions=actions_of(params) if operation == "TransactWriteItems" else [],
            )
            with self._lock:
                for measurement in self._active:
                    measurement.calls.append(call)
