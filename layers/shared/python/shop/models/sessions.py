from __future__ import annotations

from pydantic import BaseModel


class CartLine(BaseModel):
    product_id: str
    name: str
    unit_price_cents: int
    quantity: int


class Session(BaseModel):
    session_id: str
    cart: list[CartLine]
    subtotal_cents: int
    expires_at: str
