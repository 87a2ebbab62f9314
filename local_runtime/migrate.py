"""`make migrate NAME=<migration> [DRY_RUN=1]`: run a table migration against `make dev`'s DynamoDB Local.

Parallel Scan segments in threads sharing one rate limiter, a progress bar on stderr, the report
(seen/changed/skipped/failed) on stdout. Interrupted (Ctrl-C, kill -9), the next run resumes every
segment at its checkpoint. `--load-v1-products N` first writes N version 1 products (the measured run
of docs/performance.md, and the resume test); `--load-orders N`, N orders under STATUS_SHARDS (0002's measured
run). The report gives the write units DynamoDB reported per second, the highest over one second, and the bound
the limiter keeps (burst + rate x seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import threading
import time
from typing import Any

from infra.settings import LOCAL_TABLE_NAME
from local_runtime import dev_state
from local_runtime.cli import DEFAULT_STATE_DIR
from local_runtime.dynamodb_local import FAKE_CREDENTIALS
from shop.migrations.rate import TokenBucket

DEFAULT_RATE = 200.0  # write units per second
DEFAULT_SEGMENTS = 4


class RateMeter:
    """What the run wrote, measured on the wall clock from the units DynamoDB reported (the limiter's count):
    the average, the highest over any window of at least one second, and the bound the limiter keeps
    (burst + rate x seconds)."""

    def __init__(self, limiter: TokenBucket) -> None:
        self.limiter = limiter
        self.samples: list[tuple[float, float]] = [(limiter.elapsed(), 0.0)]
        self.peak = 0.0

    def sample(self) -> None:
        now, consumed = self.limiter.elapsed(), self.limiter.consumed
        self.samples.append((now, consumed))
        while len(self.samples) > 2 and now - self.samples[1][0] >= 1.0:
            self.samples.pop(0)  # keep the newest sample at least a second old as the window's start
        start, start_consumed = self.samples[0]
        if now - start >= 1.0:
            self.peak = max(self.peak, (consumed - start_consumed) / (now - start))

    def report(self) -> dict[str, Any]:
        self.sample()
        elapsed, consumed = self.limiter.elapsed(), self.limiter.consumed
        bound = self.limiter.capacity + self.limiter.rate * elapsed
        return {
            "write_units": round(consumed, 1),
            "seconds": round(elapsed, 1),
            "write_units_per_second": round(consumed / elapsed, 1) if elapsed else None,
            "peak_write_units_per_second_over_1s": round(self.peak, 1) if self.peak else None,
            "rate_limit": self.limiter.rate,
            "write_units_bound": round(bound, 1),  # burst + rate x seconds: what the limiter allows
            "within_limit": consumed <= bound + 1e-6,
        }


class ProgressBar:
    """One line on stderr, redrawn at most 10 times a second: items seen, the outcome counts, and the write
    units per second measured so far against the limit."""

    def __init__(self, meter: RateMeter, stream: Any = sys.stderr, width: int = 30, *, quiet: bool = False) -> None:
        self.meter = meter
        self.stream = stream
        self.width = width
        self.quiet = quiet
        self.counts = {"changed": 0, "skipped": 0, "failed": 0}
        self.total: int | None = None
        self._lock = threading.Lock()
        self._drawn = 0.0

    def __call__(self, outcome: str) -> None:
        with self._lock:
            self.counts[outcome] += 1
            now = time.monotonic()
            if now - self._drawn >= 0.1:
                self._drawn = now
                self.meter.sample()
                if not self.quiet:
                    self.draw()

    def draw(self, end: str = "") -> None:
        seen = sum(self.counts.values())
        if self.total:
            filled = min(self.width, self.width * seen // self.total)
            bar = f"[{'#' * filled}{'.' * (self.width - filled)}] {seen}/~{self.total}"
        else:
            bar = f"{seen} seen"
        parts = ", ".join(f"{name} {count}" for name, count in self.counts.items())
        limiter = self.meter.limiter
        elapsed = limiter.elapsed()
        rate = f"  {limiter.consumed / elapsed:.0f} WCU/s (limit {limiter.rate:g})" if elapsed > 0 else ""
        self.stream.write(f"\r{bar}  {parts}{rate}{end}")
        self.stream.flush()


def client(endpoint: str) -> Any:
    import boto3

    from shop.aws_config import client_config

    return boto3.client("dynamodb", endpoint_url=endpoint, config=client_config(), **FAKE_CREDENTIALS)


def main(argv: list[str] | None = None) -> int:
    from shop.config import ConfigurationError
    from shop.migrations import MIGRATIONS, migration
    from shop.migrations.runner import Runner
    from shop.repository.migrations import MigrationRepository
    from shop.repository.store import Table

    parser = argparse.ArgumentParser(prog="python -m local_runtime.migrate", description=__doc__)
    parser.add_argument("--name", required=True, help=f"one of: {', '.join(sorted(MIGRATIONS))}")
    parser.add_argument("--dry-run", action="store_true", help="write nothing; count what would change")
    parser.add_argument("--segments", type=int, default=DEFAULT_SEGMENTS)
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="write units per second, all segments")
    parser.add_argument(
        "--dynamodb-port", type=int, default=None, help="DynamoDB Local's port (default: the running `make dev`'s)"
    )
    parser.add_argument("--endpoint", default=None, help="DynamoDB endpoint (default: the port's)")
    parser.add_argument(
        "--data-dir", type=pathlib.Path, default=DEFAULT_STATE_DIR, help="the running `make dev`'s state"
    )
    parser.add_argument("--table", default=LOCAL_TABLE_NAME)
    parser.add_argument("--load-v1-products", type=int, default=0, metavar="N")
    parser.add_argument(
        "--load-orders", type=int, default=0, metavar="N", help="first write N orders under STATUS_SHARDS (0002)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        chosen = migration(args.name)
    except KeyError as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    # A migration may read the functions' settings (0002: STATUS_SHARDS, STATUS_SHARDS_NEXT, STATUS_SHARDS_WRITERS);
    # they need a table name, which is this run's.
    os.environ.setdefault("TABLE_NAME", args.table)
    try:
        endpoint = dev_state.endpoint_for(args.endpoint, args.dynamodb_port, args.data_dir.resolve())
    except dev_state.NoStack as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    ddb = client(endpoint)
    table = Table(ddb, args.table)
    if args.load_v1_products:
        from local_runtime.v1_products import load

        load(ddb, args.table, args.load_v1_products)
    if args.load_orders:
        from local_runtime.status_orders import load as load_orders
        from shop.config import settings

        load_orders(ddb, args.table, args.load_orders, settings().status_shards)
    store = MigrationRepository(table)
    limiter = TokenBucket(args.rate)
    meter = RateMeter(limiter)
    bar = ProgressBar(meter, quiet=args.quiet)
    bar.total = int(ddb.describe_table(TableName=args.table)["Table"].get("ItemCount", 0)) or None
    runner = Runner(
        store,
        chosen,
        segments=args.segments,
        limiter=limiter,
        dry_run=args.dry_run,
        on_item=bar,
    )
    try:  # a migration that needs settings (0002: the switch) says what is missing before anything is read
        chosen.context([], store)
    except ConfigurationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    record = runner.applied()
    if record is not None:
        print(json.dumps({"migration": chosen.name, "already_applied": record}, default=str, indent=2))
        return 0
    progress = runner.run()
    if not args.quiet:
        bar.draw(end="\n")
    report = {
        "migration": chosen.name,
        "dry_run": args.dry_run,
        **progress.as_dict(),
        **meter.report(),
        "applied": runner.applied() is not None,
    }
    print(json.dumps(report, indent=2))
    return 1 if progress.failed else 0


if __name__ == "__main__":
    sys.exit(main())
