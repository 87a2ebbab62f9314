"""Bodies of the sessions function (shared parts in shop.http_api.schemas)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

from shop.http_api.schemas import INTEGRAL, Body
from shop.limits import MAX_QUANTITY
from shop.models import Session


class CartQuantityIn(Body):
    quantity: Annotated[StrictInt, Field(ge=0, le=MAX_QUANTITY, description="0 removes the line"), INTEGRAL]


__all__ = [
    "CartQuantityIn",
    "Session",
]
