"""The orders-by-status listing while the index's shard count changes (migration 0002).

During the switch an order is indexed under the current count (``blake2b(id) mod current``) or under the
next one (``mod next``): writers may be on either, and migration 0002 moves the rest. One count divides
the other, so the partitions orders leave (the *sources*) and those they enter (the *destinations*) are
apart: growing 4 -> 16 moves orders out of 0..3 into 4..15; shrinking 16 -> 4 out of 4..15 into 0..3.

A page reads in two rounds of parallel Queries: every source partition, then every destination. An order
moved before the first round's Query of its source is in its destination when the second round reads it;
moved after, the first round saw it. So an order indexed under its status throughout a page is read at
least once; read twice (before and after its move), the copies share their sort key and count once.

Positions are *lanes*: a token with L cursors means cursor i covers the orders with ``blake2b(id) mod L
== i``, wherever they are indexed. A walk started during the switch has one lane (one cursor over every
partition, an exact merge); a token issued before the switch by the per-shard walk
(shop.repository.shard_walk) has one lane per shard of its count and keeps working. Each lane is an exact
merge: it returns its entries newest first and moves its cursor only past what every partition it reads
has shown, so nothing is skipped and the strict ``GSI1SK < cursor`` never returns an entry twice. A
partition holding orders of several lanes (a token of a count the partition's count does not divide) is
filtered by the order's hash.

The price: every lane's partitions are asked for a whole page each (read amplification up to the number of
Queries), and the two rounds run one after the other (two round trips). Outside the switch the listing is
the per-shard walk again: one Query per shard, every item read returned.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from math import gcd
from typing import Any

from shop import keys
from shop.config import StatusShardSwitch
from shop.repository.shard_walk import EXHAUSTED, NOT_STARTED, Cursor


def destinations(switch: StatusShardSwitch) -> frozenset[int]:
    """The partitions orders enter when moved from the current count to the next (none outside a switch)."""
    if switch.next is None:
        return frozenset()
    current, next_count = switch.current, switch.next
    return frozenset(range(current, next_count)) if next_count > current else frozenset(range(next_count))


def lane_partitions(lane: int, lanes: int, counts: tuple[int, ...]) -> list[int]:
    """The partitions that can hold an order with hash mod `lanes` == `lane`, under any of `counts`."""
    found: set[int] = set()
    for count in counts:
        step = gcd(lanes, count)
        found.update(p for p in range(count) if p % step == lane % step)
    return sorted(found)


def lanes_exact(lanes: int, counts: tuple[int, ...]) -> bool:
    """True when every partition of `counts` holds the orders of one lane only (no filter needed)."""
    return all(count % lanes == 0 for count in counts)


@dataclass(frozen=True)
class _Read:
    lane: int
    partition: int
    items: list[dict[str, Any]]
    more: bool
    last: str | None  # the last sort key the Query read (before any filter)


QueryPartition = Callable[[int, Cursor, int], tuple[list[dict[str, Any]], bool]]


def read_page(
    switch: StatusShardSwitch,
    cursors: list[Cursor],
    limit: int,
    query: QueryPartition,
    pool: ThreadPoolExecutor,
    *,
    descending: bool = True,
) -> tuple[list[dict[str, Any]], list[Cursor]]:
    """One page of the listing during the switch: its entries newest first and the lanes' next cursors.

    `query(partition, cursor, limit)` is one Query of a status partition below `cursor` (a sort key, or
    NOT_STARTED for the top), newest first; it answers the items and whether the partition has more.
    Not `descending`: everything the other way round (oldest first, each Query above its cursor).
    """
    assert switch.next is not None
    counts = (switch.current, switch.next)
    lanes = len(cursors)
    exact = lanes_exact(lanes, counts)
    entering = destinations(switch)
    jobs = [
        (lane, partition)
        for lane, cursor in enumerate(cursors)
        if cursor != EXHAUSTED
        for partition in lane_partitions(lane, lanes, counts)
    ]

    def run(lane: int, partition: int) -> _Read:
        items, more = query(partition, cursors[lane], limit)
        last = str(items[-1][keys.GSI1SK]) if items else None
        if not exact:
            items = [i for i in items if keys.status_shard(str(i["order_id"]), lanes) == lane]
        return _Read(lane, partition, items, more, last)

    reads: list[_Read] = []
    for round_jobs in (
        [job for job in jobs if job[1] not in entering],  # the sources first ...
        [job for job in jobs if job[1] in entering],  # ... then the destinations
    ):
        futures = [pool.submit(contextvars.copy_context().run, run, lane, part) for lane, part in round_jobs]
        reads += [future.result() for future in futures]

    candidates: dict[int, list[dict[str, Any]]] = {}
    frontiers: dict[int, str | None] = {}
    for lane in {lane for lane, _ in jobs}:
        mine = [r for r in reads if r.lane == lane]
        cut = [r.last for r in mine if r.more and r.last is not None]
        # The least advanced of the partitions that have more: past it, one of them has not shown its entries yet.
        frontier = (max(cut) if descending else min(cut)) if cut else None
        distinct: dict[str, dict[str, Any]] = {}
        for read in mine:
            for item in read.items:
                sort_key = str(item[keys.GSI1SK])
                if frontier is None or (sort_key >= frontier if descending else sort_key <= frontier):
                    distinct.setdefault(sort_key, item)
        candidates[lane] = sorted(distinct.values(), key=lambda i: str(i[keys.GSI1SK]), reverse=descending)
        frontiers[lane] = frontier

    merged = sorted(
        ((str(item[keys.GSI1SK]), lane) for lane, items in candidates.items() for item in items), reverse=descending
    )[:limit]
    taken: dict[int, int] = {}
    for _, lane in merged:
        taken[lane] = taken.get(lane, 0) + 1
    page: list[dict[str, Any]] = []
    next_cursors = list(cursors)
    for lane, items in candidates.items():
        count = taken.get(lane, 0)
        page += items[:count]
        if count < len(items):  # the page ended inside this lane: it goes on after its last returned entry
            if count:
                next_cursors[lane] = str(items[count - 1][keys.GSI1SK])
        else:  # all it could return is returned: it goes on below what every partition has shown
            frontier = frontiers[lane]
            next_cursors[lane] = frontier if frontier is not None else EXHAUSTED
    page.sort(key=lambda i: str(i[keys.GSI1SK]), reverse=descending)
    return page, next_cursors


def start() -> list[Cursor]:
    """A walk started during the switch: one lane over every partition."""
    return [NOT_STARTED]


def widened(cursors: list[Cursor], shards: int) -> list[Cursor] | None:
    """A token's lanes as the per-shard walk's cursors over `shards` shards, when the lanes divide them
    (after a switch to a multiple of a count, or from a walk started during the switch); else None."""
    lanes = len(cursors)
    if shards % lanes:
        return None
    return [cursors[shard % lanes] for shard in range(shards)]
