from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class Model(BaseModel):
    # Base of the shop's pydantic models. defer_build: a model's validator and serializer are built
    # the first time it is used, not at import, so a cold start builds only what its request needs
    # (docs/decisions.md, "Cold start"). Validation, serialisation and JSON schemas are unchanged.
    model_config = ConfigDict(defer_build=True)


class Page(Model, Generic[T]):
    items: list[T]
    next_token: str | None = None
