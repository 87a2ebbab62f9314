"""`make migrate NAME=<migration> [DRY_RUN=1]`: run a table migration against `make dev`'s DynamoDB Local.

Parallel Scan segments in threads sharing one rate limiter, a progress bar on stderr, the report
(seen/changed/skipped/failed) on stdout. Interrupted (Ctrl-C, kill -9), the next run resumes every
segment at its checkpoint. `--load-v1-products N` first writes N version 1 products (the measured run
of docs/performance.md, and the resume test).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

from infra.settings import LOCAL_TABLE_NAME
from local_runtime.dynamodb_local import FAKE_CREDENTIALS

DEFAULT_RATE = 200.0  # write units per second
DEFAULT_SEGMENTS = 4


class ProgressBar:
    """One line on stderr, redrawn at most 10 times a second: items seen and the outcome counts."""

    def __init__(self, stream: Any = sys.stderr, width: int = 30) -> None:
        self.stream = stream
        self.width = width
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
                self.draw()

    def draw(self, end: str = "") -> None:
        seen = sum(self.counts.values())
        if self.total:
            filled = min(self.width, self.width * seen // self.total)
            bar = f"[{'#' * filled}{'.' * (self.width - filled)}] {seen}/~{self.total}"
        else:
            bar = f"{seen} seen"
        parts = ", ".join(f"{name} {count}" for name, count in self.counts.items())
        self.stream.write(f"\r{bar}  {parts}{end}")
        self.stream.flush()


def client(endpoint: str) -> Any:
    import boto3

    from shop.aws_config import client_config

    return boto3.client("dynamodb", endpoint_url=endpoint, config=client_config(), **FAKE_CREDENTIALS)


def main(argv: list[str] | None = None) -> int:
    from shop.migrations import MIGRATIONS, migration
    from shop.migrations.rate import TokenBucket
    from shop.migrations.runner import Runner
    from shop.repository.migrations import MigrationRepository
    from shop.repository.store import Table

    parser = argparse.ArgumentParser(prog="python -m local_runtime.migrate", description=__doc__)
    parser.add_argument("--name", required=True, help=f"one of: {', '.join(sorted(MIGRATIONS))}")
    parser.add_argument("--dry-run", action="store_true", help="write nothing; count what would change")
    parser.add_argument("--segments", type=int, default=DEFAULT_SEGMENTS)
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="write units per second, all segments")
    parser.add_argument("--dynamodb-port", type=int, default=8000, help="`make dev`'s DynamoDB Local port")
    parser.add_argument("--endpoint", default=None, help="DynamoDB endpoint (default: the port's)")
    parser.add_argument("--table", default=LOCAL_TABLE_NAME)
    parser.add_argument("--load-v1-products", type=int, default=0, metavar="N")
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
    ddb = client(args.endpoint or f"http://127.0.0.1:{args.dynamodb_port}")
    table = Table(ddb, args.table)
    if args.load_v1_products:
        from local_runtime.v1_products import load

        load(ddb, args.table, args.load_v1_products)
    store = MigrationRepository(table)
    limiter = TokenBucket(args.rate)
    bar = ProgressBar()
    bar.total = int(ddb.describe_table(TableName=args.table)["Table"].get("ItemCount", 0)) or None
    runner = Runner(
        store,
        chosen,
        segments=args.segments,
        limiter=limiter,
        dry_run=args.dry_run,
        on_item=None if args.quiet else bar,
    )
    record = runner.applied()
    if record is not None:
        print(json.dumps({"migration": chosen.name, "already_applied": record}, default=str, indent=2))
        return 0
    progress = runner.run()
    if not args.quiet:
        bar.draw(end="\n")
    elapsed = limiter.elapsed()
    report = {
        "migration": chosen.name,
        "dry_run": args.dry_run,
        **progress.as_dict(),
        "write_units": round(limiter.consumed, 1),
        "seconds": round(elapsed, 1),
        "write_units_per_second": round(limiter.consumed / elapsed, 1) if elapsed else None,
        "rate_limit": args.rate,
        "applied": runner.applied() is not None,
    }
    print(json.dumps(report, indent=2))
    return 1 if progress.failed else 0


if __name__ == "__main__":
    sys.exit(main())
