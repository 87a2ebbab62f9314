"""The stream side's ports in memory: the table's stream over MemoryStore and the processor's writes.

`MemoryStream.read()` gives the order and product changes since the last read (INSERT, MODIFY, REMOVE,
each with its old and new item; an order MemoryOrders.expire took away is a TTL REMOVE) as `StreamChange`s, the way DynamoDB's stream hands them to the processor;
`MemoryOrderEffects` is the processor's conditional writes (confirm, history, notification, customer index),
so the whole flow runs on the memory store: a placement's INSERT is confirmed, and the processor's own
MODIFY (PENDING -> CONFIRMED) counts the sales without writing its effects twice.

Between two reads a stream record per write is collapsed into one change per item (the latest): read after
each write to see each. Sessions, customer carts and category moves are not streamed here (their rules run
on the stream tests, on DynamoDB Local).

    store = MemoryStore()
    stream = MemoryStream(store)
    processor = order_events_service(store, stream)
    for change in stream.read():
        processor.handle(change)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shop import clock
from shop.models import Notification, Order, OrderStatus, OrderSummary, Product, Shipment, StatusEntry
from shop.models.orders import NO_DETAILS
from shop.models.stream_images import CustomerCartImage, MoveImage, OrderImage, ProductImage, SessionImage
from shop.repository.order_effects import notification_id
from shop.services.archival import ArchivalService
from shop.services.category_moves import CategoryMoves
from shop.services.order_events import OrderEventsService
from shop.services.product_events import ProductEventsService
from shop.services.sales import SalesService
from tests.support.memory_store import MemoryOrders, MemoryStore


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
        raise NotInTheImage("the memory stream carries no category moves")

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

    def read(self) -> list[MemoryChange]:
        orders = {order_id: self._order_item(order) for order_id, order in self.store.state.orders.items()}
        products = {pid: self._product_item(stored.product) for pid, stored in self.store.state.products.items()}
        changes = [
            *self._changes("ORDER", self._orders, orders),
            *self._changes("PRODUCT", self._products, products),
        ]
        self._orders, self._products = orders, products
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

    def history_recorded(self, change: OrderSummary) -> bool:
        return (change.order_id, change.version) in self.state.history

    def append_history(self, change: OrderSummary, entry: StatusEntry | None = None) -> bool:
        marker = (change.order_id, change.version)
        if marker in self.state.history:
            return False
        self.state.history.add(marker)
        return True

    def notify(
        self, change: OrderSummary, *, kind: str, message: str, shipment: Shipment | None = None
    ) -> Notification:
        notification = Notification(
            notification_id=notification_id(change.order_id, change.version),
            type=kind,
            order_id=change.order_id,
            message=message,
            created_at=change.updated_at,
            shipment=shipment,
        )
        sent = self.store.state.notifications.get(change.customer_id, [])
        if all(note.notification_id != notification.notification_id for note in sent):
            self.store.customers.notify(change.customer_id, notification)
        return notification

    def update_customer_index(self, change: OrderSummary) -> bool:
        if self.state.indexed.get(change.order_id, 0) >= change.version:
            return False
        self.state.indexed[change.order_id] = change.version
        return True


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
        return Order.model_validate(removed)

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
    """The stream processor's rules on the memory store (what shop.wiring builds on the table)."""

    def no_moves() -> CategoryMoves:
        raise NotInTheImage("the memory stream carries no category moves")

    return OrderEventsService(
        MemoryOrderEffects(store, stream.state),
        SalesService(store.sales),
        products=lambda: ProductEventsService(store.alerts),
        moves=no_moves,
        archival=lambda: ArchivalService(MemoryArchival(store), MemoryArchival(store), now=now),
        now=now,
    )
