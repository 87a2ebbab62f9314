"""Customer carts: a signed-in customer's cart, priced like a session's, and what a merge could not take."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import Field

from shop.models.common import Model, Timestamp
from shop.models.sessions import CartLine, StoredLine, StoredSession


class NotMergedReason(StrEnum):
    QUANTITY_LIMIT = "QUANTITY_LIMIT"  # the line would pass MAX_QUANTITY: the rest is reported
    CART_FULL = "CART_FULL"  # a new product in a cart of MAX_CART_LINES lines


class NotMerged(Model):
    product_id: str
    quantity: int = Field(description="how many of the session's quantity did not go into the cart")
    reason: NotMergedReason


class Cart(Model):
    customer_id: str
    cart: list[CartLine]
    subtotal_cents: int = Field(description="current unit price x quantity over the lines that are not unavailable")
    expires_at: Timestamp | None = Field(
        description="30 days after the cart's last change; null when no cart is stored"
    )


class MergedCart(Cart):
    not_merged: list[NotMerged] = Field(
        description="what of the session did not fit (the quantity cap per line, the line cap per cart); a "
        "repeated merge of the same session answers the same list"
    )


@dataclass(frozen=True)
class StoredCart:
    """A customer cart as stored; an absent or expired cart reads with no lines and `expires_at` None.

    `cart_version` is the stored item's (0: no item), which every write is conditional on.
    """

    customer_id: str
    lines: list[StoredLine]
    expires_at: Timestamp | None
    cart_version: int


@dataclass(frozen=True)
class MergeView:
    """What a merge reads in one call: the cart, the session (None: gone) and an earlier merge's answer."""

    cart: StoredCart
    session: StoredSession | None
    merged: list[NotMerged] | None  # not None: this session was merged into this cart already


@dataclass(frozen=True)
class CartClaim:
    """The customer cart being checked out, as it was read; `now` is the checkout's epoch second."""

    customer_id: str
    cart_version: int
    now: int
