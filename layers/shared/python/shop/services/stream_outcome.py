"""What the stream processor's rules say about one record: the action taken, its table effects, its events."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from shop.models.events import Event


class Action(StrEnum):
    SKIPPED = "skipped"  # not ours, or nothing to do
    CONFIRMED = "confirmed"  # this record confirmed the order
    NOT_CONFIRMED = "not_confirmed"  # already confirmed (a replay) or cancelled first
    STATUS_CHANGED = "status_changed"
    PAYMENT_CHANGED = "payment_changed"  # the payment's record moved without a status change: its events
    PAYMENT_LAPSED = "payment_lapsed"  # the authorisation of a confirmed order lapsed (its alarm's metric)
    CART_ABANDONED = "cart_abandoned"
    PRODUCT_CHANGED = "product_changed"  # created, catalogue edited, archived and/or stock crossed low
    ARCHIVED = "archived"  # a TTL REMOVE of an order: the order is in the archive, its history items gone
    ORDER_ARCHIVED = "order_archived"  # a record (a replay) of an order already archived: nothing written or sent
    CATEGORY_MOVE_STEP = "category_move_step"  # one step of a category move (shop.services.category_moves)


@dataclass(frozen=True)
class Outcome:
    action: Action
    order_id: str | None = None
    status: str | None = None
    history_written: bool = False  # a new status history entry (False on a replay)
    sales_counted: bool = False  # this record counted the version's sales (False on a replay)
    events: tuple[Event, ...] = field(default=())
    product_id: str | None = None
    alert_written: bool = False  # a new StockLow alert (False on a replay)


SKIPPED = Outcome(Action.SKIPPED)
