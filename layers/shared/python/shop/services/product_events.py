"""The stream processor's product rules: ProductCreated, ProductUpdated, ProductArchived and StockLow.

Every product MODIFY reaches this code (the stream filter cannot compare the two images), and most
are an order taking stock: those are decided from a few raw attributes and skipped without reading
the images. One record publishes at most one of Created/Updated/Archived, plus StockLow.

- INSERT of a product: ProductCreated. A product created with little stock raises no StockLow (it
  crossed nothing).
- MODIFY that set ACTIVE -> ARCHIVED: ProductArchived (a missing status is ACTIVE).
- MODIFY that changed a catalogue field (CATALOGUE_FIELDS): ProductUpdated, with the fields changed.
  Stock, ratings and index attributes are not catalogue fields: stock moves on every order.
- StockLow: the record moved the product from "not low" to "low", low meaning stock below the
  image's own low_stock_threshold (missing: DEFAULT_LOW_STOCK_THRESHOLD). Once per crossing: stock
  that stays low publishes nothing until a restock takes it back to the threshold or above. A raised
  threshold that puts the current stock below it is a crossing too (the product is low from then on).
  The alert is written once (its key is deterministic, the write conditional) and the event goes out
  on every delivery of the record (its first publication may have failed), with the same `id`.

Ids are `<product_id>:<sequence number>:<kind>`: the stream record that made the change names it, and
a redelivered record carries the same sequence number, so replays write and publish nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shop.limits import DEFAULT_LOW_STOCK_THRESHOLD
from shop.models.alerts import Alert
from shop.models.events import DetailType, Event, ProductChange, Source, StockLow
from shop.services.ports import AlertStore
from shop.services.stream_outcome import SKIPPED, Action, Outcome

if TYPE_CHECKING:
    from shop.models.stream_images import ProductImage
    from shop.services.ports import StreamChange

ACTIVE = "ACTIVE"
ARCHIVED = "ARCHIVED"
# What a ProductUpdated reports a change of: what a shopper or merchandiser sees of the product.
CATALOGUE_FIELDS = ("name", "price_cents", "description", "category", "categories", "status", "low_stock_threshold")


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
    def __init__(self, alerts: AlertStore) -> None:
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
        crossing = crossing_of(record)
        if not (archived or changed or crossing):  # a stock move, a review's rating, an index rewrite
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
            events.append(stock_low_event(alert))
        return Outcome(
            Action.PRODUCT_CHANGED, product_id=product.product_id, events=tuple(events), alert_written=written
        )
