"""sessions: carts. Anonymous sessions (the unguessable id is the capability, every change slides the expiry)
and customer carts (the token's customer's, 30 days past their last change, merged from a session at sign-in)."""

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop.runtime import lean_init

lean_init.begin()  # lazy Powertools packages, no cyclic GC until lean_init.done() below

# isort: split
from shop import wiring
from shop.http_api import cart_schemas as c
from shop.http_api import session_schemas as s
from shop.http_api.observability import lambda_handler
from shop.http_api.params import CustomerId, ProductId, Request, SessionId, caller
from shop.http_api.resolver import create_app, declare, json_response
from shop.limits import MAX_CART_LINES, MAX_QUANTITY

app = create_app("sessions")
sessions = wiring.session_service()
carts = wiring.cart_service()
TAGS = ["sessions"]
CART_TAGS = ["carts"]


@app.post(
    "/sessions",
    summary="Open an anonymous session with an empty cart",
    responses=declare(201, s.Session),
    tags=TAGS,
)
def create_session():
    return json_response(201, sessions.create())


@app.get(
    "/sessions/<session_id>",
    summary="The session's cart and subtotal (holder of the id)",
    responses=declare(200, s.Session, 404, errors_described={404: "SESSION_NOT_FOUND: unknown or expired"}),
    tags=TAGS,
)
def get_session(session_id: SessionId):
    return json_response(200, sessions.get(session_id))


@app.put(
    "/sessions/<session_id>/cart/<product_id>",
    summary="Set a cart line's quantity (0 removes it); slides the expiry",
    responses=declare(
        200,
        s.Session,
        404,
        409,
        body=True,
        errors_described={
            404: "SESSION_NOT_FOUND or PRODUCT_NOT_FOUND",
            409: "PRODUCT_UNAVAILABLE: the product is archived",
            422: f"VALIDATION_ERROR, or CART_FULL (more than {MAX_CART_LINES} lines)",
        },
    ),
    tags=TAGS,
)
def set_cart_line(session_id: SessionId, product_id: ProductId, body: s.CartQuantityIn):
    return json_response(200, sessions.set_quantity(session_id, product_id, body.quantity))


@app.delete(
    "/sessions/<session_id>",
    summary="End the session",
    responses=declare(204, None, description="deleted (also when it did not exist)"),
    tags=TAGS,
)
def delete_session(session_id: SessionId):
    sessions.delete(session_id)
    return json_response(204, None)


@app.get(
    "/customers/<customer_id>/cart",
    summary="The customer's cart at current prices (self or admin)",
    responses=declare(200, c.CustomerCartView, 401, 403, 404, errors_described={404: "CUSTOMER_NOT_FOUND: no profile"}),
    tags=CART_TAGS,
)
def get_customer_cart(customer_id: CustomerId, request: Request):
    return json_response(200, carts.get(caller(request), customer_id))


@app.put(
    "/customers/<customer_id>/cart/<product_id>",
    summary="Set a line of the customer's cart (0 removes it); slides the expiry to 30 days (self)",
    responses=declare(
        200,
        c.CustomerCartView,
        401,
        403,
        404,
        409,
        body=True,
        errors_described={
            404: "CUSTOMER_NOT_FOUND (no profile) or PRODUCT_NOT_FOUND",
            409: "PRODUCT_UNAVAILABLE (archived)",
            422: f"VALIDATION_ERROR (quantity 0..{MAX_QUANTITY}), or CART_FULL (more than {MAX_CART_LINES} lines)",
        },
    ),
    tags=CART_TAGS,
)
def set_customer_cart_line(customer_id: CustomerId, product_id: ProductId, body: c.CartQuantityIn, request: Request):
    return json_response(200, carts.set_quantity(caller(request), customer_id, product_id, body.quantity))


@app.post(
    "/customers/<customer_id>/cart/merge",
    summary="Merge an anonymous session's cart into the customer's and end the session (self; a repeat is a no-op)",
    responses=declare(
        200,
        c.MergedCart,
        401,
        403,
        404,
        body=True,
        errors_described={404: "SESSION_NOT_FOUND (unknown, expired or merged into another cart), CUSTOMER_NOT_FOUND"},
    ),
    tags=CART_TAGS,
)
def merge_session_into_cart(customer_id: CustomerId, body: c.CartMergeIn, request: Request):
    return json_response(200, carts.merge(caller(request), customer_id, body.session_id))


@app.delete(
    "/customers/<customer_id>/cart",
    summary="Empty the customer's cart (self)",
    responses=declare(204, None, 401, 403, description="emptied (also when there was no cart)"),
    tags=CART_TAGS,
)
def empty_customer_cart(customer_id: CustomerId, request: Request):
    carts.delete(caller(request), customer_id)
    return json_response(204, None)


handler = lambda_handler(app.resolve)
lean_init.done()
