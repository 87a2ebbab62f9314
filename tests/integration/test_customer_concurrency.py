"""Real threads against DynamoDB Local: concurrent profile PATCHes of different fields both land."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import errors, wiring
from tests.support.factories import ADMIN, ALICE

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = [pytest.mark.integration, pytest.mark.table_without_stream]

ROUNDS = 24


def test_concurrent_name_and_email_changes_both_land_every_round(local_store):
    service = wiring.customer_service(local_store.table)
    service.create(ALICE, email="alice-0@example.com", name="Alice 0")
    lost: list[tuple[int, str, str]] = []
    refused: list[tuple[int, str]] = []

    for round_number in range(1, ROUNDS + 1):
        name, email = f"Alice {round_number}", f"alice-{round_number}@example.com"
        barrier = threading.Barrier(2, timeout=30)

        def patch(change: dict[str, str | None]) -> str | None:
            barrier.wait()  # noqa: B023 - the barrier of this round
            try:
                service.update(ALICE, "alice", **change)
            except errors.DomainError as error:
                return error.code
            return None

        with ThreadPoolExecutor(max_workers=2) as pool:
            codes = list(pool.map(patch, [{"name": name, "email": None}, {"name": None, "email": email}]))
        refused.extend((round_number, code) for code in codes if code is not None)
        stored = service.get(ALICE, "alice")
        if codes == [None, None] and (stored.name, stored.email) != (name, email):
            lost.append((round_number, stored.name, stored.email))

    assert (lost, refused) == ([], []), (
        f"{len(lost)} of {ROUNDS} rounds answered both and lost one: {lost}; refused: {refused}"
    )
    assert service.find_by_email(ADMIN, f"alice-{ROUNDS}@example.com").name == f"Alice {ROUNDS}"
