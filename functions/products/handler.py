"""products: the catalogue (admin writes, public reads): categories, products and their listings, stock, reviews,
stock alerts."""

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop.runtime import lean_init

lean_init.begin()  # lazy Powertools packages, no cyclic GC until lean_init.done() below

# isort: split
from enum import StrEnum
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from shop import errors, wiring
from shop.http_api import alert_schemas
from shop.http_api import category_schemas as c
from shop.http_api import product_schemas as s
from shop.http_api.observability import lambda_handler
from shop.http_api.params import DEFAULT_LIMIT, CustomerId, Limit, NextToken, ProductId, Request, caller
from shop.http_api.resolver import create_app, declare, json_response
from shop.http_api.schemas import given
from shop.limits import (
    CATEGORY_SLUG_PATTERN,
    DEFAULT_LOW_STOCK_THRESHOLD,
    MAX_CATEGORY_DEPTH,
    MAX_SLUG_LENGTH,
    MAX_STOCK,
)

app = create_app("products")
catalog = wiring.catalog_service()
tree = wiring.category_service()
TAGS = ["products"]
CATEGORY_TAGS = ["categories"]
SlugPath = Annotated[str, Path(min_length=1, max_length=MAX_SLUG_LENGTH, pattern=CATEGORY_SLUG_PATTERN)]


class Sort(StrEnum):
    newest = "newest"
    name = "name"
    price_asc = "price_asc"
    price_desc = "price_desc"


# What a client can do next with a new category: file a product in it. A whole body (`merge_body: false`), with
# stock, so that the product can be ordered through ORDER_IT below (the fuzz test's stateful phase follows both).
FILE_A_PRODUCT = {
    "FileProduct": {
        "operationId": "createProduct",
        "requestBody": {"name": "A product", "price_cents": 1250, "stock": 10, "category": "$response.body#/slug"},
        "x-schemathesis": {"merge_body": False},
    }
}


@app.post(
    "/categories",
    summary="Add a category, top-level or under a parent (admin)",
    responses=declare(
        201,
        c.Category,
        401,
        403,
        404,
        409,
        body=True,
        links=FILE_A_PRODUCT,
        errors_described={
            404: "CATEGORY_NOT_FOUND: the parent",
            409: "CATEGORY_EXISTS; MOVE_IN_PROGRESS: a category move is rewriting the tree, retry",
            422: f"VALIDATION_ERROR (including a tree deeper than {MAX_CATEGORY_DEPTH} levels, field parent)",
        },
    ),
    tags=CATEGORY_TAGS,
)
def create_category(body: c.CategoryIn, request: Request):
    category = tree.create(caller(request), slug=body.slug, name=body.name, parent=given(body.parent))
    return json_response(201, category)


@app.get(
    "/categories",
    summary="The top-level categories, by name",
    responses=declare(200, c.CategoryPage),
    tags=CATEGORY_TAGS,
)
def list_categories(limit: Limit = DEFAULT_LIMIT, next_token: NextToken = None):
    return json_response(200, tree.top_level(limit=limit, next_token=next_token))


@app.get(
    "/categories/<slug>",
    summary="A category with its breadcrumbs (root first) and children (by name)",
    responses=declare(200, c.CategoryDetail, 404, errors_described={404: "CATEGORY_NOT_FOUND"}),
    tags=CATEGORY_TAGS,
)
def get_category(slug: SlugPath):
    return json_response(200, tree.detail(slug))


@app.patch(
    "/categories/<slug>",
    summary="Rename a category or move it, with its subtree, under another parent (admin)",
    responses=declare(
        200,
        c.Category,
        401,
        403,
        404,
        409,
        body=True,
        errors_described={
            404: "CATEGORY_NOT_FOUND: the category or the new parent",
            409: "INVALID_MOVE: into its own subtree; MOVE_IN_PROGRESS: another move is under way; CONFLICT",
            422: f"VALIDATION_ERROR (including a tree deeper than {MAX_CATEGORY_DEPTH} levels, field parent)",
        },
    ),
    tags=CATEGORY_TAGS,
)
def update_category(slug: SlugPath, body: c.CategoryPatch, request: Request):
    return json_response(200, tree.update(caller(request), slug, body.changes()))


# What a client can do next with a new product: order one. A whole body (`merge_body: false`): the fuzz test's
# stateful phase places orders through it, which reach checkout and, with payments on, Stripe.
ORDER_IT = {
    "OrderProduct": {
        "operationId": "placeOrder",
        "requestBody": {
            "lines": [{"product_id": "$response.body#/product_id", "quantity": 1}],
            "shipping_address": {
                "name": "A Buyer",
                "line1": "1 Main Street",
                "city": "Springfield",
                "postal_code": "12345",
                "country": "US",
            },
        },
        "x-schemathesis": {"merge_body": False},
    }
}


@app.post(
    "/products",
    summary="Add a product to the catalogue, filed under 1 to 5 existing categories (admin)",
    responses=declare(
        201, s.Product, 401, 403, 404, body=True, links=ORDER_IT, errors_described={404: "CATEGORY_NOT_FOUND"}
    ),
    tags=TAGS,
)
def create_product(body: s.ProductIn, request: Request):
    threshold = given(body.low_stock_threshold)
    product = catalog.create(
        caller(request),
        name=body.name,
        categories=body.filed_under(),
        price_cents=body.price_cents,
        description=body.description,
        stock=body.stock,
        low_stock_threshold=DEFAULT_LOW_STOCK_THRESHOLD if threshold is None else threshold,
    )
    return json_response(201, product)


@app.get(
    "/products",
    summary="Active products: all, newest first; or a category's and its subtree's, each once, by name or price",
    responses=declare(
        200,
        s.ProductPage,
        404,
        errors_described={
            404: "CATEGORY_NOT_FOUND",
            422: "VALIDATION_ERROR (including sort=newest with a category, or name/price sorts without one)",
        },
    ),
    tags=TAGS,
)
def list_products(
    category: Annotated[
        str | None,
        Query(min_length=1, max_length=MAX_SLUG_LENGTH, pattern=CATEGORY_SLUG_PATTERN, description="a category slug"),
    ] = None,
    sort: Annotated[
        Sort | None,
        Query(
            description="without category: newest (the default); with one: name (the default), price_asc, price_desc"
        ),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    next_token: NextToken = None,
):
    if category is None:
        if sort not in (None, Sort.newest):
            raise errors.InvalidRequest("all products list newest first only", {"sort": "only newest without category"})
        return json_response(200, catalog.list_all(limit=limit, next_token=next_token))
    if sort is Sort.newest:
        raise errors.InvalidRequest("a category lists by name or price", {"sort": "name, price_asc or price_desc"})
    chosen = (sort or Sort.name).value
    return json_response(200, catalog.list_by_category(category, sort=chosen, limit=limit, next_token=next_token))


@app.get(
    "/products/<product_id>",
    summary="One product with its stock and rating summary (no operations data: admins' answers carry it)",
    responses=declare(200, s.PublicProduct, 404),
    tags=TAGS,
)
def get_product(product_id: ProductId):
    return json_response(200, catalog.get(product_id), include=s.PUBLIC_PRODUCT_FIELDS)  # PublicProduct's bytes


@app.delete(
    "/products/<product_id>",
    summary="Archive a product: out of every listing, still readable, no longer orderable (admin)",
    responses=declare(200, s.Product, 401, 403, 404, 409, errors_described={409: "CONFLICT: edited meanwhile"}),
    tags=TAGS,
)
def archive_product(product_id: ProductId, request: Request):
    return json_response(200, catalog.archive(caller(request), product_id))


@app.patch(
    "/products/<product_id>",
    summary="Edit name, categories, price, description or low-stock threshold (admin; stock has its own route)",
    responses=declare(
        200,
        s.Product,
        401,
        403,
        404,
        409,
        body=True,
        errors_described={404: "PRODUCT_NOT_FOUND, CATEGORY_NOT_FOUND", 409: "CONFLICT: edited meanwhile"},
    ),
    tags=TAGS,
)
def update_product(product_id: ProductId, body: s.ProductPatch, request: Request):
    return json_response(200, catalog.update(caller(request), product_id, body.changes()))


@app.post(
    "/products/<product_id>/stock",
    summary="Add to or take from the stock (admin)",
    responses=declare(
        200,
        s.StockOut,
        401,
        403,
        404,
        409,
        body=True,
        errors_described={
            409: "INSUFFICIENT_STOCK: would go below 0",
            422: f"VALIDATION_ERROR (including a delta that would take stock above {MAX_STOCK}, field delta)",
        },
    ),
    tags=TAGS,
)
def adjust_stock(product_id: ProductId, body: s.StockIn, request: Request):
    stock = catalog.adjust_stock(caller(request), product_id, body.delta)
    return json_response(200, s.StockOut(product_id=product_id, stock=stock))


@app.post(
    "/products/<product_id>/stock-shards",
    summary="Spread the stock over flash-sale stock shards (admin)",
    description=(
        "Marks a product hot: its whole stock is spread evenly over `shards` stock shards, each its own "
        "partition key, so orders for it write many keys instead of one. `shards: 1` puts all of it back on "
        "the product. Repeating a request changes nothing; stock added later with POST /products/{id}/stock "
        "stays on the product (still sold) until the next spread. Orders take from a random shard and fall "
        "back to the others: a customer whose shard is empty still gets the order while the product has stock."
    ),
    responses=declare(
        200,
        s.StockShardsOut,
        401,
        403,
        404,
        409,
        body=True,
        errors_described={
            409: "CONFLICT: orders kept taking stock while it was being spread; retry. PRODUCT_UNAVAILABLE: "
            "an archived product"
        },
    ),
    tags=TAGS,
)
def set_stock_shards(product_id: ProductId, body: s.StockShardsIn, request: Request):
    layout = catalog.set_stock_shards(caller(request), product_id, body.shards)
    return json_response(
        200,
        s.StockShardsOut(
            product_id=product_id,
            stock=layout.total,
            stock_shards=layout.shard_count,
            shards=list(layout.shards),
            unsharded_stock=layout.main,
        ),
    )


@app.get(
    "/products/<product_id>/reviews",
    summary="A product's reviews, highest rating first, then newest",
    responses=declare(200, s.ReviewPage, 404),
    tags=TAGS,
)
def list_product_reviews(product_id: ProductId, limit: Limit = DEFAULT_LIMIT, next_token: NextToken = None):
    return json_response(200, catalog.reviews_of_product(product_id, limit=limit, next_token=next_token))


@app.post(
    "/products/<product_id>/reviews",
    summary="Review a product (once per customer)",
    responses=declare(201, s.Review, 401, 404, 409, body=True, errors_described={409: "ALREADY_REVIEWED"}),
    tags=TAGS,
)
def create_review(product_id: ProductId, body: s.ReviewIn, request: Request):
    review = catalog.review(caller(request), product_id, rating=body.rating, title=body.title, body=body.body)
    return json_response(201, review)


@app.get(
    "/customers/<customer_id>/reviews",
    summary="A customer's reviews, newest first",
    responses=declare(200, s.ReviewPage),
    tags=TAGS,
)
def list_customer_reviews(customer_id: CustomerId, limit: Limit = DEFAULT_LIMIT, next_token: NextToken = None):
    return json_response(200, catalog.reviews_of_customer(customer_id, limit=limit, next_token=next_token))


alerts = wiring.alert_service()


@app.get(
    "/admin/alerts",
    summary="Stock alerts (StockLow: a product's stock crossed below its threshold), newest first (admin)",
    responses=declare(200, alert_schemas.AlertPage, 401, 403),
    tags=["alerts"],
)
def list_alerts(request: Request, limit: Limit = DEFAULT_LIMIT, next_token: NextToken = None):
    return json_response(200, alerts.newest(caller(request), limit=limit, next_token=next_token))


handler = lambda_handler(app.resolve)
lean_init.done()
