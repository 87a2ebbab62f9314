"""orders: idempotent placement priced from the catalogue, reads with ETag, the admin status machine, cancel."""

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop import startup

startup.begin()  # lean init: lazy Powertools packages, no cyclic GC (shop.startup)

# isort: split
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header, Query

from shop import errors
from shop.http_api import order_schemas as s
from shop.http_api.errors import PreconditionRequired
from shop.http_api.etags import IfMatch, etag, expected_version
from shop.http_api.idempotency import IdempotentOperation
from shop.http_api.observability import count, lambda_handler
from shop.http_api.params import DEFAULT_LIMIT, CustomerId, Limit, NextToken, OrderId, Request, caller
from shop.http_api.resolver import create_app, declare, json_response
from shop.http_api.schemas import given
from shop.limits import MAX_QUANTITY
from shop.models import OrderStatus, ShippingAddress
from shop.repository import Table
from shop.services.actor import Actor
from shop.services.orders import OrderService, RequestedLine

app = create_app("orders")
table = Table()
orders = OrderService(table)
TAGS = ["orders"]
ETAG = {"ETag": 'the order\'s version, quoted: "3"'}
# What a client (and the fuzz test's stateful phase) can do next with a placed order.
_PLACED_ORDER = {"order_id": "$response.body#/order_id"}
NEXT_STEPS = {
    "GetOrder": {"operationId": "get_order_orders__order_id__get", "parameters": _PLACED_ORDER},
    "ChangeOrderStatus": {
        "operationId": "change_order_status_orders__order_id__patch",
        "parameters": {**_PLACED_ORDER, "header.if-match": "$response.header.ETag"},
    },
    "CancelOrder": {"operationId": "cancel_order_orders__order_id__cancel_post", "parameters": _PLACED_ORDER},
}


def _place(*, request: dict, actor: Actor, body: s.OrderIn) -> dict:
    """Runs once per (customer, Idempotency-Key); its result is what every repeat answers."""
    lines = given(body.lines)
    order = orders.place(
        actor,
        address=ShippingAddress.model_validate(body.shipping_address.model_dump()),
        lines=[RequestedLine(line.product_id, line.quantity) for line in lines] if lines else None,
        session_id=given(body.session_id),
        idempotency_key=request["key"],
    )
    count("OrdersPlaced")
    count("OrderValueCents", order.total_cents)
    return order.model_dump(mode="json")


placement = IdempotentOperation("orders", _place)


@app.post(
    "/orders",
    summary="Place an order from lines or a session's cart (idempotent per Idempotency-Key)",
    responses=declare(
        201,
        s.Order,
        401,
        404,
        409,
        body=True,
        headers=ETAG,
        links=NEXT_STEPS,
        errors_described={
            404: "PRODUCT_NOT_FOUND or SESSION_NOT_FOUND",
            409: "OUT_OF_STOCK (details.product_ids), CART_EMPTY, IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_IN_PROGRESS,"
            " PRICE_CHANGED",
            422: "VALIDATION_ERROR (including a missing or over-long Idempotency-Key header, "
            f"lines of one product adding up to more than {MAX_QUANTITY}, a country that is not an ISO 3166-1 alpha-2 code)",
        },
    ),
    tags=TAGS,
)
def place_order(
    body: s.OrderIn,
    request: Request,
    idempotency_key: Annotated[
        str,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=128,
            pattern=r"^[\x21-\x7e]+$",
            description="client-chosen key, 1..128 visible ASCII characters; a repeat returns the first response",
        ),
    ],
):
    actor = caller(request)
    try:
        placed = placement(
            table,
            key=f"{actor.sub}\n{idempotency_key}",
            payload=body.model_dump(mode="json"),
            context=app.lambda_context,
            actor=actor,
            body=body,
        )
    except errors.OutOfStock:
        count("OutOfStockRejections")
        raise
    return json_response(201, placed, {"ETag": f'"{placed["version"]}"'})


@app.get(
    "/orders",
    summary="Orders in a status, each page newest first (admin)",
    responses=declare(200, s.OrderSummaryPage, 401, 403, errors_described={422: "VALIDATION_ERROR: unknown status"}),
    tags=TAGS,
)
def list_orders(
    request: Request,
    status: Annotated[OrderStatus, Query()],
    limit: Limit = DEFAULT_LIMIT,
    next_token: NextToken = None,
):
    page = orders.list_by_status(caller(request), status, limit=limit, next_token=next_token)
    return json_response(200, page)


@app.get(
    "/orders/<order_id>",
    summary="One order with its lines and status history (owner or admin); an archived one from the archive",
    responses=declare(
        200,
        s.Order,
        401,
        404,
        headers=ETAG,
        errors_described={
            404: "ORDER_NOT_FOUND (also another customer's order)",
            503: "SERVICE_UNAVAILABLE: the store or the archive is throttled or down, or the order is being "
            "archived this moment; see Retry-After",
        },
    ),
    tags=TAGS,
)
def get_order(order_id: OrderId, request: Request):
    order = orders.get(caller(request), order_id)
    return json_response(200, order, etag(order))


@app.patch(
    "/orders/<order_id>",
    summary="Move an order along the status machine (admin; If-Match required)",
    responses=declare(
        200,
        s.Order,
        401,
        403,
        404,
        409,
        412,
        428,
        body=True,
        headers=ETAG,
        errors_described={409: "INVALID_TRANSITION, ORDER_ARCHIVED (an archived order no longer changes)"},
    ),
    tags=TAGS,
)
def change_order_status(
    order_id: OrderId,
    body: s.OrderStatusPatch,
    request: Request,
    if_match: IfMatch = None,
):
    actor = caller(request)
    actor.require_admin()
    if if_match is None:
        raise PreconditionRequired("send If-Match with the ETag of the order you read")
    order = orders.change_status(actor, order_id, body.status, expected_version=expected_version(if_match))
    return json_response(200, order, etag(order))


@app.post(
    "/orders/<order_id>/cancel",
    summary="Cancel a PENDING or CONFIRMED order and restock it (owner or admin)",
    responses=declare(
        200, s.Order, 401, 404, 409, headers=ETAG, errors_described={409: "INVALID_TRANSITION, ORDER_ARCHIVED"}
    ),
    tags=TAGS,
)
def cancel_order(order_id: OrderId, request: Request):
    order = orders.cancel(caller(request), order_id)
    return json_response(200, order, etag(order))


@app.get(
    "/customers/<customer_id>/orders",
    summary="A customer's orders, newest first (self or admin)",
    responses=declare(200, s.OrderSummaryPage, 401, 403),
    tags=TAGS,
)
def list_customer_orders(
    customer_id: CustomerId, request: Request, limit: Limit = DEFAULT_LIMIT, next_token: NextToken = None
):
    page = orders.list_for_customer(caller(request), customer_id, limit=limit, next_token=next_token)
    return json_response(200, page)


handler = lambda_handler(app.resolve)
startup.done()
