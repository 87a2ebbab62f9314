from __future__ import annotations

from typing import Annotated, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, WithJsonSchema

T = TypeVar("T")

# An RFC 3339 instant as shop.clock writes it ("2026-01-26T10:00:00.000000Z"); the document says so, and
# generated clients parse it into their date-time type.
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
# A UTC calendar day, YYYY-MM-DD.
Day = Annotated[str, WithJsonSchema({"type": "string", "format": "date"})]


class Model(BaseModel):
    # Base of the shop's pydantic models. defer_build: a model's validator and serializer are built
    # the first time it is used, not at import, so a cold start builds only what its request needs
    # (docs/decisions.md, "Cold start"). Validation, serialisation and JSON schemas are unchanged.
    model_config = ConfigDict(defer_build=True)


class Page(Model, Generic[T]):
    items: list[T]
    next_token: str | None = None
