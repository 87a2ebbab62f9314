"""Anonymous sessions: the id is the capability; every cart change slides the expiry.

The cart's line rules are every cart's (shop.services.cart_lines); a session is created empty and its
lifetime is the session TTL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from shop import clock, errors, ids
from shop.models import CartLine, Session
from shop.models.carts import StoredCart
from shop.models.products import CataloguePrice
from shop.services.cart_lines import CartLines, cart_subtotal, priced_lines
from shop.services.ports import ProductPrices, SessionStore

if TYPE_CHECKING:
    from shop.config import Settings


def _session(stored: StoredCart, cart: list[CartLine]) -> Session:
    if stored.expires_at is None:  # the session stores answer live sessions only; an expired one is not found
        raise errors.SessionNotFound("session not found or expired")
    return Session(
        session_id=stored.owner_id, cart=cart, subtotal_cents=cart_subtotal(cart), expires_at=stored.expires_at
    )


def priced_session(stored: StoredCart, catalogue: dict[str, CataloguePrice]) -> Session:
    """The session as the client sees it: priced lines and a subtotal over the lines that can still be bought."""
    return _session(stored, priced_lines(stored.lines, catalogue))


class SessionService(CartLines):
    ttl_setting = "session_ttl_seconds"

    def __init__(
        self,
        *,
        sessions: SessionStore,
        products: ProductPrices,
        settings: Callable[[], Settings],
        ttl_seconds: int | None = None,
    ) -> None:
        """The rules over the stores given; sessions last `ttl_seconds` past their last change (None: the setting)."""
        super().__init__(products=products, settings=settings, ttl_seconds=ttl_seconds)
        self.sessions = sessions

    def create(self) -> Session:
        moment = clock.now()
        stored = self.sessions.create(
            ids.new_session_id(), created_at=clock.iso(moment), expires_at=clock.epoch(moment) + self.ttl
        )
        return priced_session(stored, {})

    def get(self, session_id: str) -> Session:
        """One GetItem, and one BatchGetItem of the cart's products when the cart is not empty."""
        stored = self.sessions.get(session_id, now=clock.epoch(clock.now()))
        return _session(stored, self._priced(stored, {}))

    def set_quantity(self, session_id: str, product_id: str, quantity: int) -> Session:
        """GetItem of the product, UpdateItem of the session, and one BatchGetItem of the cart's other products
        when there are any."""
        stored, cart = self._set_line(
            self.sessions, session_id, product_id, quantity, lambda: self.products.get(product_id)
        )
        return _session(stored, cart)

    def delete(self, session_id: str) -> None:
        self.sessions.delete(session_id)
