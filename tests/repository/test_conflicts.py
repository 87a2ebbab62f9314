"""Writes that meet a transaction on the same item are retried; what can never succeed is not.

DynamoDB answers `TransactionConflictException` to a single-item write on an item inside an
ongoing transaction, and cancels a transaction for `TransactionConflict`; DynamoDB Local never
does either, so both are injected into the real client (tests.support.faults). Injected attempts
never reach the store, so "applied once" is checked against what the store holds.
"""

from __future__ import annotations

import pytest

from shop import aws_config, errors, wiring
from shop.models import OrderStatus
from shop.services.actor import Actor
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, ALICE, product
from tests.support.faults import cancelled, injected

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream

ATTEMPTS = 12  # shop.aws_config.CONFLICT_ATTEMPTS, spelled out so a change to the budget is deliberate


@pytest.fixture(autouse=True)
def _no_backoff_or_conflict_delay(monkeypatch):
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0)
    monkeypatch.setattr(aws_config, "conflict_delay", lambda attempt: 0)


def test_the_budget_is_the_documented_one():
    assert aws_config.CONFLICT_ATTEMPTS == ATTEMPTS
    worst = sum(min(aws_config.CONFLICT_MAX_DELAY, aws_config.CONFLICT_FIRST_DELAY * 2**n) for n in range(ATTEMPTS - 1))
    assert worst < 3.5, "the sleeps alone must stay well inside the API functions' 10 s timeout"


@pytest.mark.dynamodb_semantics
def test_stock_adjustment_colliding_twice_is_applied_once(store):
    pid = product(store.table, stock=10)
    with injected(store.client, "conflict", {"UpdateItem"}, times=2) as injector:
        assert wiring.catalog_service(store.table).adjust_stock(ADMIN, pid, 5) == 15
    assert injector.injected == 2
    assert wiring.catalog_service(store.table).get(pid).stock == 15


@pytest.mark.dynamodb_semantics
def test_product_update_colliding_twice_is_applied(store):
    """A product edit is a transaction (the product and its listing entries): its conflicts are retried."""
    pid = product(store.table, price_cents=1000)
    with cancelled(store.client, "TransactionConflict", times=2) as injector:
        updated = wiring.catalog_service(store.table).update(ADMIN, pid, {"price_cents": 1200})
    assert (injector.injected, updated.price_cents) == (2, 1200)
    assert wiring.catalog_service(store.table).get(pid).price_cents == 1200


@pytest.mark.dynamodb_semantics
def test_cart_line_colliding_twice_is_applied(store):
    pid = product(store.table)
    service = wiring.session_service(store.table, ttl_seconds=600)
    session = service.create()
    with injected(store.client, "conflict", {"UpdateItem"}, times=2) as injector:
        service.set_quantity(session.session_id, pid, 3)
    assert injector.injected == 2
    assert [(line.product_id, line.quantity) for line in service.get(session.session_id).cart] == [(pid, 3)]


@pytest.mark.dynamodb_semantics
def test_status_change_colliding_twice_is_applied_once(store):
    pid = product(store.table)
    service = wiring.order_service(store.table)
    order = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
    with injected(store.client, "conflict", {"UpdateItem"}, times=2) as injector:
        changed = service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    assert (injector.injected, changed.version) == (2, 2)
    assert service.get(ADMIN, order.order_id).version == 2


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("operation", ["PutItem", "UpdateItem", "DeleteItem"])
def test_single_item_write_colliding_past_the_budget_is_unavailable(store, operation):
    pid = product(store.table, stock=10)
    sessions = wiring.session_service(store.table, ttl_seconds=600)
    session = sessions.create()
    write = {
        "PutItem": sessions.create,
        "UpdateItem": lambda: wiring.catalog_service(store.table).adjust_stock(ADMIN, pid, 5),
        "DeleteItem": lambda: sessions.delete(session.session_id),
    }[operation]
    with injected(store.client, "conflict", {operation}) as injector, pytest.raises(errors.ServiceUnavailable):
        write()
    assert injector.injected == ATTEMPTS
    assert wiring.catalog_service(store.table).get(pid).stock == 10
    assert sessions.get(session.session_id).session_id == session.session_id


@pytest.mark.dynamodb_semantics
def test_transactions_cancelled_for_a_conflict_are_retried(store):
    pid = product(store.table, stock=10)
    with cancelled(store.client, "TransactionConflict", times=2) as injector:
        wiring.customer_service(store.table).create(ALICE, email="alice@example.com", name="Alice")
    assert injector.injected == 2
    with cancelled(store.client, "TransactionConflict", index=1, times=2) as injector:
        order = wiring.order_service(store.table).place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 2)])
    assert injector.injected == 2
    with cancelled(store.client, "TransactionConflict", index=1, times=2) as injector:
        wiring.catalog_service(store.table).review(ALICE, pid, rating=5, title="Great", body="Works")
    assert injector.injected == 2
    assert wiring.catalog_service(store.table).get(pid).stock == 8
    assert wiring.catalog_service(store.table).get(pid).rating_count == 1
    with cancelled(store.client, "TransactionConflict", times=2) as injector:
        wiring.order_service(store.table).cancel(ALICE, order.order_id)
    assert injector.injected == 2
    assert wiring.catalog_service(store.table).get(pid).stock == 10


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("what", ["customer", "customer-update", "review", "order", "cancel"])
def test_transactions_colliding_past_the_budget_are_unavailable_and_write_nothing(store, what):
    pid = product(store.table, stock=10)
    customers = wiring.customer_service(store.table)
    orders = wiring.order_service(store.table)
    if what in ("customer-update", "cancel"):
        customers.create(ALICE, email="alice@example.com", name="Alice")
    placed = orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)]) if what == "cancel" else None
    write = {
        "customer": lambda: customers.create(ALICE, email="alice@example.com", name="Alice"),
        "customer-update": lambda: customers.update(ALICE, "alice", email="new@example.com", name=None),
        "review": lambda: wiring.catalog_service(store.table).review(ALICE, pid, rating=4, title="t", body="b"),
        "order": lambda: orders.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)]),
        "cancel": lambda: orders.cancel(ALICE, placed.order_id),
    }[what]
    stock_before = wiring.catalog_service(store.table).get(pid).stock
    with cancelled(store.client, "TransactionConflict") as injector, pytest.raises(errors.ServiceUnavailable):
        write()
    assert injector.injected == ATTEMPTS
    assert wiring.catalog_service(store.table).get(pid).stock == stock_before
    assert wiring.catalog_service(store.table).get(pid).rating_count == 0
    if what == "customer":
        with pytest.raises(errors.CustomerNotFound):
            customers.get(ALICE, "alice")
    if what == "customer-update":
        assert customers.get(ALICE, "alice").email == "alice@example.com"
    if what == "cancel":
        assert orders.get(ALICE, placed.order_id).status is OrderStatus.PENDING
    if what == "order":
        assert orders.list_for_customer(ALICE, "alice", limit=5, next_token=None).items == []


@pytest.mark.dynamodb_semantics
def test_a_failed_condition_is_never_retried(store):
    pid = product(store.table)
    with cancelled(store.client, "ConditionalCheckFailed", index=1) as injector, pytest.raises(errors.ProductNotFound):
        wiring.catalog_service(store.table).review(ALICE, pid, rating=4, title="t", body="b")
    assert injector.injected == 1


@pytest.mark.dynamodb_semantics
def test_a_failed_condition_the_caller_does_not_name_is_a_conflict_not_unavailable(store):
    """The old email's marker is deleted on condition that it is still ours: if not, the data moved."""
    customers = wiring.customer_service(store.table)
    customers.create(ALICE, email="alice@example.com", name="Alice")
    with (
        cancelled(store.client, "ConditionalCheckFailed", index=2) as injector,
        pytest.raises(errors.Conflict) as raised,
    ):
        customers.update(ALICE, "alice", email="new@example.com", name=None)
    assert (injector.injected, raised.value.code) == (1, "CONFLICT")


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("reason", ["ValidationError", "ItemCollectionSizeLimitExceeded", "AReasonAddedLater"])
def test_a_transaction_the_store_refuses_as_invalid_is_rejected_not_retried(store, reason):
    with cancelled(store.client, reason) as injector, pytest.raises(errors.StoreRejected) as raised:
        wiring.customer_service(store.table).create(ALICE, email="alice@example.com", name="Alice")
    assert injector.injected == 1
    assert raised.value.code == "VALIDATION_ERROR"
    assert "Key" not in raised.value.message


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("reason", ["ThrottlingError", "ProvisionedThroughputExceeded"])
def test_a_transaction_throttled_item_by_item_is_unavailable(store, reason):
    with cancelled(store.client, reason), pytest.raises(errors.ServiceUnavailable):
        wiring.customer_service(store.table).create(ALICE, email="alice@example.com", name="Alice")


@pytest.mark.dynamodb_semantics
def test_a_single_write_the_store_refuses_as_invalid_is_rejected_not_retried(store):
    pid = product(store.table, stock=10)
    with injected(store.client, "invalid", {"UpdateItem"}) as injector, pytest.raises(errors.StoreRejected):
        wiring.catalog_service(store.table).adjust_stock(ADMIN, pid, 5)
    assert injector.injected == 1
    assert wiring.catalog_service(store.table).get(pid).stock == 10


@pytest.mark.dynamodb_semantics
def test_a_key_over_dynamodbs_limit_in_a_transaction_is_rejected_not_unavailable(store):
    """No injection: a sort key over 1,024 bytes cancels the review's transaction for ValidationError,
    which can never succeed, so it may not be a retryable 503. (Input validation keeps such keys from
    being built; InvalidRequest covers either layer refusing.)"""
    pid = product(store.table)
    with pytest.raises(errors.InvalidRequest):
        wiring.catalog_service(store.table).review(Actor("s" * 1100), pid, rating=4, title="t", body="b")
    assert wiring.catalog_service(store.table).get(pid).rating_count == 0


@pytest.mark.integration
def test_a_key_over_dynamodbs_limit_in_a_single_write_is_rejected_not_an_error(local_store):
    """No injection: DynamoDB (not moto) refuses a partition key over 2,048 bytes with ValidationException."""
    with pytest.raises(errors.InvalidRequest):
        wiring.catalog_service(local_store.table).adjust_stock(ADMIN, "p" * 2100, 1)
