"""Bodies of the customer-cart routes (served by the sessions function; shared parts in shop.http_api.schemas)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from shop.http_api.schemas import Body
from shop.http_api.session_schemas import CartQuantityIn
from shop.limits import MAX_ID_LENGTH
from shop.models.carts import CustomerCartView, MergedCart, NotMerged


class CartMergeIn(Body):
    session_id: Annotated[
        str, Field(min_length=1, max_length=MAX_ID_LENGTH, description="the anonymous session to merge (and end)")
    ]


__all__ = [
    "CartMergeIn",
    "CartQuantityIn",
    "CustomerCartView",
    "MergedCart",
    "NotMerged",
]
