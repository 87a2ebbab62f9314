"""The customer's unpaid hold (keys.unpaid_hold_key): what one customer holds in PENDING_PAYMENT orders.

One small item per customer: `order_ids`, a string set of the unpaid orders' ids, and `units`, the units they hold.
The placement of an unpaid order adds its id and units in the placement's transaction (`take`), on the condition
that the set has fewer ids than the shop allows and the units stay within its limit; the stream processor takes
them away again when the order leaves PENDING_PAYMENT (`release`, one UpdateItem on the condition that the id is
still in the set, so a replayed or reordered record releases nothing twice). A placement the hold refuses finds
what it held in the cancellation (ReturnValuesOnConditionCheckFailure) and may read those orders (`held_orders`,
one BatchGetItem) to release the ones whose release was lost (docs/payments.md, "Hoarding").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shop import errors, keys
from shop.models import Order, OrderStatus
from shop.models.orders import UnpaidLimits, units_of
from shop.repository.store import ConditionFailed, Table, batch_get, conditional_write, to_attr, to_item

ENTITY = "CUSTOMER_UNPAID"
# Attribute names (short: the item is written in every unpaid order's placement and release).
ORDER_IDS = "order_ids"
UNITS = "units"


def take(table: Table, order: Order, limits: UnpaidLimits) -> dict[str, Any]:
    """The placement transaction's item that holds `order` (PENDING_PAYMENT) on its customer's hold: its id into the
    set and its units added, if the set holds fewer than `limits.orders` ids and the units stay within
    `limits.units` (the order alone within it: the caller checks that first). The item as it was comes back when
    the condition fails (`refused`)."""
    room = limits.units - units_of(order.lines)
    return {
        "Update": {
            "TableName": table.name,
            "Key": to_item(keys.unpaid_hold_key(order.customer_id)),
            "UpdateExpression": "ADD #ids :order, #units :units SET entity = :entity",
            "ConditionExpression": "(attribute_not_exists(#ids) OR size(#ids) < :max_orders) "
            "AND (attribute_not_exists(#units) OR #units <= :room)",
            "ExpressionAttributeNames": {"#ids": ORDER_IDS, "#units": UNITS},
            "ExpressionAttributeValues": {
                ":order": to_attr({order.order_id}),
                ":units": to_attr(units_of(order.lines)),
                ":entity": to_attr(ENTITY),
                ":max_orders": to_attr(limits.orders),
                ":room": to_attr(room),
            },
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def refused(order: Order, limits: UnpaidLimits, held: dict[str, Any] | None) -> errors.UnpaidOrderLimit:
    """The refusal of `take`'s condition, with what the hold held when it refused (`held`: the item as it was)."""
    item = held or {}
    return errors.UnpaidOrderLimit(
        max_orders=limits.orders,
        max_units=limits.units,
        order_units=units_of(order.lines),
        held_order_ids=sorted(item.get(ORDER_IDS) or ()),
        held_units=int(item.get(UNITS) or 0),
    )


def release(table: Table, customer_id: str, order_ids: Sequence[str], units: int) -> bool:
    """`order_ids` and `units` out of the customer's hold, in one UpdateItem, only if every id is still in it: False
    (nothing written) when one is not (released before: a replay, a reordered record, the other releaser)."""
    if not order_ids:
        return False
    named = {f":id{i}": to_attr(order_id) for i, order_id in enumerate(order_ids)}
    try:
        with conditional_write():
            table.client.update_item(
                TableName=table.name,
                Key=to_item(keys.unpaid_hold_key(customer_id)),
                UpdateExpression="DELETE #ids :ids ADD #units :minus",
                ConditionExpression=" AND ".join(f"contains(#ids, {name})" for name in named),
                ExpressionAttributeNames={"#ids": ORDER_IDS, "#units": UNITS},
                ExpressionAttributeValues={
                    ":ids": to_attr(set(order_ids)),
                    ":minus": to_attr(-units),
                    **named,
                },
            )
    except ConditionFailed:
        return False
    return True


def held_orders(table: Table, order_ids: Sequence[str]) -> dict[str, tuple[OrderStatus, int]]:
    """The status and units of each of `order_ids` still in the table (an archived order's item is gone): one
    consistent BatchGetItem of the order items (a strongly consistent read: an order placed a moment ago is seen)."""
    if not order_ids:
        return {}
    found = batch_get(table, [keys.order_key(order_id) for order_id in order_ids], consistent=True)
    held: dict[str, tuple[OrderStatus, int]] = {}
    for item in found.values():
        order_id = str(item["order_id"])
        held[order_id] = (OrderStatus(item["status"]), sum(int(line["quantity"]) for line in item.get("lines") or []))
    return held
