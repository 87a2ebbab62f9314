"""The stream side's ports in memory: the table's stream over MemoryStore and the processor's writes.

`MemoryStream.read()` gives the order, product, stock-shard and category-move changes since the last read (INSERT, MODIFY,
REMOVE, each with its old and new item; an order MemoryOrders.expire took away is a TTL REMOVE; the move item
only on a store with `streamed_moves`) as `StreamChange`s, the way DynamoDB's stream hands them to the processor;
`MemoryOrderEffects` is the processor's conditional writes (confirm, history, notification, customer index),
so the whole flow runs on the memory store: a placement's INSERT is confirmed, and the processor's own
MODIFY (PENDING -> CONFIRMED) counts the sales without writing its effects twice.

Between two reads a stream record per write is collapsed into one change per item (the latest): read after
each write to see each. Sessions and customer carts are not streamed here (their rules run on the stream
tests, on DynamoDB Local).

    store = MemoryStore()
    stream = MemoryStream(store)
    processor = order_events_service(store, stream)
    for change in stream.read():
        processor.handle(change)

`lambda_event(changes)` gives the same changes as Lambda delivers them to the order_events function (DynamoDB
JSON images under the item's keys, a TTL removal signed by the DynamoDB service), for the handler tests.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from shop import clock, errors, keys
from shop.config import move_step_products, settings
from shop.models import Notification, Order, OrderStatus, OrderSummary, Product, Shipment, StatusEntry
from shop.models.orders import NO_DETAILS
from shop.models.sales import Recorded, SalesChange
from shop.models.stream_images import CustomerCartImage, MoveImage, OrderImage, ProductImage, SessionImage
from shop.repository.order_effects import notification_id
from shop.repository.store import to_item
from shop.repository.stream_records import TTL_PRINCIPAL
from shop.services.archival import ArchivalService
from shop.services.category_moves import CategoryMoves
from shop.services.order_events import OrderEventsService
from shop.services.product_events import ProductEventsService
from tests.support.memory_store import MemoryOrders, MemoryStore

MOVE = "category-move"  # the memory stream's id of the one move item


class NotInTheImage(ValueError):
    """What the record adapter's MalformedRecord is for a memory change: the image asked for is not there."""


@dataclass
class StreamState:
    """What the processor's writes leave besides the orders (as the table's items would hold it)."""

    confirmed_at: dict[str, str] = field(default_factory=dict)  # order id -> when the processor confirmed it
    history: set[tuple[str, int]] = field(default_factory=set)  # (order, version): its history entry written
    indexed: dict[str, int] = field(default_factory=dict)  # order id -> the version the customer's index shows


@dataclass(frozen=True)
class MemoryChange:
    """One change of an order or product item (StreamChange)."""

    event_name: str
    sequence_number: str
    entity: str  # ORDER or PRODUCT
    entity_id: str
    old: Mapping[str, Any] | None  # the item before and after, as plain values
    new: Mapping[str, Any] | None
    created_at: str
    removed_by_ttl: bool = False

    @property
    def new_status(self) -> str | None:
        return (self.new or {}).get("status")

    @property
    def old_status(self) -> str | None:
        return (self.old or {}).get("status")

    def new_number(self, name: str) -> int | None:
        value = (self.new or {}).get(name)
        return value if isinstance(value, int) else None

    def old_number(self, name: str) -> int | None:
        value = (self.old or {}).get(name)
        return value if isinstance(value, int) else None

    def changed_attributes(self, names: Iterable[str]) -> list[str]:
        old, new = self.old or {}, self.new or {}
        return [name for name in names if old.get(name) != new.get(name)]

    def _image(self, image: Mapping[str, Any] | None, entity: str) -> dict[str, Any]:
        if image is None or self.entity != entity:
            raise NotInTheImage(f"a {self.entity} {self.event_name} carries no such {entity} image")
        return dict(image)

    def new_order(self) -> OrderImage:
        return OrderImage.model_validate(self._image(self.new, "ORDER"))

    def new_product(self) -> ProductImage:
        return ProductImage.model_validate(self._image(self.new, "PRODUCT"))

    def old_item(self) -> dict[str, Any]:
        return self._image(self.old, self.entity)

    def new_move(self) -> MoveImage:
        return MoveImage.model_validate(self._image(self.new, "CATEGORY_MOVE"))

    def old_session(self) -> SessionImage:
        raise NotInTheImage("the memory stream carries no sessions")

    def old_customer_cart(self) -> CustomerCartImage:
        raise NotInTheImage("the memory stream carries no customer carts")


class MemoryStream:
    """The memory store's order and product items, read as a stream: what changed since the last read."""

    def __init__(self, store: MemoryStore, state: StreamState | None = None) -> None:
        self.store = store
        self.state = state if state is not None else StreamState()
        self._sequence = itertools.count(1)
        self._orders: dict[str, dict[str, Any]] = {}
        self._products: dict[str, dict[str, Any]] = {}
        self._moves: dict[str, dict[str, Any]] = {}
        self._shards: dict[str, dict[str, Any]] = {}

    def reset(self) -> None:
        """Empty, as a fresh stream over an empty store is (the processor's writes included), keeping this object."""
        self.state.__dict__.update(vars(StreamState()))
        self._orders, self._products, self._moves, self._shards = {}, {}, {}, {}

    def read(self) -> list[MemoryChange]:
        orders = {order_id: self._order_item(order) for order_id, order in self.store.state.orders.items()}
        products = {pid: self._product_item(stored.product) for pid, stored in self.store.state.products.items()}
        shards = {
            f"{pid}#{shard:02d}": {"product_id": pid, "stock": stock, "sideways_moves": stored.sideways}
            for pid, stored in self.store.state.products.items()
            for shard, stock in enumerate(stored.shards)
        }  # a flash-sale product's stock shards (entity STOCK, id <product>#<shard>)
        move = self.store.state.move
        moves = {} if move is None else {MOVE: dict(move)}  # one move item at a time, under one key
        changes = [
            *self._changes("ORDER", self._orders, orders),
            *self._changes("PRODUCT", self._products, products),
            *self._changes("STOCK", self._shards, shards),
            *self._changes("CATEGORY_MOVE", self._moves, moves),
        ]
        self._orders, self._products, self._moves, self._shards = orders, products, moves, shards
        return changes

    def _changes(
        self, entity: str, before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
    ) -> list[MemoryChange]:
        found: list[MemoryChange] = []
        for item_id in [*after, *(i for i in before if i not in after)]:
            old, new = before.get(item_id), after.get(item_id)
            if old == new:
                continue
            event = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
            removed_by_ttl = (
                event == "REMOVE" and entity == "ORDER" and item_id in self.store.state.archived
            )  # MemoryOrders.expire: what TTL does
            found.append(
                MemoryChange(
                    event_name=event,
                    sequence_number=f"{next(self._sequence):021d}",
                    entity=entity,
                    entity_id=item_id,
                    old=old,
                    new=new,
                    created_at=clock.iso_now(),
                    removed_by_ttl=removed_by_ttl,
                )
            )
        return found

    def _order_item(self, order: Order) -> dict[str, Any]:
        latest = order.history[-1] if order.history else None
        reason = latest.reason if latest is not None and latest.status is order.status else None
        return {
            **order.model_dump(mode="json"),
            "stock_taken": order.stock_taken or None,
            # PAYMENTS=stripe: the order's payment, as the order item holds it (excluded from answers, not images)
            "payment": order.payment.model_dump(mode="json", exclude_none=True) if order.payment else None,
            "status_reason": reason,
            "confirmed_at": self.state.confirmed_at.get(order.order_id),
        }

    @staticmethod
    def _product_item(product: Product) -> dict[str, Any]:
        return product.model_dump(mode="json")


class MemoryOrderEffects:
    """OrderEffects: the processor's writes, each once (a replay writes nothing)."""

    def __init__(self, store: MemoryStore, state: StreamState) -> None:
        self.store = store
        self.state = state

    def confirm(self, order_id: str, *, version: int, confirmed_at: str, created_at: str) -> bool:
        current = self.store.state.orders.get(order_id)
        if current is None or current.status is not OrderStatus.PENDING or current.version != version:
            return False
        confirmed = MemoryOrders._advanced(current, OrderStatus.CONFIRMED, version + 1, confirmed_at, NO_DETAILS)
        self.store.state.orders[order_id] = confirmed
        self.state.confirmed_at[order_id] = confirmed_at
        return True

    def begin_batch(self) -> None:
        """The memory store's top list is computed when read: nothing waits for a batch's end."""

    def settle_batch(self) -> None:
        """Nothing waits (begin_batch)."""

    def customer_index_current(self, change: OrderSummary) -> bool:
        return self.state.indexed.get(change.order_id, 0) == change.version

    def counted_promotions(self, order_id: str) -> list[str]:
        order = self.store.state.orders.get(order_id)
        return list(order.counted_promotions) if order is not None else []

    def _open(self, order_id: str, guarded: bool) -> None:
        """As the table's guarded effect writes check the order's ARCHIVED marker in the same transaction (a
        fresh record's do not)."""
        if guarded and order_id in self.store.state.archived:
            raise errors.OrderEffectsClosed(order_id)

    def append_history(
        self,
        change: OrderSummary,
        entry: StatusEntry | None = None,
        sales: SalesChange | None = None,
        *,
        guarded: bool = True,
        legacy: bool = True,
    ) -> Recorded:
        """As the table's: the entry once, and with `sales` the version's sales counted with it (the entry is
        their once-only key; no release before ever wrote to the memory store: `legacy` changes nothing)."""
        self._open(change.order_id, guarded)
        marker = (change.order_id, change.version)
        if marker in self.state.history:
            return Recorded(False, False)
        self.state.history.add(marker)
        return Recorded(True, sales is not None and self.store.sales.apply(sales))

    def notify(
        self,
        change: OrderSummary,
        *,
        kind: str,
        message: str,
        shipment: Shipment | None = None,
        guarded: bool = True,
    ) -> Notification:
        notification = Notification(
            notification_id=notification_id(change.order_id, change.version),
            type=kind,
            order_id=change.order_id,
            message=message,
            created_at=change.updated_at,
            shipment=shipment,
        )
        self._open(change.order_id, guarded)
        sent = self.store.state.notifications.get(change.customer_id, [])
        if all(note.notification_id != notification.notification_id for note in sent):
            self.store.customers.notify(change.customer_id, notification)
        return notification

    def update_customer_index(self, change: OrderSummary, *, guarded: bool = True) -> bool:
        self._open(change.order_id, guarded)
        if self.state.indexed.get(change.order_id, 0) >= change.version:
            return False
        self.state.indexed[change.order_id] = change.version
        return True

    def release_unpaid(self, customer_id: str, order_ids: Sequence[str], units: int) -> bool:
        """As the table's: the ids and units out of the customer's unpaid hold if every id is still held."""
        return self.store.orders.release_unpaid(customer_id, order_ids, units)


@dataclass(frozen=True)
class _Remains:
    archive_key: str | None
    history: list[dict[str, Any]]
    leftovers: list[dict[str, Any]]


class MemoryArchival:
    """ArchivalStore and ArchiveWriter: the memory store keeps no history items, so nothing is left to delete."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def remains(self, order_id: str) -> _Remains:
        archived = self.store.state.archived.get(order_id)
        return _Remains(archived[1] if archived else None, [], [])

    @staticmethod
    def order(removed: Mapping[str, Any], history: list[dict[str, Any]]) -> Order:
        # the memory stream's image carries the history; a table's item does not (its history items are apart)
        return Order.model_validate({"history": [], **removed})

    def mark_archived(self, order: Order, *, archive_key: str, archived_at: str) -> bool:
        if order.order_id in self.store.state.archived:
            return False
        self.store.state.archived[order.order_id] = (order.customer_id, archive_key)
        return True

    def delete_history(self, order_id: str, history: list[dict[str, Any]]) -> int:
        return len(history)

    def put(self, order: Order, *, archived_at: str) -> str:
        key = f"orders/{order.order_id}.json"
        self.store.state.archive[key] = order
        return key


def order_events_service(
    store: MemoryStore, stream: MemoryStream, now: Callable[[], str] = clock.iso_now
) -> OrderEventsService:
    """The stream processor's rules on the memory store (what shop.wiring builds on the table); category moves
    step only on a store with `streamed_moves` (others apply a move at once and write no move item)."""
    return OrderEventsService(
        MemoryOrderEffects(store, stream.state),
        products=lambda: ProductEventsService(store.alerts),
        moves=lambda: CategoryMoves(store.categories, store.products, step_products=move_step_products),
        archival=lambda: ArchivalService(MemoryArchival(store), MemoryArchival(store), now=now),
        settings=settings,
        now=now,
    )


def _shard_of(entity_id: str) -> tuple[str, int]:
    product_id, _, shard = entity_id.rpartition("#")
    return product_id, int(shard)


def lambda_record(change: MemoryChange) -> dict[str, Any]:
    """One change as the stream's event source mapping delivers it (the item as the table would hold it)."""
    key = {
        "ORDER": keys.order_key,
        "PRODUCT": keys.product_key,
        "CATEGORY_MOVE": lambda _: keys.category_move_key(),
        "STOCK": lambda shard: keys.stock_shard_key(*_shard_of(shard)),
    }[change.entity](change.entity_id)

    def image(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        numbers = json.loads(json.dumps(values), parse_float=Decimal)  # DynamoDB numbers: no float
        return to_item({**numbers, **key})

    data: dict[str, Any] = {
        "ApproximateCreationDateTime": clock.epoch(datetime.fromisoformat(change.created_at)),
        "Keys": to_item(key),
        "SequenceNumber": change.sequence_number,
        "SizeBytes": 512,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    for name, values in (("NewImage", change.new), ("OldImage", change.old)):
        found = image(values)
        if found is not None:
            data[name] = found
    record: dict[str, Any] = {
        "eventID": f"memory-{change.sequence_number}",
        "eventName": change.event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": data,
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/shop-test/stream/2026-01-01T00:00:00.000",
    }
    if change.removed_by_ttl:
        record["userIdentity"] = {"type": "Service", "principalId": TTL_PRINCIPAL}
    return record


def lambda_event(changes: Sequence[MemoryChange]) -> dict[str, Any]:
    """A batch of changes as the order_events function receives it."""
    return {"Records": [lambda_record(change) for change in changes]}


def customer_cart_expired(store: MemoryStore, customer_id: str, sequence_number: str) -> dict[str, Any]:
    """What TTL does to a customer cart past its expiry: the cart leaves the store, and its REMOVE record
    (the item as the table holds it, signed by the DynamoDB service) is returned as Lambda delivers it."""
    cart = store.state.carts.pop(customer_id)
    key = keys.customer_cart_key(customer_id)
    lines = {
        line.product_id: {
            "name": line.name,
            "unit_price_cents": line.unit_price_cents,
            "quantity": line.quantity,
            "added_at": line.added_at,
        }
        for line in cart.lines.values()
    }
    item = {
        **key,
        "customer_id": customer_id,
        "cart": lines,
        "cart_version": cart.version,
        "expires_at": cart.expires_at,
    }
    return {
        "eventID": f"memory-{sequence_number}",
        "eventName": "REMOVE",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": cart.expires_at,
            "Keys": to_item(key),
            "OldImage": to_item(item),
            "SequenceNumber": sequence_number,
            "SizeBytes": 256,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
        "userIdentity": {"type": "Service", "principalId": TTL_PRINCIPAL},
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/shop-test/stream/2026-01-01T00:00:00.000",
    }
