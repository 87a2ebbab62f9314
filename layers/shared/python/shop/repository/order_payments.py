"""An order's payment on the table: the status changes a payment makes, and the payment steps' records.

- `settle` moves a PENDING_PAYMENT order (CONFIRMED, PAYMENT_FAILED, EXPIRED) in ONE transaction: the order's
  update (conditional on its status and version), the PAYMENT_DUE item deleted (the window is over, whoever
  closed it), the stock back where it was taken (PAYMENT_FAILED, EXPIRED), and the webhook event's mark
  (conditional on its absence). A retry after a commit finds the mark (DUPLICATE) or the order moved (STALE).
- `record_payment` writes one step's outcome (captured, cancelled, refunded) on the order's `payment` map,
  conditional on the payment's state as the step read it: a replayed step records nothing twice. These writes
  do not move the order's version (they are not status changes), so they never conflict with an admin's
  change of the order.
"""

from __future__ import annotations

import uuid
from typing import Any

from shop import keys
from shop.models import Order, OrderStatus
from shop.models.orders import PaymentStatus
from shop.models.payments import PaymentEvent, Settled
from shop.repository.orders import OrderRepository, _on_product_items, _stock_returns, order_from_items
from shop.repository.payment_events import PaymentEventRepository
from shop.repository.stock_shards import restock_update
from shop.repository.store import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    conditional_write,
    from_item,
    to_item,
    transact_write,
    translated_errors,
    values,
)

# Namespace of the settle transactions' client request tokens (uuid5 of the change).
SETTLE_TOKENS = uuid.UUID("0b6f3f52-2f43-5c55-9d71-5a0c8f3e9e11")


class OrderPaymentRepository:
    def __init__(self, table: Table, shards: int | None = None, provider: str = "stripe") -> None:
        self.table = table
        self.orders = OrderRepository(table, shards)
        self.marks = PaymentEventRepository(table, provider)

    def current(self, order_id: str) -> Order | None:
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name, Key=to_item(keys.order_key(order_id)), ConsistentRead=True
            )
        item = response.get("Item")
        return order_from_items([from_item(item)]) if item else None

    def mark_only(self, event: PaymentEvent, *, expires_at: int) -> bool:
        return self.marks.mark_applied(event, expires_at=expires_at)

    def settle(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        payment_status: PaymentStatus,
        updated_at: str,
        archive_at: int | None,
        release_stock: bool,
        event: PaymentEvent | None = None,
        event_expires_at: int = 0,
    ) -> Settled:
        name = self.table.name
        gsi = keys.order_status_gsi(new_status, order.order_id, order.created_at, self.orders.shards)
        sets = [
            "#status = :new",
            "version = :next",
            "updated_at = :at",
            "GSI1PK = :gpk",
        ]
        extra: dict[str, Any] = {}
        names = {"#status": "status"}
        condition = "#status = :old AND version = :version"
        if order.payment is not None:  # (an unpaid order always has one; expiry does not depend on it)
            sets.append("payment.#pstatus = :pstatus")
            names["#pstatus"] = "status"
            extra["pstatus"] = payment_status.value
            condition += " AND attribute_exists(payment)"
        if new_status is OrderStatus.CONFIRMED:
            sets.append("confirmed_at = :at")
        if archive_at is not None:
            sets.append("#ttl = :ttl")
            extra["ttl"] = archive_at
            names["#ttl"] = keys.TTL_ATTRIBUTE
        update = {
            "Update": {
                "TableName": name,
                "Key": to_item(keys.order_key(order.order_id)),
                "UpdateExpression": "SET " + ", ".join(sets) + " REMOVE payment_expires_at, status_reason",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values(
                    new=new_status.value,
                    next=order.version + 1,
                    at=updated_at,
                    gpk=gsi[keys.GSI1PK],
                    old=order.status.value,
                    version=order.version,
                    **extra,
                ),
            }
        }
        window = {"Delete": {"TableName": name, "Key": to_item(keys.payment_due_key(order.order_id))}}
        head: list[dict[str, Any]] = [update, window]
        if event is not None:
            head.append(self.marks.mark_put(event, expires_at=event_expires_at))
        returns = _stock_returns(order, order.lines) if release_stock else []
        # The token names this change of this order version: a re-send after a lost answer is the same
        # transaction to DynamoDB, never a second restock. (The event's id is part of it: another event's
        # transaction is another request.)
        token = str(
            uuid.uuid5(
                SETTLE_TOKENS,
                f"{order.order_id}|{order.version}|{new_status.value}|{updated_at}|{event.event_id if event else ''}",
            )
        )
        for attempt, stock in enumerate((returns, _on_product_items(returns))):
            items = head + [restock_update(self.table, pid, shard, quantity) for pid, shard, quantity in stock]
            try:
                transact_write(self.table, items, ClientRequestToken=token if attempt == 0 else _again(token))
            except TransactionCancelled as cancelled:
                if event is not None and cancelled.failed_condition(2):
                    return Settled.DUPLICATE
                if cancelled.failed_condition(0):
                    return Settled.STALE
                shard_gone = any(
                    cancelled.failed_condition(len(head) + i) for i, (_, shard, _) in enumerate(stock) if shard
                )
                if attempt == 0 and shard_gone:
                    # A shard the order took from is gone (the product was spread over fewer shards since): that
                    # stock goes back to the product item, as a cancel's does (shop.repository.orders).
                    continue
                raise cancelled.unexplained() from cancelled
            return Settled.DONE
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def record_payment(
        self,
        order_id: str,
        *,
        expected: PaymentStatus | None,
        status: PaymentStatus | None = None,
        captured_cents: int | None = None,
        refunded_cents: int | None = None,
        expected_refunded_cents: int | None = None,
    ) -> bool:
        sets: list[str] = []
        attr_values: dict[str, Any] = {}
        if status is not None:
            sets.append("payment.#pstatus = :status")
            attr_values["status"] = status.value
        if captured_cents is not None:
            sets.append("payment.captured_cents = :captured")
            attr_values["captured"] = captured_cents
        if refunded_cents is not None:
            sets.append("payment.refunded_cents = :refunded")
            attr_values["refunded"] = refunded_cents
        condition = "attribute_exists(payment)"
        if expected is not None:
            condition += " AND payment.#pstatus = :expected"
            attr_values["expected"] = expected.value
        if expected_refunded_cents is not None:
            # Items written before the field existed hold no refunded_cents: 0.
            condition += (
                " AND (payment.refunded_cents = :seen_refunded OR attribute_not_exists(payment.refunded_cents))"
                if expected_refunded_cents == 0
                else " AND payment.refunded_cents = :seen_refunded"
            )
            attr_values["seen_refunded"] = expected_refunded_cents
        try:
            with conditional_write():
                self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.order_key(order_id)),
                    UpdateExpression="SET " + ", ".join(sets),
                    ConditionExpression=condition,
                    **(
                        {"ExpressionAttributeNames": {"#pstatus": "status"}}
                        if status is not None or expected is not None
                        else {}
                    ),
                    ExpressionAttributeValues=values(**attr_values),
                )
        except ConditionFailed:
            return False
        return True


def _again(token: str) -> str:
    return str(uuid.uuid5(SETTLE_TOKENS, token))
