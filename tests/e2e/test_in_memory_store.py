"""`dev --in-memory` (`make dev MEMORY=1`, the e2e session's shared stacks): DynamoDB Local keeps the table in
memory, writes nothing under the data directory, and the banner says so."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from tests.e2e.conftest import Stack, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e")]


def test_the_shared_stack_keeps_its_table_in_memory_and_writes_no_database_file(stack: Stack) -> None:
    launched, *printed = stack.output().strip().splitlines()
    assert launched.startswith("$ ")
    assert " --in-memory" in launched
    assert any("data in memory" in line for line in printed)
    admin = stack.admin_token("e2e-in-memory")
    body = {"slug": "e2e-in-memory", "name": "In memory"}
    expect(stack.api.post("/categories", token=admin, json=body), 201)  # a write the store served
    written = [path for path in (stack.data_dir / "dynamodb").rglob("*") if path.is_file()]
    assert written == []


@pytest.mark.xdist_group("e2e-lifecycle")  # a stack of its own, as the life cycle's tests start
def test_a_table_in_memory_starts_empty_and_seeded_whatever_the_data_directory_says(
    new_stack: Any, tmp_path: pathlib.Path
) -> None:
    data_dir = tmp_path / "used"
    (data_dir / "dynamodb").mkdir(parents=True)
    (data_dir / "dynamodb" / ".seeded").write_text("prod-gone\n")  # a run on disk seeded this directory before
    stale = '{"stale": "a shard of the stream of a table gone"}'
    checkpoints = data_dir / "stream-checkpoints-order_events.json"
    checkpoints.write_text(stale)
    stack: Stack = new_stack(data_dir, fresh=False, seed=True, options=("--in-memory",))
    assert "seeded 6 demo products" in stack.output()  # a table in memory is new at every start: seeded again
    assert expect(stack.api.get("/products", params={"category": "coffee"}), 200)["items"]
    assert (checkpoints.read_text() if checkpoints.exists() else "") != stale
    stack.stop_cleanly()
