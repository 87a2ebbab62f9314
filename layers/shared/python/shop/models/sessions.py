from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from shop.models.common import Model, Timestamp


class CartLine(Model):
    product_id: str
    name: str
    unit_price_cents: int = Field(
        description="the current catalogue price; for an unavailable product, the price it had when the line was set"
    )
    quantity: int
    added_unit_price_cents: int = Field(description="the catalogue price when the line was last set")
    price_changed: bool = Field(description="unit_price_cents differs from added_unit_price_cents")
    unavailable: bool = Field(
        description="the product can no longer be bought (it no longer exists); the line is left out of "
        "subtotal_cents and checkout refuses it"
    )


class Session(Model):
    session_id: str
    cart: list[CartLine]
    subtotal_cents: int = Field(description="current unit price x quantity over the lines that are not unavailable")
    expires_at: Timestamp


@dataclass(frozen=True)
class StoredLine:
    """A cart line as stored: the product's name and price when the line was last set."""

    product_id: str
    name: str
    unit_price_cents: int
    quantity: int
    added_at: str = ""  # when the product was first put in the cart (the cart's order)
