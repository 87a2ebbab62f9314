"""The stream processor's rules: confirm new orders, record status changes and count sales, notice abandoned carts,
product events, archive orders whose TTL passed.

Delivery is at least once: every table write is conditional and keyed by order id and version, so a replayed
record changes nothing. Once an order is archived (archival deleted those keys), each effect's transaction
checks the order's ARCHIVED marker instead: a record of an archived order writes and publishes nothing. A fresh
record (younger than the archival grace less a margin, shop.services.archive_timing.fresh_record) cannot meet an
archived order: its effects are plain conditional writes, without that check.
Each rule, by record type: docs/decisions.md, "Stream processor" and "Records of archived orders".
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from shop import clock, errors
from shop.models import OrderStatus
from shop.models.events import (
    AbandonedLine,
    CartAbandoned,
    CustomerCartAbandoned,
    DetailType,
    Event,
    OrderChange,
    OrderDisputed,
    OrderExpired,
    OrderPaymentLapsed,
    OrderRefundDue,
    OrderRefundedAtProvider,
    ShipmentDetail,
    Source,
)
from shop.models.orders import RETURN_OUTCOMES, OrderPayment, PaymentStatus, StatusEntry, return_at, units_of
from shop.models.pricing import subtotal
from shop.services.archive_timing import fresh_record
from shop.services.sales import counts_promotions, sales_change, sales_lines
from shop.services.stream_outcome import SKIPPED, Action, Outcome

if TYPE_CHECKING:
    from shop.config import Settings
    from shop.models.stream_images import CustomerCartImage, OrderImage, SessionImage
    from shop.services.archival import ArchivalService
    from shop.services.category_moves import CategoryMoves
    from shop.services.ports import OrderEffects, StreamChange
    from shop.services.product_events import ProductEventsService

__all__ = ["Action", "OrderEventsService", "Outcome"]

ORDER_CONFIRMED = "ORDER_CONFIRMED"  # notification types
ORDER_STATUS_CHANGED = "ORDER_STATUS_CHANGED"


def money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


def confirmation_message(order: OrderImage) -> str:
    count = len(order.lines)
    items = sum(line.quantity for line in order.lines)
    return (
        f"Your order {order.order_id} is confirmed: {count} line{'s' if count != 1 else ''} "
        f"({items} item{'s' if items != 1 else ''}), total {money(order.total_cents)}."
    )


def status_message(order: OrderImage) -> str:
    message = f"Your order {order.order_id} is now {order.status.value.lower().replace('_', ' ')}"
    if order.status is OrderStatus.SHIPPED and order.shipment is not None:
        message += f", with {order.shipment.carrier}, tracking number {order.shipment.tracking_number}"
    if order.status is OrderStatus.DELIVERED and order.status_reason:
        message += f"; your return was not accepted: {order.status_reason}"
    return message + "."


def history_entry(order: OrderImage) -> StatusEntry:
    """The version's history entry, with its shipment's carrier and tracking number, its reason, and whether it
    shipped without its payment held."""
    shipped = order.status is OrderStatus.SHIPPED
    shipment = order.shipment if shipped else None
    return StatusEntry(
        status=order.status,
        at=order.updated_at,
        carrier=shipment.carrier if shipment else None,
        tracking_number=shipment.tracking_number if shipment else None,
        reason=order.status_reason,
        shipped_without_payment=True if shipped and order.shipped_without_payment else None,
    )


def order_event(order: OrderImage, previous: str | None) -> Event:
    """OrderConfirmed or OrderStatusChanged; `id` (order id and version) is the dedupe key."""
    confirmed = order.status is OrderStatus.CONFIRMED
    detail = OrderChange(
        id=f"{order.order_id}:{order.version}",
        order_id=order.order_id,
        customer_id=order.customer_id,
        status=order.status.value,
        previous_status=previous,
        version=order.version,
        total_cents=order.total_cents,
        line_count=len(order.lines),
        changed_at=order.updated_at,
    )
    if order.status is OrderStatus.SHIPPED and order.shipment is not None:
        detail["shipment"] = ShipmentDetail(**order.shipment.model_dump())  # type: ignore[typeddict-item]
    if order.status_reason:
        detail["reason"] = order.status_reason
    kind = DetailType.ORDER_CONFIRMED if confirmed else DetailType.ORDER_STATUS_CHANGED
    return Event(source=Source.ORDERS, detail_type=kind, detail=dict(detail))


def _abandoned_lines(cart: SessionImage | CustomerCartImage) -> list[AbandonedLine]:
    """The cart's lines in the order they were added."""
    ordered = sorted(cart.cart.items(), key=lambda entry: (cart.added_at(entry[0]), entry[0]))
    return [
        AbandonedLine(
            product_id=product_id, name=item.name, unit_price_cents=item.unit_price_cents, quantity=item.quantity
        )
        for product_id, item in ordered
    ]


def refund_due(order: OrderImage) -> int:
    """What the return this version accepted refunds (an order returned before returns per line: its total; a
    rejection: nothing)."""
    found = return_at(order.returns, order.version)
    if found is not None:
        return found[1].refund_cents
    return order.total_cents if order.status is OrderStatus.RETURNED else 0


def refund_due_event(order: OrderImage) -> Event:
    """A return accepted: its units were restocked and their refund is due. `id` dedupes."""
    detail = OrderRefundDue(
        id=f"{order.order_id}:{order.version}",
        order_id=order.order_id,
        customer_id=order.customer_id,
        amount_cents=refund_due(order),
        returned_at=order.updated_at,
    )
    return Event(source=Source.ORDERS, detail_type=DetailType.ORDER_REFUND_DUE, detail=dict(detail))


def expired_event(order: OrderImage) -> Event:
    """An unpaid order's window closed (EXPIRED): stock back, intent cancelled. `id` dedupes."""
    detail = OrderExpired(
        id=f"{order.order_id}:{order.version}",
        order_id=order.order_id,
        customer_id=order.customer_id,
        total_cents=order.total_cents,
        expired_at=order.updated_at,
    )
    return Event(source=Source.ORDERS, detail_type=DetailType.ORDER_EXPIRED, detail=dict(detail))


def payment_events(
    order: OrderImage, before: OrderPayment | None, at: str, returns_refunded_before: list[int | None] | None = None
) -> tuple[Event, ...]:
    """What a change of the order's payment record tells consumers: an authorisation lapsed, a dispute opened or
    moved, a refund made at the provider (a return's own refund, recorded on the payment or on the return
    (`returns_refunded_before`: the returns' records before the change), is the payment steps' OrderRefunded). Each
    `id` names the change, so a redelivered record publishes the same events."""
    after = order.payment
    if after is None:
        return ()
    events: list[Event] = []
    if after.status is PaymentStatus.LAPSED and (before is None or before.status is not PaymentStatus.LAPSED):
        lapsed = OrderPaymentLapsed(
            id=f"{order.order_id}:lapsed",
            order_id=order.order_id,
            customer_id=order.customer_id,
            status=order.status.value,
            amount_cents=after.amount_cents,
            currency=after.currency,
            recorded_at=at,
        )
        events.append(Event(source=Source.ORDERS, detail_type=DetailType.ORDER_PAYMENT_LAPSED, detail=dict(lapsed)))
    dispute = after.dispute
    if dispute is not None and (before is None or before.dispute != dispute):
        detail = OrderDisputed(
            id=f"{order.order_id}:{dispute.dispute_id}:{dispute.status}",
            order_id=order.order_id,
            customer_id=order.customer_id,
            dispute_id=dispute.dispute_id,
            dispute_status=dispute.status,
            amount_cents=dispute.amount_cents,
            currency=after.currency,
            updated_at=dispute.updated_at,
        )
        if dispute.reason:
            detail["reason"] = dispute.reason
        events.append(Event(source=Source.ORDERS, detail_type=DetailType.ORDER_DISPUTED, detail=dict(detail)))
    was_refunded = before.refunded_cents if before is not None else 0
    by_return = before is not None and before.return_refunded_cents != after.return_refunded_cents
    if returns_refunded_before is not None:
        by_return = by_return or returns_refunded_before != [r.refunded_cents for r in order.returns]
    if after.refunded_cents > was_refunded and not by_return:
        refund = OrderRefundedAtProvider(
            id=f"{order.order_id}:refunded:{after.refunded_cents}",
            order_id=order.order_id,
            customer_id=order.customer_id,
            amount_cents=after.refunded_cents - was_refunded,
            refunded_cents=after.refunded_cents,
            currency=after.currency,
            origin="provider",
            recorded_at=at,
        )
        events.append(Event(source=Source.ORDERS, detail_type=DetailType.ORDER_REFUNDED, detail=dict(refund)))
    return tuple(events)


def cart_abandoned_event(session: SessionImage) -> Event:
    """`id` (session id and cart version) names the cart's last state, so a redelivery dedupes."""
    detail = CartAbandoned(
        id=f"{session.session_id}:{session.cart_version}",
        session_id=session.session_id,
        lines=_abandoned_lines(session),
        subtotal_cents=subtotal(session.cart.values()),
    )
    return Event(source=Source.SESSIONS, detail_type=DetailType.CART_ABANDONED, detail=dict(detail))


def customer_cart_abandoned_event(cart: CustomerCartImage) -> Event:
    """`id` names the cart's life (its expiry, which every change moves later), so a redelivery dedupes."""
    detail = CustomerCartAbandoned(
        id=f"customer:{cart.customer_id}:{cart.expires_at}",
        customer_id=cart.customer_id,
        lines=_abandoned_lines(cart),
        subtotal_cents=subtotal(cart.cart.values()),
    )
    return Event(source=Source.SESSIONS, detail_type=DetailType.CART_ABANDONED, detail=dict(detail))


# -- the rules ------------------------------------------------------------------------------------


def written_at(record: StreamChange) -> datetime | None:
    """When the record's write happened; None when it carries no time or one no datetime holds."""
    try:
        return datetime.fromisoformat(record.created_at)
    except (ValueError, OverflowError, OSError):  # MalformedRecord (a ValueError), or a time no datetime holds
        return None


class OrderEventsService:
    def __init__(
        self,
        effects: OrderEffects,
        *,
        products: Callable[[], ProductEventsService],
        moves: Callable[[], CategoryMoves],
        archival: Callable[[], ArchivalService],
        settings: Callable[[], Settings],
        now: Callable[[], str] = clock.iso_now,
        legacy_markers: Callable[[datetime | None], bool] = lambda written: True,
    ) -> None:
        """`products`, `moves` and `archival` build the rules of rarer records (shop.wiring's factories);
        `settings` gives the settings at each use (shop.config's: the archival grace, ARCHIVE_GRACE_SECONDS, tells
        a fresh record);
        `legacy_markers` tells whether a count written at that time (None: unknown) checks the sales marker of the
        older releases, which kept a sales marker per version (shop.services.sales.LegacyMarkerCheck.needed; always, by default)."""
        self.effects = effects
        self.now = now
        self.settings = settings
        self.legacy_markers = legacy_markers
        self.counting_records: set[str] = set()  # a batch's records that counted sales (begin_batch)
        self._batching = False
        self._build_products, self._build_moves, self._build_archival = products, moves, archival

    # The rules of rarer records load on their first record: a cold start confirming an order does not import them.
    @functools.cached_property
    def products(self) -> ProductEventsService:
        return self._build_products()

    @functools.cached_property
    def moves(self) -> CategoryMoves:
        return self._build_moves()

    @functools.cached_property
    def archival(self) -> ArchivalService:
        return self._build_archival()

    # A stream batch (shop.stream_batch): the top list is refreshed once per (product, day) at its end.
    def begin_batch(self) -> None:
        self.counting_records.clear()
        self._batching = True
        self.effects.begin_batch()

    def settle_batch(self) -> None:
        """The batch's top-list refreshes; when this raises, the records in `counting_records` must fail
        (redelivered, their counts are refused and their refresh runs again)."""
        self._batching = False
        self.effects.settle_batch()

    def handle(self, record: StreamChange) -> Outcome:
        entity = record.entity
        if entity == "ORDER":
            try:
                if record.event_name == "INSERT":
                    return self.order_placed(record)
                if record.event_name == "MODIFY":
                    return self.order_changed(record)
            except errors.OrderEffectsClosed as closed:
                return Outcome(Action.ORDER_ARCHIVED, closed.order_id)
            if record.event_name == "REMOVE":
                return self.order_removed(record)
        elif entity == "SESSION" and record.event_name == "REMOVE":
            return self.session_removed(record)
        elif entity == "PRODUCT":
            return self.products.handle(record)
        elif entity == "STOCK":  # a flash-sale product's stock shard
            return self.products.shard_changed(record)
        elif entity == "CUSTOMER_CART" and record.event_name == "REMOVE":
            return self.customer_cart_removed(record)
        elif entity == "CATEGORY_MOVE" and record.event_name in ("INSERT", "MODIFY"):
            advanced = self.moves.step(record.new_move())
            return Outcome(Action.CATEGORY_MOVE_STEP, history_written=False) if advanced else SKIPPED
        return SKIPPED

    def guarded(self, record: StreamChange) -> bool:
        """Whether the record's effects check the ARCHIVED marker: any record but a fresh one (its time unknown
        or unreadable included), measured when its processing starts (shop.services.archive_timing.fresh_record)."""
        written = written_at(record)
        return written is None or not fresh_record(
            written, datetime.fromisoformat(self.now()), self.settings().archive_grace_seconds
        )

    def order_placed(self, record: StreamChange) -> Outcome:
        """Confirm a PENDING order and tell its customer (notification, then their order entry). The history
        entry and the sales count are the confirmation's own MODIFY's (one transaction, see order_changed)."""
        if record.new_status != OrderStatus.PENDING.value:
            return SKIPPED
        guarded = self.guarded(record)
        order = record.new_order()
        confirmed_at = self.now()
        won = self.effects.confirm(
            order.order_id, version=order.version, confirmed_at=confirmed_at, created_at=order.created_at
        )
        if not won:
            return Outcome(Action.NOT_CONFIRMED, order.order_id, order.status.value)
        confirmed = order.model_copy(
            update={"status": OrderStatus.CONFIRMED, "version": order.version + 1, "updated_at": confirmed_at}
        )
        self._tell_customer(confirmed, guarded=guarded)
        return Outcome(Action.CONFIRMED, order.order_id, confirmed.status.value)

    def order_changed(self, record: StreamChange) -> Outcome:
        before = record.old_status
        if before == record.new_status:
            return self.payment_changed(record)
        order = record.new_order()
        if before == OrderStatus.PENDING_PAYMENT.value:
            # The order left PENDING_PAYMENT (paid, failed, expired, cancelled): its id and units leave the
            # customer's unpaid hold, once (conditional on the id still being held: a replay releases nothing).
            self.effects.release_unpaid(order.customer_id, [order.order_id], units_of(order.lines))
        guarded = self.guarded(record)
        returned = before == OrderStatus.RETURN_REQUESTED.value and order.status in RETURN_OUTCOMES
        counted = sales_lines(order.lines, order.returns, order.version) if returned else order.lines
        promotions = self.effects.counted_promotions(order.order_id) if counts_promotions(before, order.status) else ()
        change = sales_change(order, counted, before, order.confirmed_at, order.stock_taken, promotions=promotions)
        if change is not None and self._batching:
            self.counting_records.add(record.sequence_number)
        # The processor's own confirmation already told the customer when it confirmed (unless it died in
        # between, or an admin confirmed by hand): one read of their order entry saves two refused writes.
        told = order.status is OrderStatus.CONFIRMED and self.effects.customer_index_current(order)
        if not told:
            self._tell_customer(order, guarded=guarded)
        # Last: the history entry, with the version's sales counted in its transaction (its once-only key).
        # Only a count asks whether a release before may have counted it (which may read the cut-over).
        legacy = change is not None and self.legacy_markers(written_at(record))
        recorded = self.effects.append_history(
            order, history_entry(order), sales=change, guarded=guarded, legacy=legacy
        )
        events = [order_event(order, before)]
        # A paid order's refund is the payment steps' (OrderRefunded, once the provider made it).
        if returned and order.payment is None and refund_due(order) > 0:
            events.append(refund_due_event(order))
        if order.status is OrderStatus.EXPIRED:
            events.append(expired_event(order))
        return Outcome(
            Action.STATUS_CHANGED,
            order.order_id,
            order.status.value,
            history_written=recorded.history_written,
            sales_counted=recorded.sales_counted,
            events=tuple(events),
        )

    def payment_changed(self, record: StreamChange) -> Outcome:
        """An order's payment recorded without a status change (a step's record, a provider's report): its events."""
        if not record.changed_attributes(["payment"]):
            return SKIPPED
        order = record.new_order()
        old = record.old_item().get("payment")
        before = OrderPayment.model_validate(old) if isinstance(old, dict) else None
        old_returns = record.old_item().get("returns") or []
        returns_before = [r.get("refunded_cents") for r in old_returns if isinstance(r, dict)]
        events = payment_events(order, before, record.created_at or self.now(), returns_before)
        if not events:
            return SKIPPED
        lapsed = any(event.detail_type is DetailType.ORDER_PAYMENT_LAPSED for event in events)
        action = Action.PAYMENT_LAPSED if lapsed else Action.PAYMENT_CHANGED
        return Outcome(action, order.order_id, order.status.value, events=events)

    def order_removed(self, record: StreamChange) -> Outcome:
        archived = self.archival.order_removed(record)
        if archived is None:
            return SKIPPED
        return Outcome(Action.ARCHIVED, archived.order_id, history_written=False)

    def session_removed(self, record: StreamChange) -> Outcome:
        if not record.removed_by_ttl:
            return SKIPPED
        session = record.old_session()
        if not session.cart:
            return SKIPPED
        return Outcome(Action.CART_ABANDONED, events=(cart_abandoned_event(session),))

    def customer_cart_removed(self, record: StreamChange) -> Outcome:
        if not record.removed_by_ttl:
            return SKIPPED
        cart = record.old_customer_cart()
        if not cart.cart:
            return SKIPPED
        return Outcome(Action.CART_ABANDONED, events=(customer_cart_abandoned_event(cart),))

    def _tell_customer(self, order: OrderImage, *, guarded: bool) -> None:
        """The version's notification, then the customer's order entry: the entry being current means both
        are done (order_changed reads it)."""
        if order.status is OrderStatus.CONFIRMED:
            self.effects.notify(order, kind=ORDER_CONFIRMED, message=confirmation_message(order), guarded=guarded)
        else:
            shipment = order.shipment if order.status is OrderStatus.SHIPPED else None
            self.effects.notify(
                order, kind=ORDER_STATUS_CHANGED, message=status_message(order), shipment=shipment, guarded=guarded
            )
        self.effects.update_customer_index(order, guarded=guarded)
