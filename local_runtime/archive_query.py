"""`make archive-query NAME=<query>`: a named query of the archive (infra/archive_queries.py), run by DuckDB
over archive objects on disk, as Athena runs it over the bucket.

The SQL is Athena's own with its two dialect differences filled in by `infra.archive_queries.query`
(the table and the unnesting of lines). Athena reads the Glue table (JSON SerDe, partition projection);
DuckDB reads a view over the same objects with the same columns (the Glue types translated here), the
partition folders as the same string columns.

The objects: `make dev` keeps the archive in its local S3 and saves it to `.local/s3/<bucket>/` when it
stops; `--archive-dir` names another copy (a `aws s3 sync` of a deployed bucket works the same).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from typing import Any

from infra import archive_queries

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
LOCAL_BUCKETS = REPO_ROOT / ".local" / "s3"
OBJECTS = "orders/year=*/month=*/day=*/*.json"  # the archive's objects, under their partition folders
SCALARS = {"string": "VARCHAR", "int": "INTEGER", "bigint": "BIGINT", "double": "DOUBLE", "boolean": "BOOLEAN"}


def duckdb_type(glue: str) -> str:
    """A Glue (Hive) type as DuckDB spells it: array<T> -> T[], struct<a:T,...> -> STRUCT(a T, ...)."""
    glue = glue.strip()
    if glue.startswith("array<") and glue.endswith(">"):
        return duckdb_type(glue[len("array<") : -1]) + "[]"
    if glue.startswith("struct<") and glue.endswith(">"):
        fields = []
        for field in _split_top_level(glue[len("struct<") : -1]):
            name, kind = field.split(":", 1)
            fields.append(f'"{name}" {duckdb_type(kind)}')
        return "STRUCT(" + ", ".join(fields) + ")"
    return SCALARS[glue]


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def view_sql(archive_dir: pathlib.Path) -> str:
    """The `orders` view: every object under orders/year=/month=/day=, the Glue table's columns."""
    columns = ", ".join(f"'{name}': '{duckdb_type(kind)}'" for name, kind in archive_queries.COLUMNS)
    pattern = (archive_dir / "orders" / "year=*" / "month=*" / "day=*" / "*.json").as_posix().replace("'", "''")
    partitions = ", ".join(f"'{key}': VARCHAR" for key in archive_queries.PARTITION_KEYS)
    # constants and a path whose quotes are doubled
    return (
        f"CREATE OR REPLACE VIEW {archive_queries.TABLE_NAME} AS SELECT * FROM read_json('{pattern}', "  # noqa: S608
        f"format = 'newline_delimited', columns = {{{columns}}}, hive_partitioning = true, "
        f"hive_types = {{{partitions}}})"
    )


def run(name: str, archive_dir: pathlib.Path) -> list[dict[str, Any]]:
    """The named query's rows, each a dict by column name."""
    import duckdb

    if name not in archive_queries.QUERIES:
        raise KeyError(f"no query {name!r}; known: {', '.join(sorted(archive_queries.QUERIES))}")
    connection = duckdb.connect()
    try:
        if not has_orders(archive_dir):
            return []  # read_json fails on a pattern matching nothing: an empty archive has no rows
        connection.execute(view_sql(archive_dir))
        cursor = connection.execute(archive_queries.query(name, archive_queries.duckdb_sources()))
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        connection.close()


def has_orders(archive_dir: pathlib.Path) -> bool:
    return next(iter(archive_dir.glob(OBJECTS)), None) is not None


def default_archive_dir() -> pathlib.Path | None:
    """The one archive bucket `make dev` saved (its name carries the stage)."""
    found = sorted(path for path in LOCAL_BUCKETS.glob("*") if re.search("order-archive", path.name))
    return found[0] if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local_runtime.archive_query", description=__doc__)
    parser.add_argument("--name", required=True, help=f"one of: {', '.join(sorted(archive_queries.QUERIES))}")
    parser.add_argument("--archive-dir", type=pathlib.Path, default=None, help="a copy of the archive bucket")
    parser.add_argument("--sql", action="store_true", help="print the query as Athena runs it, and nothing else")
    args = parser.parse_args(argv)
    if args.name not in archive_queries.QUERIES:
        print(f"error: no query {args.name!r}; known: {', '.join(sorted(archive_queries.QUERIES))}", file=sys.stderr)
        return 2
    if args.sql:
        print(archive_queries.query(args.name, archive_queries.athena_sources("<database>")))
        return 0
    archive_dir = args.archive_dir or default_archive_dir()
    if archive_dir is None:
        print(
            f"error: no archive under {LOCAL_BUCKETS} (stop `make dev` to save it) and no --archive-dir",
            file=sys.stderr,
        )
        return 2
    if not archive_dir.is_dir():
        print(
            f"error: no archive at {archive_dir}: ARCHIVE_DIR must name a copy of the archive bucket", file=sys.stderr
        )
        return 2
    if not has_orders(archive_dir):
        why = (
            "is ARCHIVE_DIR a copy of the archive bucket?"
            if args.archive_dir
            else "`make dev` saves its archive here when it stops; finished orders reach it past ARCHIVE_AFTER_DAYS"
        )
        print(f"error: no archived order in {archive_dir} (no {OBJECTS}): {why}", file=sys.stderr)
        return 2
    for row in run(args.name, archive_dir):
        print(json.dumps(row, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
