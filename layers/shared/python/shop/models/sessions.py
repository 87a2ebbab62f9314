from __future__ import annotations

from shop.models.common import Model


class CartLine(Model):
    product_id: str
    name: str
    unit_price_cents: int
    quantity: int


class Session(Model):
    session_id: str
    cart: list[CartLine]
    subtotal_cents: int
    expires_at: str
