"""Anonymous sessions: the id is the capability; every cart change slides the expiry."""

from __future__ import annotations

from shop import clock, ids
from shop.config import settings
from shop.models import Session
from shop.repository import ProductRepository, SessionRepository, Table


class SessionService:
    def __init__(self, table: Table, ttl_seconds: int | None = None) -> None:
        self.sessions = SessionRepository(table)
        self.products = ProductRepository(table)
        self._ttl = ttl_seconds

    @property
    def ttl(self) -> int:
        return self._ttl if self._ttl is not None else settings().session_ttl_seconds

    def create(self) -> Session:
        moment = clock.now()
        return self.sessions.create(
            ids.new_session_id(), created_at=clock.iso(moment), expires_at=clock.epoch(moment) + self.ttl
        )

    def get(self, session_id: str) -> Session:
        return self.sessions.get(session_id, now=clock.epoch(clock.now())).session

    def set_quantity(self, session_id: str, product_id: str, quantity: int) -> Session:
        moment = clock.now()
        now = clock.epoch(moment)
        if quantity == 0:
            name, price = "", 0
        else:
            product = self.products.get(product_id)
            name, price = product.name, product.price_cents
        return self.sessions.set_line(
            session_id,
            product_id=product_id,
            name=name,
            unit_price_cents=price,
            quantity=quantity,
            added_at=clock.iso(moment),
            now=now,
            expires_at=now + self.ttl,
        )

    def delete(self, session_id: str) -> None:
        self.sessions.delete(session_id)
