"""A code's usage limit on DynamoDB Local with real threads (docs/decisions.md, 078): 12 concurrent
checkouts of a code with `usage_limit` 3 place exactly 3 orders with it, the rest answered PROMO_CODE_EXHAUSTED with
nothing written; a cancel gives one use back (once, in its own transaction) and a 4th checkout takes it; an order
that expires unpaid gives its use back as well. The counters are the promotion's, each its own partition."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from shop import clock, errors, wiring
from shop.models import OrderStatus
from shop.models.orders import PaymentStatus
from shop.repository.checkout_settings import CheckoutSettingsRepository
from shop.repository.order_payments import OrderPaymentRepository
from shop.services.actor import Actor
from shop.services.orders import RequestedLine
from tests.support.factories import ADDRESS, ADMIN, product

pytestmark = [pytest.mark.integration, pytest.mark.table_without_stream, pytest.mark.dynamodb_semantics]

CHECKOUTS = 12
LIMIT = 3
# A client answered 503 (Retry-After: transactions on one counter wait for DynamoDB Local's item locks) tries again
# with the same Idempotency-Key, as in test_flash_sale.py.
CLIENT_RETRIES = 20


def limited_code(table, code: str, limit: int):
    service = wiring.order_service(table).checkout
    return service.create_promotion(
        ADMIN,
        kind="fixed",
        value=100,
        code=code,
        automatic=False,
        min_subtotal_cents=0,
        starts_at=None,
        ends_at=None,
        usage_limit=limit,
    )


def test_twelve_concurrent_checkouts_use_a_code_of_limit_three_three_times(local_store):
    table = local_store.table
    pid = product(table, price_cents=1000, stock=100)
    promotion = limited_code(table, "FLASH3", LIMIT)
    service = wiring.order_service(table)
    start = threading.Barrier(CHECKOUTS)
    unavailable = Counter[int]()

    def checkout(index: int) -> tuple[str, str | None]:
        start.wait()
        for _ in range(CLIENT_RETRIES):
            try:
                order = service.place(
                    Actor(f"buyer-{index}"),
                    address=ADDRESS,
                    lines=[RequestedLine(pid, 1)],
                    idempotency_key=f"flash-{index}",
                    promo_code="flash3",
                )
                return "placed", order.order_id
            except errors.ServiceUnavailable:
                unavailable[index] += 1
            except errors.DomainError as refused:
                return refused.code, None
        return "gave up", None

    with ThreadPoolExecutor(CHECKOUTS) as pool:
        outcomes = list(pool.map(checkout, range(CHECKOUTS)))
    codes = Counter(code for code, _ in outcomes)
    assert codes == {"placed": LIMIT, "PROMO_CODE_EXHAUSTED": CHECKOUTS - LIMIT}, (codes, unavailable)
    counters = CheckoutSettingsRepository(table)
    assert sum(counters.uses(promotion)) == LIMIT
    assert wiring.catalog_service(table).get(pid).stock == 100 - LIMIT  # the refused wrote nothing

    placed = [order_id for code, order_id in outcomes if code == "placed"]
    first = service.cancel(Actor(next(f"buyer-{i}" for i, o in enumerate(outcomes) if o[1] == placed[0])), placed[0])
    assert first.status is OrderStatus.CANCELLED
    assert sum(counters.uses(promotion)) == LIMIT - 1
    fourth = service.place(Actor("late"), address=ADDRESS, lines=[RequestedLine(pid, 1)], promo_code="FLASH3")
    assert [p.discount_cents for p in fourth.promotions] == [100]
    assert sum(counters.uses(promotion)) == LIMIT
    with pytest.raises(errors.PromoCodeExhausted):
        service.place(Actor("later"), address=ADDRESS, lines=[RequestedLine(pid, 1)], promo_code="FLASH3")


def test_an_order_that_expires_unpaid_gives_its_use_back(local_store):
    table = local_store.table
    pid = product(table, price_cents=1000, stock=10)
    promotion = limited_code(table, "ONEUSE", 1)
    service = wiring.order_service(table)
    order = service.place(Actor("buyer"), address=ADDRESS, lines=[RequestedLine(pid, 1)], promo_code="oneuse")
    counters = CheckoutSettingsRepository(table)
    assert counters.uses(promotion) == [1]
    # What the windows' sweep does to an unpaid order (shop.services.payments), on its repository; a PENDING order
    # under PAYMENTS=none settles the same way
    payments = OrderPaymentRepository(table)
    stored = payments.current(order.order_id)
    assert stored is not None
    assert stored.promotion_uses == {promotion.promotion_id: 0}
    settled = payments.settle(
        stored,
        OrderStatus.EXPIRED,
        payment_status=PaymentStatus.FAILED,
        updated_at=clock.iso_now(),
        archive_at=None,
        release_stock=True,
    )
    assert settled.name == "DONE"
    assert counters.uses(promotion) == [0]
    assert order.status is OrderStatus.PENDING
