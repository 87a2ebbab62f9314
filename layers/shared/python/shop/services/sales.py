"""Sales by date: which order changes count, on which day, and the admins' reports.

- An order's confirmation (PENDING -> CONFIRMED, or PENDING_PAYMENT -> CONFIRMED when paid) adds each line's units and revenue to its product's
  day; a cancellation of a confirmed order takes them back, an accepted return its units' (their share of their
  line's total: shop.services.returns.sales_lines). Nothing else counts.
- The day is the order's confirmation day (UTC), for the sale and for its cancellation or return alike,
  so a day's totals net out: they are the sales confirmed that day that were not taken back since.
- Each order version counts once, whatever the replays: the stream processor writes the version's history
  entry and its counts in one transaction (OrderEffects.append_history), the entry being the once-only key.
- A count also checks the version's sales marker of older releases (one per version) only where such a release can
  have handled the record: LegacyMarkerCheck (SALES_LEGACY_MARKERS=auto), from the table's cut-over.
- A line that took stock from a flash-sale product's stock shards counts on the counter shard of the same
  number (the first, when it took from several), so the counts spread as the stock takes do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta

from shop import errors
from shop.limits import MAX_SALES_DAYS
from shop.models import OrderStatus, OrderSummary
from shop.models.orders import OrderLine, OrderReturn, return_at
from shop.models.sales import DaySales, ProductSales, SalesChange, SalesLine, TopSeller
from shop.services.actor import Actor
from shop.services.ports import SalesCutover, SalesStore

ADDS = {
    (OrderStatus.PENDING.value, OrderStatus.CONFIRMED),
    (OrderStatus.PENDING_PAYMENT.value, OrderStatus.CONFIRMED),  # PAYMENTS=stripe: the amount is authorised
}
CANCELLED_AFTER_CONFIRMATION = (OrderStatus.CONFIRMED.value, OrderStatus.CANCELLED)
TAKES_BACK = {
    CANCELLED_AFTER_CONFIRMATION,
    (OrderStatus.RETURN_REQUESTED.value, OrderStatus.RETURNED),
    (OrderStatus.RETURN_REQUESTED.value, OrderStatus.PARTIALLY_RETURNED),  # its returned units (none: a rejection)
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


def sales_lines(lines: list[OrderLine], returns: list[OrderReturn], version: int) -> list[OrderLine]:
    """What the return an order's `version` accepted takes off the sales: its units and their share of their line's
    total, cumulative and rounded down as the refund's (so a line's returns take back its whole total). An order
    returned before returns per line takes back every line; a rejected return nothing."""
    found = return_at(returns, version)
    if found is None:
        return list(lines) if not returns else []
    index, this = found
    before: dict[str, int] = {}
    for earlier in returns[:index]:
        for back in earlier.lines:
            before[back.variant_id] = before.get(back.variant_id, 0) + back.quantity
    units = {back.variant_id: back.quantity for back in this.lines}
    taken: list[OrderLine] = []
    for line in lines:
        if line.variant_id not in units:
            continue
        done, now, total = before.get(line.variant_id, 0), units[line.variant_id], line.line_total_cents
        share = total * (done + now) // line.quantity - total * done // line.quantity
        taken.append(line.model_copy(update={"quantity": now, "line_total_cents": share}))
    return taken


def counts_promotions(previous: str | None, status: OrderStatus) -> bool:
    """Whether this step counts the uses of the order's promotions without a usage limit: its confirmation adds
    them, a cancellation after it takes them back (a return keeps them: the order was sold)."""
    step = (previous, status)
    return step in ADDS or step == CANCELLED_AFTER_CONFIRMATION


def sales_change(
    order: OrderSummary,
    lines: list[OrderLine],
    previous: str | None,
    confirmed_at: str | None,
    taken: Mapping[str, Mapping[str, int]] | None = None,
    *,
    promotions: Sequence[str] = (),
) -> SalesChange | None:
    """What this order version does to the daily totals, or None when it does nothing; with it, what it does to the
    use counts of the order's `promotions` without a usage limit: a confirmation counts a use, a cancellation after
    it takes the use back, a return does not (the order was sold)."""
    step = (previous, order.status)
    if step in ADDS:
        sign = 1
    elif step in TAKES_BACK:
        sign = -1
    else:
        return None
    if not lines:
        return None
    counted = tuple(promotions) if counts_promotions(previous, order.status) else ()
    return SalesChange(
        order_id=order.order_id,
        version=order.version,
        day=sales_day(order, confirmed_at),
        promotions=counted,
        promotion_delta=sign if counted else 0,
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


# How long after a release's cut-over (its first count on the table, by its clock) a record may still have been
# handled by a release before it (which counted on sales markers). It covers:
# - the deploy's overlap: in a protected stage CodeDeploy shifts the live alias 10% for 5 minutes
#   (infra.constructs.functions, CANARY_10_PERCENT_5_MINUTES) while the version before keeps taking 90% of the
#   batches, then all; an unprotected stage switches at once;
# - an invocation of the release before that started in time: order_events' timeout is 30 s, and it only handles
#   records written before it started;
# - the clocks: the cut-over is the processor's clock, a record's time DynamoDB's (ApproximateCreationDateTime,
#   rounded down to the second, older streams to the minute), seconds apart.
# Together under 7 minutes; an hour (shop.services.archive_timing's FRESH_RECORD_MARGIN_SECONDS reasons alike) costs
# an hour of checks once per deploy. A deploy rolled back does not stretch it: the release before runs on, but this
# version no longer does, and the next deploy is a new version with a cut-over of its own (the key is per version).
CUTOVER_MARGIN_SECONDS = 3600


def legacy_marker_possible(record_at: datetime | None, cutover_at: datetime, now: datetime) -> bool:
    """Whether a release before the cut-over may have handled a record written at `record_at` (None: unknown):
    written before `cutover_at + CUTOVER_MARGIN_SECONDS`, at an unknown time, or stamped further in the future
    (`now`: when its processing starts) than clock skew explains (a hand-made or damaged record)."""
    margin = timedelta(seconds=CUTOVER_MARGIN_SECONDS)
    return record_at is None or record_at < cutover_at + margin or record_at > now + margin


class LegacyMarkerCheck:
    """Whether a count checks the version's sales marker of older releases, which kept one per version (SALES_LEGACY_MARKERS):
    `check` always, `off` never, `auto` where legacy_marker_possible. `auto` reads the table's cut-over (recording
    it the first time, SalesCutover) at its first record of known time, and only then: a processor that counts
    nothing never reads it."""

    def __init__(self, mode: str, cutover: SalesCutover, now: Callable[[], str]) -> None:
        self.mode = mode
        self.cutover = cutover
        self.now = now

    def needed(self, record_at: datetime | None) -> bool:
        if self.mode == "check" or (self.mode == "auto" and record_at is None):
            return True
        if self.mode == "off":
            return False
        now = self.now()
        return legacy_marker_possible(
            record_at, datetime.fromisoformat(self.cutover.cutover_at(now)), datetime.fromisoformat(now)
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
