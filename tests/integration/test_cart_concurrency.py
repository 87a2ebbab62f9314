"""Real threads against DynamoDB Local: concurrent merges into one customer cart all land, once each."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import errors, wiring
from tests.support.factories import ADDRESS, ALICE, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = [pytest.mark.integration, pytest.mark.table_without_stream]


def sessions_holding(table, lines_per_session):
    sessions = wiring.session_service(table)
    ids = []
    for lines in lines_per_session:
        session_id = sessions.create().session_id
        for product_id, quantity in lines:
            sessions.set_quantity(session_id, product_id, quantity)
        ids.append(session_id)
    return ids


def together(calls):
    """Run the calls on their own threads, released at once; their results in order."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


@pytest.mark.parametrize("round_", range(3))
def test_two_concurrent_merges_of_two_sessions_both_land(local_store, round_):
    table = local_store.table
    wiring.customer_service(table).create(ALICE, email="alice@example.com", name="Alice")
    shared, only_a, only_b = (product(table, name=n, stock=100) for n in ("Shared", "A", "B"))
    carts = wiring.cart_service(table)
    carts.set_quantity(ALICE, "alice", shared, 1)
    first, second = sessions_holding(table, [[(shared, 2), (only_a, 1)], [(shared, 3), (only_b, 4)]])

    answers = together([lambda: carts.merge(ALICE, "alice", first), lambda: carts.merge(ALICE, "alice", second)])

    cart = {line.product_id: line.quantity for line in carts.get(ALICE, "alice").cart}
    assert cart == {shared: 1 + 2 + 3, only_a: 1, only_b: 4}
    assert all(answer.not_merged == [] for answer in answers)
    assert max(len(answer.cart) for answer in answers) == 3, "the later merge answers the cart with both"


def test_many_concurrent_merges_and_line_changes_all_land(local_store):
    table = local_store.table
    wiring.customer_service(table).create(ALICE, email="alice@example.com", name="Alice")
    shared = product(table, name="Shared", stock=100)
    extra = [product(table, name=f"Extra {i}", stock=100) for i in range(4)]
    carts = wiring.cart_service(table)
    session_ids = sessions_holding(table, [[(shared, 1)] for _ in range(4)])
    calls = [lambda sid=sid: carts.merge(ALICE, "alice", sid) for sid in session_ids]
    calls += [lambda pid=pid: carts.set_quantity(ALICE, "alice", pid, 2) for pid in extra]

    together(calls)

    cart = {line.product_id: line.quantity for line in carts.get(ALICE, "alice").cart}
    assert cart == {shared: 4, **dict.fromkeys(extra, 2)}


def test_a_double_submitted_merge_lands_once_and_both_answer_the_same_cart(local_store):
    table = local_store.table
    wiring.customer_service(table).create(ALICE, email="alice@example.com", name="Alice")
    pid = product(table, stock=100)
    carts = wiring.cart_service(table)
    [session_id] = sessions_holding(table, [[(pid, 3)]])

    answers = together([lambda: carts.merge(ALICE, "alice", session_id) for _ in range(4)])

    assert [line.quantity for line in carts.get(ALICE, "alice").cart] == [3], "added once, not four times"
    assert all(answer == answers[0] for answer in answers)


def test_checkout_racing_a_line_change_never_loses_or_double_sells_a_line(local_store):
    table = local_store.table
    wiring.customer_service(table).create(ALICE, email="alice@example.com", name="Alice")
    first, second = product(table, name="First", stock=50), product(table, name="Second", stock=50)
    carts, orders = wiring.cart_service(table), wiring.order_service(table)
    carts.set_quantity(ALICE, "alice", first, 1)

    def checkout():
        try:
            return orders.place(ALICE, address=ADDRESS, customer_cart=True, idempotency_key="race")
        except errors.CartChanged as error:  # the line change came between checkout's read and its transaction
            return error

    order, _ = together([checkout, lambda: carts.set_quantity(ALICE, "alice", second, 1)])
    left = {line.product_id for line in carts.get(ALICE, "alice").cart}
    if isinstance(order, errors.CartChanged):
        assert left == {first, second}
    else:  # the order holds exactly what the cart held when it was emptied; a later line stays
        ordered = {line.product_id for line in order.lines}
        assert ordered | left == {first, second}
        assert not ordered & left
