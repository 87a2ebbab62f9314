"""sessions: anonymous shopping sessions; the unguessable id is the capability, every change slides the expiry."""

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop import startup

startup.begin()  # lean init: lazy Powertools packages, no cyclic GC (shop.startup)

# isort: split
from shop.http_api import session_schemas as s
from shop.http_api.observability import lambda_handler
from shop.http_api.params import ProductId, SessionId
from shop.http_api.resolver import create_app, declare, json_response
from shop.limits import MAX_CART_LINES
from shop.repository import Table
from shop.services.sessions import SessionService

app = create_app("sessions")
sessions = SessionService(Table())
TAGS = ["sessions"]


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


handler = lambda_handler(app.resolve)
startup.done()
