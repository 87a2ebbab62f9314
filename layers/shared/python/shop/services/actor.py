"""Who is calling: the token's subject and whether it is an administrator."""

from __future__ import annotations

from dataclasses import dataclass

from shop.errors import Forbidden


@dataclass(frozen=True)
class Actor:
    sub: str
    is_admin: bool = False

    def require_self_or_admin(self, customer_id: str) -> None:
        if not (self.is_admin or self.sub == customer_id):
            raise Forbidden("you may only act on your own profile")

    def require_self(self, customer_id: str) -> None:
        """What only the customer may do (their cart), administrators included."""
        if self.sub != customer_id:
            raise Forbidden("only the customer may do this")

    def require_admin(self) -> None:
        if not self.is_admin:
            raise Forbidden("administrators only")

    def may_see(self, owner_id: str) -> bool:
        return self.is_admin or self.sub == owner_id
