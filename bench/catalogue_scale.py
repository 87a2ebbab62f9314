"""Catalogue at scale: browse-all and a subtree listing over 100,000 products, one Query a page, 1.00.

100,000 products are filed under 200 categories of one root category. Each gets its product item and its
entries in the listings measured here: browse-all (newest first) and the root's name and price listings, which
hold every product of its subtree. Its own category's entries are left out: no measured Query reads their
partitions, and they would double the load (docs/performance.md, "Catalogue at 100,000 products").
Then pages are read through the products function, first and deep (by next_token), and each is counted:
DynamoDB calls, items read, items returned.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from bench.scale import bulk_load
from bench.store import Store, own_store, quiet_stdout

PRODUCTS = 100_000
CATEGORIES = 200
ROOT = "catalogue-root"
PAGE = 20
DEEP_PAGES = 5  # pages walked by next_token before the measured deep page
LOAD_BUDGET_S = 900.0


def _iso(n: int) -> str:
    seconds = n % 86_400
    return f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{n:06d}Z"


def items(count: int) -> list[dict[str, Any]]:
    """The root category item, then each product's item and its browse-all and root listing entries."""
    from shop import ids, keys
    from shop.models import Product
    from shop.models.categories import Category, category_path
    from shop.repository.categories import category_item
    from shop.repository.listings import entry_items
    from shop.repository.products import product_item

    made = [
        category_item(
            Category(
                slug=ROOT, name="Catalogue root", parent=None, path=category_path([ROOT]), depth=1, created_at=_iso(0)
            )
        )
    ]
    measured_sks = {
        f"{keys.LISTING_PREFIX}{keys.ALL_PRODUCTS}#{keys.BY_NEWEST}",
        f"{keys.LISTING_PREFIX}{ROOT}#{keys.BY_NAME}",
        f"{keys.LISTING_PREFIX}{ROOT}#{keys.BY_PRICE}",
    }
    for n in range(count):
        category = f"catalogue-{n % CATEGORIES:03d}"
        product = Product(
            product_id=ids.new_id(),
            name=f"Product {n:06d}",
            category=category,
            price_cents=100 + (n * 7919) % 100_000,
            description=None,
            stock=10,
            created_at=_iso(n),
            updated_at=_iso(n),
        )
        scopes = [ROOT, category]
        made.append(product_item(product, scopes))
        made += [entry for entry in entry_items(product, scopes) if entry[keys.SK] in measured_sks]
    return made


def _pages(functions: Any, query: dict[str, str], recorder: Any) -> dict[str, Any]:
    """The first page and the page after DEEP_PAGES more, each counted."""
    measured: dict[str, Any] = {}
    token: str | None = None
    for page in itertools.count(1):
        if page == 1 or page == DEEP_PAGES + 1:
            with recorder.measure() as measurement:
                response = functions.request(
                    "GET", "/products", query={**query, **({"next_token": token} if token else {})}
                )
            body = response.body if isinstance(response.body, dict) else {}
            returned = len(body.get("items", []))
            read = measurement.scanned()
            measured["first" if page == 1 else f"page_{page}"] = {
                "status": response.status,
                "calls": measurement.operations,
                "items_read": read,
                "items_returned": returned,
                "read_amplification": round(read / returned, 2) if returned else None,
                "rcu": measurement.rcu(),
            }
            if page == DEEP_PAGES + 1:
                return measured
        else:
            response = functions.request(
                "GET", "/products", query={**query, **({"next_token": token} if token else {})}
            )
            body = response.body if isinstance(response.body, dict) else {}
        token = body.get("next_token")
        if not token:
            measured["ended_at_page"] = page
            return measured
    raise AssertionError("unreachable")


def catalogue_scale(config: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    functions = ctx.get("functions")
    if functions is None or not functions.has("products"):
        return {"met": False, "why": "needs the products handler (routes phase)"}
    with own_store(ctx) as store:
        return _measure(ctx, functions, store, config.catalogue_products)


def _measure(ctx: dict[str, Any], functions: Any, store: Store, count: int) -> dict[str, Any]:
    import botocore.config

    from bench.hooks import Recorder
    from shop.aws_config import client_config

    table = store.create_table("bench-catalogue")
    store.use(table)
    # DynamoDB Local slows as the listing partitions grow: a bulk write may take longer than the shop's timeout.
    slow = botocore.config.Config(max_pool_connections=16, read_timeout=120, retries={"max_attempts": 5})
    client = store.client(config=client_config().merge(slow))
    started = time.perf_counter()
    built = items(count)
    build_s = time.perf_counter() - started
    load_s, loaded = bulk_load(client, table, built, budget_s=LOAD_BUDGET_S)
    products = sum(1 for item in built[:loaded] if item.get("entity") == "PRODUCT")
    listings = {
        "browse-all, newest first": {"sort": "newest", "limit": str(PAGE)},
        "subtree (the root), by name": {"category": ROOT, "sort": "name", "limit": str(PAGE)},
        "subtree (the root), price descending": {"category": ROOT, "sort": "price_desc", "limit": str(PAGE)},
    }
    measured: dict[str, Any] = {}
    with quiet_stdout(ctx["log"]), Recorder() as recorder:
        for name, query in listings.items():
            measured[name] = _pages(functions, query, recorder)
    misses = []
    for name, pages in measured.items():
        for page, figures in pages.items():
            if not isinstance(figures, dict):
                continue
            if figures["status"] != 200 or figures["calls"] != ["Query"] or figures["read_amplification"] != 1.0:
                misses.append(f"{name} {page}: {figures}")
    if products < count:
        misses.append(f"loaded {products} of {count} products within the {LOAD_BUDGET_S:.0f} s budget")
    return {
        "products": products,
        "products_wanted": count,
        "categories": CATEGORIES,
        "items_loaded": loaded,
        "load_seconds": round(load_s, 1),
        "load_items_per_s": round(loaded / load_s) if load_s else None,
        "item_build_seconds": round(build_s, 1),
        "page_limit": PAGE,
        "listings": measured,
        "target": "every page (first, and the 6th by next_token) one Query, read amplification 1.00, at "
        f"{count:,} products",
        "met": not misses,
        "misses": misses,
        "method": "in-process products function on a DynamoDB Local of the phase's own; a table holding the root category, 100,000 "
        "product items under 200 of its subcategories and their entries in the browse-all listing and the root's "
        "name and price listings (bulk-loaded with BatchWriteItem from 8 threads); items read = ScannedCount of "
        "every call the request made",
    }
