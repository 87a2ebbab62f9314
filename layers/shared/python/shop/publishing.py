"""EventBridge publishing: one lazily created client, batched PutEvents, failures reported per entry.

Publishing is at least once: a caller retries whatever `publish` reports failed, so every event's
detail carries a deterministic `id` that consumers dedupe on.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shop.models.events import Event
from shop.runtime.botocore_clients import ProcessClient

logger = logging.getLogger(__name__)

MAX_ENTRIES = 10  # PutEvents' limit per call
MAX_REQUEST_BYTES = 256 * 1024  # PutEvents' limit on the summed entry sizes of one call

_client: Any = None
_events = ProcessClient(__name__, "events")


def events_client() -> Any:
    """The process-wide EventBridge client, created on first use (not at import)."""
    return _events.get()


def reset_client() -> None:
    """Forget the cached client (tests switch mocks between runs)."""
    _events.reset()


def entry_size(entry: dict[str, Any]) -> int:
    """PutEvents' size rule: UTF-8 bytes of Source, DetailType, Detail and resources, plus 14 for Time."""
    size = 14
    for name in ("Source", "DetailType", "Detail"):
        size += len(entry.get(name, "").encode())
    size += sum(len(resource.encode()) for resource in entry.get("Resources", []))
    return size


def chunks(entries: Sequence[dict[str, Any]]) -> Iterator[list[int]]:
    """Indexes of `entries` grouped into PutEvents calls: at most 10 entries and 256 KB each."""
    current: list[int] = []
    current_bytes = 0
    for index, entry in enumerate(entries):
        size = entry_size(entry)
        if current and (len(current) == MAX_ENTRIES or current_bytes + size > MAX_REQUEST_BYTES):
            yield current
            current, current_bytes = [], 0
        current.append(index)
        current_bytes += size
    if current:
        yield current


class EventPublisher:
    """Publishes to `bus`: a name, or what gives it at each use (shop.wiring.event_publisher: EVENT_BUS_NAME, read
    at each batch, not when built); no name (None or ""): nothing is published."""

    def __init__(self, bus: str | Callable[[], str | None], client: Any = None) -> None:
        self._bus = bus
        self._client = client

    @property
    def bus_name(self) -> str | None:
        return (self._bus() if callable(self._bus) else self._bus) or None

    @property
    def client(self) -> Any:
        return self._client if self._client is not None else events_client()

    def publish(self, events: Sequence[Event], *, attempts: int = 2) -> list[int]:
        """Put every event, 10 per call; the indexes of the events that were not accepted.

        Entries PutEvents rejects (throttling, internal failures) are sent again up to `attempts`
        times in all, after a short jittered pause: cheaper than failing their records, which makes
        Lambda redeliver the rest of the shard's batch too.
        """
        bus_name = self.bus_name
        if bus_name is None:
            return []
        entries = [event.entry(bus_name) for event in events]
        pending = list(range(len(entries)))
        for attempt in range(attempts):
            if attempt:
                time.sleep(random.uniform(0.05, 0.2))
            rejected = self._put([entries[i] for i in pending])
            pending = [pending[position] for position in rejected]
            if not pending:
                break
        return pending

    def _put(self, entries: list[dict[str, Any]]) -> list[int]:
        """One pass over `entries` in PutEvents-sized calls; the positions not accepted."""
        failed: list[int] = []
        for indexes in chunks(entries):
            try:
                response = self.client.put_events(Entries=[entries[i] for i in indexes])
            except (ClientError, BotoCoreError) as error:
                logger.warning("PutEvents failed for %d entries: %s", len(indexes), error)
                failed.extend(indexes)
                continue
            if not response.get("FailedEntryCount"):
                continue
            results = response.get("Entries", [])
            for position, index in enumerate(indexes):
                result = results[position] if position < len(results) else {"ErrorCode": "Missing"}
                if result.get("ErrorCode") or not result.get("EventId"):
                    logger.warning(
                        "PutEvents rejected an entry: %s %s", result.get("ErrorCode"), result.get("ErrorMessage")
                    )
                    failed.append(index)
        return failed


@dataclass
class Outbox:
    """The events of one batch, each tagged with the record that produced it, published together.

    `flush` returns the tags (record ids) with at least one event not accepted, so the caller can
    report those records failed and have them redelivered.
    """

    publisher: EventPublisher | None
    pending: list[tuple[str, Event]] = field(default_factory=list)

    @property
    def publishes(self) -> bool:
        """A publisher with a bus: without one, events are dropped (nothing is published)."""
        return self.publisher is not None and self.publisher.bus_name is not None

    def add(self, origin: str, events: Iterable[Event]) -> None:
        if self.publishes:
            self.pending.extend((origin, event) for event in events)

    def clear(self) -> None:
        self.pending.clear()

    def flush(self) -> set[str]:
        pending, self.pending = self.pending, []
        if self.publisher is None or not pending:
            return set()
        failed = self.publisher.publish([event for _, event in pending])
        return {pending[i][0] for i in failed}
