"""What an order's items read as, and where its stock goes back: shared by the checkout's repository
(shop.repository.orders) and the payment writes (shop.repository.order_payments), which must not load the
checkout's whole repository at a webhook's first delivery (a cold start)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shop import errors, keys
from shop.models import Order, OrderLine, OrderStatus, StatusEntry
from shop.repository.store import Table, to_item, values

# The order item's reason for its latest status change (a return's, a rejection's); the stream
# processor copies it into that version's history entry.
STATUS_REASON = "status_reason"
# A return's units asked back (RETURN_REQUESTED), and the accepted returns (a list, appended to; absent: none).
RETURN_REQUEST = "return_request"
RETURNS = "returns"


def order_from_items(items: list[dict[str, Any]]) -> Order:
    """The order with its history: the implicit PENDING entry, the recorded entries, and the
    current version's entry if the stream processor has not recorded it yet, so the history
    always ends with the status the order has."""
    header = next((i for i in items if i["SK"] == keys.ORDER_SK), None)
    if header is None:
        raise _absence(items)
    recorded = sorted((i for i in items if i["SK"].startswith(keys.HISTORY_PREFIX)), key=lambda i: i["SK"])
    # The implicit first entry: the status an order is placed in (PENDING_PAYMENT when it carries a payment).
    placed_as = OrderStatus.PENDING_PAYMENT if "payment" in header else OrderStatus.PENDING
    history = [StatusEntry(status=placed_as, at=header["created_at"])]
    history += [StatusEntry.model_validate(i) for i in recorded]
    latest_recorded = int(recorded[-1]["version"]) if recorded else 1
    if int(header["version"]) > latest_recorded:
        history.append(latest_entry(header))
    discounts = next((i for i in items if i["SK"] == keys.ORDER_DISCOUNTS_SK), None) or {}
    beside = {"promotions": discounts.get("promotions") or [], "counted_promotions": discounts.get("counted") or []}
    return Order.model_validate({**header, **beside, "history": [h.model_dump() for h in history]})


def _absence(items: list[dict[str, Any]]) -> errors.DomainError:
    """Why an order's collection holds no order item: archived (the marker says where), being archived
    (TTL removed the item, the stream processor has not finished: retry), or no such order."""
    marker = next((i for i in items if i["SK"] == keys.ORDER_ARCHIVED_SK), None)
    if marker is not None:
        return errors.OrderArchived(
            str(marker["order_id"]), customer_id=str(marker["customer_id"]), archive_key=str(marker["archive_key"])
        )
    if items:
        return errors.ServiceUnavailable("the order is being archived, retry")
    return errors.OrderNotFound("order not found")


def latest_entry(header: dict[str, Any]) -> StatusEntry:
    """The history entry of the order's current version, from the order item itself."""
    shipped = header["status"] == OrderStatus.SHIPPED.value
    shipment = header.get("shipment") if shipped else None
    return StatusEntry(
        status=header["status"],
        at=header["updated_at"],
        carrier=shipment["carrier"] if shipment else None,
        tracking_number=shipment["tracking_number"] if shipment else None,
        reason=header.get(STATUS_REASON),
        shipped_without_payment=True if shipped and header.get("shipped_without_payment") else None,
    )


# (product id, shard or None for the product item, quantity) of stock going back.
Return = tuple[str, int | None, int]


def stock_returns(order: Order, lines: Sequence[OrderLine]) -> list[Return]:
    """Each line's quantity back where the order took it: the shards it recorded, the rest to the product item."""
    returns: list[Return] = []
    for line in lines:
        left = line.quantity
        for label, quantity in sorted(order.stock_taken.get(line.product_id, {}).items()):
            returns.append((line.product_id, int(label), min(quantity, left)))
            left -= min(quantity, left)
        if left > 0:
            returns.append((line.product_id, None, left))
    return returns


def on_product_items(returns: list[Return]) -> list[Return]:
    merged: dict[str, int] = {}
    for pid, _, quantity in returns:
        merged[pid] = merged.get(pid, 0) + quantity
    return [(pid, None, quantity) for pid, quantity in merged.items()]


def status_move_values(
    order: Order, new_status: OrderStatus, updated_at: str, gsi_pk: str, **extra: Any
) -> dict[str, Any]:
    """The values of a status change's UpdateItem: the new status, the next version, the change's time and
    status index key, and the status and version the order must still have (`:old`, `:version`)."""
    return values(
        new=new_status.value,
        next=order.version + 1,
        at=updated_at,
        gpk=gsi_pk,
        old=order.status.value,
        version=order.version,
        **extra,
    )


def promotion_give_backs(table: Table, order: Order) -> list[dict[str, Any]]:
    """The updates that give back the promotion uses the order took (a cancel, an expiry, a failed payment), in the
    transaction of the order's conditional change: given back once, as the change is made once."""
    minus = values(minus=-1)
    updates = [
        (keys.promotion_uses_key(promotion_id, shard), "used") for promotion_id, shard in order.promotion_uses.items()
    ]
    updates += [(keys.customer_promotion_key(order.customer_id, pid), "uses") for pid in order.customer_uses]
    return [
        {
            "Update": {
                "TableName": table.name,
                "Key": to_item(key),
                "UpdateExpression": "ADD #count :minus",
                "ExpressionAttributeNames": {"#count": counter},
                "ExpressionAttributeValues": minus,
            }
        }
        for key, counter in updates
    ]
