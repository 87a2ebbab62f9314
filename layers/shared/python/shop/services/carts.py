"""Customer carts: a signed-in customer's cart that lasts 30 days past its last change, filled by hand or
by merging an anonymous session into it at sign-in.

The line rules are every cart's (shop.services.cart_lines: one rule for both owners). A merge adds the
session's quantities to the cart's, capped per line and per cart; what does not fit is answered, not
dropped. It is one transaction conditional on the cart's version and the session's, re-read and
re-tried when either moved, so concurrent merges of different sessions all land; its marker makes a
repeat of the same merge answer what the first did.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from shop import clock, errors
from shop.limits import MAX_CART_LINES, MAX_QUANTITY
from shop.models import CartLine
from shop.models.carts import CartClaim, CartOwner, CustomerCartView, MergedCart, NotMerged, NotMergedReason, StoredCart
from shop.models.sessions import StoredLine
from shop.services.actor import Actor
from shop.services.cart_lines import CartLines, cart_subtotal
from shop.services.ports import CustomerCartStore, ProductPrices

if TYPE_CHECKING:
    from shop.config import Settings

# Reads and conditional transactions one merge tries before answering 503 (the cart keeps changing),
# waiting a random part of MERGE_BACKOFF_S x 2^attempt between them so that contenders spread out.
MERGE_ATTEMPTS = 6
MERGE_BACKOFF_S = 0.01


def merge_lines(cart: list[StoredLine], session: list[StoredLine]) -> tuple[list[StoredLine], list[NotMerged]]:
    """The cart with the session's lines added: same products add up to at most MAX_QUANTITY, new products
    go after the cart's own while it has fewer than MAX_CART_LINES lines; the rest is what did not fit.

    A line already in the cart keeps its name and price as added; a new one comes with the session's."""
    merged = {line.product_id: line for line in cart}
    not_merged: list[NotMerged] = []
    for line in session:
        held = merged.get(line.product_id)
        if held is None and len(merged) >= MAX_CART_LINES:
            not_merged.append(
                NotMerged(product_id=line.product_id, quantity=line.quantity, reason=NotMergedReason.CART_FULL)
            )
            continue
        before = held.quantity if held is not None else 0
        taken = min(line.quantity, MAX_QUANTITY - before)
        if taken < line.quantity:
            not_merged.append(
                NotMerged(
                    product_id=line.product_id, quantity=line.quantity - taken, reason=NotMergedReason.QUANTITY_LIMIT
                )
            )
        if held is None:
            merged[line.product_id] = line
        elif taken:
            merged[line.product_id] = StoredLine(
                held.product_id, held.name, held.unit_price_cents, before + taken, held.added_at
            )
    return list(merged.values()), not_merged


class CartService(CartLines):
    ttl_setting = "cart_ttl_seconds"

    def __init__(
        self,
        *,
        carts: CustomerCartStore,
        products: ProductPrices,
        settings: Callable[[], Settings],
        ttl_seconds: int | None = None,
    ) -> None:
        """The rules over the stores given; carts last `ttl_seconds` past their last change (None: the setting)."""
        super().__init__(products=products, settings=settings, ttl_seconds=ttl_seconds)
        self.carts = carts

    def get(self, actor: Actor, customer_id: str) -> CustomerCartView:
        """One BatchGetItem (profile and cart), one more of the cart's products' prices when it has lines."""
        actor.require_self_or_admin(customer_id)
        stored = self.carts.get(customer_id, now=clock.epoch(clock.now()))
        return _cart(stored, self._priced(stored, {}))

    def set_quantity(self, actor: Actor, customer_id: str, product_id: str, quantity: int) -> CustomerCartView:
        """BatchGetItem of profile and product, UpdateItem of the cart, BatchGetItem of the other lines' prices."""
        actor.require_self(customer_id)
        if quantity == 0:
            self.carts.get(customer_id, now=clock.epoch(clock.now()))  # CustomerNotFound; a removal needs no product
        stored, cart = self._set_line(
            self.carts, customer_id, product_id, quantity, lambda: self.carts.product_for(customer_id, product_id)
        )
        return _cart(stored, cart)

    def merge(self, actor: Actor, customer_id: str, session_id: str) -> MergedCart:
        """One BatchGetItem (profile, cart, session, marker), one transaction, one BatchGetItem of prices;
        again from the read when the cart or the session moved in between (an unknown session: two reads)."""
        actor.require_self(customer_id)
        for attempt in range(MERGE_ATTEMPTS):
            if attempt:
                time.sleep(random.uniform(0, MERGE_BACKOFF_S * 2**attempt))
            moment = clock.now()
            now = clock.epoch(moment)
            view = self.carts.read_for_merge(customer_id, session_id, now=now)
            if view.merged is not None:
                return self._merged(view.cart, view.merged)  # merged before: the same answer, nothing written
            if view.session is None:
                # One BatchGetItem is not isolated from a transaction: a concurrent merge of this session can
                # show its delete without its marker. Read once more before calling the session unknown.
                if attempt == 0:
                    continue
                raise errors.SessionNotFound("session not found or expired")
            lines, not_merged = merge_lines(view.cart.lines, view.session.lines)
            try:
                stored = self.carts.merge(
                    view.cart,
                    lines,
                    session=CartClaim(CartOwner.session(session_id), view.session.cart_version, now),
                    not_merged=not_merged,
                    updated_at=clock.iso(moment),
                    expires_at=now + self.ttl,
                    marker_expires_at=now + self.settings().idempotency_ttl_seconds,
                )
            except (errors.CartChanged, errors.SessionNotFound):
                continue  # re-read: a concurrent change, or this very merge made by a concurrent request
            return self._merged(stored, not_merged)
        raise errors.ServiceUnavailable("the cart keeps changing, retry later")

    def delete(self, actor: Actor, customer_id: str) -> None:
        actor.require_self(customer_id)
        self.carts.empty(customer_id, updated_at=clock.iso_now())

    def _merged(self, stored: StoredCart, not_merged: list[NotMerged]) -> MergedCart:
        cart = _cart(stored, self._priced(stored, {}))
        return MergedCart(**dict(cart), not_merged=not_merged)


def _cart(stored: StoredCart, lines: list[CartLine]) -> CustomerCartView:
    return CustomerCartView(
        customer_id=stored.owner_id, cart=lines, subtotal_cents=cart_subtotal(lines), expires_at=stored.expires_at
    )
