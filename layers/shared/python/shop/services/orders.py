"""Orders: catalogue pricing, atomic placement with bounded retries, the status machine."""

from __future__ import annotations

from dataclasses import dataclass

from shop import clock, errors, ids
from shop.config import settings
from shop.limits import MAX_ORDER_LINES, MAX_QUANTITY
from shop.models import (
    ORDER_TRANSITIONS,
    Order,
    OrderLine,
    OrderStatus,
    OrderSummary,
    Page,
    ShippingAddress,
    StatusEntry,
)
from shop.models.orders import Placement, SessionClaim
from shop.models.pricing import subtotal
from shop.repository import OrderRepository, ProductRepository, SessionRepository, Table
from shop.repository.order_archive import ArchiveBucket
from shop.services.actor import Actor
from shop.services.archival import archive_at
from shop.services.ports import OrderArchive, OrderStore, ProductPrices, SessionStore

REPRICE_ATTEMPTS = 3
# Reads and conditional writes one cancel tries before answering 503 (the order keeps changing).
CANCEL_ATTEMPTS = 3


@dataclass(frozen=True)
class RequestedLine:
    product_id: str
    quantity: int


def merge_lines(lines: list[RequestedLine]) -> dict[str, int]:
    quantities: dict[str, int] = {}
    for line in lines:
        quantities[line.product_id] = quantities.get(line.product_id, 0) + line.quantity
    return quantities


def lines_over_the_limit(lines: list[RequestedLine]) -> dict[str, str]:
    """The quantity field of each line that takes its product past MAX_QUANTITY, duplicates added up."""
    totals: dict[str, int] = {}
    over: dict[str, str] = {}
    for index, line in enumerate(lines):
        before = totals.get(line.product_id, 0)
        totals[line.product_id] = before + line.quantity
        if before <= MAX_QUANTITY < totals[line.product_id]:
            over[f"lines.{index}.quantity"] = f"{line.product_id} adds up to more than {MAX_QUANTITY}"
    return over


class OrderService:
    def __init__(
        self,
        table: Table | None = None,
        shards: int | None = None,
        *,
        orders: OrderStore | None = None,
        products: ProductPrices | None = None,
        sessions: SessionStore | None = None,
        archive: OrderArchive | None = None,
    ) -> None:
        """The rules over the stores given; the others are the DynamoDB repositories on `table` (the
        function's table), the status index in `shards` shards, and the S3 archive of ARCHIVE_BUCKET."""
        table = table or Table()
        self.archive: OrderArchive = archive if archive is not None else ArchiveBucket()
        self.orders: OrderStore = orders if orders is not None else OrderRepository(table, shards)
        self.products: ProductPrices = products if products is not None else ProductRepository(table)
        self.sessions: SessionStore = sessions if sessions is not None else SessionRepository(table)

    def _price(self, quantities: dict[str, int]) -> list[OrderLine]:
        catalogue = self.products.get_many(list(quantities))
        missing = [pid for pid in quantities if pid not in catalogue]
        if missing:
            raise errors.ProductNotFound(missing)
        return [
            OrderLine.priced(pid, catalogue[pid].name, catalogue[pid].price_cents, qty)
            for pid, qty in quantities.items()
        ]

    def _new_order(self, actor: Actor, lines: list[OrderLine], address: ShippingAddress) -> Order:
        now = clock.iso_now()
        return Order(
            order_id=ids.new_id(),
            customer_id=actor.sub,
            status=OrderStatus.PENDING,
            version=1,
            lines=lines,
            total_cents=subtotal(lines),
            shipping_address=address,
            created_at=now,
            updated_at=now,
            history=[StatusEntry(status=OrderStatus.PENDING, at=now)],
        )

    def place(
        self,
        actor: Actor,
        *,
        address: ShippingAddress,
        lines: list[RequestedLine] | None = None,
        session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Order:
        """Two store calls on the common path: one read (products or session), one transaction.

        With an idempotency_key, placing again under it returns the order placed first (at most one)."""
        claim: SessionClaim | None = None
        if session_id is not None:
            stored = self.sessions.get(session_id, now=clock.epoch(clock.now()))
            if not stored.lines:
                raise errors.CartEmpty("the session's cart is empty", {"session_id": session_id})
            claim = SessionClaim(session_id, stored.cart_version, clock.epoch(clock.now()))
            priced = [
                OrderLine.priced(line.product_id, line.name, line.unit_price_cents, line.quantity)
                for line in stored.lines
            ]
            quantities = {line.product_id: line.quantity for line in stored.lines}
        else:
            quantities = merge_lines(lines or [])
            if not quantities:
                raise errors.InvalidRequest("an order needs at least one line")
            if len(quantities) > MAX_ORDER_LINES:
                raise errors.InvalidRequest(f"an order holds at most {MAX_ORDER_LINES} products")
            priced = self._price(quantities)
            # After pricing: an unknown product is a 404 whatever its quantities.
            over = lines_over_the_limit(lines or [])
            if over:
                raise errors.InvalidRequest(
                    f"an order holds at most {MAX_QUANTITY} of one product (lines of one product add up)", over
                )

        placement = None
        if idempotency_key is not None:
            placement = Placement(idempotency_key, clock.epoch(clock.now()) + settings().idempotency_ttl_seconds)
        for attempt in range(REPRICE_ATTEMPTS):
            order = self._new_order(actor, priced, address)
            try:
                return self.orders.place(order, claim, placement=placement)
            except errors.PriceChanged:
                if attempt == REPRICE_ATTEMPTS - 1:
                    raise
                priced = self._price(quantities)
        raise AssertionError("unreachable")

    def get(self, actor: Actor, order_id: str) -> Order:
        """The order, from the table or, once archived, from the archive (`archived` true)."""
        try:
            return self._live(actor, order_id)
        except errors.OrderArchived as archived:
            return self.archive.get(archived.archive_key)

    def _live(self, actor: Actor, order_id: str) -> Order:
        """The order in the table; OrderArchived (its owner or an admin asked) when it is archived."""
        try:
            order = self.orders.get(order_id)
        except errors.OrderArchived as archived:
            if not actor.may_see(archived.customer_id):
                raise errors.OrderNotFound("order not found") from None
            raise
        if not actor.may_see(order.customer_id):
            raise errors.OrderNotFound("order not found")
        return order

    def list_for_customer(
        self, actor: Actor, customer_id: str, *, limit: int, next_token: str | None
    ) -> Page[OrderSummary]:
        actor.require_self_or_admin(customer_id)
        return self.orders.list_for_customer(customer_id, limit=limit, next_token=next_token)

    def list_by_status(
        self, actor: Actor, status: OrderStatus, *, limit: int, next_token: str | None
    ) -> Page[OrderSummary]:
        actor.require_admin()
        return self.orders.list_by_status(status, limit=limit, next_token=next_token)

    def change_status(self, actor: Actor, order_id: str, new_status: OrderStatus, *, expected_version: int) -> Order:
        actor.require_admin()
        order = self.orders.get(order_id)
        if expected_version >= 1 and order.version == expected_version + 1 and order.status is new_status:
            return order  # the change is made: a retry whose first attempt's answer was lost
        if order.version != expected_version:
            raise errors.VersionMismatch("the order changed since you read it", {"current_version": order.version})
        return self._move(order, new_status)

    def cancel(self, actor: Actor, order_id: str) -> Order:
        """The owner's or an admin's cancel; a concurrent change is re-read and the cancel re-tried."""
        for _ in range(CANCEL_ATTEMPTS):
            order = self._live(actor, order_id)
            try:
                return self._move(order, OrderStatus.CANCELLED)
            except errors.VersionMismatch:
                continue
        raise errors.ServiceUnavailable("the order keeps changing, retry later")

    def _move(self, order: Order, new_status: OrderStatus) -> Order:
        """The status machine's step from the order as read; cancelling puts every line back in stock."""
        if new_status not in ORDER_TRANSITIONS[order.status]:
            raise errors.InvalidTransition(
                f"an order cannot go from {order.status} to {new_status}",
                {"from": order.status.value, "to": new_status.value},
            )
        restock = order.lines if new_status is OrderStatus.CANCELLED else ()
        now = clock.now()
        return self.orders.change_status(
            order,
            new_status,
            updated_at=clock.iso(now),
            restock=restock,
            expires_at=archive_at(new_status, clock.epoch(now), settings().archive_after_days),
        )
