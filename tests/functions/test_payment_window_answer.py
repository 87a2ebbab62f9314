"""`payment_expires_at` over an API Gateway event (issue 39): the order item holds the window's end as epoch seconds
(written by the placement, removed when the payment settles); GET /orders/{order_id} answers it as an RFC 3339
instant while the order is PENDING_PAYMENT. On moto: no DynamoDB semantic, the item's shape is the repository's."""

from __future__ import annotations

from shop import clock
from tests.functions.apigw import ADMIN, ALICE, call
from tests.support.fake_payments import FakePayments
from tests.support.unpaid_orders import place_unpaid


def test_the_stored_window_is_answered_as_an_instant_while_unpaid(moto_api):
    unpaid = place_unpaid(moto_api.table, FakePayments(), [("prod-cable", "USB-C cable", 900, 1)])
    for claims in (ALICE, ADMIN):
        reply = call("GET", f"/orders/{unpaid.order_id}", claims=claims)
        assert reply.status == 200, reply.body
        assert (reply.body["status"], reply.body["payment_expires_at"]) == (
            "PENDING_PAYMENT",
            clock.iso_from_epoch(unpaid.expires_at),
        )
    placed_without_payment = call("GET", "/orders/00-alice-pending", claims=ALICE)
    assert placed_without_payment.body["payment_expires_at"] is None
