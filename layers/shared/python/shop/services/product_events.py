"""The stream processor's product rules: ProductCreated, ProductUpdated, ProductArchived and StockLow.

Every product MODIFY reaches this code (the stream filter cannot compare the two images), and most
are an order taking stock: those are decided from a few raw attributes and skipped without reading
the images. One record publishes at most one of Created/Updated/Archived, plus StockLow.

- INSERT of a product: ProductCreated. A product created with little stock raises no StockLow (it
  crossed nothing).
- MODIFY that set ACTIVE -> ARCHIVED: ProductArchived (a missing status is ACTIVE).
- MODIFY that changed a catalogue field (CATALOGUE_FIELDS): ProductUpdated, with the fields changed.
  Stock, ratings and index attributes are not catalogue fields: stock moves on every order.
- StockLow follows the product's TOTAL stock (the item's and every stock shard's), low meaning below
  its own low_stock_threshold (missing: DEFAULT_LOW_STOCK_THRESHOLD); once per crossing: stock that
  stays low publishes nothing until a restock takes it back to the threshold or above. A raised
  threshold that puts the current stock below it is a crossing too (the product is low from then on).
  - A product without shards: its item's stock is the total, and its records come in order, so the
    record's own images decide (as before shards existed): the record moved it from "not low" to "low".
  - Spreading, un-spreading and re-spreading (the item's stock_shards changes) and an order's gathering
    (stock moved between a product's shards) move stock between places without changing the total: they
    decide nothing (their shard writes count `sideways_moves`, and a record that counted one is skipped).
  - A product with shards: a shard's sales are records of other items, on other stream shards, in no
    order with each other; so a record that moved a shard's stock, or the item's stock or threshold,
    reads the total (one TransactGetItems of the state, the item and its shards: a serializable view,
    never half of a transaction that moves stock between places) and brings the product's low-stock
    state (shop.repository.alerts) to it: low and not marked low -> the alert, in one transaction with
    the state (conditional on the state's revision read: of two concurrent records one writes it); not
    low and marked low -> the mark is cleared. A replay reads the same truth: no change.
  The alert is written once (its key is deterministic, the write conditional) and the event goes out
  on every delivery of the record (its first publication may have failed), with the same `id`.

Ids are `<product_id>:<sequence number>:<kind>`: the stream record that made the change names it, and
a redelivered record carries the same sequence number, so replays write and publish nothing new.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shop import errors
from shop.limits import DEFAULT_LOW_STOCK_THRESHOLD
from shop.models.alerts import Alert, Claim
from shop.models.events import DetailType, Event, ProductChange, Source, StockLow
from shop.services.ports import StockAlertStore
from shop.services.stream_outcome import SKIPPED, Action, Outcome

if TYPE_CHECKING:
    from shop.models.stream_images import ProductImage
    from shop.services.ports import StreamChange

ACTIVE = "ACTIVE"
ARCHIVED = "ARCHIVED"
# What a ProductUpdated reports a change of: what a shopper or merchandiser sees of the product.
CATALOGUE_FIELDS = ("name", "price_cents", "description", "category", "categories", "status", "low_stock_threshold")
# Times a record reads the total again when the low-stock state moved between its read and its write.
TOTAL_ATTEMPTS = 3
# How long an instance trusts a product's threshold it read, to skip the total's read for a shard sale that
# leaves the shard at or above it (the total cannot be low then).
THRESHOLD_MEMO_SECONDS = 60.0
# The shard attribute that a gathering's and a spread's writes (and only theirs) increment.
SIDEWAYS_MOVES = "sideways_moves"
_shard_counts: dict[str, int] = {}  # per instance: the shard count last read per product (a read's hint only)
_thresholds: dict[str, tuple[int, float]] = {}  # per instance: product -> (threshold, when it was read)


@dataclass(frozen=True)
class Crossing:
    """A stock move from at or above the threshold to below it."""

    previous_stock: int
    stock: int
    threshold: int


def is_low(stock: int, threshold: int) -> bool:
    return stock < threshold


def crossing_of(record: StreamChange) -> Crossing | None:
    """The crossing this MODIFY made, if any: read from the raw images (no deserialisation)."""
    before, after = record.old_number("stock"), record.new_number("stock")
    if before is None or after is None:
        return None
    threshold_before = _threshold(record.old_number("low_stock_threshold"))
    threshold_after = _threshold(record.new_number("low_stock_threshold"))
    if is_low(before, threshold_before) or not is_low(after, threshold_after):
        return None
    return Crossing(previous_stock=before, stock=after, threshold=threshold_after)


def rose_above(record: StreamChange) -> bool:
    """Whether this MODIFY took the stock from low back to the threshold or above (the images alone)."""
    before, after = record.old_number("stock"), record.new_number("stock")
    if before is None or after is None:
        return False
    threshold_before = _threshold(record.old_number("low_stock_threshold"))
    threshold_after = _threshold(record.new_number("low_stock_threshold"))
    return is_low(before, threshold_before) and not is_low(after, threshold_after)


def shard_counts(record: StreamChange) -> tuple[int, int]:
    """The product item's stock_shards before and after (missing: 1, no shards)."""
    return record.old_number("stock_shards") or 1, record.new_number("stock_shards") or 1


def stock_decrease(record: StreamChange) -> int:
    before, after = record.old_number("stock"), record.new_number("stock")
    return max(0, (before or 0) - (after or 0))


def _threshold(value: int | None) -> int:
    return DEFAULT_LOW_STOCK_THRESHOLD if value is None else value


def event_id(product_id: str, record: StreamChange, kind: str) -> str:
    return f"{product_id}:{record.sequence_number}:{kind}"


def product_event(product: ProductImage, detail_type: DetailType, *, id: str, changed: list[str]) -> Event:
    detail = ProductChange(
        id=id,
        product_id=product.product_id,
        name=product.name,
        categories=product.category_slugs,
        price_cents=product.price_cents,
        description=product.description,
        status=product.status,
        stock=product.stock,
        low_stock_threshold=product.low_stock_threshold,
        changed=changed,
        changed_at=product.updated_at or product.created_at,
    )
    return Event(source=Source.PRODUCTS, detail_type=detail_type, detail=dict(detail))


def stock_low_alert(product: ProductImage, crossing: Crossing, *, alert_id: str, at: str) -> Alert:
    return Alert(
        alert_id=alert_id,
        product_id=product.product_id,
        name=product.name,
        stock=crossing.stock,
        previous_stock=crossing.previous_stock,
        low_stock_threshold=crossing.threshold,
        created_at=at,
    )


def stock_low_event(alert: Alert) -> Event:
    detail = StockLow(
        id=alert.alert_id,
        product_id=alert.product_id,
        name=alert.name,
        stock=alert.stock,
        previous_stock=alert.previous_stock,
        low_stock_threshold=alert.low_stock_threshold,
        at=alert.created_at,
    )
    return Event(source=Source.PRODUCTS, detail_type=DetailType.STOCK_LOW, detail=dict(detail))


class ProductEventsService:
    def __init__(self, alerts: StockAlertStore) -> None:
        self.alerts = alerts

    def handle(self, record: StreamChange) -> Outcome:
        if record.event_name == "INSERT":
            return self.created(record)
        if record.event_name == "MODIFY":
            return self.changed(record)
        return SKIPPED

    def created(self, record: StreamChange) -> Outcome:
        product = record.new_product()
        event = product_event(
            product, DetailType.PRODUCT_CREATED, id=event_id(product.product_id, record, "created"), changed=[]
        )
        return Outcome(Action.PRODUCT_CHANGED, product_id=product.product_id, events=(event,))

    def changed(self, record: StreamChange) -> Outcome:
        archived = (record.old_status or ACTIVE) != ARCHIVED and record.new_status == ARCHIVED
        changed = record.changed_attributes(CATALOGUE_FIELDS)
        crossing, rose, total_moved = None, False, False
        before_count, after_count = shard_counts(record)
        if before_count == after_count == 1:
            crossing, rose = crossing_of(record), rose_above(record)
        elif before_count == after_count:  # a product with shards: its item's stock or threshold moved
            total_moved = bool(record.changed_attributes(("stock", "low_stock_threshold")))
        if not (archived or changed or crossing or rose or total_moved):  # a stock move, a rating, a spread
            return SKIPPED
        product = record.new_product()
        events: list[Event] = []
        if archived:
            kind, detail_type = "archived", DetailType.PRODUCT_ARCHIVED
        else:
            kind, detail_type = "updated", DetailType.PRODUCT_UPDATED
        if changed:
            events.append(
                product_event(product, detail_type, id=event_id(product.product_id, record, kind), changed=changed)
            )
        written = False
        if crossing:
            alert_id = event_id(product.product_id, record, "stock-low")
            alert = stock_low_alert(product, crossing, alert_id=alert_id, at=record.created_at)
            written = self.alerts.record(alert)
            self.alerts.follow_item(product.product_id, low=True, sequence_number=record.sequence_number, alert=alert)
            events.append(stock_low_event(alert))
        elif rose:
            self.alerts.follow_item(product.product_id, low=False, sequence_number=record.sequence_number)
        elif total_moved:
            written, event = self.follow_total(product.product_id, record, shards_hint=after_count)
            events += [event] if event else []
        return Outcome(
            Action.PRODUCT_CHANGED, product_id=product.product_id, events=tuple(events), alert_written=written
        )

    def shard_changed(self, record: StreamChange) -> Outcome:
        """A stock shard's MODIFY (a sale, a restock): the total decides, if its stock moved and the total may
        be low (a sale that leaves the shard at or above the threshold cannot make it low). A move between
        places (a gathering, a re-spread) never changes the total: it decides nothing and reads nothing."""
        before, after = record.old_number("stock"), record.new_number("stock")
        if record.event_name != "MODIFY" or before is None or after is None or before == after:
            return SKIPPED
        if record.new_number(SIDEWAYS_MOVES) != record.old_number(SIDEWAYS_MOVES):  # a gathering or a spread
            return SKIPPED
        product_id, _, shard = record.entity_id.rpartition("#")
        if after < before and after >= self.threshold(product_id):
            return SKIPPED
        hint = max(_shard_counts.get(product_id, 1), int(shard) + 1)
        written, event = self.follow_total(product_id, record, shards_hint=hint)
        return Outcome(
            Action.PRODUCT_CHANGED,
            product_id=product_id,
            events=(event,) if event else (),
            alert_written=written,
        )

    def threshold(self, product_id: str) -> int:
        """The product's threshold as this instance last read it (within THRESHOLD_MEMO_SECONDS), else read."""
        known = _thresholds.get(product_id)
        if known is not None and time.monotonic() - known[1] < THRESHOLD_MEMO_SECONDS:
            return known[0]
        threshold = self.alerts.threshold(product_id)
        _thresholds[product_id] = (threshold, time.monotonic())
        return threshold

    def follow_total(self, product_id: str, record: StreamChange, *, shards_hint: int) -> tuple[bool, Event | None]:
        """Bring the product's low-stock state to its total stock, read now: (alert written, event to publish)."""
        alert_id = event_id(product_id, record, "stock-low")
        for _ in range(TOTAL_ATTEMPTS):
            seen = self.alerts.stock_total(product_id, shards_hint=shards_hint)
            if seen is None:
                return False, None
            _shard_counts[product_id] = shards_hint = seen.shard_count
            _thresholds[product_id] = (seen.threshold, time.monotonic())
            if not is_low(seen.total, seen.threshold):
                if not seen.state.low or self.alerts.clear_low(product_id, seen.state):
                    return False, None
                continue
            if seen.state.low:  # this spell's alert is out; when it is this record's, a redelivery sends it again
                held = seen.state.alert
                return False, (stock_low_event(held) if held is not None and held.alert_id == alert_id else None)
            alert = Alert(
                alert_id=alert_id,
                product_id=product_id,
                name=seen.name,
                stock=seen.total,
                previous_stock=seen.total + stock_decrease(record),
                low_stock_threshold=seen.threshold,
                created_at=record.created_at,
            )
            claim = self.alerts.claim_low(alert, seen.state)
            if claim is Claim.CLAIMED:
                return True, stock_low_event(alert)
            if claim is Claim.EXISTS:
                return False, None
        raise errors.ServiceUnavailable(f"the low-stock state of {product_id} keeps moving, retry")
