"""Orders indexed under a status shard count, bulk-loaded with BatchWriteItem: the input of migration 0002's
measured run (`make migrate NAME=0002-move-status-shards LOAD_ORDERS=N`). Each is a real order item
(shop.repository.orders.order_item) without its customer entry: the status index is what 0002 moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from shop import clock
from shop.models import Order, OrderLine, OrderStatus
from shop.models.orders import ShippingAddress
from shop.repository.orders import order_item
from shop.repository.store import to_item

BATCH = 25
ADDRESS = ShippingAddress(name="Load", line1="1 Main St", city="Springfield", postal_code="12345", country="US")


def status_order(number: int, shards: int) -> dict[str, Any]:
    at = clock.iso(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=number))
    line = OrderLine.priced("LOADPRODUCT", "Load product", 1000, 1)
    order = Order(
        order_id=f"LOADORDER{number:017d}",
        customer_id="load-customer",
        status=OrderStatus.PENDING if number % 3 else OrderStatus.CONFIRMED,
        version=1 if number % 3 else 2,
        total_cents=line.line_total_cents,
        created_at=at,
        updated_at=at,
        lines=[line],
        shipping_address=ADDRESS,
        history=[],
    )
    return order_item(order, shards)


def load(client: Any, table: str, count: int, shards: int) -> None:
    """`count` orders (a third CONFIRMED, the rest PENDING) under `shards`; unprocessed items sent again."""
    for start in range(0, count, BATCH):
        items = [status_order(number, shards) for number in range(start, min(count, start + BATCH))]
        request: dict[str, Any] = {table: [{"PutRequest": {"Item": to_item(item)}} for item in items]}
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
