"""The stream processor's rules: confirm new orders, record status changes, notice abandoned carts.

Delivery is at least once, so every table write is keyed by order id and version and conditional
(see OrderEffectsRepository): a replayed or retried record changes nothing. Events go to EventBridge
at least once, each with a deterministic `id` in its detail for consumers to dedupe on.

- INSERT of a PENDING order: confirm it (conditional on status and version); when this record won,
  write the confirmed version's effects at once (customer index, ORDER_CONFIRMED, history last).
  When it lost, do nothing: the MODIFY record of whoever changed the order covers it.
- MODIFY of an order whose status changed: write that version's effects (for CONFIRMED, only if
  one read shows the INSERT path did not already) and publish OrderConfirmed / OrderStatusChanged.
- REMOVE of a session by TTL with a non-empty cart: publish CartAbandoned. A holder's delete: nothing.
- REMOVE of an order by TTL: archive it (shop.services.archival).
- Anything else is skipped, decided from the record's keys without deserialising the images.

Records arrive read (shop.repository.stream_records); the events are those of shop.models.events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from shop import clock
from shop.models import OrderStatus
from shop.models.events import AbandonedLine, CartAbandoned, DetailType, OrderChange, Source
from shop.models.pricing import subtotal
from shop.publishing import Event
from shop.repository import OrderEffectsRepository, Table
from shop.repository.stream_records import OrderImage, SessionImage, StreamRecord
from shop.services.archival import ArchivalService

ORDER_CONFIRMED = "ORDER_CONFIRMED"  # notification types
ORDER_STATUS_CHANGED = "ORDER_STATUS_CHANGED"


# -- outcome of one record ------------------------------------------------------------------------


class Action(StrEnum):
    SKIPPED = "skipped"  # not ours, or nothing to do
    CONFIRMED = "confirmed"  # this record confirmed the order
    NOT_CONFIRMED = "not_confirmed"  # already confirmed (a replay) or cancelled first
    STATUS_CHANGED = "status_changed"
    CART_ABANDONED = "cart_abandoned"
    ARCHIVED = "archived"  # a TTL REMOVE of an order: the order is in the archive, its history items gone


@dataclass(frozen=True)
class Outcome:
    action: Action
    order_id: str | None = None
    status: str | None = None
    history_written: bool = False  # a new status history entry (False on a replay)
    events: tuple[Event, ...] = field(default=())


SKIPPED = Outcome(Action.SKIPPED)


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
    return f"Your order {order.order_id} is now {order.status.value.lower()}."


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
    kind = DetailType.ORDER_CONFIRMED if confirmed else DetailType.ORDER_STATUS_CHANGED
    return Event(source=Source.ORDERS, detail_type=kind, detail=dict(detail))


def cart_abandoned_event(session: SessionImage) -> Event:
    """`id` (session id and cart version) names the cart's last state, so a redelivery dedupes."""
    ordered = sorted(session.cart.items(), key=lambda entry: (session.added_at(entry[0]), entry[0]))
    detail = CartAbandoned(
        id=f"{session.session_id}:{session.cart_version}",
        session_id=session.session_id,
        lines=[
            AbandonedLine(
                product_id=product_id, name=item.name, unit_price_cents=item.unit_price_cents, quantity=item.quantity
            )
            for product_id, item in ordered
        ],
        subtotal_cents=subtotal(session.cart.values()),
    )
    return Event(source=Source.SESSIONS, detail_type=DetailType.CART_ABANDONED, detail=dict(detail))


# -- the rules ------------------------------------------------------------------------------------


class OrderEventsService:
    def __init__(self, table: Table, shards: int | None = None, now: Callable[[], str] = clock.iso_now) -> None:
        self.effects = OrderEffectsRepository(table, shards)
        self.archival = ArchivalService(table, now=now)
        self.now = now

    def handle(self, record: StreamRecord) -> Outcome:
        entity = record.entity
        if entity == "ORDER":
            if record.event_name == "INSERT":
                return self.order_placed(record)
            if record.event_name == "MODIFY":
                return self.order_changed(record)
            if record.event_name == "REMOVE":
                return self.order_removed(record)
        elif entity == "SESSION" and record.event_name == "REMOVE":
            return self.session_removed(record)
        return SKIPPED

    def order_placed(self, record: StreamRecord) -> Outcome:
        if record.new_status != OrderStatus.PENDING.value:
            return SKIPPED
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
        written = self._record_change(confirmed)
        return Outcome(Action.CONFIRMED, order.order_id, confirmed.status.value, history_written=written)

    def order_changed(self, record: StreamRecord) -> Outcome:
        before = record.old_status
        if before == record.new_status:
            return SKIPPED
        order = record.new_order()
        # The processor's own confirmation already wrote these effects when it confirmed (unless it
        # died in between, or an admin confirmed by hand): one read saves three refused writes.
        written = self._record_change(order, unless_recorded=order.status is OrderStatus.CONFIRMED)
        return Outcome(
            Action.STATUS_CHANGED,
            order.order_id,
            order.status.value,
            history_written=written,
            events=(order_event(order, before),),
        )

    def order_removed(self, record: StreamRecord) -> Outcome:
        archived = self.archival.order_removed(record)
        if archived is None:
            return SKIPPED
        return Outcome(Action.ARCHIVED, archived.order_id, history_written=False)

    def session_removed(self, record: StreamRecord) -> Outcome:
        if not record.removed_by_ttl:
            return SKIPPED
        session = record.old_session()
        if not session.cart:
            return SKIPPED
        return Outcome(Action.CART_ABANDONED, events=(cart_abandoned_event(session),))

    def _record_change(self, order: OrderImage, *, unless_recorded: bool = False) -> bool:
        """Customer index, notification, then history entry of one order version; True if the history is new.

        The history entry is written last, so its presence means the other two are done as well.
        """
        if unless_recorded and self.effects.history_recorded(order):
            return False
        self.effects.update_customer_index(order)
        if order.status is OrderStatus.CONFIRMED:
            self.effects.notify(order, kind=ORDER_CONFIRMED, message=confirmation_message(order))
        else:
            self.effects.notify(order, kind=ORDER_STATUS_CHANGED, message=status_message(order))
        return self.effects.append_history(order)
