"""orders: idempotent placement priced from the catalogue, reads with ETag, the admin status machine, cancel,
returns, and the admins' sales reports (counted from the orders by the stream processor)."""

# ruff: noqa: E402 - the collector is paused before the imports it is there to speed up
from shop.runtime import lean_init

lean_init.begin()  # lazy Powertools packages, no cyclic GC until lean_init.done() below

# isort: split
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query

from shop import errors, wiring
from shop.http_api import checkout_schemas as c
from shop.http_api import order_schemas as s
from shop.http_api.countries import known_country, with_country_enum
from shop.http_api.errors import PreconditionRequired
from shop.http_api.etags import IfMatch, etag, expected_version
from shop.http_api.idempotency import IdempotentOperation
from shop.http_api.observability import count, lambda_handler
from shop.http_api.params import DEFAULT_LIMIT, CustomerId, Limit, NextToken, OrderId, ProductId, Request, caller
from shop.http_api.placement_records import answer_of, kept
from shop.http_api.resolver import create_app, declare, json_response
from shop.http_api.schemas import given
from shop.limits import MAX_ID_LENGTH, MAX_QUANTITY, MAX_RETURNS_PER_ORDER, MAX_SALES_DAYS, RETURN_WINDOW_DAYS
from shop.models import OrderStatus, ShippingAddress
from shop.models.checkout import ShippingOptionSetting
from shop.models.orders import ReturnLine
from shop.services.actor import Actor
from shop.services.orders import RequestedLine, ShipmentIn

app = create_app("orders")
orders = wiring.order_service()  # each on the function's table (shop.wiring)
checkout = orders.checkout  # the checkout's settings: one kept snapshot for the quote, the placement and the edits
sales = wiring.sales_service()
idempotency_records = wiring.idempotency_records()
TAGS = ["orders"]
CHECKOUT_TAGS = ["checkout"]
PROMOTION_TAGS = ["promotions"]
ZoneId = Annotated[str, Path(min_length=1, max_length=MAX_ID_LENGTH)]
Country = Annotated[
    str,
    Path(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2 code, e.g. DE", json_schema_extra=with_country_enum),
]
CountryQuery = Annotated[
    str,
    Query(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2 code, e.g. DE", json_schema_extra=with_country_enum),
]
SALES_TAGS = ["sales"]
# A calendar date: the pattern bounds year, month and day; `format: date` (RFC 3339 full-date) says the rest
# (no 2026-02-30), which the service checks (422). Years from 1000, as Python's dates need.
DATE = r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"
DATE_FORMAT = {"format": "date"}
Day = Annotated[str, Query(pattern=DATE, json_schema_extra=DATE_FORMAT, description="a UTC calendar date, YYYY-MM-DD")]
FirstDay = Annotated[
    str,
    Query(alias="from", pattern=DATE, json_schema_extra=DATE_FORMAT, description="the first day, YYYY-MM-DD (UTC)"),
]
LastDay = Annotated[
    str,
    Query(
        pattern=DATE,
        json_schema_extra=DATE_FORMAT,
        description="the last day, YYYY-MM-DD (UTC), at most 365 days after from",
    ),
]
ETAG = {"ETag": 'the order\'s version, quoted: "3"'}
# What a client (and the fuzz test's stateful phase) can do next with a placed order.
_PLACED_ORDER = {"order_id": "$response.body#/order_id"}
NEXT_STEPS = {
    "GetOrder": {"operationId": "getOrder", "parameters": _PLACED_ORDER},
    "ChangeOrderStatus": {
        "operationId": "changeOrderStatus",
        "parameters": {**_PLACED_ORDER, "header.if-match": "$response.header.ETag"},
    },
    "CancelOrder": {"operationId": "cancelOrder", "parameters": _PLACED_ORDER},
    "GetOrderPayment": {"operationId": "getOrderPayment", "parameters": _PLACED_ORDER},
    "RequestReturn": {"operationId": "requestReturn", "parameters": _PLACED_ORDER},
}


def _place(*, request: dict, actor: Actor, body: s.OrderIn) -> dict:
    """Runs once per (customer, Idempotency-Key); its result is what every repeat answers."""
    lines = given(body.lines)
    order = orders.place(
        actor,
        address=ShippingAddress.model_validate(body.shipping_address.model_dump()),
        lines=[RequestedLine(line.product_id, line.quantity) for line in lines] if lines else None,
        session_id=given(body.session_id),
        customer_cart=given(body.cart) == "customer",
        idempotency_key=request["key"],
        shipping_option_id=given(body.shipping_option_id),
        promo_code=given(body.promo_code),
    )
    count("OrdersPlaced")
    count("OrderValueCents", order.total_cents)
    return kept(placed_answer(order))


def placed_answer(order) -> dict:
    """The order, with `payment` when the shop takes it (PAYMENTS=stripe) and its intent exists."""
    answer = order.model_dump(mode="json")
    payment = order.payment
    if payment is not None and payment.intent_id is not None and payment.client_secret is not None:
        answer["payment"] = s.CheckoutPayment(
            provider=payment.provider,
            intent_id=payment.intent_id,
            client_secret=payment.client_secret,
            amount_cents=payment.amount_cents,
            currency=payment.currency,
        ).model_dump(mode="json")
    return answer


placement = IdempotentOperation("orders", _place)


@app.post(
    "/orders",
    summary="Place an order from lines, a session's cart or the caller's cart (idempotent per Idempotency-Key)",
    description="With payments on (PAYMENTS=stripe) the order is PENDING_PAYMENT, its stock held for the "
    "payment window, and `payment` carries the Stripe client secret to confirm the card with; the order is "
    "CONFIRMED when Stripe reports the amount authorised. A 503 PAYMENT_PROVIDER_UNAVAILABLE writes nothing: "
    "repeat the request with the same Idempotency-Key.",
    responses=declare(
        201,
        s.PlacedOrder,
        401,
        404,
        409,
        body=True,
        headers=ETAG,
        links=NEXT_STEPS,
        errors_described={
            404: "PRODUCT_NOT_FOUND or SESSION_NOT_FOUND",
            503: "SERVICE_UNAVAILABLE (see Retry-After), PAYMENT_PROVIDER_UNAVAILABLE (Stripe could not be reached, "
            "nothing was written: repeat with the same Idempotency-Key)",
            409: "OUT_OF_STOCK (details.product_ids), CART_EMPTY, CART_CHANGED (the customer cart changed during "
            "checkout), IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_IN_PROGRESS, PRICE_CHANGED, PRODUCT_UNAVAILABLE (an archived product), "
            "STOCK_TOO_SCATTERED (the stock kept moving while it was gathered into one write: retry later or split "
            "the order), PROMO_CODE_INVALID (no promotion has the code, or it has not started or has ended), "
            "PROMO_CODE_EXHAUSTED (its usage limit is reached), PROMO_CODE_ALREADY_USED (the customer's own limit "
            "is), PROMO_MIN_SUBTOTAL (details.min_subtotal_cents, subtotal_cents); with payments on: NOTHING_TO_PAY (a total of 0 cents, details.product_ids: no intent "
            "holds 0), UNPAID_ORDER_LIMIT (the customer already holds as many unpaid orders, or units in them, as "
            "the shop allows: details.max_unpaid_orders, max_unpaid_units, order_units, and what is held, "
            "unpaid_order_ids and unpaid_units; pay or cancel one), PAYMENT_REJECTED (Stripe refused the intent, details.provider_code: e.g. amount_too_small "
            "or amount_too_large for a total outside what Stripe charges in the shop's currency)",
            422: "VALIDATION_ERROR (including a missing or over-long Idempotency-Key header, "
            f"lines of one product adding up to more than {MAX_QUANTITY}, a country that is not an ISO 3166-1 alpha-2 code), "
            "SHIPPING_UNAVAILABLE (no zone ships to the country, or the option named is not its zone's)",
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
        record = placement(
            idempotency_records,
            key=f"{actor.sub}\n{idempotency_key}",
            payload=body.model_dump(mode="json"),
            context=app.lambda_context,
            actor=actor,
            body=body,
        )
    except errors.OutOfStock:
        count("OutOfStockRejections")
        raise
    placed = answer_of(record)
    return json_response(201, placed, {"ETag": f'"{placed["version"]}"'})


@app.get(
    "/orders",
    summary="Orders in a status, each page newest first; or the confirmed orders whose card authorisation will soon "
    "lapse, oldest first (admin)",
    description="Give exactly one of `status` and `payment` (both, or neither: 422). `payment=expiring` lists the "
    "CONFIRMED orders placed more than AUTHORISATION_WARN_DAYS days ago (default 6; Stripe lets an uncaptured card "
    "authorisation lapse after about 7), oldest first, each with its `payment_status`: AUTHORISED ones are to ship "
    "(or cancel) before the authorisation lapses, LAPSED ones have lapsed already. With CAPTURE=on_confirm every "
    "order is captured at confirmation, so nothing is left to lapse: the list then shows such orders as CAPTURED "
    "(confirmed orders still waiting to ship), and one still AUTHORISED is one whose capture has not been recorded. "
    "Orders taken without payment show `payment_status: null`. Pages are sorted; across the status index's shards "
    "the order is approximate, as with `status`.",
    responses=declare(
        200,
        s.OrderListPage,
        401,
        403,
        errors_described={
            422: "VALIDATION_ERROR: an unknown status or payment, both status and payment, or neither",
        },
    ),
    tags=TAGS,
)
def list_orders(
    request: Request,
    status: Annotated[
        OrderStatus | None, Query(description="the orders in this status, newest first (not with payment)")
    ] = None,
    payment: Annotated[
        s.PaymentFilter | None,
        Query(
            description="expiring: the confirmed orders whose card authorisation will soon lapse, oldest first "
            "(not with status)"
        ),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    next_token: NextToken = None,
):
    actor = caller(request)
    actor.require_admin()
    if (status is None) == (payment is None):
        raise errors.InvalidRequest(
            "give exactly one of status or payment",
            {"status": "exactly one of status and payment", "payment": "exactly one of status and payment"},
        )
    if status is not None:
        return json_response(200, orders.list_by_status(actor, status, limit=limit, next_token=next_token))
    return json_response(200, orders.list_expiring_authorisations(actor, limit=limit, next_token=next_token))


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


@app.get(
    "/orders/<order_id>/payment",
    summary="An order's payment: status and amounts; the client secret to its owner while unpaid (owner or admin)",
    responses=declare(
        200,
        s.PaymentView,
        401,
        404,
        errors_described={
            404: "ORDER_NOT_FOUND (also another customer's order), PAYMENT_NOT_FOUND (placed without payment)",
        },
    ),
    tags=TAGS,
)
def get_order_payment(order_id: OrderId, request: Request):
    payment, secret_shown = orders.payment_of(caller(request), order_id)
    view = s.PaymentView(
        status=payment.status,
        amount_cents=payment.amount_cents,
        captured_cents=payment.captured_cents,
        refunded_cents=payment.refunded_cents,
        currency=payment.currency,
    )
    if secret_shown and payment.client_secret is not None:
        view.client_secret = payment.client_secret
    if payment.last_failure is not None:
        view.last_failure = payment.last_failure
    if payment.dispute is not None:
        view.dispute = payment.dispute
    return json_response(200, view)


@app.patch(
    "/orders/<order_id>",
    summary="Move an order along the status machine (admin; If-Match required)",
    description="PENDING -> CONFIRMED | CANCELLED; CONFIRMED -> SHIPPED (with carrier and tracking_number) | "
    "CANCELLED; SHIPPED -> DELIVERED; RETURN_REQUESTED -> RETURNED (the requested units restocked, their refund "
    "due: OrderRefundDue, or OrderRefunded once the provider refunded it) | DELIVERED (the return rejected: reason "
    "required). CANCELLED restocks every line. "
    "DELIVERED -> RETURN_REQUESTED is the customer's (POST /orders/{order_id}/return). "
    "A requested return is accepted with RETURNED (or PARTIALLY_RETURNED): its units go back to stock and their "
    "refund is due, and the order lands in RETURNED once every unit is back, PARTIALLY_RETURNED before; it is "
    "rejected with DELIVERED and a reason (PARTIALLY_RETURNED when units were returned before). "
    "SHIPPED needs the order's payment held: when its card authorisation lapsed (payment LAPSED, also when the "
    "lapse is recorded while this request runs) the answer is 409 PAYMENT_NOT_HELD, unless the body carries "
    '"ship_without_payment": true, which ships it and records shipped_without_payment on the order and its '
    "history entry; the flag changes nothing on an order whose payment is held, and goes only with SHIPPED.",
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
        errors_described={
            409: "INVALID_TRANSITION, ORDER_ARCHIVED (an archived order no longer changes), PAYMENT_NOT_HELD "
            "(SHIPPED while the order's payment is LAPSED, without ship_without_payment; details.payment_status)",
            422: "VALIDATION_ERROR (including SHIPPED without carrier or tracking_number, carrier, "
            "tracking_number or ship_without_payment with another status, a return rejected without a reason)",
        },
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
    carrier, tracking_number = given(body.carrier), given(body.tracking_number)
    order = orders.change_status(
        actor,
        order_id,
        body.status,
        expected_version=expected_version(if_match),
        shipment=ShipmentIn(carrier, tracking_number) if carrier and tracking_number else None,
        reason=given(body.reason),
        ship_without_payment=given(body.ship_without_payment) or False,
    )
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


@app.post(
    "/orders/<order_id>/return",
    summary=f"Ask to return units of a delivered order, within {RETURN_WINDOW_DAYS} days of its delivery (owner)",
    description="`lines` names the units by their line's `variant_id` (absent: every unit not returned yet). From "
    "DELIVERED or PARTIALLY_RETURNED; an admin accepts (PATCH status RETURNED) or rejects it. An accepted return "
    "refunds its units' share of what was paid for their lines (line total less its discount share, plus its tax), "
    "shipping with the order's last unit: an order's returns refund its total, never more.",
    responses=declare(
        200,
        s.Order,
        401,
        403,
        404,
        409,
        body=True,
        headers=ETAG,
        errors_described={
            403: "FORBIDDEN: an administrator is not the order's owner",
            404: "ORDER_NOT_FOUND (also another customer's order)",
            409: f"RETURN_WINDOW_CLOSED (delivered more than {RETURN_WINDOW_DAYS} days ago), INVALID_TRANSITION "
            "(not DELIVERED or PARTIALLY_RETURNED), RETURN_QUANTITY_EXCEEDED (more units of a line than are left to "
            f"return: details.left), RETURN_LIMIT (an order takes {MAX_RETURNS_PER_ORDER} returns: the last takes every "
            "unit left)",
            422: "VALIDATION_ERROR, RETURN_LINES_INVALID (a variant_id that is none of the order's lines)",
        },
    ),
    tags=TAGS,
)
def request_return(order_id: OrderId, body: s.ReturnIn, request: Request):
    asked = body.lines
    lines = (
        None if asked is None else [ReturnLine(variant_id=line.variant_id, quantity=line.quantity) for line in asked]
    )
    order = orders.request_return(caller(request), order_id, body.reason, lines)
    return json_response(200, order, etag(order))


@app.get(
    "/products/<product_id>/sales",
    summary="A product's units and revenue per UTC day, from confirmed orders less cancellations and returns (admin)",
    description="Every day from `from` to `to` (both included, at most 366 days), days without sales at 0. "
    "A sale counts on its order's confirmation day; a cancellation or return takes it back from that day.",
    responses=declare(
        200,
        s.ProductSales,
        401,
        403,
        errors_described={
            422: f"VALIDATION_ERROR: a date that is not YYYY-MM-DD, `to` before `from`, more than {MAX_SALES_DAYS} days"
        },
    ),
    tags=SALES_TAGS,
)
def product_sales(product_id: ProductId, request: Request, first: FirstDay, to: LastDay):
    report = sales.product_sales(caller(request), product_id, first, to)
    return json_response(200, report)


@app.get(
    "/sales/top",
    summary="A UTC day's best-selling products by units, most first (admin)",
    responses=declare(
        200, s.TopSellerPage, 401, 403, errors_described={422: "VALIDATION_ERROR: a date that is not YYYY-MM-DD"}
    ),
    tags=SALES_TAGS,
)
def top_sellers(request: Request, date: Day, limit: Limit = DEFAULT_LIMIT):
    top = sales.top(caller(request), date, limit)
    return json_response(200, s.TopSellerPage(items=top, next_token=None))


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


@app.post(
    "/checkout/quote",
    summary="What POST /orders with this body would store now: the lines and the total's breakdown, nothing written",
    description="Priced by the function that prices the order: the catalogue's prices (a session cart's lines at "
    "the prices they were set with, as its checkout starts), the destination's shipping option and tax rate as of "
    "the latest edit. An order placed from the same body meanwhile stores the same lines and total unless a price, "
    "a shipping option or a tax rate was edited in between.",
    responses=declare(
        200,
        c.Quote,
        404,
        409,
        body=True,
        errors_described={
            404: "PRODUCT_NOT_FOUND or SESSION_NOT_FOUND",
            409: "CART_EMPTY, PRODUCT_UNAVAILABLE (an archived product), PROMO_CODE_INVALID, PROMO_CODE_EXHAUSTED, "
            "PROMO_MIN_SUBTOTAL (an automatic promotion whose limit is reached no longer applies)",
            422: "VALIDATION_ERROR (lines of one product adding up to more than "
            f"{MAX_QUANTITY}, a region not of the address's country), SHIPPING_UNAVAILABLE (no zone ships to the "
            "country, or the option named is not its zone's)",
        },
    ),
    tags=CHECKOUT_TAGS,
)
def quote_checkout(body: c.QuoteIn):
    lines = given(body.lines)
    quote = orders.quote(
        address=ShippingAddress.model_validate(body.shipping_address.model_dump()),
        lines=[RequestedLine(line.product_id, line.quantity) for line in lines] if lines else None,
        session_id=given(body.session_id),
        shipping_option_id=given(body.shipping_option_id),
        promo_code=given(body.promo_code),
    )
    total, option = quote.total, quote.where.option
    answer = c.Quote(
        lines=quote.lines,
        subtotal_cents=total.subtotal_cents,
        discount_cents=total.discount_cents,
        shipping_cents=total.shipping_cents,
        shipping_tax_cents=total.shipping_tax_cents,
        tax_cents=total.tax_cents,
        total_cents=total.total_cents,
        currency=quote.currency,
        prices_include_tax=total.prices_include_tax,
        tax_rate_bps=total.rate_bps,
        shipping_option=(
            None
            if option is None or quote.where.zone_id is None
            else c.OrderShipping(
                zone_id=quote.where.zone_id,
                option_id=option.option_id,
                name=option.name,
                price_cents=option.price_cents,
            )
        ),
        shipping_options=[
            c.QuotedOption(
                option_id=each.option_id,
                name=each.name,
                price_cents=quote.shipping_prices[each.option_id],
                free_over_cents=each.free_over_cents,
            )
            for each in quote.where.options
        ],
        promotions=[
            c.OrderPromotion(
                promotion_id=applied.promotion_id,
                code=applied.code,
                kind=applied.kind.value,
                discount_cents=applied.discount_cents,
            )
            for applied in total.promotions
        ],
    )
    return json_response(200, answer)


@app.get(
    "/shipping/options",
    summary="The shipping options a country is shipped to by, at their list prices (public)",
    responses=declare(200, c.ShippingOptions, errors_described={422: "VALIDATION_ERROR: not an ISO 3166-1 code"}),
    tags=CHECKOUT_TAGS,
)
def list_shipping_options(country: CountryQuery):
    known_country(country)
    zone = checkout.zone_for(country)
    found = c.ShippingOptions(
        country=country, zone_id=zone.zone_id if zone else None, options=zone.options if zone else []
    )
    return json_response(200, found)


@app.put(
    "/shipping/zones/<zone_id>",
    summary="Create or replace a shipping zone: its countries and options (admin)",
    responses=declare(
        200,
        c.ShippingZone,
        401,
        403,
        409,
        body=True,
        errors_described={
            409: "SHIPPING_COUNTRY_TAKEN (details.countries: each country another zone ships to, with that zone's "
            "id), SHIPPING_ZONE_LIMIT (the shop has its most zones)",
        },
    ),
    tags=CHECKOUT_TAGS,
)
def put_shipping_zone(zone_id: ZoneId, body: c.ShippingZoneIn, request: Request):
    zone = checkout.put_zone(
        caller(request),
        zone_id,
        name=body.name,
        countries=list(body.countries),
        options=[ShippingOptionSetting.model_validate(option.model_dump()) for option in body.options],
    )
    return json_response(200, zone)


@app.put(
    "/tax/rates/<country>",
    summary="Set a country's tax rate, and its subdivisions' own (admin)",
    responses=declare(
        200,
        c.TaxRate,
        401,
        403,
        body=True,
        errors_described={
            422: "VALIDATION_ERROR (not an ISO 3166-1 country; a region that is not a subdivision of the country)"
        },
    ),
    tags=CHECKOUT_TAGS,
)
def put_tax_rate(country: Country, body: c.TaxRateIn, request: Request):
    actor = caller(request)
    actor.require_admin()
    known_country(country)
    regions = given(body.regions) or {}
    foreign = {
        f"regions.{region}": f"not a subdivision of {country}"
        for region in regions
        if not region.startswith(f"{country}-")
    }
    if foreign:
        raise errors.InvalidRequest("a region is not of the country", foreign)
    rate = checkout.put_rate(actor, country, rate_bps=body.rate_bps, regions=dict(regions))
    return json_response(200, rate)


PromotionId = Annotated[str, Path(min_length=1, max_length=MAX_ID_LENGTH)]


@app.post(
    "/promotions",
    summary="Create a promotion: by code or automatic, percent, fixed or free shipping, within dates (admin)",
    responses=declare(
        201,
        c.Promotion,
        401,
        403,
        409,
        body=True,
        errors_described={
            409: "PROMO_CODE_TAKEN (another promotion has this code, in any case), PROMOTION_LIMIT",
            422: "VALIDATION_ERROR (including ends_at not after starts_at)",
        },
    ),
    tags=PROMOTION_TAGS,
)
def create_promotion(body: c.PromotionIn, request: Request):
    promotion = checkout.create_promotion(
        caller(request),
        kind=body.kind,
        value=given(body.value) or 0,
        code=given(body.code),
        automatic=given(body.automatic) or False,
        min_subtotal_cents=given(body.min_subtotal_cents) or 0,
        starts_at=given(body.starts_at),
        ends_at=given(body.ends_at),
        usage_limit=given(body.usage_limit),
        per_customer_limit=given(body.per_customer_limit),
    )
    return json_response(201, promotion)


@app.get(
    "/promotions",
    summary="The promotions, newest first (admin)",
    responses=declare(200, c.PromotionPage, 401, 403),
    tags=PROMOTION_TAGS,
)
def list_promotions(request: Request, limit: Limit = DEFAULT_LIMIT, next_token: NextToken = None):
    return json_response(200, checkout.promotions(caller(request), limit=limit, next_token=next_token))


@app.get(
    "/promotions/<promotion_id>",
    summary="One promotion (admin)",
    responses=declare(200, c.Promotion, 401, 403, 404, errors_described={404: "PROMOTION_NOT_FOUND"}),
    tags=PROMOTION_TAGS,
)
def get_promotion(promotion_id: PromotionId, request: Request):
    return json_response(200, checkout.promotion(caller(request), promotion_id))


@app.patch(
    "/promotions/<promotion_id>",
    summary="Edit a promotion's value, minimum subtotal or dates, or end it now (admin)",
    responses=declare(
        200,
        c.Promotion,
        401,
        403,
        404,
        body=True,
        errors_described={
            404: "PROMOTION_NOT_FOUND",
            422: "VALIDATION_ERROR (including a value its kind does not take, ends_at not after starts_at)",
        },
    ),
    tags=PROMOTION_TAGS,
)
def update_promotion(promotion_id: PromotionId, body: c.PromotionPatch, request: Request):
    changes: dict = {}
    if given(body.value) is not None:
        changes["value"] = body.value
    if given(body.min_subtotal_cents) is not None:
        changes["min_subtotal_cents"] = body.min_subtotal_cents
    if given(body.starts_at) is not None:
        changes["starts_at"] = body.starts_at
    if given(body.ends_at) is not None:
        changes["ends_at"] = body.ends_at
    promotion = checkout.update_promotion(caller(request), promotion_id, changes, end=given(body.end) is True)
    return json_response(200, promotion)


handler = lambda_handler(app.resolve)
lean_init.done()
