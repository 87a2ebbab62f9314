"""Anonymous sessions: the id is the capability; every cart change slides the expiry.

A cart shows current catalogue prices: each read fetches the prices of the cart's products
(one BatchGetItem) and marks the lines whose price moved since they were set.
"""

from __future__ import annotations

from collections.abc import Iterable

from shop import clock, errors, ids
from shop.config import settings
from shop.models import CartLine, Session
from shop.models.pricing import subtotal
from shop.models.products import CataloguePrice
from shop.models.sessions import StoredLine, StoredSession
from shop.services.ports import ProductPrices, SessionStore


def priced_lines(lines: Iterable[StoredLine], catalogue: dict[str, CataloguePrice]) -> list[CartLine]:
    """Cart lines as the client sees them, a session's or a customer's: current prices, changed and
    unavailable lines marked."""
    cart = []
    for line in lines:
        current = catalogue.get(line.product_id)
        cart.append(
            CartLine(
                product_id=line.product_id,
                name=current.name if current else line.name,
                unit_price_cents=current.price_cents if current else line.unit_price_cents,
                quantity=line.quantity,
                added_unit_price_cents=line.unit_price_cents,
                price_changed=current is not None and current.price_cents != line.unit_price_cents,
                unavailable=current is None,
            )
        )
    return cart


def cart_subtotal(cart: list[CartLine]) -> int:
    """What the lines that can still be bought cost."""
    return subtotal(line for line in cart if not line.unavailable)


def priced_session(stored: StoredSession, catalogue: dict[str, CataloguePrice]) -> Session:
    """The session as the client sees it: priced lines and a subtotal over the lines that can still be bought."""
    cart = priced_lines(stored.lines, catalogue)
    return Session(
        session_id=stored.session_id, cart=cart, subtotal_cents=cart_subtotal(cart), expires_at=stored.expires_at
    )


class SessionService:
    def __init__(
        self,
        *,
        sessions: SessionStore,
        products: ProductPrices,
        ttl_seconds: int | None = None,
    ) -> None:
        """The rules over the stores given. Sessions last `ttl_seconds` past their last change (default: the
        setting)."""
        self.sessions = sessions
        self.products = products
        self._ttl = ttl_seconds

    @property
    def ttl(self) -> int:
        return self._ttl if self._ttl is not None else settings().session_ttl_seconds

    def create(self) -> Session:
        moment = clock.now()
        stored = self.sessions.create(
            ids.new_session_id(), created_at=clock.iso(moment), expires_at=clock.epoch(moment) + self.ttl
        )
        return priced_session(stored, {})

    def get(self, session_id: str) -> Session:
        """One GetItem, and one BatchGetItem of the cart's products when the cart is not empty."""
        stored = self.sessions.get(session_id, now=clock.epoch(clock.now()))
        return self._priced(stored, {})

    def set_quantity(self, session_id: str, product_id: str, quantity: int) -> Session:
        """GetItem of the product, UpdateItem of the session, and one BatchGetItem of the cart's other products
        when there are any."""
        moment = clock.now()
        now = clock.epoch(moment)
        known: dict[str, CataloguePrice] = {}
        if quantity == 0:
            name, price = "", 0
        else:
            product = self.products.get(product_id)
            if not product.listed:
                raise errors.ProductUnavailable([product_id])
            name, price = product.name, product.price_cents
            known[product_id] = CataloguePrice(product_id, name, price)
        stored = self.sessions.set_line(
            session_id,
            product_id=product_id,
            name=name,
            unit_price_cents=price,
            quantity=quantity,
            added_at=clock.iso(moment),
            now=now,
            expires_at=now + self.ttl,
        )
        return self._priced(stored, known)

    def delete(self, session_id: str) -> None:
        self.sessions.delete(session_id)

    def _priced(self, stored: StoredSession, known: dict[str, CataloguePrice]) -> Session:
        unknown = [line.product_id for line in stored.lines if line.product_id not in known]
        return priced_session(stored, {**known, **self.products.current_prices(unknown)})
