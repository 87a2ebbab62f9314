from __future__ import annotations

import pytest

from shop import errors, keys, wiring
from shop.limits import MAX_PARALLEL_QUERIES
from shop.models import OrderStatus
from shop.repository import OrderRepository
from shop.services.orders import RequestedLine
from tests.support.calls import counting
from tests.support.factories import ADDRESS, ADMIN, ALICE, BOB, parcel, product
from tests.support.faults import first_answer_lost
from tests.support.reads import reading


def place(table, actor=ALICE, **lines):
    return wiring.order_service(table).place(
        actor, address=ADDRESS, lines=[RequestedLine(pid, qty) for pid, qty in lines.items()]
    )


@pytest.mark.dynamodb_semantics
def test_placement_prices_from_catalogue_and_takes_stock(store):
    hammer = product(store.table, name="Hammer", price_cents=1500, stock=5)
    nails = product(store.table, name="Nails", price_cents=250, stock=100)
    with counting(store.client) as calls:
        order = wiring.order_service(store.table).place(
            ALICE, address=ADDRESS, lines=[RequestedLine(hammer, 2), RequestedLine(nails, 10), RequestedLine(hammer, 1)]
        )
    # the catalogue, the checkout's settings as of their latest edit (one consistent GetItem), the transaction
    assert calls.operations == ["BatchGetItem", "GetItem", "TransactWriteItems"]
    assert order.status is OrderStatus.PENDING
    assert order.version == 1
    assert {(line.product_id, line.quantity, line.line_total_cents) for line in order.lines} == {
        (hammer, 3, 4500),
        (nails, 10, 2500),
    }
    assert order.total_cents == 7000
    catalog = wiring.catalog_service(store.table)
    assert catalog.get(hammer).stock == 2
    assert catalog.get(nails).stock == 90
    with counting(store.client) as calls:
        fetched = wiring.order_service(store.table).get(ALICE, order.order_id)
    assert calls.operations == ["Query"]
    assert fetched.lines == order.lines
    assert [h.status for h in fetched.history] == [OrderStatus.PENDING]


@pytest.mark.dynamodb_semantics
def test_out_of_stock_names_the_products_and_writes_nothing(store):
    hammer = product(store.table, name="Hammer", stock=1)
    nails = product(store.table, name="Nails", stock=100)
    with pytest.raises(errors.OutOfStock) as raised:
        place(store.table, **{hammer: 2, nails: 1})
    assert raised.value.product_ids == [hammer]
    assert wiring.catalog_service(store.table).get(nails).stock == 100
    assert wiring.order_service(store.table).list_for_customer(ALICE, "alice", limit=10, next_token=None).items == []


@pytest.mark.dynamodb_semantics
def test_unknown_product(store):
    hammer = product(store.table)
    with pytest.raises(errors.ProductNotFound) as raised:
        place(store.table, **{hammer: 1, "ghost": 1})
    assert raised.value.product_ids == ["ghost"]


@pytest.mark.dynamodb_semantics
def test_price_changed_meanwhile_is_detected_and_repriced(store, monkeypatch):
    hammer = product(store.table, price_cents=1000, stock=5)
    repository = OrderRepository(store.table)
    order = wiring.order_service(store.table)._new_order(
        ALICE, wiring.order_service(store.table)._price({hammer: 1})[0], ADDRESS
    )
    wiring.catalog_service(store.table).update(ADMIN, hammer, {"price_cents": 1200})
    with pytest.raises(errors.PriceChanged) as raised:
        repository.place(order)
    assert raised.value.product_ids == [hammer]
    assert wiring.catalog_service(store.table).get(hammer).stock == 5

    service = wiring.order_service(store.table)
    original_catalogue = service._catalogue
    calls = {"n": 0}

    def stale_first(quantities, **options):
        calls["n"] += 1
        catalogue = original_catalogue(quantities, **options)
        if calls["n"] == 1:  # the first read (the placement's) still shows the old price
            return {pid: found.model_copy(update={"price_cents": 1000}) for pid, found in catalogue.items()}
        return catalogue

    monkeypatch.setattr(service, "_catalogue", stale_first)
    placed = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer, 1)])
    assert placed.total_cents == 1200
    assert calls["n"] == 2


@pytest.mark.dynamodb_semantics
def test_checkout_from_session_clears_the_cart(store):
    hammer = product(store.table, name="Hammer", price_cents=1500, stock=5)
    sessions = wiring.session_service(store.table)
    session = sessions.create()
    sessions.set_quantity(session.session_id, hammer, 2)
    with counting(store.client) as calls:
        order = wiring.order_service(store.table).place(ALICE, address=ADDRESS, session_id=session.session_id)
    assert calls.operations == ["GetItem", "GetItem", "TransactWriteItems"]  # the session, the checkout's settings
    assert order.total_cents == 3000
    assert sessions.get(session.session_id).cart == []
    with pytest.raises(errors.CartEmpty):
        wiring.order_service(store.table).place(ALICE, address=ADDRESS, session_id=session.session_id)
    with pytest.raises(errors.SessionNotFound):
        wiring.order_service(store.table).place(ALICE, address=ADDRESS, session_id="missing")


@pytest.mark.dynamodb_semantics
def test_session_changed_during_keyed_checkout_is_session_not_found(store):
    """With an Idempotency-Key the placement claim is the transaction's last item; the session's own item
    is the one checked."""
    hammer = product(store.table, name="Hammer", price_cents=1500, stock=5)
    sessions = wiring.session_service(store.table)
    session = sessions.create()
    sessions.set_quantity(session.session_id, hammer, 2)
    service = wiring.order_service(store.table)
    read = service.sessions.get

    def read_then_change(session_id, **kwargs):
        stored = read(session_id, **kwargs)
        sessions.set_quantity(session_id, hammer, 3)
        return stored

    service.sessions.get = read_then_change  # type: ignore[method-assign]
    with pytest.raises(errors.SessionNotFound):
        service.place(ALICE, address=ADDRESS, session_id=session.session_id, idempotency_key="key-1")
    assert wiring.catalog_service(store.table).get(hammer).stock == 5


@pytest.mark.dynamodb_semantics
def test_other_customers_order_reads_as_not_found(store):
    order = place(store.table, **{product(store.table): 1})
    with pytest.raises(errors.OrderNotFound):
        wiring.order_service(store.table).get(BOB, order.order_id)
    assert wiring.order_service(store.table).get(ADMIN, order.order_id).order_id == order.order_id
    with pytest.raises(errors.OrderNotFound):
        wiring.order_service(store.table).get(ADMIN, "missing")


@pytest.mark.dynamodb_semantics
def test_customer_orders_newest_first(store):
    pid = product(store.table, stock=100)
    placed = [place(store.table, **{pid: 1}).order_id for _ in range(5)]
    place(store.table, BOB, **{pid: 1})
    seen, token = [], None
    while True:
        with counting(store.client) as calls:
            page = wiring.order_service(store.table).list_for_customer(ALICE, "alice", limit=2, next_token=token)
        assert calls.operations == ["Query"]
        seen += [o.order_id for o in page.items]
        token = page.next_token
        if not token:
            break
    assert seen == list(reversed(placed))


@pytest.mark.dynamodb_semantics
def test_status_change_is_conditional_on_version(store):
    order = place(store.table, **{product(store.table): 1})
    service = wiring.order_service(store.table)
    confirmed = service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    assert (confirmed.status, confirmed.version) == (OrderStatus.CONFIRMED, 2)
    with pytest.raises(errors.VersionMismatch):
        service.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=1, shipment=parcel())
    stale = order.model_copy()
    with pytest.raises(errors.VersionMismatch):
        OrderRepository(store.table).change_status(
            stale, OrderStatus.CANCELLED, updated_at="2026-01-01T00:00:00Z", restock=stale.lines
        )
    with pytest.raises(errors.InvalidTransition):
        service.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=2)
    with pytest.raises(errors.DomainError):
        service.change_status(ALICE, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())


@pytest.mark.dynamodb_semantics
def test_cancel_restocks_every_line(store):
    hammer = product(store.table, stock=5)
    nails = product(store.table, stock=50)
    order = place(store.table, **{hammer: 2, nails: 20})
    cancelled = wiring.order_service(store.table).cancel(ALICE, order.order_id)
    assert cancelled.status is OrderStatus.CANCELLED
    assert wiring.catalog_service(store.table).get(hammer).stock == 5
    assert wiring.catalog_service(store.table).get(nails).stock == 50
    with pytest.raises(errors.InvalidTransition):
        wiring.order_service(store.table).cancel(ALICE, order.order_id)
    with pytest.raises(errors.OrderNotFound):
        wiring.order_service(store.table).cancel(BOB, place(store.table, **{hammer: 1}).order_id)


def walk_status(store, service, status, limit, shards):
    """Every page of the listing: each sorted newest first, each reading exactly what it returns."""
    seen, token, pages = [], None, 0
    while True:
        with reading(store.client) as reads:
            page = service.list_by_status(ADMIN, status, limit=limit, next_token=token)
        assert len(page.items) <= limit
        assert reads.items_read == len(page.items)  # read amplification 1.00
        assert set(reads.operations) <= {"Query"}
        assert 1 <= len(reads.operations) <= min(shards, limit, MAX_PARALLEL_QUERIES)
        keys_ = [(o.created_at, o.order_id) for o in page.items]
        assert keys_ == sorted(keys_, reverse=True)
        seen += [o.order_id for o in page.items]
        pages += 1
        token = page.next_token
        if not token:
            return seen, pages


@pytest.mark.dynamodb_semantics
@pytest.mark.parametrize("shards", [1, 4, 64])
def test_every_order_once_in_shard_order_reading_only_what_is_returned(store, shards):
    pid = product(store.table, stock=100)
    service = wiring.order_service(store.table, shards=shards)
    placed = [service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)]).order_id for _ in range(30)]
    newest_first = list(reversed(placed))
    for limit in (1, 7, 30, 100):
        seen, pages = walk_status(store, service, OrderStatus.PENDING, limit, shards)
        assert sorted(seen) == sorted(placed), limit  # each once
        for shard in range(shards):  # each shard's orders in exact newest-first order
            of_shard = [o for o in newest_first if keys.status_shard(o, shards) == shard]
            assert [o for o in seen if keys.status_shard(o, shards) == shard] == of_shard, (limit, shard)
        assert pages <= -(-len(placed) // limit) + shards, limit  # at most one short page per shard
        if shards == 1:
            assert seen == newest_first


@pytest.mark.dynamodb_semantics
def test_status_index_merges_shards_newest_first_and_paginates(store):
    pid = product(store.table, stock=100)
    service = wiring.order_service(store.table, shards=4)
    placed = [service.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)]) for _ in range(9)]
    shipped = placed[0]
    service.change_status(ADMIN, shipped.order_id, OrderStatus.CONFIRMED, expected_version=1)
    with counting(store.client) as calls:
        first = service.list_by_status(ADMIN, OrderStatus.PENDING, limit=4, next_token=None)
    assert calls.operations == ["Query"] * 4  # one round: every shard once, in parallel
    seen, _ = walk_status(store, service, OrderStatus.PENDING, 3, 4)
    assert sorted(seen) == sorted(o.order_id for o in placed[1:])
    confirmed = service.list_by_status(ADMIN, OrderStatus.CONFIRMED, limit=10, next_token=None)
    assert [o.order_id for o in confirmed.items] == [shipped.order_id]
    assert confirmed.next_token is None
    assert first.next_token is not None
    with pytest.raises(errors.InvalidNextToken):  # 4 cursors cannot be spread over 6 shards
        wiring.order_service(store.table, shards=6).list_by_status(
            ADMIN, OrderStatus.PENDING, limit=1, next_token=first.next_token
        )
    with pytest.raises(errors.InvalidNextToken):
        service.list_by_status(ADMIN, OrderStatus.CONFIRMED, limit=1, next_token=first.next_token)


@pytest.mark.dynamodb_semantics
def test_orders_written_under_fewer_shards_stay_listed_after_the_count_grows(store):
    """The shard count may only grow: entries keep the shard they were written to, and the listing
    reads every shard below the current count."""
    pid = product(store.table, stock=100)
    before = [
        wiring.order_service(store.table, shards=4)
        .place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)])
        .order_id
        for _ in range(6)
    ]
    grown = wiring.order_service(store.table, shards=16)
    after = [grown.place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 1)]).order_id for _ in range(6)]
    grown.change_status(ADMIN, before[0], OrderStatus.CONFIRMED, expected_version=1)
    seen, _ = walk_status(store, grown, OrderStatus.PENDING, 5, 16)
    assert sorted(seen) == sorted(before[1:] + after)
    # a status with fewer orders than shards: pages of 5 reach all 16 shards within 4 pages
    confirmed, pages = walk_status(store, grown, OrderStatus.CONFIRMED, 5, 16)
    assert confirmed == [before[0]]
    assert pages <= 4


@pytest.mark.dynamodb_semantics
def test_restore_writes_an_order_without_touching_stock_once(store):
    pid = product(store.table, stock=5)
    service = wiring.order_service(store.table)
    order = service._new_order(ALICE, service._price({pid: 2})[0], ADDRESS)
    OrderRepository(store.table).restore(order)
    assert service.get(ALICE, order.order_id).total_cents == order.total_cents
    assert [o.order_id for o in service.list_for_customer(ALICE, "alice", limit=5, next_token=None).items] == [
        order.order_id
    ]
    assert wiring.catalog_service(store.table).get(pid).stock == 5
    with pytest.raises(errors.OrderExists):
        OrderRepository(store.table).restore(order)


@pytest.mark.dynamodb_semantics
def test_history_ends_with_the_current_status_before_the_stream_records_it(store):
    order = place(store.table, **{product(store.table): 1})
    service = wiring.order_service(store.table)
    service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    fetched = service.get(ALICE, order.order_id)
    assert [h.status for h in fetched.history] == [OrderStatus.PENDING, OrderStatus.CONFIRMED]
    assert fetched.history[-1].at == fetched.updated_at


@pytest.mark.dynamodb_semantics
def test_status_patch_whose_answer_was_lost_answers_the_changed_order(store):
    order = place(store.table, **{product(store.table): 1})
    service = wiring.order_service(store.table)
    with first_answer_lost(store.client, "UpdateItem"):
        confirmed = service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    assert (confirmed.status, confirmed.version) == (OrderStatus.CONFIRMED, 2)
    assert confirmed.history[-1].status is OrderStatus.CONFIRMED

    again = service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    assert (again.status, again.version, again.updated_at) == (OrderStatus.CONFIRMED, 2, confirmed.updated_at)
    replayed = OrderRepository(store.table).change_status(
        order, OrderStatus.CONFIRMED, updated_at="2030-01-01T00:00:00Z"
    )
    assert (replayed.status, replayed.version, replayed.updated_at) == (OrderStatus.CONFIRMED, 2, confirmed.updated_at)

    with pytest.raises(errors.VersionMismatch) as mismatch:
        service.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=1, shipment=parcel())
    assert mismatch.value.details == {"current_version": 2}
    with pytest.raises(errors.VersionMismatch):
        OrderRepository(store.table).change_status(order, OrderStatus.SHIPPED, updated_at="2030-01-01T00:00:00Z")
    with pytest.raises(errors.InvalidTransition):
        service.change_status(ADMIN, order.order_id, OrderStatus.PENDING, expected_version=2)


@pytest.mark.dynamodb_semantics
def test_an_if_match_of_a_version_before_the_first_is_a_mismatch_not_a_lost_answer(store):
    """An order starts at version 1: If-Match 0 names no version it ever had."""
    order = place(store.table, **{product(store.table): 1})
    with pytest.raises(errors.VersionMismatch):
        wiring.order_service(store.table).change_status(ADMIN, order.order_id, OrderStatus.PENDING, expected_version=0)


@pytest.mark.dynamodb_semantics
def test_cancel_whose_answer_was_lost_answers_the_cancelled_order_and_restocks_once(store):
    hammer = product(store.table, stock=5)
    order = place(store.table, **{hammer: 2})
    assert wiring.catalog_service(store.table).get(hammer).stock == 3
    with first_answer_lost(store.client, "TransactWriteItems") as sent:
        cancelled = wiring.order_service(store.table).cancel(ALICE, order.order_id)
    assert (cancelled.status, cancelled.version) == (OrderStatus.CANCELLED, 2)
    assert wiring.catalog_service(store.table).get(hammer).stock == 5
    (params,) = sent
    assert 1 <= len(params.get("ClientRequestToken", "")) <= 36

    repository = OrderRepository(store.table)
    for updated_at in (cancelled.updated_at, "2030-01-01T00:00:00Z"):  # the same write again, then a new one
        replayed = repository.change_status(order, OrderStatus.CANCELLED, updated_at=updated_at, restock=order.lines)
        assert (replayed.status, replayed.version, replayed.updated_at) == (
            OrderStatus.CANCELLED,
            2,
            cancelled.updated_at,
        )
    assert wiring.catalog_service(store.table).get(hammer).stock == 5
    with pytest.raises(errors.InvalidTransition):
        wiring.order_service(store.table).cancel(ALICE, order.order_id)


@pytest.mark.dynamodb_semantics
def test_status_change_tokens_fit_dynamodb_and_name_one_write(store):
    from shop.repository.orders import status_change_token

    order = place(store.table, **{product(store.table): 1})
    at = "2026-11-26T01:02:03.456789Z"
    token = status_change_token(order, OrderStatus.CANCELLED, at)
    assert 1 <= len(token) <= 36
    assert token == status_change_token(order, OrderStatus.CANCELLED, at)
    others = {
        status_change_token(order, OrderStatus.CONFIRMED, at),
        status_change_token(order.model_copy(update={"version": 2}), OrderStatus.CANCELLED, at),
        status_change_token(order, OrderStatus.CANCELLED, "2026-11-26T01:02:03.456790Z"),
    }
    assert token not in others
    assert len(others) == 3

    requests = []

    def record(params, **_):
        requests.append(params)

    store.client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", record)
    try:
        OrderRepository(store.table).change_status(order, OrderStatus.CANCELLED, updated_at=at, restock=order.lines)
    finally:
        store.client.meta.events.unregister("provide-client-params.dynamodb.TransactWriteItems", record)
    assert [r["ClientRequestToken"] for r in requests] == [token]


@pytest.mark.dynamodb_semantics
def test_a_placement_run_again_under_its_idempotency_key_returns_the_first_order_once(store):
    """The first run's Lambda died after its transaction (its idempotency lock then expires): the re-run
    must not place a second order."""
    hammer = product(store.table, name="Hammer", price_cents=1500, stock=5)
    service = wiring.order_service(store.table)
    first = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer, 2)], idempotency_key="alice\nk1")
    again = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer, 2)], idempotency_key="alice\nk1")
    assert again.order_id == first.order_id
    assert wiring.catalog_service(store.table).get(hammer).stock == 3
    listed = service.list_for_customer(ALICE, "alice", limit=10, next_token=None).items
    assert [o.order_id for o in listed] == [first.order_id]
    other = service.place(ALICE, address=ADDRESS, lines=[RequestedLine(hammer, 1)], idempotency_key="alice\nk2")
    assert other.order_id != first.order_id
    assert wiring.catalog_service(store.table).get(hammer).stock == 2


@pytest.mark.dynamodb_semantics
def test_a_lost_answer_is_recognised_by_the_stored_details_not_only_the_status(store):
    """Two requests for SHIPPED from one version: the one whose shipment is stored is answered as done (a
    re-send after a lost answer), the other is a mismatch, at the door and in the failed write alike."""
    from shop.models import Shipment, StatusDetails
    from shop.services.orders import ShipmentIn

    order = place(store.table, **{product(store.table): 1})
    service = wiring.order_service(store.table)
    read = service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    shipped = service.change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=ShipmentIn("DHL", "A-1")
    )

    again = service.change_status(
        ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=ShipmentIn("DHL", "A-1")
    )
    assert (again.version, again.shipment, again.updated_at) == (3, shipped.shipment, shipped.updated_at)
    with pytest.raises(errors.VersionMismatch) as mismatch:
        service.change_status(
            ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=ShipmentIn("UPS", "B-2")
        )
    assert mismatch.value.details == {"current_version": 3}

    repository = OrderRepository(store.table)
    later = "2030-01-01T00:00:00Z"
    resent = repository.change_status(
        read,
        OrderStatus.SHIPPED,
        updated_at=later,
        details=StatusDetails(shipment=Shipment(carrier="DHL", tracking_number="A-1", shipped_at=later)),
    )
    assert resent.shipment == shipped.shipment  # the order as stored, not as this write would have left it
    assert (resent.updated_at, resent.history[-1].tracking_number) == (shipped.updated_at, "A-1")
    with pytest.raises(errors.VersionMismatch):
        repository.change_status(
            read,
            OrderStatus.SHIPPED,
            updated_at=later,
            details=StatusDetails(shipment=Shipment(carrier="UPS", tracking_number="B-2", shipped_at=later)),
        )
    stored = service.get(ADMIN, order.order_id)
    assert (stored.version, stored.shipment.tracking_number) == (3, "A-1")


@pytest.mark.dynamodb_semantics
def test_a_return_request_is_recognised_by_its_stored_reason(store):
    from shop.models import StatusDetails

    order = place(store.table, **{product(store.table): 1})
    service = wiring.order_service(store.table)
    service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    service.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    delivered = service.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=3)
    returned = service.request_return(ALICE, order.order_id, "too small")

    repository = OrderRepository(store.table)
    later = "2030-01-01T00:00:00Z"
    resent = repository.change_status(
        delivered, OrderStatus.RETURN_REQUESTED, updated_at=later, details=StatusDetails(reason="too small")
    )
    assert (resent.version, resent.updated_at, resent.history[-1].reason) == (5, returned.updated_at, "too small")
    with pytest.raises(errors.VersionMismatch):
        repository.change_status(
            delivered, OrderStatus.RETURN_REQUESTED, updated_at=later, details=StatusDetails(reason="too big")
        )
    with pytest.raises(errors.InvalidTransition):  # the service re-reads a mismatch: no longer DELIVERED
        service.request_return(ALICE, order.order_id, "too big")
    assert service.get(ALICE, order.order_id).history[-1].reason == "too small"


@pytest.mark.dynamodb_semantics
def test_a_shipment_whose_answer_was_lost_is_answered_with_the_stored_shipment(store):
    """The write is sent again after it applied (its answer lost): the re-send's condition fails, and the
    stored change is this one (same carrier and tracking number): 200 with the order as stored."""
    from shop.services.orders import ShipmentIn

    order = place(store.table, **{product(store.table): 1})
    service = wiring.order_service(store.table)
    service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    with first_answer_lost(store.client, "UpdateItem"):
        shipped = service.change_status(
            ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=ShipmentIn("DHL", "A-1")
        )
    stored = service.get(ADMIN, order.order_id)
    assert (shipped.version, shipped.shipment, shipped.updated_at) == (3, stored.shipment, stored.updated_at)
    assert shipped.history[-1].tracking_number == "A-1"


@pytest.mark.dynamodb_semantics
def test_returns_per_line_are_appended_restocked_and_refunded_each_once(store):
    """An accepted return is appended to the order's returns in the change's transaction with its restock (a lost
    answer is answered as done, restocked once); each return's refund is recorded on it, once."""
    from shop.models.orders import OrderPayment, PaymentStatus, ReturnLine
    from shop.repository.order_payments import OrderPaymentRepository

    shirt, socks = product(store.table, price_cents=1299, stock=5), product(store.table, price_cents=333, stock=5)
    order = place(store.table, **{shirt: 2, socks: 3})
    service = wiring.order_service(store.table)
    service.change_status(ADMIN, order.order_id, OrderStatus.CONFIRMED, expected_version=1)
    service.change_status(ADMIN, order.order_id, OrderStatus.SHIPPED, expected_version=2, shipment=parcel())
    service.change_status(ADMIN, order.order_id, OrderStatus.DELIVERED, expected_version=3)
    service.request_return(ALICE, order.order_id, "one of each", [ReturnLine(variant_id=shirt, quantity=1)])
    with first_answer_lost(store.client, "TransactWriteItems"):
        part = service.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=5)
    assert part.status is OrderStatus.PARTIALLY_RETURNED
    stored = service.get(ALICE, order.order_id)
    assert (stored.return_request, [r.refund_cents for r in stored.returns]) == (None, [1299])
    catalog = wiring.catalog_service(store.table)
    assert (catalog.get(shirt).stock, catalog.get(socks).stock) == (4, 2)  # restocked once

    service.request_return(ALICE, order.order_id, "the rest")
    done = service.change_status(ADMIN, order.order_id, OrderStatus.RETURNED, expected_version=7)
    assert done.status is OrderStatus.RETURNED
    assert (catalog.get(shirt).stock, catalog.get(socks).stock) == (5, 5)
    stored = service.get(ALICE, order.order_id)
    assert sum(r.refund_cents for r in stored.returns) == stored.total_cents == 3597
    assert [r.version for r in stored.returns] == [6, 8]

    # The refund steps' records, on an order given a captured payment: each return's own, once.
    store.table.client.update_item(
        TableName=store.table.name,
        Key={"PK": {"S": keys.order_key(order.order_id)["PK"]}, "SK": {"S": keys.order_key(order.order_id)["SK"]}},
        UpdateExpression="SET payment = :payment",
        ExpressionAttributeValues={
            ":payment": {
                "M": {
                    name: {"S": value} if isinstance(value, str) else {"N": str(value)}
                    for name, value in OrderPayment(
                        intent_id="pi_1", amount_cents=3597, currency="usd", status=PaymentStatus.CAPTURED
                    )
                    .model_dump(mode="json", exclude_none=True)
                    .items()
                }
            }
        },
    )
    payments = OrderPaymentRepository(store.table)
    kept = {"expected": PaymentStatus.CAPTURED, "return_refunded_cents": 1299, "return_index": 0}
    assert payments.record_payment(order.order_id, **kept)
    assert not payments.record_payment(order.order_id, **kept)
    assert payments.record_payment(
        order.order_id, expected=PaymentStatus.CAPTURED, return_refunded_cents=2298, return_index=1
    )
    stored = service.get(ALICE, order.order_id)
    assert [r.refunded_cents for r in stored.returns] == [1299, 2298]
    assert stored.payment is not None
    assert stored.payment.return_refunded_cents is None
