"""The table's stream records, read for the stream processor: the only code that knows their wire format.

What the repository is for table calls, this module is for the records Lambda delivers: keys and
images in DynamoDB JSON become a `StreamRecord` whose keys are decoded and whose status and typed
images (`OrderImage`, `SessionImage`) are read only when a rule asks, so a record that is not ours is
skipped from its keys alone. A record that cannot be read raises `MalformedRecord`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from shop import keys
from shop.models import OrderLine, OrderSummary
from shop.repository.store import from_item

TTL_PRINCIPAL = "dynamodb.amazonaws.com"

M = TypeVar("M", bound=BaseModel)


class MalformedRecord(ValueError):
    """A record the processor should handle but cannot read: it fails alone and is retried."""


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
    """One stream record: what changed (event name, entity and id from its keys) and, on demand, its images.

    Only the keys are decoded up front; the status, the TTL flag and the images are read when a rule
    asks, so a record that is not ours costs nothing more and a broken image fails only its own rule.
    """

    event_name: str  # INSERT, MODIFY or REMOVE
    sequence_number: str
    entity: str  # what the keys name (keys.entity_of): ORDER, SESSION, ORDER_HISTORY, PRODUCT, ...
    entity_id: str  # the id in the partition key: the order's id for ORDER, the session's for SESSION
    _new_image: Mapping[str, Any] | None = field(default=None, repr=False)  # DynamoDB JSON: this module's
    _old_image: Mapping[str, Any] | None = field(default=None, repr=False)
    _user_identity: Mapping[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def from_lambda(cls, record: Mapping[str, Any]) -> StreamRecord:
        """The record as Lambda delivers it (one entry of the event's `Records`)."""
        try:
            data = record["dynamodb"]
            key = data["Keys"]
            pk, sk = str(key[keys.PK]["S"]), str(key[keys.SK]["S"])
            return cls(
                event_name=str(record["eventName"]),
                sequence_number=str(data["SequenceNumber"]),
                entity=keys.entity_of(pk, sk),
                entity_id=pk.split("#", 1)[-1],
                _new_image=data.get("NewImage"),
                _old_image=data.get("OldImage"),
                _user_identity=record.get("userIdentity"),
            )
        except (KeyError, TypeError) as error:
            raise MalformedRecord(f"not a DynamoDB stream record: missing {error}") from error

    @property
    def log_keys(self) -> dict[str, str]:
        """What structured logs carry for this record: the order or session id and the sequence number."""
        if self.entity == "ORDER":
            return {"order_id": self.entity_id, "sequence_number": self.sequence_number}
        if self.entity == "SESSION":
            return {"session_id": self.entity_id, "sequence_number": self.sequence_number}
        return {"sequence_number": self.sequence_number}

    @property
    def removed_by_ttl(self) -> bool:
        """A REMOVE that DynamoDB's TTL made, not a caller's delete."""
        identity = self._user_identity or {}
        return identity.get("type") == "Service" and identity.get("principalId") == TTL_PRINCIPAL

    @property
    def new_status(self) -> str | None:
        """The status the record wrote, read without deserialising the image."""
        return _raw_status(self._new_image)

    @property
    def old_status(self) -> str | None:
        """The status before the record, read without deserialising the image."""
        return _raw_status(self._old_image)

    def new_order(self) -> OrderImage:
        """The order version the record wrote (its NewImage)."""
        return _parse(OrderImage, self._new_image)

    def old_item(self) -> dict[str, Any]:
        """The item as it was before the record (its OldImage), deserialised as the table holds it."""
        if not self._old_image:
            raise MalformedRecord("the record carries no OldImage")
        try:
            return from_item({name: value for name, value in self._old_image.items() if value})
        except (ValueError, TypeError) as error:
            raise MalformedRecord(f"unreadable OldImage: {error}") from error

    def old_session(self) -> SessionImage:
        """The session as it was before the record removed it (its OldImage)."""
        return _parse(SessionImage, self._old_image)


def _raw_status(image: Mapping[str, Any] | None) -> str | None:
    if not image:
        return None
    attribute = image.get("status")
    return attribute.get("S") if isinstance(attribute, Mapping) else None


def _parse(model: type[M], image: Mapping[str, Any] | None) -> M:
    if not image:
        raise MalformedRecord(f"the record carries no image for {model.__name__}")
    try:
        # Empty attribute values are dropped: DynamoDB Local's stream shows an empty map as `{}`.
        return model.model_validate(from_item({name: value for name, value in image.items() if value}))
    except (ValueError, TypeError) as error:  # pydantic's ValidationError and TypeDeserializer's errors
        raise MalformedRecord(f"unreadable {model.__name__}: {error}") from error
