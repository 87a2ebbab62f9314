"""Anonymous shopping sessions: one item each holding the session's cart (shop.repository.carts), expiry by TTL.

What a session has of its own: it is created empty (its id is the capability), deleted whole, and once
expired it is not found (whether or not TTL has deleted it yet), so a line change cannot revive it.
"""

from __future__ import annotations

from shop import errors
from shop.clock import iso_from_epoch
from shop.models.carts import CartOwnerKind, StoredCart
from shop.models.sessions import StoredLine
from shop.repository.carts import CartItems
from shop.repository.store import ConditionFailed, put_new, to_item, translated_errors


class SessionRepository(CartItems):
    kind = CartOwnerKind.SESSION
    entity = "SESSION"
    owner_attribute = "session_id"

    def create(self, session_id: str, *, created_at: str, expires_at: int) -> StoredCart:
        item = self.cart_item(session_id, [], version=0, expires_at=expires_at, created_at=created_at)
        try:
            put_new(self.table, item)
        except ConditionFailed as failed:
            # The id is new and random: a session already there with this creation time is this write's own,
            # committed by an attempt whose answer was lost (botocore re-sends after a timeout).
            if failed.item is None or failed.item.get("created_at") != created_at:
                raise errors.Conflict("a session with this id exists") from failed
        return StoredCart(session_id, [], iso_from_epoch(expires_at), 0)

    def get(self, session_id: str, *, now: int) -> StoredCart:
        """One consistent GetItem; SessionNotFound when absent or expired by `now`."""
        stored = self.read(session_id, now=now)
        if stored.expires_at is None:
            raise errors.SessionNotFound("session not found or expired")
        return stored

    def _without_live_cart(
        self, current: StoredCart, first: StoredLine | None, *, now: int, expires_at: int
    ) -> StoredCart:
        raise errors.SessionNotFound("session not found or expired")

    def delete(self, session_id: str) -> None:
        with translated_errors():
            self.table.client.delete_item(TableName=self.table.name, Key=to_item(self.key(session_id)))
