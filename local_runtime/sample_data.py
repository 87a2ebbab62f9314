"""The fixed data the sample events (``events/<function>/*.json``) rely on, loaded through the repositories.

``load_seed`` writes ``events/seed.json`` (docs/http-api.md, "Sample events and seed") and is idempotent: what
already exists is left alone; for a pristine state use a fresh table.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
from typing import Any

from shop import clock, errors
from shop.models import (
    Customer,
    Order,
    OrderLine,
    OrderStatus,
    Product,
    Review,
    Shipment,
    ShippingAddress,
    StatusDetails,
)
from shop.models.categories import Category, category_path, listing_scopes, path_slugs
from shop.models.checkout import Promotion
from shop.repository import (
    CustomerCartRepository,
    CustomerRepository,
    OrderRepository,
    ProductRepository,
    SessionRepository,
    Table,
)
from shop.repository.categories import CategoryRepository
from shop.repository.checkout_settings import CheckoutSettingsRepository

SEED_PATH = pathlib.Path(__file__).resolve().parents[1] / "events" / "seed.json"
SESSION_TTL_SECONDS = 7 * 24 * 3600
CART_TTL_SECONDS = 30 * 24 * 3600
_PATH_TO_STATUS = {
    OrderStatus.PENDING: [],
    OrderStatus.CONFIRMED: [OrderStatus.CONFIRMED],
    OrderStatus.SHIPPED: [OrderStatus.CONFIRMED, OrderStatus.SHIPPED],
    OrderStatus.DELIVERED: [OrderStatus.CONFIRMED, OrderStatus.SHIPPED, OrderStatus.DELIVERED],
    OrderStatus.CANCELLED: [OrderStatus.CANCELLED],
    OrderStatus.RETURN_REQUESTED: [
        OrderStatus.CONFIRMED,
        OrderStatus.SHIPPED,
        OrderStatus.DELIVERED,
        OrderStatus.RETURN_REQUESTED,
    ],
}
SEED_CARRIER, SEED_TRACKING_NUMBER = "DHL", "JD014600006281234567"
SEED_RETURN_REASON = "Does not fit."


def _seed_details(status: OrderStatus, at: str) -> StatusDetails:
    """What the order service records with each step (the seed writes through the repository)."""
    if status is OrderStatus.SHIPPED:
        return StatusDetails(
            shipment=Shipment(carrier=SEED_CARRIER, tracking_number=SEED_TRACKING_NUMBER, shipped_at=at)
        )
    if status is OrderStatus.DELIVERED:
        return StatusDetails(delivered_at=at)
    if status is OrderStatus.CONFIRMED:
        return StatusDetails(confirmed_at=at)
    if status is OrderStatus.RETURN_REQUESTED:
        return StatusDetails(reason=SEED_RETURN_REASON)
    return StatusDetails()


def read_seed(path: pathlib.Path | str | None = None) -> dict[str, Any]:
    return json.loads(pathlib.Path(path or SEED_PATH).read_text())


def load_seed(table: Table | None = None, path: pathlib.Path | str | None = None) -> dict[str, Any]:
    """Write the seed into ``table``; returns the seed as read from ``path`` (default events/seed.json)."""
    table = table or Table()
    seed = read_seed(path)
    now = clock.iso_now()
    customers, products = CustomerRepository(table), ProductRepository(table)
    orders, sessions = OrderRepository(table), SessionRepository(table)

    for entry in seed.get("customers", []):
        with contextlib.suppress(errors.CustomerExists, errors.EmailTaken):
            customers.create(Customer(**entry, version=1, created_at=now, updated_at=now))

    tree, paths = CategoryRepository(table), {}
    for entry in seed.get("categories", []):
        parent = tree.get(entry["parent"]) if entry.get("parent") else None
        path = category_path([*path_slugs(parent.path), entry["slug"]] if parent else [entry["slug"]])
        paths[entry["slug"]] = path
        category = Category(**entry, path=path, depth=len(path_slugs(path)), created_at=now)
        with contextlib.suppress(errors.CategoryExists):
            tree.create(category, parent)

    catalogue: dict[str, Product] = {}
    for entry in seed.get("products", []):
        shards = entry.get("stock_shards", 1)
        product = Product(**{**entry, "stock_shards": 1}, created_at=now, updated_at=now)
        catalogue[product.product_id] = product
        with contextlib.suppress(errors.ProductExists):
            products.create(product, listing_scopes([paths[slug] for slug in product.categories]))
        if shards > 1:  # a flash-sale product: its stock spread over its shards (a no-op when it is)
            products.spread_stock(products.stock_layout(product.product_id, shards_hint=shards), shards)

    for entry in seed.get("reviews", []):
        with contextlib.suppress(errors.AlreadyReviewed):
            products.add_review(Review(**entry, created_at=now))

    promotions = CheckoutSettingsRepository(table)
    for entry in seed.get("promotions", []):
        settings = promotions.snapshot()
        if settings.promotion(entry["promotion_id"]) is None:
            promotions.put_promotion(Promotion(**entry, created_at=now, updated_at=now), read_version=settings.version)

    address = ShippingAddress(**seed["shipping_address"])
    for entry in seed.get("orders", []):
        try:
            orders.get(entry["order_id"])
            continue
        except errors.OrderNotFound:
            pass
        order = seed_order(entry, catalogue, address, now)
        orders.restore(order)
        for status in _PATH_TO_STATUS[OrderStatus(entry.get("status", "PENDING"))]:
            at = clock.iso_now()
            order = orders.change_status(order, status, updated_at=at, details=_seed_details(status, at))

    moment = clock.now()
    for entry in seed.get("sessions", []):
        session_id = entry["session_id"]
        try:
            sessions.get(session_id, now=clock.epoch(moment))
            continue
        except errors.SessionNotFound:
            sessions.delete(session_id)  # an expired leftover, if any
        expires_at = clock.epoch(moment) + SESSION_TTL_SECONDS
        sessions.create(session_id, created_at=clock.iso(moment), expires_at=expires_at)
        for line in entry.get("cart", []):
            product = catalogue[line["product_id"]]
            sessions.set_line(
                session_id,
                product_id=product.product_id,
                name=product.name,
                unit_price_cents=product.price_cents,
                quantity=line["quantity"],
                added_at=clock.iso_now(),
                now=clock.epoch(moment),
                expires_at=expires_at,
            )

    carts = CustomerCartRepository(table)
    for entry in seed.get("customer_carts", []):
        customer_id = entry["customer_id"]
        if carts.get(customer_id, now=clock.epoch(moment), require_profile=False).lines:
            continue
        for line in entry.get("cart", []):
            product = catalogue[line["product_id"]]
            carts.set_line(
                customer_id,
                product_id=product.product_id,
                name=product.name,
                unit_price_cents=product.price_cents,
                quantity=line["quantity"],
                added_at=clock.iso_now(),
                now=clock.epoch(moment),
                expires_at=clock.epoch(moment) + CART_TTL_SECONDS,
            )
    return seed


def seed_order(entry: dict[str, Any], catalogue: dict[str, Any], address: ShippingAddress, now: str) -> Order:
    """A seed file's order as first placed (PENDING, version 1), priced from the catalogue; its later statuses are
    the caller's to apply."""
    lines = [
        OrderLine(
            product_id=line["product_id"],
            name=catalogue[line["product_id"]].name,
            unit_price_cents=catalogue[line["product_id"]].price_cents,
            quantity=line["quantity"],
            line_total_cents=catalogue[line["product_id"]].price_cents * line["quantity"],
        )
        for line in entry["lines"]
    ]
    return Order(
        order_id=entry["order_id"],
        customer_id=entry["customer_id"],
        status=OrderStatus.PENDING,
        version=1,
        lines=lines,
        total_cents=sum(line.line_total_cents for line in lines),
        shipping_address=address,
        created_at=now,
        updated_at=now,
        history=[],
    )
