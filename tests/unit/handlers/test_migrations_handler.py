"""The migration worker's handler (start, segment, finish: the state machine's three states) on the in-memory
migrations store. The Scan, the conditional writes and the checkpoints on a table are tests/repository's."""

from __future__ import annotations

from typing import Any

import pytest

from shop import keys
from shop.migrations.m0001_list_v1_products import ListVersion1Products
from tests.support.memory_wiring import Handlers

NAME = ListVersion1Products.name


def v1_product(product_id: str, category: str = "peripherals") -> dict[str, Any]:
    return {
        **keys.product_key(product_id),
        **keys.product_category_gsi_v1(category, "Old lamp", product_id),
        "entity": "PRODUCT",
        "product_id": product_id,
        "name": "Old lamp",
        "category": category,
        "price_cents": 1250,
        "stock": 4,
        "created_at": "2025-01-02T00:00:00.000000Z",
        "updated_at": "2025-01-03T00:00:00.000000Z",
    }


@pytest.fixture
def migrations(handlers: Handlers) -> Handlers:
    handlers.wiring.migrations.items += [v1_product(f"p{n}") for n in range(5)]
    handlers.wiring.migrations.items.append({**keys.customer_key("alice"), "entity": "CUSTOMER"})  # not the migration's
    return handlers


def run(handlers: Handlers, **event: Any) -> dict[str, Any]:
    return handlers.invoke("migrations", {"migration": NAME, "segments": 2, "rate": 100, **event})


def test_start_then_every_segment_then_finish_records_the_migration(migrations):
    started = run(migrations, action="start")
    assert started["applied"] is False
    assert [item["segment"] for item in started["items"]] == [0, 1]

    results = [run(migrations, **item, action="segment") for item in started["items"]]
    assert all(result["done"] for result in results)
    assert sum(result["progress"]["changed"] for result in results) == 5
    assert sum(result["progress"]["skipped"] for result in results) == 1  # the customer

    record = run(migrations, action="finish")
    assert (record["migration"], record["changed"], record["seen"]) == (NAME, 5, 6)
    assert run(migrations, action="start") == {**started, "applied": True, "items": []}


def test_segments_run_again_from_scratch_change_nothing_more(migrations):
    """A worker that lost its checkpoints (or a second run) meets changes applied already: each is skipped."""
    for segment in (0, 1):
        run(migrations, action="segment", segment=segment)
    applied = list(migrations.wiring.migrations.applied)
    migrations.wiring.migrations.checkpoints.clear()

    again = [run(migrations, action="segment", segment=segment)["progress"] for segment in (0, 1)]
    assert sum(progress["changed"] for progress in again) == 0
    # every item is skipped: the products changed already, the customer and the listing entries the first run wrote
    assert sum(progress["skipped"] for progress in again) == len(migrations.wiring.migrations.items) > 6
    assert migrations.wiring.migrations.applied == applied


def test_a_dry_run_writes_nothing_and_reports_from_the_segments(migrations):
    started = run(migrations, action="start", dry_run=True)
    results = [run(migrations, **item, action="segment") for item in started["items"]]
    report = run(migrations, action="finish", dry_run=True, results=results)
    assert (report["dry_run"], report["changed"]) == (True, 5)
    assert migrations.wiring.migrations.applied == []
    assert migrations.wiring.migrations.record(NAME) is None


def test_finish_before_every_segment_is_done_fails(migrations):
    run(migrations, action="segment", segment=0)
    with pytest.raises(RuntimeError, match="a segment is not done"):
        run(migrations, action="finish")


@pytest.mark.parametrize(
    ("event", "error"),
    [
        ({"action": "rollback"}, "unknown action"),
        ({"action": "start", "segments": 0}, "segments must be"),
        ({"action": "start", "migration": "9999-nothing"}, "no migration"),
    ],
)
def test_a_malformed_event_fails_clearly(migrations, event, error):
    with pytest.raises((ValueError, KeyError), match=error):
        run(migrations, **event)
