"""Alerts for the shop's admins: today one kind, a product's stock crossing below its threshold."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from shop.models.common import Model, Timestamp

STOCK_LOW = "STOCK_LOW"


class Alert(Model):
    alert_id: str  # <product_id>:<sequence number>:stock-low, the StockLow event's id
    type: Literal["STOCK_LOW"] = "STOCK_LOW"
    product_id: str
    name: str
    stock: int
    previous_stock: int
    low_stock_threshold: int
    created_at: Timestamp


@dataclass(frozen=True)
class StockLowState:
    low: bool = False
    revision: int = 0  # 0: no state item yet
    alert: Alert | None = None  # the alert of the current low spell


@dataclass(frozen=True)
class StockTotal:
    """A product's stock as one consistent read saw it: the item's and every shard's, and its state."""

    product_id: str
    name: str
    total: int
    threshold: int
    shard_count: int
    state: StockLowState


class Claim(Enum):
    CLAIMED = "claimed"  # the state is low now, with this alert (written)
    MOVED = "moved"  # the state changed since it was read: decide again
    EXISTS = "exists"  # this alert was written before (a replay): nothing written
