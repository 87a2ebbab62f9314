"""Customer carts on moto and DynamoDB Local: lines, expiry, merges (caps, repeats) and checkout."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shop import clock, errors, keys, wiring
from shop.repository import CustomerCartRepository
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB, product

# Reads no stream record: its tables have none (tests/conftest.py::local_store; docs/testing.md, "Time").
pytestmark = pytest.mark.table_without_stream

DAY = 24 * 3600


def signed_up(store, *actors) -> None:
    for actor in actors:
        wiring.customer_service(store.table).create(actor, email=f"{actor.sub}@example.com", name=actor.sub)


def session_with(store, *lines: tuple[str, int]) -> str:
    sessions = wiring.session_service(store.table)
    session_id = sessions.create().session_id
    for product_id, quantity in lines:
        sessions.set_quantity(session_id, product_id, quantity)
    return session_id


def cart_item(store, customer_id: str = "alice") -> dict | None:
    response = store.client.get_item(
        TableName=store.table_name,
        Key={k: {"S": v} for k, v in keys.customer_cart_key(customer_id).items()},
        ConsistentRead=True,
    )
    return response.get("Item")


def quantities(cart) -> list[tuple[str, int]]:
    return [(line.product_id, line.quantity) for line in cart.cart]


@pytest.mark.dynamodb_semantics
def test_cart_lines_are_set_read_removed_and_emptied(store):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    hammer = product(store.table, name="Hammer", price_cents=1500)
    nails = product(store.table, name="Nails", price_cents=250)
    assert carts.get(ALICE, "alice").cart == []
    assert carts.get(ALICE, "alice").expires_at is None
    with counting(store.client) as calls:
        carts.set_quantity(ALICE, "alice", hammer, 2)
    # The update finds no cart (refused, 1 WCU); the first line then starts one.
    assert calls.operations == ["BatchGetItem", "UpdateItem", "PutItem"]
    with counting(store.client) as calls:
        cart = carts.set_quantity(ALICE, "alice", nails, 4)
    assert calls.operations == ["BatchGetItem", "UpdateItem", "BatchGetItem"]
    assert quantities(cart) == [(hammer, 2), (nails, 4)]
    assert cart.subtotal_cents == 2 * 1500 + 4 * 250
    with counting(store.client) as calls:
        assert carts.get(ADMIN, "alice") == cart
    assert calls.operations == ["BatchGetItem", "BatchGetItem"]
    assert quantities(carts.set_quantity(ALICE, "alice", hammer, 0)) == [(nails, 4)]
    carts.delete(ALICE, "alice")
    assert carts.get(ALICE, "alice").cart == []
    carts.delete(ALICE, "alice")  # nothing left: still fine


@pytest.mark.dynamodb_semantics
def test_lines_show_current_prices_like_session_carts(store):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    hammer = product(store.table, name="Hammer", price_cents=1500)
    carts.set_quantity(ALICE, "alice", hammer, 2)
    wiring.catalog_service(store.table).update(ADMIN, hammer, {"price_cents": 1700})
    [line] = carts.get(ALICE, "alice").cart
    assert (line.unit_price_cents, line.added_unit_price_cents, line.price_changed) == (1700, 1500, True)


@pytest.mark.dynamodb_semantics
def test_only_the_customer_writes_and_only_with_a_profile(store):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    pid = product(store.table)
    with pytest.raises(errors.Forbidden):
        carts.set_quantity(ADMIN, "alice", pid, 1)
    with pytest.raises(errors.Forbidden):
        carts.get(BOB, "alice")
    with pytest.raises(errors.CustomerNotFound):
        carts.get(BOB, "bob")
    with pytest.raises(errors.CustomerNotFound):
        carts.set_quantity(BOB, "bob", pid, 1)
    with pytest.raises(errors.ProductNotFound):
        carts.set_quantity(ALICE, "alice", "no-such-product", 1)
    assert cart_item(store, "bob") is None


@pytest.mark.dynamodb_semantics
def test_cart_holds_at_most_25_lines(store):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    ids = [product(store.table, name=f"p{i:02d}") for i in range(26)]
    for pid in ids[:25]:
        carts.set_quantity(ALICE, "alice", pid, 1)
    with pytest.raises(errors.CartFull):
        carts.set_quantity(ALICE, "alice", ids[25], 1)
    assert len(carts.set_quantity(ALICE, "alice", ids[0], 5).cart) == 25, "changing a line still works"


@pytest.mark.dynamodb_semantics
def test_every_change_slides_the_expiry_30_days(store, monkeypatch):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    pid = product(store.table)
    first = carts.set_quantity(ALICE, "alice", pid, 1)
    assert first.expires_at is not None
    expected = clock.iso_from_epoch(clock.epoch(clock.now()) + 30 * DAY)
    assert abs(int(cart_item(store)["expires_at"]["N"]) - (clock.epoch(clock.now()) + 30 * DAY)) <= 2
    assert first.expires_at[:16] == expected[:16]
    later = clock.now() + timedelta(days=10)
    monkeypatch.setattr(clock, "now", lambda: later)
    assert carts.set_quantity(ALICE, "alice", pid, 2).expires_at > first.expires_at


@pytest.mark.dynamodb_semantics
def test_an_expired_cart_is_never_served_nor_revived(store, monkeypatch):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    old, new = product(store.table, name="Old"), product(store.table, name="New")
    carts.set_quantity(ALICE, "alice", old, 3)
    expired = clock.now() + timedelta(days=30, seconds=5)
    monkeypatch.setattr(clock, "now", lambda: expired)
    assert cart_item(store) is not None, "TTL has not deleted it (it deletes within days)"
    assert carts.get(ALICE, "alice").cart == []
    assert carts.get(ALICE, "alice").expires_at is None
    assert carts.set_quantity(ALICE, "alice", old, 0).cart == [], "removing from an expired cart writes nothing"
    cart = carts.set_quantity(ALICE, "alice", new, 1)
    assert quantities(cart) == [(new, 1)], "the expired lines are gone, not revived"
    assert int(cart_item(store)["cart_version"]["N"]) == 2, "versions keep counting over the replaced item"
    monkeypatch.setattr(clock, "now", lambda: expired + timedelta(days=31))
    with pytest.raises(errors.CartEmpty):
        wiring.order_service(store.table).place(ALICE, address=ADDRESS, customer_cart=True)


# -- merge ----------------------------------------------------------------------------------------


@pytest.mark.dynamodb_semantics
def test_merge_adds_up_quantities_and_deletes_the_session(store):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    hammer, nails, saw = (product(store.table, name=n, price_cents=100) for n in ("Hammer", "Nails", "Saw"))
    carts.set_quantity(ALICE, "alice", hammer, 1)
    session_id = session_with(store, (nails, 4), (hammer, 2), (saw, 1))
    with counting(store.client) as calls:
        merged = carts.merge(ALICE, "alice", session_id)
    assert calls.operations == ["BatchGetItem", "TransactWriteItems", "BatchGetItem"]
    assert quantities(merged) == [(hammer, 3), (nails, 4), (saw, 1)]
    assert merged.not_merged == []
    assert merged.subtotal_cents == 800
    with pytest.raises(errors.SessionNotFound):
        wiring.session_service(store.table).get(session_id)
    assert carts.get(ALICE, "alice").cart == merged.cart


@pytest.mark.dynamodb_semantics
def test_merge_caps_lines_at_99_and_carts_at_25_and_reports_the_rest(store):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    ids = [product(store.table, name=f"p{i:02d}") for i in range(27)]
    for pid in ids[:24]:
        carts.set_quantity(ALICE, "alice", pid, 60)
    session_id = session_with(store, (ids[0], 50), (ids[24], 7), (ids[25], 8), (ids[26], 9))
    merged = carts.merge(ALICE, "alice", session_id)
    assert len(merged.cart) == 25
    assert dict(quantities(merged))[ids[0]] == 99
    assert dict(quantities(merged))[ids[24]] == 7
    assert [(n.product_id, n.quantity, n.reason.value) for n in merged.not_merged] == [
        (ids[0], 11, "QUANTITY_LIMIT"),
        (ids[25], 8, "CART_FULL"),
        (ids[26], 9, "CART_FULL"),
    ]


@pytest.mark.dynamodb_semantics
def test_repeated_merge_is_a_no_op_answering_the_same_cart(store):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    pid = product(store.table)
    carts.set_quantity(ALICE, "alice", pid, 90)
    session_id = session_with(store, (pid, 20))
    first = carts.merge(ALICE, "alice", session_id)
    assert [(n.quantity, n.reason.value) for n in first.not_merged] == [(11, "QUANTITY_LIMIT")]
    with counting(store.client) as calls:
        again = carts.merge(ALICE, "alice", session_id)
    assert again == first
    assert "TransactWriteItems" not in calls.operations, "nothing written"
    assert int(cart_item(store)["cart_version"]["N"]) == 2


def test_a_repeated_merge_that_reads_the_marker_beside_the_cart_before_it_reads_again(store, monkeypatch):
    """BatchGetItem is not isolated from a transaction: a repeat racing the merge can read its marker beside the
    cart as it was before (here: no cart yet). The marker names the cart version the merge wrote, so the repeat
    reads again and answers the merged cart, not an empty one (seen under load with 4 concurrent repeats)."""
    from shop.repository import carts as cart_repository

    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    pid = product(store.table)
    session_id = session_with(store, (pid, 3))
    first = carts.merge(ALICE, "alice", session_id)
    real = cart_repository.batch_get
    reads = []

    def half_of_the_merge_on_the_first_read(table, wanted, **kwargs):
        found = real(table, wanted, **kwargs)
        reads.append(len(found))
        if len(reads) == 1:
            cart = keys.customer_cart_key("alice")
            found.pop((cart[keys.PK], cart[keys.SK]))
        return found

    monkeypatch.setattr(cart_repository, "batch_get", half_of_the_merge_on_the_first_read)
    again = carts.merge(ALICE, "alice", session_id)
    assert again == first
    assert quantities(again) == [(pid, 3)]
    assert len(reads) == 2


@pytest.mark.dynamodb_semantics
def test_merge_of_an_unknown_expired_or_foreign_session_is_session_not_found(store, monkeypatch):
    signed_up(store, ALICE, BOB)
    carts = wiring.cart_service(store.table)
    pid = product(store.table)
    with pytest.raises(errors.SessionNotFound):
        carts.merge(ALICE, "alice", "no-such-session")
    session_id = session_with(store, (pid, 1))
    carts.merge(BOB, "bob", session_id)
    with pytest.raises(errors.SessionNotFound):
        carts.merge(ALICE, "alice", session_id)  # bob took it
    with pytest.raises(errors.Forbidden):
        carts.merge(ADMIN, "alice", session_with(store, (pid, 1)))
    stale = session_with(store, (pid, 1))
    later = clock.now() + timedelta(hours=2)
    monkeypatch.setattr(clock, "now", lambda: later)
    with pytest.raises(errors.SessionNotFound):
        carts.merge(ALICE, "alice", stale)


@pytest.mark.dynamodb_semantics
def test_merge_retries_when_the_cart_moves_between_read_and_write(store, monkeypatch):
    signed_up(store, ALICE)
    carts = wiring.cart_service(store.table)
    a, b = product(store.table, name="A"), product(store.table, name="B")
    session_id = session_with(store, (a, 1))
    repository = carts.carts
    assert isinstance(repository, CustomerCartRepository)
    real_read = repository.read_for_merge
    reads = []

    def read_then_someone_writes(*args, **kwargs):
        view = real_read(*args, **kwargs)
        if not reads:
            wiring.cart_service(store.table).set_quantity(ALICE, "alice", b, 2)
        reads.append(view)
        return view

    monkeypatch.setattr(repository, "read_for_merge", read_then_someone_writes)
    merged = carts.merge(ALICE, "alice", session_id)
    assert len(reads) == 2
    assert sorted(quantities(merged)) == sorted([(a, 1), (b, 2)])


# -- checkout -------------------------------------------------------------------------------------


@pytest.mark.dynamodb_semantics
def test_checkout_from_the_customer_cart_empties_it_in_the_same_transaction(store):
    signed_up(store, ALICE)
    carts, orders = wiring.cart_service(store.table), wiring.order_service(store.table)
    pid = product(store.table, price_cents=1200, stock=5)
    carts.set_quantity(ALICE, "alice", pid, 2)
    with counting(store.client) as calls:
        order = orders.place(ALICE, address=ADDRESS, customer_cart=True, idempotency_key="k1")
    assert calls.operations == ["GetItem", "GetItem", "TransactWriteItems"]  # the cart, the checkout's settings
    assert [(line.product_id, line.quantity) for line in order.lines] == [(pid, 2)]
    assert order.total_cents == 2400
    assert carts.get(ALICE, "alice").cart == []
    assert wiring.catalog_service(store.table).get(pid).stock == 3
    with pytest.raises(errors.CartEmpty):
        orders.place(ALICE, address=ADDRESS, customer_cart=True, idempotency_key="k2")


@pytest.mark.dynamodb_semantics
def test_checkout_that_fails_keeps_the_cart(store):
    signed_up(store, ALICE)
    carts, orders = wiring.cart_service(store.table), wiring.order_service(store.table)
    pid = product(store.table, stock=1)
    carts.set_quantity(ALICE, "alice", pid, 2)
    with pytest.raises(errors.OutOfStock):
        orders.place(ALICE, address=ADDRESS, customer_cart=True, idempotency_key="k")
    assert quantities(carts.get(ALICE, "alice")) == [(pid, 2)]


@pytest.mark.dynamodb_semantics
def test_checkout_reprices_a_line_whose_price_changed(store):
    signed_up(store, ALICE)
    carts, orders = wiring.cart_service(store.table), wiring.order_service(store.table)
    pid = product(store.table, price_cents=1000)
    carts.set_quantity(ALICE, "alice", pid, 1)
    wiring.catalog_service(store.table).update(ADMIN, pid, {"price_cents": 1100})
    order = orders.place(ALICE, address=ADDRESS, customer_cart=True)
    assert order.total_cents == 1100
    assert carts.get(ALICE, "alice").cart == []


@pytest.mark.dynamodb_semantics
def test_checkout_refuses_a_cart_that_changed_after_it_was_read(store, monkeypatch):
    signed_up(store, ALICE)
    carts, orders = wiring.cart_service(store.table), wiring.order_service(store.table)
    a, b = product(store.table, name="A"), product(store.table, name="B")
    carts.set_quantity(ALICE, "alice", a, 1)
    real_get = orders.carts.get

    def read_then_add(*args, **kwargs):
        cart = real_get(*args, **kwargs)
        wiring.cart_service(store.table).set_quantity(ALICE, "alice", b, 1)
        return cart

    monkeypatch.setattr(orders.carts, "get", read_then_add)
    with pytest.raises(errors.CartChanged):
        orders.place(ALICE, address=ADDRESS, customer_cart=True, idempotency_key="k")
    assert sorted(quantities(carts.get(ALICE, "alice"))) == sorted([(a, 1), (b, 1)]), "nothing was taken"
    assert wiring.catalog_service(store.table).get(a).stock == 10
