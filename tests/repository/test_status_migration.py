"""Migration 0002 on DynamoDB Local: the status index from 4 to 16 shards, online.

Real threads: orders placed and confirmed while the migration moves the rest and readers page through
GET /orders?status= (the service's listing) over and over; every walk checks that no order is doubled and
that every order that stayed in the status all along is there exactly once. Then: a run killed with
SIGKILL mid-run (the listing still exact in the half-moved table) and resumed from its checkpoints; the
write rate held to the limit on the limiter's own clock. The rate measured on the wall clock is in
`make migrate`'s report (docs/operations.md), not asserted here.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from shop import keys, wiring
from shop.config import ConfigurationError, StatusShardSwitch
from shop.migrations import migration
from shop.migrations.m0002_status_shards import MoveStatusShards
from shop.migrations.rate import TokenBucket
from shop.migrations.runner import Runner
from shop.models import OrderStatus
from shop.repository import OrderRepository
from shop.repository.migrations import MigrationRepository
from shop.repository.store import from_item
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.reads import reading

NAME = "0002-move-status-shards"
BEFORE = StatusShardSwitch(4)
SWITCH = StatusShardSwitch(4, 16, writers_on_next=True)
AFTER = StatusShardSwitch(16)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Bulk writers that read no stream record: their tables have none (tests/conftest.py::local_store), or the
# worker's DynamoDB Local spends CPU on stream bookkeeping that grows with every record of the run.
pytestmark = pytest.mark.table_without_stream


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _seed(table: Any, count: int, status: OrderStatus = OrderStatus.PENDING) -> list[str]:
    """`count` orders written under 4 shards (no stock taken: `restore`), in parallel."""
    service = wiring.order_service(table, switch=BEFORE)
    lines = service._price({product(table, stock=1): 1})[0]
    repository = OrderRepository(table, switch=BEFORE)

    def one(_: int) -> str:
        order = service._new_order(ALICE, lines, ADDRESS)
        if status is not OrderStatus.PENDING:
            order = order.model_copy(update={"status": status, "version": 2})
        return repository.restore(order).order_id

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(one, range(count)))


def _indexed(client: Any, table_name: str) -> dict[str, str]:
    """Every order item's GSI1PK, by order id (a test's Scan)."""
    found: dict[str, str] = {}
    kwargs: dict[str, Any] = {"TableName": table_name}
    while True:
        page = client.scan(**kwargs)
        for raw in page["Items"]:
            item = from_item(raw)
            if item["SK"] == keys.ORDER_SK and str(item["PK"]).startswith("ORDER#"):
                found[str(item["order_id"])] = str(item[keys.GSI1PK])
        if "LastEvaluatedKey" not in page:
            return found
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _walk(service: Any, status: OrderStatus, limit: int, token: str | None = None, pages: Any = None) -> list[str]:
    seen: list[str] = []
    while True:
        page = service.list_by_status(ADMIN, status, limit=limit, next_token=token)
        sort_keys = [(o.created_at, o.order_id) for o in page.items]
        assert sort_keys == sorted(sort_keys, reverse=True)
        seen += [o.order_id for o in page.items]
        if pages is not None:
            pages()
        token = page.next_token
        if token is None:
            return seen


def _check(seen: list[str], stable: set[str], allowed: set[str], what: str) -> None:
    doubled = {o for o in seen if seen.count(o) > 1}
    assert not doubled, f"{what}: doubled {sorted(doubled)[:5]}"
    missing = stable - set(seen)
    assert not missing, f"{what}: missing {sorted(missing)[:5]}"
    assert set(seen) <= stable | allowed, f"{what}: not of this status {sorted(set(seen) - stable - allowed)[:5]}"


@pytest.mark.integration
def test_from_4_to_16_shards_under_placements_status_changes_and_paging_readers(local_store):
    table = local_store.table
    pending = _seed(table, 240)
    confirmed = _seed(table, 60, OrderStatus.CONFIRMED)
    mutable = set(pending[::4])  # the changer confirms these while the readers read
    stable_pending = set(pending) - mutable
    stable_confirmed = set(confirmed)
    before_reader = wiring.order_service(table, switch=BEFORE)
    first = before_reader.list_by_status(ADMIN, OrderStatus.PENDING, limit=10, next_token=None)
    service = wiring.order_service(table, switch=SWITCH)  # every phase before it is deployed: the switch's

    stop = threading.Event()
    failures: list[str] = []
    placed: list[str] = []
    changed: set[str] = set()
    moved_during_walks: list[int] = []
    pages_read = threading.Semaphore(0)
    # one placement per 5 moves: placements interleave with the moves at any speed of the machine (an unpaced
    # placer placed more the slower the migration went, and every reader's walk grew with them)
    placements_due = threading.Semaphore(0)
    counters = {"changed": 0}
    lock = threading.Lock()

    def count_item(outcome: str) -> None:
        if outcome == "changed":
            with lock:
                counters["changed"] += 1
                changed = counters["changed"]
            if changed % 5 == 0:
                placements_due.release()
            if changed % 10 == 0:  # pace the migration by the readers: a reader's page between moves
                pages_read.acquire(timeout=5)

    def guarded(work: Any) -> Any:
        def run() -> None:
            try:
                work()
            except Exception as error:  # reported by the test thread
                failures.append(f"{work.__name__}: {error!r}")
                stop.set()

        return run

    def placer() -> None:
        pid = product(table, name="Placed", stock=10_000)
        from shop.services.orders import RequestedLine

        while not stop.is_set():
            if not placements_due.acquire(timeout=0.1):
                continue
            order = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
            placed.append(order.order_id)

    def changer() -> None:
        for order_id in sorted(mutable):
            if stop.is_set():
                return
            service.change_status(ADMIN, order_id, OrderStatus.CONFIRMED, expected_version=1)
            changed.add(order_id)
            time.sleep(0.01)

    def reader(seed: int) -> None:
        rnd = random.Random(seed)
        continued = False
        while not stop.is_set():
            limit = rnd.choice([7, 25, 60])
            with lock:
                at_start = counters["changed"]
            if not continued:  # first, the page token issued before the switch
                seen = [o.order_id for o in first.items]
                seen += _walk(service, OrderStatus.PENDING, limit, first.next_token, pages_read.release)
                continued = True
            else:
                seen = _walk(service, OrderStatus.PENDING, limit, pages=pages_read.release)
            _check(seen, stable_pending, mutable | set(placed), f"PENDING walk (limit {limit})")
            seen = _walk(service, OrderStatus.CONFIRMED, limit, pages=pages_read.release)
            _check(seen, stable_confirmed, mutable, f"CONFIRMED walk (limit {limit})")
            with lock:
                moved_during_walks.append(counters["changed"] - at_start)

    threads = [threading.Thread(target=guarded(w)) for w in (placer, changer)]
    threads += [threading.Thread(target=guarded(lambda s=s: reader(s))) for s in (1, 2)]
    for thread in threads:
        thread.start()
    clock = FakeClock()
    limiter = TokenBucket(100, clock=clock, sleep=clock.sleep)
    store = MigrationRepository(table)
    try:
        progress = Runner(store, MoveStatusShards(SWITCH), segments=4, limiter=limiter, on_item=count_item).run()
        walks_after = len(moved_during_walks) + 2
        while len(moved_during_walks) < walks_after and not stop.is_set():  # a walk or two on the moved table
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not failures, failures
    assert any(moved for moved in moved_during_walks), "no walk ran while orders moved"
    assert placed, "no order was placed while orders moved"

    assert progress.failed == 0
    assert progress.seen == progress.changed + progress.skipped
    assert store.record(NAME) is not None
    # on the limiter's clock; a move costs 3 units as estimated (the item, its GSI1 entry deleted and put), a
    # move refused by its condition (the order changed meanwhile) is counted at its estimate
    assert limiter.consumed >= 3 * progress.changed
    assert limiter.consumed <= limiter.capacity + limiter.rate * limiter.elapsed() + 1e-6  # at most, to a rounding
    indexed = _indexed(local_store.client, local_store.table_name)
    for order_id, partition in indexed.items():
        assert partition.endswith(f"#{keys.status_shard(order_id, 16)}"), order_id

    # dual read off: one Query per shard, every item read returned, and every order where it belongs
    after = wiring.order_service(table, switch=AFTER)
    now_pending = stable_pending | set(placed) | (mutable - changed)
    with reading(local_store.client) as reads:
        seen = _walk(after, OrderStatus.PENDING, 25)
    assert sorted(seen) == sorted(now_pending)
    assert reads.items_read == len(seen)
    assert sorted(_walk(after, OrderStatus.CONFIRMED, 25)) == sorted(stable_confirmed | changed)


@pytest.mark.integration
def test_a_run_killed_with_sigkill_resumes_at_its_checkpoints_and_the_listing_stays_exact(local_store):
    table = local_store.table
    orders = _seed(table, 400)
    store = MigrationRepository(table)
    env = {**os.environ, "STATUS_SHARDS": "4", "STATUS_SHARDS_NEXT": "16", "STATUS_SHARDS_WRITERS": "next"}
    command = [
        sys.executable,
        "-m",
        "local_runtime.migrate",
        f"--name={NAME}",
        f"--endpoint={local_store.endpoint}",
        f"--table={local_store.table_name}",
        "--segments=2",
        "--rate=40",  # DynamoDB Local reports 1 unit a move: about 40 orders a second, the kill lands mid-run
        "--quiet",
    ]
    child = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL)
    try:
        while not any(store.checkpoint(NAME, 2, s).progress.seen for s in range(2)):  # by state, not by time
            assert child.poll() is None, "the run ended before it could be killed"
            time.sleep(0.2)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert store.record(NAME) is None
    indexed = _indexed(local_store.client, local_store.table_name)
    moved = [
        o
        for o in orders
        if indexed[o].endswith(f"#{keys.status_shard(o, 16)}") and keys.status_shard(o, 4) != keys.status_shard(o, 16)
    ]
    assert 0 < len(moved) < sum(keys.status_shard(o, 4) != keys.status_shard(o, 16) for o in orders)
    # half moved: the switch's listing has every order once
    seen = _walk(wiring.order_service(table, switch=SWITCH), OrderStatus.PENDING, 30)
    assert sorted(seen) == sorted(orders)

    # the resume at a rate no write reaches: the property is where it resumes, not its pace (a worker waiting
    # out the kill's slow rate again is a worker lost)
    resume = [("--rate=100000" if part == "--rate=40" else part) for part in command]
    resumed = subprocess.run(resume, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert store.record(NAME) is not None
    indexed = _indexed(local_store.client, local_store.table_name)
    assert all(indexed[o] == keys.order_status_pk("PENDING", keys.status_shard(o, 16)) for o in orders)
    checkpoints = [store.checkpoint(NAME, 2, s).progress for s in range(2)]
    to_move = sum(keys.status_shard(o, 4) != keys.status_shard(o, 16) for o in orders)
    # the page the kill interrupted is read again: its orders moved before the kill fail their condition
    assert sum(p.changed for p in checkpoints) <= to_move <= sum(p.changed + p.skipped for p in checkpoints)
    assert sorted(_walk(wiring.order_service(table, switch=AFTER), OrderStatus.PENDING, 30)) == sorted(orders)


@pytest.mark.integration
def test_the_migration_refuses_to_run_before_writers_are_on_the_next_count(local_store):
    _seed(local_store.table, 3)
    runner = Runner(
        MigrationRepository(local_store.table),
        MoveStatusShards(StatusShardSwitch(4, 16)),
        segments=1,
        limiter=TokenBucket(100),
    )
    with pytest.raises(ConfigurationError, match="STATUS_SHARDS_WRITERS=next"):
        runner.run()
    assert migration(NAME).name == NAME
