"""Orders: atomic placement, reads, the sharded status index and versioned status changes."""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any

from shop import errors, keys
from shop.config import StatusShardSwitch, settings
from shop.limits import MAX_PARALLEL_QUERIES, MAX_STATUS_SHARDS, MAX_TRANSACTION_ITEMS
from shop.models import Order, OrderLine, OrderStatus, OrderSummary, Page, StatusDetails
from shop.models.carts import CartClaim
from shop.models.checkout import PromotionUse, SettingsCheck
from shop.models.orders import (
    DERIVED_BREAKDOWN,
    DERIVED_LINE_FIELDS,
    NO_DETAILS,
    OrderPayment,
    OrderPaymentSummary,
    PaymentStatus,
    Placement,
    UnpaidLimits,
)
from shop.models.products import ProductStatus
from shop.models.stock import StockTake
from shop.repository import pagination, status_switch, unpaid_holds
from shop.repository.carts import checkout_failed, checkout_update
from shop.repository.order_items import (
    RETURN_REQUEST,
    RETURNS,
    STATUS_REASON,
    Return,
    latest_entry,
    on_product_items,
    order_from_items,
    promotion_give_backs,
    status_move_values,
    stock_returns,
)
from shop.repository.queries import collection_page
from shop.repository.shard_walk import EXHAUSTED, Cursor, ShardWalk
from shop.repository.stock_shards import restock_update, shard_label, take_update
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

# Namespace of the status changes' client request tokens (uuid5 of the change).
STATUS_CHANGE_TOKENS = uuid.UUID("6f0c2a4e-9a53-5b1e-8f3d-2d7c1e0b9a61")
SUMMARY_FIELDS = ("order_id", "customer_id", "status", "version", "total_cents", "created_at", "updated_at")


@cache
def _shard_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=MAX_PARALLEL_QUERIES, thread_name_prefix="status-shard")


# The breakdown's fields left out of the order item while at their default (an order without shipping, tax or
# discount stores none of them), besides the ones Order derives on read (DERIVED_BREAKDOWN, DERIVED_LINE_FIELDS);
# the currency when the payment map holds it.
_BREAKDOWN_DEFAULTS = {"shipping_cents": 0, "prices_include_tax": False}


def _stored_order(order: Order) -> dict[str, Any]:
    # The promotions are the DISCOUNTS item's (written once, beside the order: keys.order_discounts_key).
    exclude = {"history", "archived", "promotions", *DERIVED_BREAKDOWN}
    dumped = order.model_dump(mode="json", exclude=exclude, exclude_none=True)
    for name, default in _BREAKDOWN_DEFAULTS.items():
        if dumped.get(name) == default:
            del dumped[name]
    if order.payment is not None and order.payment.currency == order.currency:
        dumped.pop("currency", None)
    if not dumped.get(RETURNS):
        dumped.pop(RETURNS, None)
    dumped["lines"] = [
        {name: value for name, value in line.items() if name not in DERIVED_LINE_FIELDS} for line in dumped["lines"]
    ]
    return dumped


def order_item(order: Order, shards: int) -> dict[str, Any]:
    return {
        **keys.order_key(order.order_id),
        **keys.order_status_gsi(order.status, order.order_id, order.created_at, shards),
        "entity": "ORDER",
        **_stored_order(order),
        "stock_taken": order.stock_taken or None,  # excluded from answers, kept for the restock
        # excluded from answers, kept to give the uses back (shop.repository.order_items.promotion_give_backs)
        "promotion_uses": order.promotion_uses or None,
        "customer_uses": order.customer_uses or None,
        # PAYMENTS=stripe: a map with OrderPayment's field names (the intent, created before the placement's
        # transaction, written with it; fields at their defaults left out) and the payment window's end; both
        # excluded from answers, absent under PAYMENTS=none.
        "payment": payment_map(order.payment) if order.payment else None,
        "payment_expires_at": order.payment_expires_at,
    }


# The payment map's fields left out while they hold their default (OrderPayment reads them back as it): a paid
# order's item stays under 1 KB through its life, where every byte over costs each later write a unit.
# `status` is always written: the payment steps' conditions compare it.
_PAYMENT_DEFAULTS = {"provider": "stripe", "captured_cents": 0, "refunded_cents": 0}


def payment_map(payment: OrderPayment) -> dict[str, Any]:
    """The order item's `payment` map: OrderPayment's fields, without None and without the defaults above. Items
    written before (every field present) read the same."""
    dumped = payment.model_dump(mode="json", exclude_none=True)
    return {name: value for name, value in dumped.items() if _PAYMENT_DEFAULTS.get(name, ...) != value}


@dataclass(frozen=True)
class _StockItem:
    """One stock decrement of the placement transaction: which line, and where it takes from."""

    index: int
    line: OrderLine
    take: StockTake


def _stock_check_failures(stock_items: list[_StockItem], cancelled: TransactionCancelled) -> None:
    """Raise what the failed stock conditions mean (nothing when none failed).

    A flash-sale product's short place (a shard, or its product item) is StockSourceShort with what each
    held, for the order service to try elsewhere; a plain product's is OutOfStock."""
    missing, short, repriced, unavailable = [], [], [], []
    seen: dict[str, dict[int | None, int]] = {}
    shard_counts: dict[str, int] = {}
    for item in stock_items:
        if not cancelled.failed_condition(item.index):
            continue
        pid, source = item.line.product_id, item.take.source
        current = cancelled.old_item(item.index)
        if current is None:
            if source is None:
                missing.append(pid)
            else:  # the shard is gone (the product was spread over fewer shards meanwhile)
                seen.setdefault(pid, {})[source] = 0
            continue
        if current.get("status") == ProductStatus.ARCHIVED:
            unavailable.append(pid)
            continue
        stock = int(current.get("stock", 0))
        if stock < item.take.quantity:
            count = int(current.get("stock_shards", 1)) if source is None else 0
            if source is None and count <= 1:
                short.append(pid)
            else:
                seen.setdefault(pid, {})[source] = stock
                if count > 1:
                    shard_counts[pid] = count
        elif int(current.get("price_cents", -1)) != item.line.unit_price_cents:
            repriced.append(pid)
    if missing:
        raise errors.ProductNotFound(missing) from cancelled
    if unavailable:
        raise errors.ProductUnavailable(unavailable) from cancelled
    if short:
        raise errors.OutOfStock(short) from cancelled
    if seen:
        raise errors.StockSourceShort(seen, shard_counts) from cancelled
    if repriced:
        raise errors.PriceChanged(repriced) from cancelled


def _taken_from_shards(takes: Mapping[str, Sequence[StockTake]]) -> dict[str, dict[str, int]]:
    taken: dict[str, dict[str, int]] = {}
    for pid, product_takes in takes.items():
        for take in product_takes:
            if take.source is not None:
                shards = taken.setdefault(pid, {})
                label = shard_label(take.source)
                shards[label] = shards.get(label, 0) + take.quantity
    return taken


def _request_token(order_id: str, attempt: int) -> str:
    """The placement transaction's ClientRequestToken (at most 36 characters; an order id is a 26-character
    ULID): DynamoDB refuses one token reused with other items within its 10 minutes."""
    return order_id if attempt == 0 else f"{order_id}-{attempt}"


class OrderRepository:
    """`shards` fixes the status index's count (tests, tools); `switch` a shard-count switch under way;
    neither: the settings (STATUS_SHARDS, STATUS_SHARDS_NEXT, STATUS_SHARDS_WRITERS)."""

    def __init__(self, table: Table, shards: int | None = None, *, switch: StatusShardSwitch | None = None) -> None:
        self.table = table
        self._switch = switch if switch is not None else StatusShardSwitch(shards) if shards is not None else None

    @property
    def switch(self) -> StatusShardSwitch:
        return self._switch if self._switch is not None else settings().status_switch

    @property
    def shards(self) -> int:
        """The count new and changed orders are indexed under."""
        return self.switch.writes

    def place(
        self,
        order: Order,
        cart: CartClaim | None = None,
        *,
        placement: Placement | None = None,
        takes: Mapping[str, Sequence[StockTake]] | None = None,
        attempt: int = 0,
        unpaid: UnpaidLimits | None = None,
        uses: Sequence[PromotionUse] = (),
        settings: SettingsCheck | None = None,
    ) -> Order:
        """Order, stock decrements (checked against stock and price), customer index, cart: one transaction.

        The order id (with the placement's attempt after the first: a placement keeps one order id across its
        reprice and stock attempts, each a different transaction) is the ClientRequestToken, so an SDK retry
        of a transaction that already succeeded is answered as a success instead of a conflict. With a placement (the
        customer's Idempotency-Key) the transaction also claims it: a placement re-run after its
        first run died (its idempotency lock expired) returns the order that run placed, once.
        A line's stock comes from its product item, or from the places `takes` names for its product
        (flash-sale shards, each checked for stock and price); the order records the shards it took from.
        With `unpaid` (a PENDING_PAYMENT order) the customer's unpaid hold takes the order within those limits in
        the same transaction (shop.repository.unpaid_holds): UnpaidOrderLimit, with what it held, when it refuses.
        """
        takes = takes or {}
        order = order.model_copy(update={"stock_taken": _taken_from_shards(takes)})
        name = self.table.name
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": name,
                    "Item": to_item(order_item(order, self.shards)),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
        ]
        stock_items: list[_StockItem] = []
        for line in order.lines:
            for take in takes.get(line.product_id) or [StockTake(None, line.quantity)]:
                stock_items.append(_StockItem(len(items), line, take))
                items.append(take_update(self.table, line.product_id, take, price_cents=line.unit_price_cents))
        summary = {field: getattr(order, field) for field in SUMMARY_FIELDS}
        items.append(
            {
                "Put": {
                    "TableName": name,
                    "Item": to_item(
                        {
                            **keys.customer_order_key(order.customer_id, order.order_id),
                            "entity": "CUSTOMER_ORDER",
                            **summary,
                        }
                    ),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            }
        )
        if order.promotions:  # what they took off, beside the order (read with it by pattern 15)
            items.append(
                {
                    "Put": {
                        "TableName": name,
                        "Item": to_item(
                            {
                                **keys.order_discounts_key(order.order_id),
                                "entity": "ORDER_DISCOUNTS",
                                "promotions": [p.model_dump(exclude_none=True) for p in order.promotions],
                                # the ones without a usage limit: the stream counts them at confirmation (decision 080)
                                "counted": order.counted_promotions or None,
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                }
            )
        cart_index = len(items) if cart is not None else None
        if cart is not None:  # the session's or the customer's cart checked out, emptied if still as read
            items.append(checkout_update(self.table, cart, at=order.created_at))
        hold_index = len(items) if unpaid is not None else None
        if unpaid is not None:  # PAYMENTS=stripe: the customer's unpaid hold takes the order, within the limits
            items.append(unpaid_holds.take(self.table, order, unpaid))
        use_items = self._promotion_uses(items, order, uses)
        settings_index = len(items) if settings is not None else None
        if settings is not None:  # the checkout's settings it was priced with are still the latest edit's
            items.append(self._settings_check(settings))
        if placement is not None:
            items.append(
                {
                    "Put": {
                        "TableName": name,
                        "Item": to_item(
                            {
                                **keys.placement_key(order.customer_id, placement.key),
                                "entity": "ORDER_PLACEMENT",
                                "order_id": order.order_id,
                                keys.TTL_ATTRIBUTE: placement.expires_at,
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                }
            )
        if len(items) > MAX_TRANSACTION_ITEMS:  # DynamoDB would refuse it as invalid: a 422 that says never retry
            raise errors.StockTooScattered(len(items), MAX_TRANSACTION_ITEMS)
        try:
            transact_write(self.table, items, ClientRequestToken=_request_token(order.order_id, attempt))
        except TransactionCancelled as cancelled:
            if placement is not None and cancelled.failed_condition(len(items) - 1):
                return self.get(self._placed_order_id(order.customer_id, placement))
            if cart is not None and cart_index is not None and cancelled.failed_condition(cart_index):
                raise checkout_failed(cart) from cancelled
            if unpaid is not None and hold_index is not None and cancelled.failed_condition(hold_index):
                raise unpaid_holds.refused(order, unpaid, cancelled.old_item(hold_index)) from cancelled
            for index, promotion_id, shard in use_items:
                if cancelled.failed_condition(index):
                    raise errors.PromotionUseRefused(promotion_id, shard) from cancelled
            if settings_index is not None and cancelled.failed_condition(settings_index):
                raise errors.CheckoutSettingsChanged() from cancelled
            self._raise_placement_failure(stock_items, cancelled)
        return order

    def _settings_check(self, settings: SettingsCheck) -> dict[str, Any]:
        key = keys.checkout_version_shard_key(settings.shard)
        check: dict[str, Any] = {"TableName": self.table.name, "Key": to_item(key)}
        if settings.edit_id is None:
            check["ConditionExpression"] = "attribute_not_exists(edit_id)"
        else:
            check["ConditionExpression"] = "edit_id = :edit"
            check["ExpressionAttributeValues"] = values(edit=settings.edit_id)
        return {"ConditionCheck": check}

    def _promotion_uses(
        self, items: list[dict[str, Any]], order: Order, uses: Sequence[PromotionUse]
    ) -> list[tuple[int, str, int | None]]:
        """Appends to `items` the updates taking each use: its counter within its allotment, the customer's own count
        within their limit; (index, promotion id, shard, None for the customer's count) of each."""
        taken: list[tuple[int, str, int | None]] = []
        for use in uses:
            if use.shard is not None:
                taken.append((len(items), use.promotion_id, use.shard))
                items.append(
                    {
                        "Update": {
                            "TableName": self.table.name,
                            "Key": to_item(keys.promotion_uses_key(use.promotion_id, use.shard)),
                            "UpdateExpression": "SET used = if_not_exists(used, :zero) + :one, entity = :entity",
                            "ConditionExpression": "attribute_not_exists(used) OR used < :most",
                            "ExpressionAttributeValues": values(
                                zero=0, one=1, most=use.allotment, entity="PROMOTION_USES"
                            ),
                        }
                    }
                )
            if use.customer_limit is not None:
                taken.append((len(items), use.promotion_id, None))
                items.append(
                    {
                        "Update": {
                            "TableName": self.table.name,
                            "Key": to_item(keys.customer_promotion_key(order.customer_id, use.promotion_id)),
                            "UpdateExpression": "SET uses = if_not_exists(uses, :zero) + :one, entity = :entity",
                            "ConditionExpression": "attribute_not_exists(uses) OR uses < :most",
                            "ExpressionAttributeValues": values(
                                zero=0, one=1, most=use.customer_limit, entity="CUSTOMER_PROMOTION"
                            ),
                        }
                    }
                )
        return taken

    def placed_under(self, customer_id: str, placement_key: str) -> Order | None:
        """The order placed under this Idempotency-Key, if one was (one consistent GetItem, then the order)."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name,
                Key=to_item(keys.placement_key(customer_id, placement_key)),
                ConsistentRead=True,
            )
        if "Item" not in response:
            return None
        return self.get(str(from_item(response["Item"])["order_id"]))

    def held_unpaid(self, order_ids: Sequence[str]) -> dict[str, tuple[OrderStatus, int]]:
        """The status and units of each of these orders still in the table (one consistent BatchGetItem)."""
        return unpaid_holds.held_orders(self.table, order_ids)

    def release_unpaid(self, customer_id: str, order_ids: Sequence[str], units: int) -> bool:
        """`order_ids` and `units` out of the customer's unpaid hold if every id is still in it (one UpdateItem)."""
        return unpaid_holds.release(self.table, customer_id, order_ids, units)

    def _placed_order_id(self, customer_id: str, placement: Placement) -> str:
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name,
                Key=to_item(keys.placement_key(customer_id, placement.key)),
                ConsistentRead=True,
            )
        if "Item" not in response:  # expired between the two calls: the order is still there
            raise errors.Conflict("this Idempotency-Key's order changed meanwhile, retry")
        return str(from_item(response["Item"])["order_id"])

    def restore(self, order: Order) -> Order:
        """Write an order and its customer entry as placement does, without touching stock.

        For seeding and data migrations only: no stock check, no idempotency token (a fixed id may be
        restored into several tables). Raises OrderExists when the order is already there.
        """
        summary = {field: getattr(order, field) for field in SUMMARY_FIELDS}
        entry = {**keys.customer_order_key(order.customer_id, order.order_id), "entity": "CUSTOMER_ORDER", **summary}
        put_new = "attribute_not_exists(PK)"
        try:
            transact_write(
                self.table,
                [
                    {
                        "Put": {
                            "TableName": self.table.name,
                            "Item": to_item(order_item(order, self.shards)),
                            "ConditionExpression": put_new,
                        }
                    },
                    {"Put": {"TableName": self.table.name, "Item": to_item(entry), "ConditionExpression": put_new}},
                ],
            )
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(0):
                raise errors.OrderExists(f"order {order.order_id} exists") from cancelled
            raise cancelled.unexplained() from cancelled
        return order

    @staticmethod
    def _raise_placement_failure(stock_items: list[_StockItem], cancelled: TransactionCancelled) -> None:
        _stock_check_failures(stock_items, cancelled)
        raise cancelled.unexplained() from cancelled

    def get(self, order_id: str) -> Order:
        """One Query over the order's collection: the order item and its status history items (which sort
        before it; the stream processor's sales markers sort after it and are not read)."""
        with translated_errors():
            response = self.table.client.query(
                TableName=self.table.name,
                KeyConditionExpression="PK = :pk AND SK <= :order",
                ExpressionAttributeValues=values(pk=keys.order_pk(order_id), order=keys.ORDER_SK),
            )
        return order_from_items([from_item(i) for i in response.get("Items", [])])

    def list_for_customer(self, customer_id: str, *, limit: int, next_token: str | None) -> Page[OrderSummary]:
        return collection_page(
            self.table,
            scope=f"customer-orders:{customer_id}",
            partition=keys.customer_pk(customer_id),
            sk_prefix=keys.CUSTOMER_ORDER_PREFIX,
            limit=limit,
            next_token=next_token,
        ).as_page(OrderSummary.model_validate)

    def list_by_status(self, status: OrderStatus, *, limit: int, next_token: str | None) -> Page[OrderSummary]:
        """One round of parallel Queries, each shard asked for its share of the page; every item read is
        returned (read amplification 1.00), merged newest first. The token carries each shard's cursor.

        Shares follow each shard's position in time (shop.repository.shard_walk): a page is sorted newest
        first and each shard's orders come in exact order across pages, while across shards pages are
        approximately newest first. A page can be shorter than `limit`, even empty: a shard ran out exactly
        at its share, or (more shards than `limit`) the entries are in shards this page did not reach.

        During a shard-count switch (STATUS_SHARDS_NEXT) the listing reads both counts
        (shop.repository.status_switch); a token of another count is read as lanes.
        """

        def scope(lanes: int) -> str:
            return _status_scope(status, lanes)

        def query(partition: int, cursor: Cursor, count: int) -> tuple[list[dict[str, Any]], bool]:
            return self._query_status(status, partition, cursor, count)

        position = _token_position(next_token, scope) if next_token else None
        items, token = self._walk_status_index(query, position, limit, scope)
        return Page[OrderSummary](items=[OrderSummary.model_validate(i) for i in items], next_token=token)

    def list_confirmed_before(self, cutoff: str, *, limit: int, next_token: str | None) -> Page[OrderPaymentSummary]:
        """The CONFIRMED orders created before `cutoff` (an ISO-8601 instant, as created_at is written), oldest first,
        each with its payment's status: the status listing's walk (one round of parallel Queries, one per shard with
        its share of the page, every item read returned) over the CONFIRMED partitions with a key condition on the
        sort key (`GSI1SK < cutoff`: the sort key starts with created_at), ascending, each resuming after its cursor
        (ExclusiveStartKey). A token carries the cutoff of the walk's first page: later pages keep it, so a walk
        neither skips nor repeats orders as time passes. Shard-count switches as list_by_status.
        """
        position = _token_position(next_token, _confirmed_before_scope) if next_token else None
        walked_before = cutoff
        if position is not None:
            kept = position.get("x")
            if not isinstance(kept, str) or not kept:
                raise errors.InvalidNextToken("next_token is not a token this list issued")
            walked_before = kept

        def query(partition: int, cursor: Cursor, count: int) -> tuple[list[dict[str, Any]], bool]:
            return self._query_confirmed_before(walked_before, partition, cursor, count)

        items, token = self._walk_status_index(
            query, position, limit, _confirmed_before_scope, descending=False, extra={"x": walked_before}
        )
        return Page[OrderPaymentSummary](items=[_payment_summary(i) for i in items], next_token=token)

    def _walk_status_index(
        self,
        query: status_switch.QueryPartition,
        position: dict[str, Any] | None,
        limit: int,
        scope: Callable[[int], str],
        *,
        descending: bool = True,
        extra: dict[str, Any] | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of a walk over a status index's partitions (`query`: one partition past a cursor, in the walk's
        order), from the (verified) `position` of a token, or the start; its items in order and the next token (its
        scope from the number of its cursors, `extra` carried along). During a shard-count switch, both counts are
        read (shop.repository.status_switch); a token of another count is read as lanes."""
        switch = self.switch
        walk = None
        if position is not None:
            walk = ShardWalk.from_position(position, len(position["c"]), descending=descending)
        if switch.next is not None:
            cursors = walk.cursors if walk else status_switch.start()
            items, following = status_switch.read_page(
                switch, cursors, limit, query, _shard_pool(), descending=descending
            )
            finished = all(c == EXHAUSTED for c in following)
            token = (
                None
                if finished
                else pagination.encode(scope(len(following)), {"c": following, **(extra or {})}, compress=True)
            )
            return items, token
        shards = switch.current
        if walk is not None and len(walk.cursors) != shards:
            widened = status_switch.widened(walk.cursors, shards)
            if widened is None:  # a count this one is not a multiple of (after a shrink): start again
                raise errors.InvalidNextToken("next_token is not a token this list issued")
            walk = ShardWalk(widened, walk.gap_us, walk.top_us, descending)
        walk = walk or ShardWalk.start(shards, descending=descending)
        shares = walk.plan(limit, MAX_PARALLEL_QUERIES)
        pending = {
            s: _shard_pool().submit(contextvars.copy_context().run, query, s, walk.cursors[s], n)
            for s, n in shares.items()
        }
        # Each query runs in a copy of this context: the invocation's deadline (shop.aws_config) holds there too.
        results = {shard: future.result() for shard, future in pending.items()}
        walk.advance({shard: ([i["GSI1SK"] for i in items], more) for shard, (items, more) in results.items()})
        page = sorted(
            (i for items, _ in results.values() for i in items), key=lambda i: i["GSI1SK"], reverse=descending
        )
        token = (
            None
            if walk.finished
            else pagination.encode(scope(shards), {**walk.position(), **(extra or {})}, compress=True)
        )
        return page, token

    def _query_confirmed_before(
        self, cutoff: str, partition: int, cursor: Cursor, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """One CONFIRMED partition's entries created before `cutoff`, oldest first, after `cursor`: its items and
        whether it has more. No filter: the key condition selects exactly what is returned."""
        status = OrderStatus.CONFIRMED
        resume: dict[str, Any] = {}
        if isinstance(cursor, str):
            resume["ExclusiveStartKey"] = to_item(keys.order_status_position(status, partition, cursor))
        with translated_errors():
            response = self.table.client.query(
                TableName=self.table.name,
                IndexName=keys.GSI1,
                KeyConditionExpression="GSI1PK = :pk AND GSI1SK < :cutoff",
                ExpressionAttributeValues=values(pk=keys.order_status_pk(status, partition), cutoff=cutoff),
                ScanIndexForward=True,
                Limit=limit,
                **resume,
            )
        return [from_item(i) for i in response.get("Items", [])], "LastEvaluatedKey" in response

    def _query_status(
        self, status: OrderStatus, partition: int, cursor: Cursor, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """One status partition below `cursor`, newest first: its items and whether it has more."""
        condition = "GSI1PK = :pk"
        attr_values = values(pk=keys.order_status_pk(status, partition))
        if isinstance(cursor, str):
            condition += " AND GSI1SK < :cursor"
            attr_values.update(values(cursor=cursor))
        with translated_errors():
            response = self.table.client.query(
                TableName=self.table.name,
                IndexName=keys.GSI1,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=attr_values,
                ScanIndexForward=False,
                Limit=limit,
            )
        return [from_item(i) for i in response.get("Items", [])], "LastEvaluatedKey" in response

    def change_status(
        self,
        order: Order,
        new_status: OrderStatus,
        *,
        updated_at: str,
        restock: Sequence[OrderLine] = (),
        details: StatusDetails = NO_DETAILS,
        expires_at: int | None = None,
        unless_payment: PaymentStatus | None = None,
    ) -> Order:
        """Move the order to new_status if it still has the version it was read with.

        ``details`` are written in the same update: the shipment, the change's reason (removed when
        there is none), the first delivery's or confirmation's time, that it shipped without its payment held.
        ``expires_at`` (epoch seconds) is set in the same write, the TTL that archives a finished order; None
        removes it (the order is not finished, or no longer: a return reopened it). With ``unless_payment`` the
        write also requires the order's payment not to be in that status (a payment record does not move the
        version): PaymentNotHeld when it is, the order otherwise as read.

        With ``restock`` lines, their quantities go back to stock in the same transaction, sent with a
        client request token derived from the write, so a retry of a transaction that committed changes
        nothing. A failed condition is explained from the order as it is: already in new_status at the
        next version means this change was made (a retry after a lost response) and is answered as done.
        """
        gsi = keys.order_status_gsi(new_status, order.order_id, order.created_at, self.shards)
        sets, extra = _detail_updates(details)
        removes = [] if details.reason else [STATUS_REASON]
        if order.status is OrderStatus.RETURN_REQUESTED:
            removes.append(RETURN_REQUEST)  # decided
        if expires_at is None:
            removes.append("#ttl")
        else:
            sets.append("#ttl = :ttl")
            extra["ttl"] = expires_at
        attr_values = status_move_values(order, new_status, updated_at, gsi[keys.GSI1PK], **extra)
        if unless_payment is not None:
            attr_values.update(values(unheld=unless_payment.value))
        update = {
            "TableName": self.table.name,
            "Key": to_item(keys.order_key(order.order_id)),
            "UpdateExpression": "SET #status = :new, version = :next, updated_at = :at, GSI1PK = :gpk"
            + "".join(f", {s}" for s in sets)
            + (f" REMOVE {', '.join(removes)}" if removes else ""),
            "ConditionExpression": "#status = :old AND version = :version"
            + (" AND payment.#status <> :unheld" if unless_payment is not None else ""),
            "ExpressionAttributeNames": {
                "#status": "status",
                "#ttl": keys.TTL_ATTRIBUTE,
                **({"#returns": RETURNS} if details.accepted_return is not None else {}),  # a reserved word
            },
            "ExpressionAttributeValues": attr_values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if restock:
            cancelling = new_status is OrderStatus.CANCELLED
            returns = stock_returns(order, restock)
            token = status_change_token(order, new_status, updated_at, expires_at)
            try:
                self._change_with_restock(order, update, returns, token, give_back=cancelling)
            except TransactionCancelled as cancelled:
                if cancelled.failed_condition(0):
                    return _explain_failed_change(
                        order, new_status, cancelled.old_item(0), details, unless_payment=unless_payment
                    )
                if not any(
                    cancelled.failed_condition(i + 1) for i, (_, shard, _) in enumerate(returns) if shard is not None
                ):
                    raise cancelled.unexplained() from cancelled
                # A shard the order took from is gone (its product was spread over fewer shards since): that
                # stock goes back to the product item, where the next spread picks it up. Another token: the
                # items differ from the first attempt's.
                try:
                    self._change_with_restock(
                        order,
                        update,
                        on_product_items(returns),
                        str(uuid.uuid5(STATUS_CHANGE_TOKENS, token)),
                        give_back=cancelling,
                    )
                except TransactionCancelled as again:
                    if again.failed_condition(0):
                        return _explain_failed_change(
                            order, new_status, again.old_item(0), details, unless_payment=unless_payment
                        )
                    raise again.unexplained() from again
        else:
            try:
                with conditional_write():
                    self.table.client.update_item(**update)
            except ConditionFailed as failed:
                return _explain_failed_change(order, new_status, failed.item, details, unless_payment=unless_payment)
        return _advanced(order, new_status, order.version + 1, updated_at, details)

    def _change_with_restock(
        self, order: Order, update: dict[str, Any], returns: list[Return], token: str, *, give_back: bool
    ) -> None:
        """The change, its restocks and, with `give_back` (a cancel), the promotion uses the order took: one
        transaction."""
        restocks = [restock_update(self.table, pid, shard, quantity) for pid, shard, quantity in returns]
        give_backs = promotion_give_backs(self.table, order) if give_back else []
        transact_write(self.table, [{"Update": update}, *restocks, *give_backs], ClientRequestToken=token)


def _status_scope(status: OrderStatus, lanes: int) -> str:
    """A listing token's scope: the status and its number of cursors (the count it was issued under)."""
    return f"orders-by-status:{status}:{lanes}"


def _confirmed_before_scope(lanes: int) -> str:
    """The confirmed-before listing's token scope: its number of cursors (the count it was issued under)."""
    return f"orders-confirmed-before:{lanes}"


def _token_position(token: str, scope: Callable[[int], str]) -> dict[str, Any]:
    """The position a token of a status index's walk holds, verified against the scope of its own count (its number
    of cursors) and well formed (shop.repository.shard_walk)."""
    peeked = pagination.peek(token)
    cursors = peeked.get("c") if isinstance(peeked, dict) else None
    lanes = len(cursors) if isinstance(cursors, list) else 0
    if not 1 <= lanes <= MAX_STATUS_SHARDS:
        raise errors.InvalidNextToken("next_token is not a token this list issued")
    position = pagination.decode(token, scope(lanes))
    ShardWalk.from_position(position, lanes)  # refuses what is not a walk's position
    return dict(position)


def _payment_summary(item: dict[str, Any]) -> OrderPaymentSummary:
    payment = item.get("payment")
    status = payment.get("status") if isinstance(payment, dict) else None
    return OrderPaymentSummary.model_validate({**item, "payment_status": status})


def _detail_updates(details: StatusDetails) -> tuple[list[str], dict[str, Any]]:
    """The SET clauses and their values that write a status change's details on the order item."""
    sets: list[str] = []
    extra: dict[str, Any] = {}
    if details.shipment is not None:
        sets.append("shipment = :shipment")
        extra["shipment"] = details.shipment.model_dump()
    if details.reason:
        sets.append(f"{STATUS_REASON} = :reason")
        extra["reason"] = details.reason
    if details.delivered_at:
        sets.append("delivered_at = :delivered")
        extra["delivered"] = details.delivered_at
    if details.confirmed_at:
        sets.append("confirmed_at = :confirmed")
        extra["confirmed"] = details.confirmed_at
    if details.without_payment:
        sets.append("shipped_without_payment = :without_payment")
        extra["without_payment"] = True
    if details.return_request is not None:
        sets.append(f"{RETURN_REQUEST} = :return_request")
        extra["return_request"] = details.return_request.model_dump()
    if details.accepted_return is not None:
        sets.append("#returns = list_append(if_not_exists(#returns, :no_returns), :accepted_return)")
        extra["no_returns"] = []
        extra["accepted_return"] = [details.accepted_return.model_dump(exclude_none=True)]
    return sets, extra


def status_change_token(order: Order, new_status: OrderStatus, updated_at: str, expires_at: int | None = None) -> str:
    """The ClientRequestToken of one status change (36 characters, DynamoDB's maximum).

    Derived from the order, the version it is moved from, the target status, the write's time and the
    TTL it sets: every re-send of this write carries it, and no other write does, so DynamoDB never
    sees one token with different parameters (IdempotentParameterMismatch).
    """
    name = f"{order.order_id}|{order.version}|{new_status.value}|{updated_at}"
    if expires_at is not None:  # without one, the token of a change is what it was before TTLs existed
        name += f"|{expires_at}"
    return str(uuid.uuid5(STATUS_CHANGE_TOKENS, name))


def _advanced(
    order: Order, status: OrderStatus, version: int, updated_at: str, details: StatusDetails = NO_DETAILS
) -> Order:
    return details.advance(order, status, version, updated_at)


def _explain_failed_change(
    order: Order,
    new_status: OrderStatus,
    current: dict[str, Any] | None,
    details: StatusDetails = NO_DETAILS,
    *,
    unless_payment: PaymentStatus | None = None,
) -> Order:
    """The order a failed conditional status change leaves, if the change is already made; else why it failed.

    Made means this change, not only one to the same status: the order (`current`, as the failed write found
    it) is at the next version in new_status with this change's carrier, tracking number and reason. The
    answer is then the order as stored. A concurrent change to the same status with other details is
    another request's: VersionMismatch. Still as read but with its payment in `unless_payment`'s status (the
    payment was recorded between the read and the write): PaymentNotHeld."""
    if current is None:
        raise errors.OrderNotFound("order not found")
    version = int(current["version"])
    if current["status"] == new_status.value and version == order.version + 1:
        made = latest_entry(current)
        if details.recorded_in(made):
            return Order.model_validate({**current, "history": [h.model_dump() for h in [*order.history, made]]})
    payment = current.get("payment")
    if (
        unless_payment is not None
        and current["status"] == order.status.value
        and version == order.version
        and isinstance(payment, dict)
        and payment.get("status") == unless_payment.value
    ):
        raise errors.PaymentNotHeld(order.order_id, unless_payment.value)
    raise errors.VersionMismatch("the order changed meanwhile", {"current_version": version})
