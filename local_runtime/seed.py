"""The demo catalogue `make dev` seeds once: a small category tree, a few products and a promotion code, through
`shop`.

coffee > beans > espresso and filter, coffee > brewing, kitchen, apparel: the README's flow shows a
category's breadcrumbs and a subtree listing (coffee lists the beans and the brewing gear), and a quote with the
demo's code, WELCOME10.
"""

from __future__ import annotations

import pathlib
import sys
from typing import Any

from local_runtime.functions import SHARED_LAYER

# Parents before children: (slug, name, parent).
DEMO_CATEGORIES: tuple[tuple[str, str, str | None], ...] = (
    ("coffee", "Coffee", None),
    ("beans", "Beans", "coffee"),
    ("espresso", "Espresso", "beans"),
    ("filter", "Filter", "beans"),
    ("brewing", "Brewing gear", "coffee"),
    ("kitchen", "Kitchen", None),
    ("apparel", "Apparel", None),
)
DEMO_PRODUCTS: tuple[dict[str, Any], ...] = (
    {
        "name": "Espresso beans 1 kg",
        "categories": ["espresso"],
        "price_cents": 2490,
        "stock": 50,
        "description": "Dark roast, chocolate and hazelnut notes.",
    },
    {
        "name": "Filter coffee 500 g",
        "categories": ["filter"],
        "price_cents": 1290,
        "stock": 80,
        "description": "Light roast for pour-over.",
    },
    {
        "name": "Ceramic mug",
        "categories": ["kitchen"],
        "price_cents": 1500,
        "stock": 30,
        "description": "350 ml, dishwasher safe.",
    },
    {
        "name": "Hand grinder",
        "categories": ["brewing", "kitchen"],
        "price_cents": 5900,
        "stock": 10,
        "description": "Conical steel burrs.",
    },
    {
        "name": "Barista apron",
        "categories": ["apparel"],
        "price_cents": 3200,
        "stock": 15,
        "description": "Waxed canvas.",
    },
    {
        "name": "Limited edition cup",
        "categories": ["kitchen", "apparel"],
        "price_cents": 990,
        "stock": 2,
        "description": "Only two left: try the oversell race.",
    },
)


DEMO_PROMOTION: dict[str, Any] = {
    "code": "WELCOME10",
    "kind": "percent",
    "value": 10,
    "automatic": False,
    "min_subtotal_cents": 2000,
    "starts_at": None,
    "ends_at": None,
}


def seed_catalogue(client: Any, table_name: str) -> list[dict[str, Any]]:
    """Create the demo tree and products with the products domain code (ids and timestamps as the API makes them)."""
    if str(SHARED_LAYER) not in sys.path:
        sys.path.insert(0, str(SHARED_LAYER))
    from shop import wiring
    from shop.repository import Table
    from shop.services.actor import Actor

    service = wiring.catalog_service(Table(client, table_name))
    admin = Actor("local-seed", is_admin=True)
    tree = wiring.category_service(Table(client, table_name))
    for slug, name, parent in DEMO_CATEGORIES:
        tree.create(admin, slug=slug, name=name, parent=parent)
    created = []
    for product in DEMO_PRODUCTS:
        created.append(
            service.create(
                admin,
                name=product["name"],
                categories=product["categories"],
                price_cents=product["price_cents"],
                description=product["description"],
                stock=product["stock"],
            ).model_dump()
        )
    # the README's code: 10 % off from 20.00 of goods
    wiring.order_service(Table(client, table_name)).checkout.create_promotion(admin, **DEMO_PROMOTION)
    return created


def seed_once(client: Any, table_name: str, marker: pathlib.Path) -> list[dict[str, Any]] | None:
    """Seed unless `marker` says this data directory was seeded already."""
    if marker.exists():
        return None
    created = seed_catalogue(client, table_name)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("\n".join(p["product_id"] for p in created) + "\n")
    return created
