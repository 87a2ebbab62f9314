"""Sales by date: which order changes count, on which day, and the admins' reports.

- An order's confirmation (PENDING -> CONFIRMED, or PENDING_PAYMENT -> CONFIRMED when paid) adds each line's units and revenue to its product's
  day; a cancellation of a confirmed order and a return (RETURNED) take them back. Nothing else counts.
- The day is the order's confirmation day (UTC), for the sale and for its cancellation or return alike,
  so a day's totals net out: they are the sales confirmed that day that were not taken back since.
- Each order version counts once, whatever the replays: the stream processor writes the version's history
  entry and its counts in one transaction (OrderEffects.append_history), the entry being the once-only key.
- A line that took stock from a flash-sale product's stock shards counts on the counter shard of the same
  number (the first, when it took from several), so the counts spread as the stock takes do.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta

from shop import errors
from shop.limits import MAX_SALES_DAYS
from shop.models import OrderStatus, OrderSummary
from shop.models.orders import OrderLine
from shop.models.sales import DaySales, ProductSales, SalesChange, SalesLine, TopSeller
from shop.services.actor import Actor
from shop.services.ports import SalesStore

ADDS = {
    (OrderStatus.PENDING.value, OrderStatus.CONFIRMED),
    (OrderStatus.PENDING_PAYMENT.value, OrderStatus.CONFIRMED),  # PAYMENTS=stripe: the amount is authorised
}
TAKES_BACK = {
    (OrderStatus.CONFIRMED.value, OrderStatus.CANCELLED),
    (OrderStatus.RETURN_REQUESTED.value, OrderStatus.RETURNED),
}


def sales_day(order: OrderSummary, confirmed_at: str | None) -> str:
    """The order's confirmation day (UTC); an order confirmed before `confirmed_at` was kept counts on
    the day it was placed (the processor confirms within seconds)."""
    if order.status is OrderStatus.CONFIRMED:
        return order.updated_at[:10]
    return (confirmed_at or order.created_at)[:10]


def counter_shard(taken: Mapping[str, Mapping[str, int]] | None, product_id: str) -> int | None:
    """The counter shard of a line: the first stock shard it took from, None when it took from none."""
    labels = (taken or {}).get(product_id)
    return int(min(labels)) if labels else None


def sales_change(
    order: OrderSummary,
    lines: list[OrderLine],
    previous: str | None,
    confirmed_at: str | None,
    taken: Mapping[str, Mapping[str, int]] | None = None,
) -> SalesChange | None:
    """What this order version does to the daily totals, or None when it does nothing."""
    step = (previous, order.status)
    if step in ADDS:
        sign = 1
    elif step in TAKES_BACK:
        sign = -1
    else:
        return None
    return SalesChange(
        order_id=order.order_id,
        version=order.version,
        day=sales_day(order, confirmed_at),
        lines=tuple(
            SalesLine(
                line.product_id,
                sign * line.quantity,
                sign * line.line_total_cents,
                counter_shard(taken, line.product_id),
            )
            for line in lines
        ),
    )


def parse_day(value: str, field: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise errors.InvalidRequest(f"{field} is not a calendar date (YYYY-MM-DD)", {field: value}) from None


class SalesService:
    def __init__(self, sales: SalesStore) -> None:
        self.sales = sales

    def record(
        self,
        order: OrderSummary,
        lines: list[OrderLine],
        previous: str | None,
        confirmed_at: str | None,
        taken: Mapping[str, Mapping[str, int]] | None = None,
    ) -> bool:
        """Count this order version's sales once under its own marker (SalesStore.apply); True when this call
        counted them. The stream processor counts with the version's history entry instead (order_events)."""
        change = sales_change(order, lines, previous, confirmed_at, taken)
        return change is not None and self.sales.apply(change)

    def product_sales(self, actor: Actor, product_id: str, first: str, last: str) -> ProductSales:
        """Every day from `first` to `last` (at most MAX_SALES_DAYS), days without sales at 0."""
        actor.require_admin()
        start, end = parse_day(first, "from"), parse_day(last, "to")
        if end < start:
            raise errors.InvalidRequest("to is before from", {"to": last})
        span = (end - start).days + 1
        if span > MAX_SALES_DAYS:
            raise errors.InvalidRequest(f"a range holds at most {MAX_SALES_DAYS} days", {"to": last})
        counted = {day.date: day for day in self.sales.days(product_id, start.isoformat(), end.isoformat())}
        days = []
        for offset in range(span):
            day = (start + timedelta(days=offset)).isoformat()
            days.append(counted.get(day) or DaySales(date=day, units=0, revenue_cents=0))
        return ProductSales(product_id=product_id, days=days)

    def top(self, actor: Actor, day: str, limit: int) -> list[TopSeller]:
        actor.require_admin()
        return self.sales.top(parse_day(day, "date").isoformat(), limit)
