"""Small builders for test data, going through the services as real callers do."""

from __future__ import annotations

from typing import Any

from shop.models import ShippingAddress
from shop.services.actor import Actor
from shop.services.catalog import CatalogService

ADMIN = Actor("admin-1", is_admin=True)
ALICE = Actor("alice")
BOB = Actor("bob")
ADDRESS = ShippingAddress(name="Alice", line1="1 Main St", city="Springfield", postal_code="12345", country="US")


def product(
    table: Any, *, name: str = "Widget", category: str = "tools", price_cents: int = 1000, stock: int = 10
) -> str:
    created = CatalogService(table).create(
        ADMIN, name=name, category=category, price_cents=price_cents, description=None, stock=stock
    )
    return created.product_id


def parcel() -> Any:
    """What an admin gives when shipping (SHIPPED needs it)."""
    from shop.services.orders import ShipmentIn

    return ShipmentIn("DHL", "JD014600006281234567")
