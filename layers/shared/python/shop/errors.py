"""Typed domain errors.

The repository turns AWS error codes into these; the HTTP layer maps each class to a status code in one table
(shop.http_api.errors). Nothing matches on messages.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    code = "DOMAIN_ERROR"

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class Forbidden(DomainError):
    """The caller is known but may not do this (not an administrator, not the owner)."""

    code = "FORBIDDEN"


class NotFound(DomainError):
    """Nothing at this address: an unknown route, or a thing no more specific class names."""

    code = "NOT_FOUND"


class CustomerNotFound(NotFound):
    code = "CUSTOMER_NOT_FOUND"


class ProductNotFound(NotFound):
    code = "PRODUCT_NOT_FOUND"

    def __init__(self, product_ids: list[str]) -> None:
        super().__init__("product not found", {"product_ids": sorted(set(product_ids))})
        self.product_ids = sorted(set(product_ids))


class OrderNotFound(NotFound):
    code = "ORDER_NOT_FOUND"


class PaymentNotFound(NotFound):
    """The order takes no payment through the shop (placed with PAYMENTS=none)."""

    code = "PAYMENT_NOT_FOUND"


class SessionNotFound(NotFound):
    code = "SESSION_NOT_FOUND"


class Conflict(DomainError):
    code = "CONFLICT"


class OrderArchived(Conflict):
    """The order left the table for the archive: `archive_key` names its object, `customer_id` its owner.

    Raised by the order store's reads: a read answers from the archive, a change is refused (409)."""

    code = "ORDER_ARCHIVED"

    def __init__(self, order_id: str, *, customer_id: str, archive_key: str) -> None:
        super().__init__(f"order {order_id} is archived", {"order_id": order_id})
        self.order_id = order_id
        self.customer_id = customer_id
        self.archive_key = archive_key


class CustomerExists(Conflict):
    code = "CUSTOMER_EXISTS"


class OrderExists(Conflict):
    code = "ORDER_EXISTS"


class ProductExists(Conflict):
    code = "PRODUCT_EXISTS"


class EmailTaken(Conflict):
    code = "EMAIL_TAKEN"


class AlreadyReviewed(Conflict):
    code = "ALREADY_REVIEWED"


class OutOfStock(Conflict):
    code = "OUT_OF_STOCK"

    def __init__(self, product_ids: list[str]) -> None:
        super().__init__("not enough stock", {"product_ids": sorted(set(product_ids))})
        self.product_ids = sorted(set(product_ids))


class StockTooScattered(Conflict):
    """An order whose stock takes would not fit in one transaction even after gathering stock together:
    the stock is moving under it. The client retries later or splits the order (409, never 422)."""

    code = "STOCK_TOO_SCATTERED"

    def __init__(self, items: int, limit: int) -> None:
        super().__init__(
            "this order's stock is spread over more places than one write holds: retry later or split the order",
            {"transaction_items": items, "limit": limit},
        )


class StockSourceShort(OutOfStock):
    """Placement: the places a line tried to take stock from held less than it took (a shard, or the
    product item of a product that has shards); the order service tries other places before it answers.

    `seen` is what each failed place held: product id -> {shard number or None (the product item): stock};
    `shards` the product's shard count where the product item said it.
    """

    def __init__(self, seen: dict[str, dict[int | None, int]], shards: dict[str, int]) -> None:
        super().__init__(list(seen))
        self.seen = seen
        self.shards = shards


class InsufficientStock(Conflict):
    code = "INSUFFICIENT_STOCK"


class PriceChanged(Conflict):
    """A catalogue price moved between reading it and placing the order."""

    code = "PRICE_CHANGED"

    def __init__(self, product_ids: list[str]) -> None:
        super().__init__("price changed while placing the order", {"product_ids": sorted(set(product_ids))})
        self.product_ids = sorted(set(product_ids))


class CartChanged(Conflict):
    """A customer cart changed between reading it and writing it (checkout answers this; merges retry)."""

    code = "CART_CHANGED"


class InvalidTransition(Conflict):
    code = "INVALID_TRANSITION"


class ReturnWindowClosed(Conflict):
    """A return requested more than RETURN_WINDOW_DAYS after the order was delivered."""

    code = "RETURN_WINDOW_CLOSED"


class TooManyReturns(Conflict):
    """A return asked of an order that has accepted MAX_RETURNS_PER_ORDER returns already."""

    code = "RETURN_LIMIT"


class ReturnQuantityExceeded(Conflict):
    """A return of more units of a line than are left to return (bought less those accepted back already)."""

    code = "RETURN_QUANTITY_EXCEEDED"


class PaymentNotHeld(Conflict):
    """Shipping an order whose payment is no longer held: the provider cancelled its card authorisation before it
    was captured (payment LAPSED). The admin may ship it anyway with ship_without_payment, which is recorded."""

    code = "PAYMENT_NOT_HELD"

    def __init__(self, order_id: str, payment_status: str) -> None:
        super().__init__(
            "the order's payment is no longer held (its card authorisation lapsed): send ship_without_payment: true "
            "to ship it anyway",
            {"order_id": order_id, "payment_status": payment_status},
        )


class ShippingCountryTaken(Conflict):
    """A zone given a country another zone ships to: a destination is in one zone at most."""

    code = "SHIPPING_COUNTRY_TAKEN"

    def __init__(self, taken: dict[str, str]) -> None:
        super().__init__("a country is in another shipping zone", {"countries": taken})


class TooManyShippingZones(Conflict):
    code = "SHIPPING_ZONE_LIMIT"


class PromoCodeInvalid(Conflict):
    """A code no promotion has, or whose promotion has not started or has ended."""

    code = "PROMO_CODE_INVALID"

    def __init__(self, promo_code: str) -> None:
        super().__init__("this promotion code does not apply now", {"promo_code": promo_code})


class PromoMinSubtotal(Conflict):
    code = "PROMO_MIN_SUBTOTAL"

    def __init__(self, promo_code: str, min_subtotal_cents: int, subtotal_cents: int) -> None:
        super().__init__(
            "the order's lines do not reach this code's minimum",
            {"promo_code": promo_code, "min_subtotal_cents": min_subtotal_cents, "subtotal_cents": subtotal_cents},
        )


class PromoCodeExhausted(Conflict):
    code = "PROMO_CODE_EXHAUSTED"

    def __init__(self, promo_code: str) -> None:
        super().__init__("this promotion code has been used as many times as it may", {"promo_code": promo_code})


class PromoCodeAlreadyUsed(Conflict):
    code = "PROMO_CODE_ALREADY_USED"

    def __init__(self, promo_code: str) -> None:
        super().__init__("you have used this promotion code as many times as you may", {"promo_code": promo_code})


class PromotionUseRefused(Conflict):
    """The placement's transaction refused a promotion's use: its counter `shard` was full (None: the customer's
    own count was). The checkout tries another counter, or answers PROMO_CODE_EXHAUSTED / ALREADY_USED."""

    def __init__(self, promotion_id: str, shard: int | None) -> None:
        super().__init__("a promotion's use was refused", {"promotion_id": promotion_id})
        self.promotion_id = promotion_id
        self.shard = shard


class PromoCodeTaken(Conflict):
    code = "PROMO_CODE_TAKEN"


class TooManyPromotions(Conflict):
    code = "PROMOTION_LIMIT"


class PromotionNotFound(NotFound):
    code = "PROMOTION_NOT_FOUND"


class VersionMismatch(DomainError):
    code = "VERSION_MISMATCH"


class CartFull(DomainError):
    """The cart already holds its maximum of lines: 422 as the contract says, though it depends on state."""

    code = "CART_FULL"


class CartEmpty(Conflict):
    """Checkout of a session whose cart is empty (state, which a request schema cannot express)."""

    code = "CART_EMPTY"


class InvalidNextToken(DomainError):
    code = "INVALID_NEXT_TOKEN"


class ServiceUnavailable(DomainError):
    """The store throttled or failed after the client's retries ran out."""

    code = "SERVICE_UNAVAILABLE"


class WriteCancelled(ServiceUnavailable):
    """A transaction the store cancelled for a passing reason (another transaction on its items, an item
    throttled): unlike a call that failed without an answer, it is known that nothing was written. Retry."""


class CheckoutSettingsChanged(WriteCancelled):
    """A placement's transaction found the checkout's settings edited since the snapshot it priced with: the
    checkout reads them again and prices again (503 only when they were edited again meanwhile)."""

    def __init__(self) -> None:
        super().__init__("the checkout's settings changed meanwhile")


class InvalidRequest(DomainError):
    """A request that breaks the schema (details list the fields) or a rule the schema cannot express."""

    code = "VALIDATION_ERROR"


class ShippingUnavailable(InvalidRequest):
    """The shop ships nothing to the destination, or not by the option asked for: 422 as the contract says, though
    it depends on the shop's settings."""

    code = "SHIPPING_UNAVAILABLE"

    def __init__(self, message: str, country: str, option_id: str | None) -> None:
        super().__init__(message, {"country": country, "shipping_option_id": option_id})


class InvalidReturnLines(InvalidRequest):
    """A return naming a variant the order holds no line of."""

    code = "RETURN_LINES_INVALID"


class StockLimitExceeded(InvalidRequest):
    """A stock adjustment that would take stock past the most a product may hold."""


class StoreRejected(InvalidRequest):
    """DynamoDB refused the request itself as invalid (a key or item over its limits): never retryable.

    Input validation bounds every value so this should not happen; the message stays generic because
    the store's own says which internal key or attribute failed.
    """

    def __init__(self) -> None:
        super().__init__("a value in this request is larger than the store accepts")


# -- the catalogue tree ----------------------------------------------------------------


class CategoryNotFound(NotFound):
    code = "CATEGORY_NOT_FOUND"

    def __init__(self, slugs: list[str]) -> None:
        super().__init__("category not found", {"categories": sorted(set(slugs))})
        self.slugs = sorted(set(slugs))


class CategoryExists(Conflict):
    code = "CATEGORY_EXISTS"


class InvalidMove(Conflict):
    """A category moved into itself or its own subtree."""

    code = "INVALID_MOVE"


class CategoriesMoved(Conflict):
    """A category a product is filed in changed its path between the read of its paths and the write of the
    product's listing entries (a move): the scopes computed are stale; read the paths again."""


class MoveInProgress(Conflict):
    """Another category move is still rewriting its subtree."""

    code = "MOVE_IN_PROGRESS"


class CategoryTooDeep(InvalidRequest):
    """The tree would be deeper than MAX_CATEGORY_DEPTH levels (details name the field)."""


class TooManyChildren(InvalidRequest):
    """A category already holds MAX_CHILDREN children."""


class ProductUnavailable(Conflict):
    """An archived product: it cannot be ordered or added to a cart."""

    code = "PRODUCT_UNAVAILABLE"

    def __init__(self, product_ids: list[str]) -> None:
        super().__init__("product is no longer available", {"product_ids": sorted(set(product_ids))})
        self.product_ids = sorted(set(product_ids))


class OrderEffectsClosed(Conflict):
    """A stream record's effect on an order that is archived (its ARCHIVED marker exists): nothing is written."""

    code = "ORDER_EFFECTS_CLOSED"

    def __init__(self, order_id: str) -> None:
        super().__init__(f"order {order_id} is archived: its records change nothing", {"order_id": order_id})
        self.order_id = order_id


# -- payments --------------------------------------------------------------------------


class PaymentProviderUnavailable(ServiceUnavailable):
    """The payment provider could not be reached, throttled, or failed on its side (5xx): retry later."""

    code = "PAYMENT_PROVIDER_UNAVAILABLE"


class PaymentDeclined(Conflict):
    """The provider declined the card (details carry the provider's decline code)."""

    code = "PAYMENT_DECLINED"


class PaymentRejected(Conflict):
    """The provider refused the request as it stands: an unknown intent, a capture of a cancelled one, a
    refund larger than what is left, an idempotency key reused with other parameters."""

    code = "PAYMENT_REJECTED"


class NothingToPay(Conflict):
    """PAYMENTS=stripe: the order's total at the catalogue's prices is 0 cents, and a payment intent holds a
    positive amount only (Stripe refuses 0): refused before the provider is called, nothing written (409)."""

    code = "NOTHING_TO_PAY"

    def __init__(self, product_ids: list[str]) -> None:
        super().__init__(
            "the order's total is 0 cents: payments are on and the payment provider charges positive amounts only",
            {"product_ids": product_ids},
        )


class UnpaidOrderLimit(Conflict):
    """PAYMENTS=stripe: the customer already holds as many unpaid (PENDING_PAYMENT) orders, or as many units in them,
    as the shop allows (MAX_UNPAID_ORDERS, MAX_UNPAID_UNITS): refused with nothing written (409; docs/payments.md,
    "Hoarding"). Paying or cancelling one of them makes room.

    `held_order_ids` and `held_units` are what the customer's unpaid hold held when it refused, None when the order
    alone holds more units than allowed (refused before anything was read or written)."""

    code = "UNPAID_ORDER_LIMIT"

    def __init__(
        self,
        *,
        max_orders: int,
        max_units: int,
        order_units: int,
        held_order_ids: list[str] | None = None,
        held_units: int | None = None,
    ) -> None:
        details: dict[str, object] = {
            "max_unpaid_orders": max_orders,
            "max_unpaid_units": max_units,
            "order_units": order_units,
        }
        if held_order_ids is not None:
            details["unpaid_order_ids"] = sorted(held_order_ids)
            details["unpaid_units"] = held_units or 0
        super().__init__("you hold as many unpaid orders or units as the shop allows: pay or cancel one first", details)
        self.held_order_ids = sorted(held_order_ids or [])
        self.held_units = held_units or 0


class PaymentMisconfigured(DomainError):
    """The provider refused the shop's credentials or permissions: a deployment fault, answered as 500."""

    code = "PAYMENT_MISCONFIGURED"


class InvalidWebhookSignature(DomainError):
    """A webhook whose body is not signed with the endpoint's secret, or signed too long ago (400)."""

    code = "WEBHOOK_SIGNATURE_INVALID"


class InvalidWebhookPayload(DomainError):
    """A correctly signed webhook whose body is not a provider event (400)."""

    code = "WEBHOOK_PAYLOAD_INVALID"


class PaymentCredentialsUnusable(PaymentProviderUnavailable):
    """The shop's own Stripe credentials cannot be used: the stage's secret still holds the placeholder it was
    created with, cannot be read, is not the JSON it must be, or holds a key Stripe refuses. A deployment fault,
    yet answered as an outage (503 PAYMENT_PROVIDER_UNAVAILABLE with Retry-After, nothing written; a webhook
    delivery is then redelivered by Stripe), never 500; shop.payment_secrets counts it for its alarm
    (docs/operations.md, "Payment credentials unusable")."""
