"""The rules every cart shares, whoever owns it (an anonymous session, a signed-in customer).

A line is set at the catalogue's current name and price (a listed product only), every change slides the
cart's expiry by its owner's TTL, and a cart reads at current prices: each read fetches the prices of the
cart's products (one BatchGetItem) and marks the lines whose price moved since they were set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, ClassVar

from shop import clock, errors
from shop.models import CartLine, Product
from shop.models.carts import StoredCart
from shop.models.pricing import subtotal
from shop.models.products import CataloguePrice
from shop.models.sessions import StoredLine
from shop.services.ports import CartStore, ProductPrices

if TYPE_CHECKING:
    from shop.config import Settings


def priced_lines(lines: Iterable[StoredLine], catalogue: dict[str, CataloguePrice]) -> list[CartLine]:
    """Cart lines as the client sees them: current prices, changed and unavailable lines marked."""
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


class CartLines:
    """The line rules over one kind of owner's carts: the owner's service (sessions, customer carts) extends
    them with what is its own."""

    # The setting (shop.config.Settings) of how long the owner's carts last past their last change.
    ttl_setting: ClassVar[str]

    def __init__(self, *, products: ProductPrices, settings: Callable[[], Settings], ttl_seconds: int | None) -> None:
        """Carts last `ttl_seconds` past their last change (None: the owner's setting); `settings` gives the
        settings at each use (shop.config's)."""
        self.products = products
        self.settings = settings
        self._ttl = ttl_seconds

    @property
    def ttl(self) -> int:
        return self._ttl if self._ttl is not None else int(getattr(self.settings(), self.ttl_setting))

    def _set_line(
        self, store: CartStore, owner_id: str, product_id: str, quantity: int, product: Callable[[], Product]
    ) -> tuple[StoredCart, list[CartLine]]:
        """The line at `quantity` (0 removes it, reading no product; else `product()` reads it), the cart
        and its lines at current prices: one UpdateItem, and one BatchGetItem of the other lines' prices."""
        moment = clock.now()
        now = clock.epoch(moment)
        known: dict[str, CataloguePrice] = {}
        if quantity == 0:
            name, price = "", 0
        else:
            found = product()
            if not found.listed:
                raise errors.ProductUnavailable([product_id])
            name, price = found.name, found.price_cents
            known[product_id] = CataloguePrice(product_id, name, price)
        stored = store.set_line(
            owner_id,
            product_id=product_id,
            name=name,
            unit_price_cents=price,
            quantity=quantity,
            added_at=clock.iso(moment),
            now=now,
            expires_at=now + self.ttl,
        )
        return stored, self._priced(stored, known)

    def _priced(self, stored: StoredCart, known: dict[str, CataloguePrice]) -> list[CartLine]:
        """The stored lines at current prices (those in `known` are current already)."""
        unknown = [line.product_id for line in stored.lines if line.product_id not in known]
        return priced_lines(stored.lines, {**known, **self.products.current_prices(unknown)})
