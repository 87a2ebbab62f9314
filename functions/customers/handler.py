"""customers: profiles (created for the token's sub, unique email) and the customer's notifications."""

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop.runtime import lean_init

lean_init.begin()  # lazy Powertools packages, no cyclic GC until lean_init.done() below

# isort: split
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from shop import wiring
from shop.http_api import customer_schemas as s
from shop.http_api.etags import IfMatch, etag, expected_version
from shop.http_api.observability import lambda_handler
from shop.http_api.params import DEFAULT_LIMIT, CustomerId, Limit, NextToken, Request, caller
from shop.http_api.resolver import create_app, declare, json_response
from shop.http_api.schemas import given

app = create_app("customers")
customers = wiring.customer_service()
TAGS = ["customers"]
ETAG = {"ETag": 'the profile\'s version, quoted: "3"'}


@app.post(
    "/customers",
    summary="Create the profile of the token's subject",
    responses=declare(
        201,
        s.Customer,
        401,
        409,
        body=True,
        headers=ETAG,
        errors_described={409: "CUSTOMER_EXISTS or EMAIL_TAKEN"},
    ),
    tags=TAGS,
)
def create_customer(body: s.CustomerIn, request: Request):
    created = customers.create(caller(request), email=body.email, name=body.name)
    return json_response(201, created, etag(created))


@app.get(
    "/customers",
    summary="Find a customer by email (admin)",
    responses=declare(200, s.Customer, 401, 403, 404, headers=ETAG),
    tags=TAGS,
)
def find_customer(
    request: Request, email: Annotated[str, Query(min_length=3, max_length=254, description="case-insensitive")]
):
    found = customers.find_by_email(caller(request), email)
    return json_response(200, found, etag(found))


@app.get(
    "/customers/<customer_id>",
    summary="Read a profile (self or admin)",
    responses=declare(200, s.Customer, 401, 403, 404, headers=ETAG),
    tags=TAGS,
)
def get_customer(customer_id: CustomerId, request: Request):
    customer = customers.get(caller(request), customer_id)
    return json_response(200, customer, etag(customer))


@app.patch(
    "/customers/<customer_id>",
    summary="Change name and/or email (self or admin; If-Match honoured when sent)",
    responses=declare(
        200,
        s.Customer,
        401,
        403,
        404,
        409,
        412,
        body=True,
        headers=ETAG,
        errors_described={
            409: "EMAIL_TAKEN, or CONFLICT: without If-Match, the profile kept changing meanwhile",
            412: 'VERSION_MISMATCH: If-Match names another version, or none ("3", 3 or W/"3" name version 3)',
        },
    ),
    tags=TAGS,
)
def update_customer(customer_id: CustomerId, body: s.CustomerPatch, request: Request, if_match: IfMatch = None):
    updated = customers.update(
        caller(request),
        customer_id,
        email=given(body.email),
        name=given(body.name),
        expected_version=None if if_match is None else expected_version(if_match),
    )
    return json_response(200, updated, etag(updated))


@app.get(
    "/customers/<customer_id>/notifications",
    summary="The customer's notifications, newest first (self or admin)",
    responses=declare(200, s.NotificationPage, 401, 403),
    tags=TAGS,
)
def list_notifications(
    customer_id: CustomerId, request: Request, limit: Limit = DEFAULT_LIMIT, next_token: NextToken = None
):
    page = customers.notifications(caller(request), customer_id, limit=limit, next_token=next_token)
    return json_response(200, page)


handler = lambda_handler(app.resolve)
lean_init.done()
