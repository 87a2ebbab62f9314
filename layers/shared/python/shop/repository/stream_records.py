"""The table's stream records, read for the stream processor: the only code that knows their wire format.

A `StreamRecord` decodes the keys at once and reads status and images only when a rule asks, so a record that is
not ours is skipped from its keys alone; an unreadable record raises `MalformedRecord`. The images are domain
models (`shop.models.stream_images`): this module parses them, the rules read them through the `StreamChange` port.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from shop import clock, keys
from shop.models.stream_images import CustomerCartImage, MoveImage, OrderImage, ProductImage, SessionImage
from shop.repository.store import from_item

TTL_PRINCIPAL = "dynamodb.amazonaws.com"

M = TypeVar("M", bound=BaseModel)


class MalformedRecord(ValueError):
    """A record the processor should handle but cannot read: it fails alone and is retried."""


@dataclass(frozen=True)
class StreamRecord:
    """One stream record: what changed (event name, entity and id from its keys) and, on demand, its images.

    Only the keys are decoded up front; the status, the TTL flag and the images are read when a rule
    asks, so a record that is not ours costs nothing more and a broken image fails only its own rule.
    """

    event_name: str  # INSERT, MODIFY or REMOVE
    sequence_number: str
    entity: str  # what the keys name (keys.entity_of): ORDER, SESSION, ORDER_HISTORY, PRODUCT, ...
    entity_id: (
        str  # the id in the partition key: the order's for ORDER, the session's, the customer's for CUSTOMER_CART
    )
    _new_image: Mapping[str, Any] | None = field(default=None, repr=False)  # DynamoDB JSON: this module's
    _old_image: Mapping[str, Any] | None = field(default=None, repr=False)
    _user_identity: Mapping[str, Any] | None = field(default=None, repr=False)
    _created: Any = field(default=None, repr=False)  # ApproximateCreationDateTime: epoch seconds

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
                _created=data.get("ApproximateCreationDateTime"),
            )
        except (KeyError, TypeError) as error:
            raise MalformedRecord(f"not a DynamoDB stream record: missing {error}") from error

    @property
    def log_keys(self) -> dict[str, str]:
        """What structured logs carry for this record: the order, session or customer id and the sequence number."""
        if self.entity == "ORDER":
            return {"order_id": self.entity_id, "sequence_number": self.sequence_number}
        if self.entity == "SESSION":
            return {"session_id": self.entity_id, "sequence_number": self.sequence_number}
        if self.entity == "PRODUCT":
            return {"product_id": self.entity_id, "sequence_number": self.sequence_number}
        if self.entity == "CUSTOMER_CART":
            return {"customer_id": self.entity_id, "sequence_number": self.sequence_number}
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

    @property
    def created_at(self) -> str:
        """When the write happened (ApproximateCreationDateTime, the same on every delivery), ISO-8601."""
        if not isinstance(self._created, int | float) or isinstance(self._created, bool):
            raise MalformedRecord("the record carries no ApproximateCreationDateTime")
        return clock.iso(datetime.fromtimestamp(self._created, UTC))

    def new_number(self, name: str) -> int | None:
        """A number attribute of the NewImage, read without deserialising the image (None if absent)."""
        return _raw_number(self._new_image, name)

    def old_number(self, name: str) -> int | None:
        """A number attribute of the OldImage, read without deserialising the image (None if absent)."""
        return _raw_number(self._old_image, name)

    def changed_attributes(self, names: Iterable[str]) -> list[str]:
        """Those of `names` whose value differs between the images (compared in DynamoDB JSON)."""
        old, new = self._old_image or {}, self._new_image or {}
        return [name for name in names if _attribute(old, name) != _attribute(new, name)]

    def new_product(self) -> ProductImage:
        """The product the record wrote (its NewImage)."""
        return _parse(ProductImage, self._new_image)

    def new_order(self) -> OrderImage:
        """The order version the record wrote (its NewImage)."""
        return _parse(OrderImage, self._new_image)

    def new_move(self) -> MoveImage:
        """The category move as the record left it (its NewImage)."""
        return _parse(MoveImage, self._new_image)

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

    def old_customer_cart(self) -> CustomerCartImage:
        """The customer cart as it was before the record removed it (its OldImage)."""
        return _parse(CustomerCartImage, self._old_image)


def _raw_status(image: Mapping[str, Any] | None) -> str | None:
    if not image:
        return None
    attribute = image.get("status")
    return attribute.get("S") if isinstance(attribute, Mapping) else None


def _attribute(image: Mapping[str, Any], name: str) -> Any:
    value = image.get(name)
    if isinstance(value, Mapping) and not value:  # DynamoDB Local shows an empty map as `{}`
        return None
    if isinstance(value, Mapping) and "SS" in value:  # a set's order means nothing
        return {"SS": sorted(value["SS"])}
    return value


def _raw_number(image: Mapping[str, Any] | None, name: str) -> int | None:
    attribute = (image or {}).get(name)
    if not isinstance(attribute, Mapping) or "N" not in attribute:
        return None
    try:
        return int(attribute["N"])
    except (TypeError, ValueError) as error:
        raise MalformedRecord(f"{name} is not an integer: {attribute['N']!r}") from error


def _parse(model: type[M], image: Mapping[str, Any] | None) -> M:
    if not image:
        raise MalformedRecord(f"the record carries no image for {model.__name__}")
    try:
        # Empty attribute values are dropped: DynamoDB Local's stream shows an empty map as `{}`.
        return model.model_validate(from_item({name: value for name, value in image.items() if value}))
    except (ValueError, TypeError) as error:  # pydantic's ValidationError and TypeDeserializer's errors
        raise MalformedRecord(f"unreadable {model.__name__}: {error}") from error
