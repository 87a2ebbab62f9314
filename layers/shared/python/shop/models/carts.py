"""Carts: one cart abstraction keyed by its owner (an anonymous session or a signed-in customer), the
customer cart as the client sees it, and what a merge could not take."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import Field

from shop.models.common import Model, Timestamp
from shop.models.sessions import CartLine, StoredLine


class CartOwnerKind(StrEnum):
    SESSION = "SESSION"  # an anonymous shopping session's cart: the session id is the capability
    CUSTOMER = "CUSTOMER"  # a signed-in customer's cart


@dataclass(frozen=True)
class CartOwner:
    """Whose cart: every cart is keyed by its owner, a session or a customer."""

    kind: CartOwnerKind
    id: str

    @classmethod
    def session(cls, session_id: str) -> CartOwner:
        return cls(CartOwnerKind.SESSION, session_id)

    @classmethod
    def customer(cls, customer_id: str) -> CartOwner:
        return cls(CartOwnerKind.CUSTOMER, customer_id)


class NotMergedReason(StrEnum):
    QUANTITY_LIMIT = "QUANTITY_LIMIT"  # the line would pass MAX_QUANTITY: the rest is reported
    CART_FULL = "CART_FULL"  # a new product in a cart of MAX_CART_LINES lines


class NotMerged(Model):
    product_id: str
    quantity: int = Field(description="how many of the session's quantity did not go into the cart")
    reason: NotMergedReason


class CustomerCartView(Model):
    customer_id: str
    cart: list[CartLine]
    subtotal_cents: int = Field(description="current unit price x quantity over the lines that are not unavailable")
    expires_at: Timestamp | None = Field(
        description="30 days after the cart's last change; null when no cart is stored"
    )


class MergedCart(CustomerCartView):
    not_merged: list[NotMerged] = Field(
        description="what of the session did not fit (the quantity cap per line, the line cap per cart); a "
        "repeated merge of the same session answers the same list"
    )


@dataclass(frozen=True)
class StoredCart:
    """A cart as stored (a session's or a customer's), its lines in the order they were first added.

    `owner_id` is the session's or the customer's id (the store it comes from says which). A customer cart
    that is absent or expired reads with no lines and `expires_at` None (a session's is not found instead).
    `cart_version` is the stored item's (0: no item): it counts changes, and every write is conditional on it.
    """

    owner_id: str
    lines: list[StoredLine]
    expires_at: Timestamp | None
    cart_version: int


@dataclass(frozen=True)
class MergeView:
    """What a merge reads in one call: the cart, the session (None: gone) and an earlier merge's answer."""

    cart: StoredCart
    session: StoredCart | None
    merged: list[NotMerged] | None  # not None: this session was merged into this cart already


@dataclass(frozen=True)
class CartClaim:
    """A cart as it was read, to be emptied at checkout (or, a session's, deleted by a merge) only if it is
    still at `cart_version` and live at `now` (the epoch second of the read)."""

    owner: CartOwner
    cart_version: int
    now: int
