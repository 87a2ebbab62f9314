"""Sales by date: what one order version adds to (or takes from) its products' daily totals, and the reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from shop.models.common import Day, Model


@dataclass(frozen=True)
class SalesLine:
    product_id: str
    units: int  # negative when a cancellation or a return takes the sale back
    revenue_cents: int
    shard: int | None = None  # a flash-sale product's line: the counter shard (its stock shard) it counts on


@dataclass(frozen=True)
class SalesChange:
    """One order version's effect on the daily totals: counted once, keyed by (order, version)."""

    order_id: str
    version: int
    day: str  # YYYY-MM-DD (UTC): the order's confirmation day
    lines: tuple[SalesLine, ...]
    # The order's promotions without a usage limit, counted with the version (+1 confirmed, -1 cancelled after)
    promotions: tuple[str, ...] = ()
    promotion_delta: int = 0


class Recorded(NamedTuple):
    """What writing an order version's history entry did: the entry is new; the version's sales were counted."""

    history_written: bool
    sales_counted: bool


class DaySales(Model):
    date: Day
    units: int
    revenue_cents: int


class ProductSales(Model):
    product_id: str
    days: list[DaySales]


class TopSeller(Model):
    product_id: str
    units: int
    revenue_cents: int
