"""Migration 0001 on DynamoDB Local (real Scan segments, transactions, conditions, consumed capacity):
every version 1 product listed exactly once, a dry run that writes nothing, a run killed with SIGKILL
and resumed, and the write rate held to the limit on the limiter's own (injected) clock.

MIGRATION_V1_PRODUCTS sets the size of the first test (default 600; `make migrate-10k` runs 10,000).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from local_runtime.v1_products import load
from shop import keys, wiring
from shop.migrations import migration
from shop.migrations.rate import TokenBucket
from shop.migrations.runner import Runner
from shop.repository.migrations import MigrationRepository
from shop.repository.store import from_item
from tests.support.factories import ADMIN

NAME = "0001-list-version-1-products"
PRODUCTS = int(os.environ.get("MIGRATION_V1_PRODUCTS", "600"))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Bulk writers that read no stream record: their tables have none (tests/conftest.py::local_store), or the
# worker's DynamoDB Local spends CPU on stream bookkeeping that grows with every record of the run.
pytestmark = pytest.mark.table_without_stream


class FakeClock:
    """The limiter's time: a wait advances it instead of sleeping, so the run is as fast as the store."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _tree(table: Any) -> None:
    service = wiring.category_service(table)
    service.create(ADMIN, slug="coffee", name="Coffee", parent=None)
    service.create(ADMIN, slug="beans", name="Beans", parent="coffee")


def _listing(table: Any, scope: str | None, sort: str = "name") -> list[str]:
    """Every product id of one listing, page by page through the service (as GET /products does)."""
    catalog = wiring.catalog_service(table)
    ids: list[str] = []
    token = None
    while True:
        if scope is None:
            page = catalog.list_all(limit=100, next_token=token)
        else:
            page = catalog.list_by_category(scope, sort=sort, limit=100, next_token=token)
        ids += [item.product_id for item in page.items]
        token = page.next_token
        if token is None:
            return ids


def _all_items(client: Any, table_name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table_name}
    while True:
        page = client.scan(**kwargs)
        items += [from_item(item) for item in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _assert_listed_once(local_store: Any, count: int) -> None:
    table = local_store.table
    everything = _listing(table, None)
    assert len(everything) == count
    assert len(set(everything)) == count
    filed = [f"V1PRODUCT{n:07d}" for n in range(0, count, 2)]  # even numbers: category beans
    for scope, sort in (("coffee", "name"), ("beans", "price_asc"), ("beans", "price_desc")):
        listed = _listing(table, scope, sort)
        assert sorted(listed) == filed, (scope, sort)
    products = [i for i in _all_items(local_store.client, local_store.table_name) if i["SK"] == keys.PRODUCT_SK]
    assert len(products) == count
    assert not [p for p in products if keys.GSI1PK in p]  # no product item left on the index
    assert {p["listing_version"] for p in products} == {1}


@pytest.mark.integration
def test_every_version_1_product_is_listed_exactly_once_and_the_migration_is_recorded(local_store):
    table = local_store.table
    _tree(table)
    load(local_store.client, local_store.table_name, PRODUCTS)
    store = MigrationRepository(table)
    clock = FakeClock()

    dry = Runner(store, migration(NAME), segments=4, limiter=TokenBucket(500), dry_run=True)
    planned = dry.run()
    assert (planned.changed, planned.failed) == (PRODUCTS, 0)
    assert _listing(table, None) == []
    assert dry.applied() is None
    assert store.checkpoint(NAME, 4, 0).progress.seen == 0

    limiter = TokenBucket(500, clock=clock, sleep=clock.sleep)
    runner = Runner(store, migration(NAME), segments=4, limiter=limiter)
    progress = runner.run()
    assert (progress.changed, progress.failed) == (PRODUCTS, 0)
    assert progress.seen == progress.changed + progress.skipped
    _assert_listed_once(local_store, PRODUCTS)
    record = runner.applied()
    assert record is not None
    assert record["changed"] == PRODUCTS
    # the limiter counts what the store reported: beans products write 6 items, the others 2, and DynamoDB
    # Local reports 1 unit per transaction item (DynamoDB 2: the runner's estimate, settled either way)
    assert limiter.consumed == 6 * (PRODUCTS // 2) + 2 * (PRODUCTS - PRODUCTS // 2)

    again = Runner(store, migration(NAME), segments=4, limiter=TokenBucket(500)).run()  # checkpoints: all done
    assert again.changed == PRODUCTS
    assert runner.applied() == record


@pytest.mark.integration
def test_the_write_rate_holds_to_the_limit_on_the_limiters_clock(local_store):
    table = local_store.table
    _tree(table)
    load(local_store.client, local_store.table_name, 200)
    clock = FakeClock()
    rate, burst = 40.0, 40.0
    limiter = TokenBucket(rate, burst=burst, clock=clock, sleep=clock.sleep)
    Runner(MigrationRepository(table), migration(NAME), segments=3, limiter=limiter).run()
    # every unit DynamoDB reported consumed fits in the burst plus the rate over the run's logical time
    assert limiter.consumed == 6 * 100 + 2 * 100  # as DynamoDB Local reports transaction items
    assert limiter.consumed <= burst + rate * limiter.elapsed()
    assert limiter.consumed / limiter.elapsed() == pytest.approx(rate, rel=0.1)  # and no slower than asked


def _checkpoints(store: MigrationRepository, segments: int) -> list[Any]:
    return [store.checkpoint(NAME, segments, segment) for segment in range(segments)]


@pytest.mark.integration
def test_a_run_killed_with_sigkill_resumes_at_its_checkpoints(local_store):
    table = local_store.table
    _tree(table)
    count = 400
    load(local_store.client, local_store.table_name, count)
    store = MigrationRepository(table)
    command = [
        sys.executable,
        "-m",
        "local_runtime.migrate",
        f"--name={NAME}",
        f"--endpoint={local_store.endpoint}",
        f"--table={local_store.table_name}",
        "--segments=2",
        "--rate=150",  # about 19 products a second: the kill lands mid-run
        "--quiet",
    ]
    child = subprocess.Popen(command, cwd=REPO, env=os.environ.copy(), stdout=subprocess.DEVNULL)
    try:
        # wait (by state, not by time) until the run has checkpointed at least one page
        while not any(c.progress.seen for c in _checkpoints(store, 2)):
            assert child.poll() is None, "the run ended before it could be killed"
            time.sleep(0.2)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert not all(c.done for c in _checkpoints(store, 2))
    assert store.record(NAME) is None
    partly = len(_listing(table, None))
    assert 0 < partly < count

    # the resume at a rate no write reaches: the property is where it resumes, not its pace (a worker waiting
    # out the kill's slow rate again is a worker lost)
    resume = [("--rate=100000" if part == "--rate=150" else part) for part in command]
    resumed = subprocess.run(resume, cwd=REPO, env=os.environ.copy(), capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    _assert_listed_once(local_store, count)
    assert store.record(NAME) is not None
    # the page the kill interrupted is read again: its items applied before the kill fail their condition
    total = [c.progress for c in _checkpoints(store, 2)]
    assert sum(p.changed for p in total) <= count <= sum(p.changed + p.skipped for p in total)


@pytest.mark.integration
def test_edits_racing_the_migration_leave_each_product_listed_once_where_its_last_write_filed_it(local_store):
    """Real threads: the migration and an admin re-filing products under tea at the same time. Whichever
    lands first, the other's condition fails (the edit removes the GSI1 keys; the migration bumps
    `listing_version`), so no product keeps entries of both filings."""
    import threading

    from shop import errors

    table = local_store.table
    _tree(table)
    wiring.category_service(table).create(ADMIN, slug="tea", name="Tea", parent=None)
    count = 200
    load(local_store.client, local_store.table_name, count)
    edited = [f"V1PRODUCT{n:07d}" for n in range(0, count, 5)]
    runner = Runner(MigrationRepository(table), migration(NAME), segments=2, limiter=TokenBucket(10_000), page_size=10)
    migrating = threading.Thread(target=runner.run)
    migrating.start()
    catalog = wiring.catalog_service(table)
    for product_id in edited:
        for _attempt in range(5):
            try:
                catalog.update(ADMIN, product_id, {"categories": ["tea"]})
                break
            except errors.Conflict:  # it read the product before the migration filed it: read again
                continue
        else:
            pytest.fail(f"{product_id} kept conflicting")
    migrating.join()
    everything = _listing(table, None)
    assert sorted(everything) == sorted(f"V1PRODUCT{n:07d}" for n in range(count))
    assert sorted(_listing(table, "tea")) == sorted(edited)
    filed = sorted(f"V1PRODUCT{n:07d}" for n in range(0, count, 2) if f"V1PRODUCT{n:07d}" not in edited)
    assert sorted(_listing(table, "beans", "price_asc")) == filed
    assert sorted(_listing(table, "coffee")) == filed
    assert runner.applied() is not None


@pytest.mark.integration
def test_an_edit_that_read_the_product_before_the_migration_conflicts_instead_of_refiling_stale(local_store):
    """The race's narrow window, made deterministic: the edit read version 1's product (no scopes), the
    migration filed it, then the edit writes. Its condition on `listing_version` fails: 409, no stale entries."""
    from shop import errors
    from shop.repository.products import ProductRepository

    table = local_store.table
    _tree(table)
    load(local_store.client, local_store.table_name, 1)
    products = ProductRepository(table)
    stale = products.get("V1PRODUCT0000000")
    Runner(MigrationRepository(table), migration(NAME), segments=1, limiter=TokenBucket(1000)).run()
    with pytest.raises(errors.Conflict):
        products.update(stale, {"name": "Renamed"}, "2026-01-01T00:00:00Z", stale._listed_in)
    assert _listing(table, "beans", "price_asc") == ["V1PRODUCT0000000"]
    fresh = products.get("V1PRODUCT0000000")
    assert fresh._listed_in == ["coffee", "beans"]
    products.update(fresh, {"name": "Renamed"}, "2026-01-01T00:00:00Z", fresh._listed_in)
    assert _listing(table, "coffee") == ["V1PRODUCT0000000"]
