"""An order's payment on the table: the status changes a payment makes, and the payment steps' records.

- `settle` moves a PENDING_PAYMENT order (CONFIRMED, PAYMENT_FAILED, EXPIRED) conditionally on its status and
  version (and, for a webhook's event, on the event's intent being the order's): ONE UpdateItem when no stock
  goes back (an authorisation, an expiry that finds the intent authorised), else ONE transaction of the order's
  update and the stock back where it was taken (PAYMENT_FAILED, EXPIRED). The client secret leaves the order (it is shown only
  while the order is PENDING_PAYMENT), which keeps a paid order's item under 1 KB. A retry after a commit finds
  the order moved (STALE): the order's own state is the guard, no per-event mark is written.
- `record_payment` writes one step's outcome (captured, cancelled, refunded) on the order's `payment` map,
  conditional on the payment's state as the step read it: a replayed step records nothing twice. These writes
  do not move the order's version (they are not status changes), so they never conflict with an admin's
  change of the order.
"""

from __future__ import annotations

import uuid
from typing import Any

from shop import keys
from shop.config import StatusShardSwitch, settings
from shop.models import Order, OrderStatus
from shop.models.orders import CLOSED_DISPUTE_STATUSES, PaymentDispute, PaymentFailure, PaymentStatus
from shop.models.payments import Settled
from shop.repository.order_items import (
    RETURNS,
    STATUS_REASON,
    on_product_items,
    order_from_items,
    promotion_give_backs,
    status_move_values,
    stock_returns,
)
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
    def __init__(self, table: Table, shards: int | None = None) -> None:
        """`shards` fixes the status index's count (tests, tools); else the settings, as OrderRepository reads
        them (that repository is not imported: the webhook's first delivery would load it for nothing)."""
        self.table = table
        self._switch = StatusShardSwitch(shards) if shards is not None else None

    @property
    def shards(self) -> int:
        """The count new and changed orders are indexed under (OrderRepository.shards)."""
        return (self._switch if self._switch is not None else settings().status_switch).writes

    def _switch_counts(self) -> tuple[int, ...]:
        switch = self._switch if self._switch is not None else settings().status_switch
        return tuple(sorted({switch.current, *([switch.next] if switch.next is not None else [])}))

    def overdue(self, placed_before: str, *, per_shard: int) -> list[tuple[str, int | None]]:
        """(order id, payment window's end) of PENDING_PAYMENT orders placed before `placed_before`: one Query per
        shard of the status index (both counts during a switch), at most `per_shard` each, oldest first. Every
        item read is one returned (the key condition selects them: read amplification 1.00)."""
        found: dict[str, int | None] = {}
        for count in self._switch_counts():
            for shard in range(count):
                with translated_errors():
                    response = self.table.client.query(
                        TableName=self.table.name,
                        IndexName=keys.GSI1,
                        KeyConditionExpression="GSI1PK = :pk AND GSI1SK < :before",
                        ExpressionAttributeValues=values(
                            pk=keys.order_status_pk(OrderStatus.PENDING_PAYMENT.value, shard), before=placed_before
                        ),
                        ProjectionExpression="order_id, payment_expires_at",
                        Limit=per_shard,
                    )
                for item in response.get("Items", []):
                    plain = from_item(item)
                    expires = plain.get("payment_expires_at")
                    found[str(plain["order_id"])] = int(expires) if expires is not None else None
        return list(found.items())

    def current(self, order_id: str, *, consistent: bool = True) -> Order | None:
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name, Key=to_item(keys.order_key(order_id)), ConsistentRead=consistent
            )
        item = response.get("Item")
        return order_from_items([from_item(item)]) if item else None

    def settle(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        payment_status: PaymentStatus,
        updated_at: str,
        archive_at: int | None,
        release_stock: bool,
        intent_id: str | None = None,
    ) -> Settled:
        name = self.table.name
        gsi = keys.order_status_gsi(new_status, order.order_id, order.created_at, self.shards)
        sets = [
            "#status = :new",
            "version = :next",
            "updated_at = :at",
            "GSI1PK = :gpk",
        ]
        removes = ["payment_expires_at", STATUS_REASON]
        extra: dict[str, Any] = {}
        names = {"#status": "status"}
        condition = "#status = :old AND version = :version"
        if order.payment is not None:  # (an unpaid order always has one; expiry does not depend on it)
            sets.append("payment.#pstatus = :pstatus")
            names["#pstatus"] = "status"
            extra["pstatus"] = payment_status.value
            condition += " AND attribute_exists(payment)"
            # Shown only while the order waits for its payment (OrderService.payment_of): never again after this.
            removes.append("payment.client_secret")
            if new_status is OrderStatus.CONFIRMED:
                # A declined attempt is shown only while the order waits too (PaymentView.last_failure): paid, it
                # leaves the order, which keeps a paid order's item under 1 KB (a Stripe decline is ~110 bytes).
                removes.append("payment.last_failure")
            if intent_id is not None:  # a webhook's event: its intent is the order's (or none is attached yet)
                condition += " AND (attribute_not_exists(payment.intent_id) OR payment.intent_id = :intent)"
                extra["intent"] = intent_id
        if new_status is OrderStatus.CONFIRMED:
            sets.append("confirmed_at = :at")
        if archive_at is not None:
            sets.append("#ttl = :ttl")
            extra["ttl"] = archive_at
            names["#ttl"] = keys.TTL_ATTRIBUTE
        update = {
            "TableName": name,
            "Key": to_item(keys.order_key(order.order_id)),
            "UpdateExpression": "SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": status_move_values(order, new_status, updated_at, gsi[keys.GSI1PK], **extra),
        }
        returns = stock_returns(order, order.lines) if release_stock else []
        if not returns:
            # One item: a retry after a lost answer finds the version moved (STALE), and the re-read shows it done.
            try:
                with conditional_write():
                    self.table.client.update_item(**update)
            except ConditionFailed:
                return Settled.STALE
            return Settled.DONE
        # The token names this change of this order version: a re-send after a lost answer is the same
        # transaction to DynamoDB, never a second restock.
        token = str(
            uuid.uuid5(
                SETTLE_TOKENS, f"{order.order_id}|{order.version}|{new_status.value}|{updated_at}|{intent_id or ''}"
            )
        )
        # An order that ends unpaid (expired, failed, cancelled) gives back the promotion uses it took.
        give_backs = promotion_give_backs(self.table, order) if new_status is not OrderStatus.CONFIRMED else []
        for attempt, stock in enumerate((returns, on_product_items(returns))):
            items = [{"Update": update}] + [
                restock_update(self.table, pid, shard, quantity) for pid, shard, quantity in stock
            ]
            items += give_backs
            try:
                transact_write(self.table, items, ClientRequestToken=token if attempt == 0 else _again(token))
            except TransactionCancelled as cancelled:
                if cancelled.failed_condition(0):
                    return Settled.STALE
                shard_gone = any(cancelled.failed_condition(1 + i) for i, (_, shard, _) in enumerate(stock) if shard)
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
        at_most_refunded_cents: int | None = None,
        return_refunded_cents: int | None = None,
        return_index: int | None = None,
    ) -> bool:
        """A step's outcome, conditional on the payment's status (`expected`), on the refunds recorded being at most
        `at_most_refunded_cents` (a provider's refund recorded meanwhile is never lowered), and, for a return's
        refund, on none being recorded yet: on the order's accepted return at `return_index`, or (None) the
        payment's own, of a whole order's refund."""
        sets: list[str] = []
        attr_values: dict[str, Any] = {}
        condition = "attribute_exists(payment)"
        names: dict[str, str] = {}
        if status is not None:
            sets.append("payment.#pstatus = :status")
            attr_values["status"] = status.value
            names["#pstatus"] = "status"
        if captured_cents is not None:
            sets.append("payment.captured_cents = :captured")
            attr_values["captured"] = captured_cents
        if refunded_cents is not None:
            sets.append("payment.refunded_cents = :refunded")
            attr_values["refunded"] = refunded_cents
        if return_refunded_cents is not None:
            # A list index is part of the expression's path: an int, never the caller's text.
            field = "payment.return_refunded_cents"
            if return_index is not None:
                field = f"#returns[{int(return_index)}].refunded_cents"
                names["#returns"] = RETURNS  # a reserved word
            sets.append(f"{field} = :returned")
            attr_values["returned"] = return_refunded_cents
            condition += f" AND attribute_not_exists({field})"
        if expected is not None:
            condition += " AND payment.#pstatus = :expected"
            attr_values["expected"] = expected.value
            names["#pstatus"] = "status"
        if at_most_refunded_cents is not None:
            # Items written before the field existed hold no refunded_cents: 0.
            condition += " AND (attribute_not_exists(payment.refunded_cents) OR payment.refunded_cents <= :ceiling)"
            attr_values["ceiling"] = at_most_refunded_cents
        return self._update_payment(order_id, "SET " + ", ".join(sets), condition, names, attr_values)

    def record_failed_attempt(self, order_id: str, *, intent_id: str | None, failure: PaymentFailure) -> bool:
        """The latest failed attempt on a PENDING_PAYMENT order's intent; an older or repeated report writes nothing."""
        condition = (
            "#status = :waiting AND attribute_exists(payment)"
            " AND (attribute_not_exists(payment.last_failure) OR payment.last_failure.#at < :at)"
        )
        attr_values: dict[str, Any] = {
            "waiting": OrderStatus.PENDING_PAYMENT.value,
            "failure": failure.model_dump(mode="json", exclude_none=True),
            "at": failure.at,
        }
        if intent_id is not None:
            condition += " AND (attribute_not_exists(payment.intent_id) OR payment.intent_id = :intent)"
            attr_values["intent"] = intent_id
        return self._update_payment(
            order_id, "SET payment.last_failure = :failure", condition, {"#status": "status", "#at": "at"}, attr_values
        )

    def record_provider_refunds(self, order_id: str, *, refunded_cents: int) -> bool:
        """Everything refunded on the order's charge, as the provider reports it: only ever raised."""
        return self._update_payment(
            order_id,
            "SET payment.refunded_cents = :refunded",
            "attribute_exists(payment) AND (attribute_not_exists(payment.refunded_cents)"
            " OR payment.refunded_cents < :refunded)",
            None,
            {"refunded": refunded_cents},
        )

    def record_dispute(self, order_id: str, dispute: PaymentDispute) -> bool:
        """The dispute as the provider reports it, unless a later report is recorded already."""
        condition = "attribute_exists(payment) AND (attribute_not_exists(payment.dispute) OR payment.dispute.#at < :at"
        names = {"#at": "updated_at"}
        attr_values: dict[str, Any] = {
            "dispute": dispute.model_dump(mode="json", exclude_none=True),
            "at": dispute.updated_at,
        }
        if dispute.status in CLOSED_DISPUTE_STATUSES:
            closed = [f":closed{i}" for i in range(len(CLOSED_DISPUTE_STATUSES))]
            condition += f" OR (payment.dispute.#at = :at AND NOT payment.dispute.#dstatus IN ({', '.join(closed)}))"
            names["#dstatus"] = "status"
            attr_values.update({name[1:]: status for name, status in zip(closed, CLOSED_DISPUTE_STATUSES, strict=True)})
        return self._update_payment(order_id, "SET payment.dispute = :dispute", condition + ")", names, attr_values)

    def _update_payment(
        self,
        order_id: str,
        update: str,
        condition: str,
        names: dict[str, str] | None,
        attr_values: dict[str, Any],
    ) -> bool:
        try:
            with conditional_write():
                self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.order_key(order_id)),
                    UpdateExpression=update,
                    ConditionExpression=condition,
                    **({"ExpressionAttributeNames": names} if names else {}),
                    ExpressionAttributeValues=values(**attr_values),
                )
        except ConditionFailed:
            return False
        return True


def _again(token: str) -> str:
    return str(uuid.uuid5(SETTLE_TOKENS, token))
