"""Run a migration over parallel Scan segments: resumable per segment, rate limited, with a dry run.

A segment's progress is checkpointed in the table after each Scan page whose items are all handled
(`keys.migration_segment_key`): a run killed mid-page resumes at that page and plans its items again,
and the changes already applied fail their conditions (counted as skipped). When every segment is
done the migration's record is written (`keys.migration_key`) and a later run does nothing.
A dry run writes nothing, checkpoints included: it scans everything and counts what would change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from shop import errors
from shop.migrations.base import Lookups, Migration
from shop.migrations.changes import Change
from shop.migrations.rate import TokenBucket

logger = logging.getLogger(__name__)

PAGE_SIZE = 100
COUNTS = ("seen", "changed", "skipped", "failed")


@dataclass
class Progress:
    seen: int = 0  # items read by the Scan (a page read again after a resume counts again)
    changed: int = 0  # items whose change was applied (a dry run: would be)
    skipped: int = 0  # not this migration's, or done already (condition failed)
    failed: int = 0  # an item the migration could not plan or DynamoDB refused for good

    def add(self, other: Progress) -> None:
        for name in COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTS}


@dataclass
class Checkpoint:
    last_key: dict[str, Any] | None = None  # the Scan's LastEvaluatedKey (wire form); None: from the start
    progress: Progress = field(default_factory=Progress)
    done: bool = False


@dataclass(frozen=True)
class ScanPage:
    items: list[dict[str, Any]]
    last_key: dict[str, Any] | None


class AlreadyApplied(Exception):
    """The change's condition failed: applied by an earlier run, or the item changed meanwhile."""


class MigrationStore(Lookups, Protocol):
    def scan_page(self, *, segment: int, segments: int, start_key: dict[str, Any] | None, limit: int) -> ScanPage: ...

    def apply(self, change: Change) -> float:
        """Write the change; the write units it consumed. AlreadyApplied when a condition failed."""
        ...

    def checkpoint(self, name: str, segments: int, segment: int) -> Checkpoint: ...

    def save_checkpoint(self, name: str, segments: int, segment: int, checkpoint: Checkpoint) -> None: ...

    def record(self, name: str) -> dict[str, Any] | None: ...

    def save_record(self, name: str, segments: int, progress: Progress) -> None: ...


@dataclass
class SegmentResult:
    segment: int
    done: bool
    progress: Progress


class Runner:
    """One migration at one segment count. `limiter` is shared by every segment this process runs."""

    def __init__(
        self,
        store: MigrationStore,
        migration: Migration,
        *,
        segments: int,
        limiter: TokenBucket,
        dry_run: bool = False,
        page_size: int = PAGE_SIZE,
        on_item: Callable[[str], None] | None = None,
    ) -> None:
        if segments < 1:
            raise ValueError("segments must be at least 1")
        self.store = store
        self.migration = migration
        self.segments = segments
        self.limiter = limiter
        self.dry_run = dry_run
        self.page_size = page_size
        self.on_item = on_item or (lambda outcome: None)

    def applied(self) -> dict[str, Any] | None:
        return self.store.record(self.migration.name)

    def run_segment(self, segment: int, *, should_stop: Callable[[], bool] = lambda: False) -> SegmentResult:
        """Migrate `segment` from its checkpoint until its end or until `should_stop()` says so after a page."""
        name = self.migration.name
        checkpoint = Checkpoint() if self.dry_run else self.store.checkpoint(name, self.segments, segment)
        while not checkpoint.done:
            page = self.store.scan_page(
                segment=segment, segments=self.segments, start_key=checkpoint.last_key, limit=self.page_size
            )
            context = self.migration.context(page.items, self.store)
            for item in page.items:
                outcome = self._migrate(item, context)
                checkpoint.progress.seen += 1
                setattr(checkpoint.progress, outcome, getattr(checkpoint.progress, outcome) + 1)
                self.on_item(outcome)
            checkpoint.last_key, checkpoint.done = page.last_key, page.last_key is None
            if not self.dry_run:
                self.store.save_checkpoint(name, self.segments, segment, checkpoint)
            if should_stop():
                break
        return SegmentResult(segment, checkpoint.done, checkpoint.progress)

    def _migrate(self, item: dict[str, Any], context: Any) -> str:
        try:
            change = self.migration.plan(item, context)
        except ValueError:  # pydantic's ValidationError too: an item the migration cannot read
            logger.warning("cannot plan %s / %s", item.get("PK"), item.get("SK"), exc_info=True)
            return "failed"
        if change is None:
            return "skipped"
        if self.dry_run:
            return "changed"
        estimate = change.estimated_units
        self.limiter.acquire(estimate)
        consumed = float(estimate)
        try:
            consumed = self.store.apply(change)
        except AlreadyApplied:
            return "skipped"
        except errors.StoreRejected:
            logger.warning("DynamoDB refused the change of %s / %s", item.get("PK"), item.get("SK"), exc_info=True)
            return "failed"
        finally:
            self.limiter.settle(estimate, consumed)
        return "changed"

    def finish(self) -> dict[str, Any] | None:
        """Record the migration as applied if every segment is done; the record (None: not yet)."""
        name = self.migration.name
        total = Progress()
        for segment in range(self.segments):
            checkpoint = self.store.checkpoint(name, self.segments, segment)
            if not checkpoint.done:
                return None
            total.add(checkpoint.progress)
        self.store.save_record(name, self.segments, total)
        return self.store.record(name)

    def run(self) -> Progress:
        """Every segment at once, one thread each; then the record (not on a dry run)."""
        results: list[SegmentResult] = []
        lock = threading.Lock()

        def work(segment: int) -> None:
            result = self.run_segment(segment)
            with lock:
                results.append(result)

        with ThreadPoolExecutor(max_workers=self.segments) as pool:
            for future in [pool.submit(work, segment) for segment in range(self.segments)]:
                future.result()
        total = Progress()
        for result in results:
            total.add(result.progress)
        if not self.dry_run:
            self.finish()
        return total
