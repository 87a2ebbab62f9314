"""Throttling and 5xx from the store: retried with backoff, then ServiceUnavailable; nothing half written.

The write-fault tests check what the real store holds afterwards, so they run on DynamoDB Local.
Transaction conflicts and invalid requests are in test_conflicts.py.
"""

from __future__ import annotations

import pytest

from shop import errors, wiring
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ALICE, product
from tests.support.faults import injected

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream


@pytest.fixture(autouse=True)
def _no_botocore_backoff(monkeypatch):
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0)


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("fault", ["throttle", "capacity", "internal", "unavailable"])
def test_reads_retry_then_report_unavailable(store, fault):
    pid = product(store.table)
    with injected(store.client, fault, {"GetItem"}) as injector, pytest.raises(errors.ServiceUnavailable):
        wiring.catalog_service(store.table).get(pid)
    assert injector.injected == 3, "standard retry mode: three attempts"


@pytest.mark.integration
def test_a_transient_fault_is_absorbed_by_retries(local_store):
    store = local_store
    pid = product(store.table, stock=3)
    with injected(store.client, "throttle", {"TransactWriteItems"}, times=2) as injector:
        order = wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    assert injector.injected == 2
    assert wiring.order_service(store.table).get(ALICE, order.order_id).total_cents == order.total_cents
    assert wiring.catalog_service(store.table).get(pid).stock == 2


@pytest.mark.integration
@pytest.mark.parametrize("fault", ["throttle", "internal"])
def test_failed_placement_writes_nothing(local_store, fault):
    store = local_store
    pid = product(store.table, stock=3)
    with injected(store.client, fault, {"TransactWriteItems"}), pytest.raises(errors.ServiceUnavailable):
        wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    assert wiring.catalog_service(store.table).get(pid).stock == 3
    assert wiring.order_service(store.table).list_for_customer(ALICE, "alice", limit=5, next_token=None).items == []


@pytest.mark.integration
def test_failed_profile_creation_leaves_no_marker(local_store):
    store = local_store
    with injected(store.client, "unavailable", {"TransactWriteItems"}), pytest.raises(errors.ServiceUnavailable):
        wiring.customer_service(store.table).create(ALICE, email="alice@example.com", name="Alice")
    created = wiring.customer_service(store.table).create(ALICE, email="alice@example.com", name="Alice")
    assert created.email == "alice@example.com"
