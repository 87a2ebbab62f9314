"""Time in one format: ISO-8601 UTC with fixed-width microseconds, so it sorts as text."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_now() -> str:
    return iso(now())


def epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def iso_from_epoch(seconds: int) -> str:
    return iso(datetime.fromtimestamp(seconds, UTC))
