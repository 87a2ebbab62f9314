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
- Anything else is skipped, decided from the record's keys without deserialising the images.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from shop import clock, keys
from shop.models import OrderLine, OrderStatus, OrderSummary
from shop.publishing import Event
from shop.repository import OrderEffectsRepository, Table
from shop.repository.store import from_item

TTL_PRINCIPAL = "dynamodb.amazonaws.com"
ORDER_SOURCE = "shop.orders"
SESSION_SOURCE = "shop.sessions"

ORDER_CONFIRMED = "ORDER_CONFIRMED"
ORDER_STATUS_CHANGED = "ORDER_STATUS_CHANGED"


M = TypeVar("M", bound=BaseModel)


class MalformedRecord(ValueError):
    """A record this processor should handle but cannot read: it fails alone and is retried."""


# -- typed views of the stream images ------------------------------------------------------------


class OrderImage(OrderSummary):
    """The order item as a stream image holds it: one order version (keys and the rest are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    lines: list[OrderLine] = []


class CartItem(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    name: str
    unit_price_cents: int
    quantity: int
    added_at: str = ""


class SessionImage(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    session_id: str
    cart: dict[str, CartItem] = {}
    cart_added: dict[str, str] = {}  # product id -> when the line was added (the cart's order)
    cart_version: int = 0

    def added_at(self, product_id: str) -> str:
        return self.cart_added.get(product_id) or self.cart[product_id].added_at


@dataclass(frozen=True)
class StreamRecord:
    """One DynamoDB stream record as Lambda delivers it; images stay raw until a rule needs them."""

    event_name: str
    sequence_number: str
    pk: str
    sk: str
    new_image: Mapping[str, Any] | None = None
    old_image: Mapping[str, Any] | None = None
    user_identity: Mapping[str, Any] | None = None

    @classmethod
    def from_lambda(cls, record: Mapping[str, Any]) -> StreamRecord:
        try:
            data = record["dynamodb"]
            key = data["Keys"]
            return cls(
                event_name=str(record["eventName"]),
                sequence_number=str(data["SequenceNumber"]),
                pk=str(key[keys.PK]["S"]),
                sk=str(key[keys.SK]["S"]),
                new_image=data.get("NewImage"),
                old_image=data.get("OldImage"),
                user_identity=record.get("userIdentity"),
            )
        except (KeyError, TypeError) as error:
            raise MalformedRecord(f"not a DynamoDB stream record: missing {error}") from error

    @property
    def entity(self) -> str:
        return keys.entity_of(self.pk, self.sk)

    @property
    def removed_by_ttl(self) -> bool:
        identity = self.user_identity or {}
        return identity.get("type") == "Service" and identity.get("principalId") == TTL_PRINCIPAL

    @property
    def log_keys(self) -> dict[str, str]:
        """What structured logs carry for this record: the order or session id and the sequence number."""
        entity = self.entity
        ident = self.pk.split("#", 1)[-1]
        if entity == "ORDER":
            return {"order_id": ident, "sequence_number": self.sequence_number}
        if entity == "SESSION":
            return {"session_id": ident, "sequence_number": self.sequence_number}
        return {"sequence_number": self.sequence_number}


def raw_status(image: Mapping[str, Any] | None) -> str | None:
    """The status attribute of a raw image, without deserialising the rest of it."""
    if not image:
        return None
    attribute = image.get("status")
    return attribute.get("S") if isinstance(attribute, Mapping) else None


def parse_image(model: type[M], image: Mapping[str, Any] | None) -> M:
    if not image:
        raise MalformedRecord(f"the record carries no image for {model.__name__}")
    try:
        # Empty attribute values are dropped: DynamoDB Local's stream shows an empty map as `{}`.
        return model.model_validate(from_item({name: value for name, value in image.items() if value}))
    except (ValueError, TypeError) as error:  # pydantic's ValidationError and TypeDeserializer's errors
        raise MalformedRecord(f"unreadable {model.__name__}: {error}") from error


# -- outcome of one record ------------------------------------------------------------------------


class Action(StrEnum):
    SKIPPED = "skipped"  # not ours, or nothing to do
    CONFIRMED = "confirmed"  # this record confirmed the order
    NOT_CONFIRMED = "not_confirmed"  # already confirmed (a replay) or cancelled first
    STATUS_CHANGED = "status_changed"
    CART_ABANDONED = "cart_abandoned"


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
    return Event(
        source=ORDER_SOURCE,
        detail_type="OrderConfirmed" if confirmed else "OrderStatusChanged",
        detail={
            "id": f"{order.order_id}:{order.version}",
            "order_id": order.order_id,
            "customer_id": order.customer_id,
            "status": order.status.value,
            "previous_status": previous,
            "version": order.version,
            "total_cents": order.total_cents,
            "line_count": len(order.lines),
            "changed_at": order.updated_at,
        },
    )


def cart_abandoned_event(session: SessionImage) -> Event:
    """`id` (session id and cart version) names the cart's last state, so a redelivery dedupes."""
    ordered = sorted(session.cart.items(), key=lambda entry: (session.added_at(entry[0]), entry[0]))
    lines = [
        {
            "product_id": product_id,
            "name": item.name,
            "unit_price_cents": item.unit_price_cents,
            "quantity": item.quantity,
        }
        for product_id, item in ordered
    ]
    return Event(
        source=SESSION_SOURCE,
        detail_type="CartAbandoned",
        detail={
            "id": f"{session.session_id}:{session.cart_version}",
            "session_id": session.session_id,
            "lines": lines,
            "subtotal_cents": sum(item.unit_price_cents * item.quantity for item in session.cart.values()),
        },
    )


# -- the rules ------------------------------------------------------------------------------------


class OrderEventsService:
    def __init__(self, table: Table, shards: int | None = None, now: Callable[[], str] = clock.iso_now) -> None:
        self.effects = OrderEffectsRepository(table, shards)
        self.now = now

    def handle(self, record: StreamRecord) -> Outcome:
        entity = record.entity
        if entity == "ORDER":
            if record.event_name == "INSERT":
                return self.order_placed(record)
            if record.event_name == "MODIFY":
                return self.order_changed(record)
        elif entity == "SESSION" and record.event_name == "REMOVE":
            return self.session_removed(record)
        return SKIPPED

    def order_placed(self, record: StreamRecord) -> Outcome:
        if raw_status(record.new_image) != OrderStatus.PENDING.value:
            return SKIPPED
        order = parse_image(OrderImage, record.new_image)
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
        before, after = raw_status(record.old_image), raw_status(record.new_image)
        if before == after:
            return SKIPPED
        order = parse_image(OrderImage, record.new_image)
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

    def session_removed(self, record: StreamRecord) -> Outcome:
        if not record.removed_by_ttl:
            return SKIPPED
        session = parse_image(SessionImage, record.old_image)
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
