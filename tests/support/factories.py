"""Small builders for test data, going through the services as real callers do."""

from __future__ import annotations

import contextlib
from typing import Any

from shop import errors, wiring
from shop.models import ShippingAddress
from shop.services.actor import Actor

ADMIN = Actor("admin-1", is_admin=True)
ALICE = Actor("alice")
BOB = Actor("bob")
ADDRESS = ShippingAddress(name="Alice", line1="1 Main St", city="Springfield", postal_code="12345", country="US")


def category(table: Any, slug: str, *, parent: str | None = None, name: str | None = None) -> str:
    """The category `slug` (created unless it exists)."""
    with contextlib.suppress(errors.CategoryExists):
        wiring.category_service(table).create(ADMIN, slug=slug, name=name or slug.capitalize(), parent=parent)
    return slug


def product(
    table: Any, *, name: str = "Widget", category: str = "tools", price_cents: int = 1000, stock: int = 10
) -> str:
    """A product filed under `category` (a top-level category, created if it does not exist)."""
    globals()["category"](table, category)
    created = wiring.catalog_service(table).create(
        ADMIN, name=name, category=category, price_cents=price_cents, description=None, stock=stock
    )
    return created.product_id


def parcel() -> Any:
    """What an admin gives when shipping (SHIPPED needs it)."""
    from shop.services.orders import ShipmentIn

    return ShipmentIn("DHL", "JD014600006281234567")


def percent_code(checkout: Any, code: str, value: int = 10) -> Any:
    """A code of `value` % off without a usage limit, created by the admin through `checkout` (a
    CheckoutSettingsService, on the table or the memory store)."""
    return checkout.create_promotion(
        ADMIN,
        kind="percent",
        value=value,
        code=code,
        automatic=False,
        min_subtotal_cents=0,
        starts_at=None,
        ends_at=None,
    )
