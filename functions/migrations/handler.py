"""migrations: the Lambda function of the migration state machine (infra/stacks/operations.py).

Three actions, one per state: `start` names the segments (or says the migration is applied),
`segment` migrates one Scan segment from its checkpoint until the invocation's time runs short (the
state machine invokes it again until the segment is done), `finish` records the migration once every
segment is done. Each worker limits itself to its share of the run's rate (rate / segments), so the
segments of a run together stay within the rate whatever their concurrency.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from shop import wiring
from shop.migrations import migration
from shop.migrations.rate import TokenBucket
from shop.migrations.runner import Progress, Runner

logger = Logger()
store = wiring.migration_store()  # the migrations' scans, writes and checkpoints on the function's table (shop.wiring)
# A segment worker stops after the page that leaves less than this of its invocation (ms): a page is
# at most 100 items at the run's rate, and the checkpoint must be written before the timeout.
STOP_MARGIN_MS = 120_000
MAX_SEGMENTS = 1000


def _runner(event: dict[str, Any], *, share: bool) -> Runner:
    segments = int(event["segments"])
    if not 1 <= segments <= MAX_SEGMENTS:
        raise ValueError(f"segments must be 1..{MAX_SEGMENTS}")
    rate = float(event["rate"]) / (segments if share else 1)
    return Runner(
        store,
        migration(str(event["migration"])),
        segments=segments,
        limiter=TokenBucket(rate),
        dry_run=bool(event.get("dry_run", False)),
    )


def start(event: dict[str, Any]) -> dict[str, Any]:
    runner = _runner(event, share=True)
    # a migration that needs settings (0002: the shard-count switch with writers on the next count) fails
    # here, before the map starts any segment
    runner.migration.context([], runner.store)
    applied = runner.applied() is not None
    base = {key: event[key] for key in ("migration", "segments", "rate")} | {"dry_run": runner.dry_run}
    return {
        "applied": applied,
        "items": [] if applied else [{**base, "segment": segment} for segment in range(runner.segments)],
        **base,
    }


def segment(event: dict[str, Any], context: Any) -> dict[str, Any]:
    runner = _runner(event, share=True)
    result = runner.run_segment(
        int(event["segment"]), should_stop=lambda: context.get_remaining_time_in_millis() < STOP_MARGIN_MS
    )
    # a dry run keeps no checkpoint: it must scan its segment in one invocation
    done = result.done or runner.dry_run
    logger.info("segment", extra={"segment": result.segment, "done": done, **result.progress.as_dict()})
    return {**event, "done": done, "progress": result.progress.as_dict()}


def finish(event: dict[str, Any]) -> dict[str, Any]:
    runner = _runner(event, share=False)
    if runner.dry_run:  # no checkpoints: the segments' own counts are the report
        total = Progress()
        for result in event.get("results", []):
            total.add(Progress(**result["progress"]))
        return {"migration": runner.migration.name, "dry_run": True, **total.as_dict()}
    record = runner.finish()
    if record is None:
        raise RuntimeError(f"{runner.migration.name}: a segment is not done")
    return {key: value for key, value in record.items() if key not in ("PK", "SK")}


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    action = event.get("action")
    if action == "start":
        return start(event)
    if action == "segment":
        return segment(event, context)
    if action == "finish":
        return finish(event)
    raise ValueError(f"unknown action {action!r}")
