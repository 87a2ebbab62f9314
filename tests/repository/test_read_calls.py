"""Every repository read is one GetItem or one Query (one per shard for the status index); none scans."""

from __future__ import annotations

import pytest

from shop import wiring
from shop.models import OrderStatus
from shop.services.orders import RequestedLine
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream


@pytest.mark.dynamodb_semantics
def test_no_read_scans_and_each_is_one_call(store):
    table = store.table
    customers, catalog = wiring.customer_service(table), wiring.catalog_service(table)
    orders, sessions = wiring.order_service(table, shards=4), wiring.session_service(table)
    customers.create(ALICE, email="alice@example.com", name="Alice")
    pid = product(table, category="tools")
    catalog.review(ALICE, pid, rating=5, title="t", body="b")
    order = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    session = sessions.create()

    reads = {
        "customer": (lambda: customers.get(ALICE, "alice"), ["GetItem"]),
        "customer by email": (lambda: customers.find_by_email(ADMIN, "alice@example.com"), ["Query"]),
        "notifications": (lambda: customers.notifications(ALICE, "alice", limit=5, next_token=None), ["Query"]),
        "product": (lambda: catalog.get(pid), ["GetItem"]),
        "category": (lambda: catalog.list_by_category("tools", limit=5, next_token=None), ["Query"]),
        "product reviews": (lambda: catalog.reviews_of_product(pid, limit=5, next_token=None), ["Query"]),
        "customer reviews": (lambda: catalog.reviews_of_customer("alice", limit=5, next_token=None), ["Query"]),
        "order": (lambda: orders.get(ALICE, order.order_id), ["Query"]),
        "customer orders": (lambda: orders.list_for_customer(ALICE, "alice", limit=5, next_token=None), ["Query"]),
        "orders by status": (
            lambda: orders.list_by_status(ADMIN, OrderStatus.PENDING, limit=5, next_token=None),
            ["Query"] * 4,
        ),
        "session": (lambda: sessions.get(session.session_id), ["GetItem"]),
        "stock alerts": (lambda: wiring.alert_service(table).newest(ADMIN, limit=5, next_token=None), ["Query"]),
    }
    for name, (read, expected) in reads.items():
        with counting(store.client) as calls:
            read()
        assert calls.count("Scan") == 0, name
        assert calls.operations == expected, name
