"""Where a walk through a sharded, time-ordered index stands, and how its next page is shared out.

A page is one round of parallel Queries whose every item is returned; across shards the order is only approximately
newest first (or, for a walk that is not `descending`, oldest first). Sort keys start with an ISO-8601 UTC timestamp.
docs/decisions.md, "Data model and repository".

An oldest-first walk is the newest-first one on negated times: "top" is then the oldest time seen, a shard not
started is taken to hold the oldest entries, and each shard's share follows how far it is from the front.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from shop import errors, keys

NOT_STARTED = None
EXHAUSTED = 0
# With no gap learned yet every shard counts as equally far: the page is shared out in turn.
UNKNOWN_GAP = 1 << 62
# Before any time is known, a shard not started is taken to hold the newest entries.
_NEWEST = 1 << 62
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

Cursor = str | int | None


def _micros(sort_key: str) -> int | None:
    try:
        moment = datetime.fromisoformat(keys.created_at_of_status_sk(sort_key))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


@dataclass
class ShardWalk:
    cursors: list[Cursor]
    gap_us: int | None = None
    top_us: int | None = None  # the front's time: the newest seen (oldest first: the oldest, negated)
    descending: bool = True  # newest first; False: oldest first (not part of the position: the list's own)

    @classmethod
    def start(cls, shards: int, *, descending: bool = True) -> ShardWalk:
        return cls([NOT_STARTED] * shards, descending=descending)

    @classmethod
    def from_position(cls, position: Any, shards: int, *, descending: bool = True) -> ShardWalk:
        """The walk a (signed) token holds; anything else is refused as a token this list did not issue."""
        invalid = errors.InvalidNextToken("next_token is not a token this list issued")
        if not isinstance(position, dict) or not isinstance(position.get("c"), list):
            raise invalid
        cursors, gap, top = position["c"], position.get("g"), position.get("t")
        well_formed = (
            len(cursors) == shards
            and all(c is NOT_STARTED or (type(c) is int and c == EXHAUSTED) or (type(c) is str and c) for c in cursors)
            and (gap is None or (type(gap) is int and gap > 0))
            and (top is None or type(top) is int)
        )
        if not well_formed:
            raise invalid
        return cls(list(cursors), gap, top, descending)

    def position(self) -> dict[str, Any]:
        """What the next token carries (compact: absent rather than null)."""
        out: dict[str, Any] = {"c": self.cursors}
        if self.gap_us is not None:
            out["g"] = self.gap_us
        if self.top_us is not None:
            out["t"] = self.top_us
        return out

    @property
    def finished(self) -> bool:
        return all(c == EXHAUSTED for c in self.cursors)

    def _at(self, sort_key: str) -> int | None:
        """The sort key's time in the walk's direction: later in the walk is smaller."""
        at = _micros(sort_key)
        return at if at is None or self.descending else -at

    def _expected_next(self, shard: int, gap: int) -> int:
        top = self.top_us if self.top_us is not None else _NEWEST
        cursor = self.cursors[shard]
        if cursor is NOT_STARTED:
            return top
        at = self._at(str(cursor))
        return (at if at is not None else top) - gap

    def plan(self, limit: int, max_queries: int) -> dict[int, int]:
        """How many entries to ask of which shards: `limit` in all, from at most `max_queries` shards."""
        gap = self.gap_us or UNKNOWN_GAP
        live = [s for s, c in enumerate(self.cursors) if c != EXHAUSTED]
        expected = {s: self._expected_next(s, gap) for s in live}
        chosen = sorted(live, key=lambda s: (-expected[s], s))[:max_queries]
        heap = [(-expected[s], s) for s in chosen]
        heapq.heapify(heap)
        shares: dict[int, int] = {}
        for _ in range(limit if heap else 0):
            negated, shard = heapq.heappop(heap)
            shares[shard] = shares.get(shard, 0) + 1
            heapq.heappush(heap, (negated + gap, shard))
        return shares

    def advance(self, read: dict[int, tuple[list[str], bool]]) -> None:
        """Move past what each queried shard returned (its sort keys in the walk's order, newest first unless
        oldest first; whether it has more). `newest` and `oldest` below are the walk's first and last."""
        spans = gaps = 0
        for shard, (sort_keys, more) in read.items():
            before = self.cursors[shard]
            if sort_keys:
                newest, oldest = self._at(sort_keys[0]), self._at(sort_keys[-1])
                if newest is not None:
                    self.top_us = newest if self.top_us is None else max(self.top_us, newest)
                start = self._at(before) if isinstance(before, str) else newest
                between = len(sort_keys) if isinstance(before, str) else len(sort_keys) - 1
                if start is not None and oldest is not None and between:
                    spans += start - oldest
                    gaps += between
            if not more:
                self.cursors[shard] = EXHAUSTED
            elif sort_keys:
                self.cursors[shard] = sort_keys[-1]
        if gaps:
            learned = max(1, spans // gaps)
            self.gap_us = learned if self.gap_us is None else max(1, (self.gap_us + learned) // 2)
