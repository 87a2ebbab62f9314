"""Bodies of the checkout's settings and its quote (served by the orders function; docs/decisions.md, 076)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from shop import clock
from shop.http_api.countries import CountryCode
from shop.http_api.order_schemas import AddressIn, Lines, PromoCode, SessionRef, ShippingOptionId
from shop.http_api.schemas import INTEGRAL, MISSING, Body, OneOfBody, given
from shop.limits import (
    MAX_ID_LENGTH,
    MAX_PER_CUSTOMER_LIMIT,
    MAX_PRICE_CENTS,
    MAX_RATE_BPS,
    MAX_SHIPPING_NAME_LENGTH,
    MAX_TAX_REGIONS,
    MAX_USAGE_LIMIT,
    MAX_ZONE_COUNTRIES,
    MAX_ZONE_OPTIONS,
)
from shop.models.checkout import Promotion, ShippingOptionSetting, ShippingZone, TaxRate
from shop.models.common import Model
from shop.models.orders import OrderLine, OrderPromotion, OrderShipping

__all__ = [
    "OrderPromotion",
    "OrderShipping",
    "Promotion",
    "PromotionIn",
    "PromotionPage",
    "PromotionPatch",
    "Quote",
    "QuoteFromLines",
    "QuoteFromSession",
    "QuoteIn",
    "QuotedOption",
    "ShippingOptionIn",
    "ShippingOptions",
    "ShippingZone",
    "ShippingZoneIn",
    "TaxRate",
    "TaxRateIn",
]

ShippingName = Annotated[str, Field(min_length=1, max_length=MAX_SHIPPING_NAME_LENGTH)]
Cents = Annotated[StrictInt, Field(ge=0, le=MAX_PRICE_CENTS), INTEGRAL]
RateBps = Annotated[
    StrictInt, Field(ge=0, le=MAX_RATE_BPS, description="basis points: 1900 is 19 %, 725 is 7.25 %"), INTEGRAL
]
Region = Annotated[str, Field(pattern=r"^[A-Z]{2}-[A-Z0-9]{1,3}$", description="an ISO 3166-2 subdivision, US-CA")]


class ShippingOptionIn(Body):
    option_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    name: ShippingName
    price_cents: Cents
    free_over_cents: Cents | MISSING = Field(
        default=MISSING, description="no shipping charged when the goods, less their discount, reach this"
    )


class ShippingZoneIn(Body):
    """A zone: the countries it ships to (each in no other zone) and its options, the first its default (an order
    that names no option ships by it). Option ids are distinct within the zone."""

    name: ShippingName
    countries: Annotated[
        list[CountryCode], Field(min_length=1, max_length=MAX_ZONE_COUNTRIES, json_schema_extra={"uniqueItems": True})
    ]
    options: Annotated[
        list[ShippingOptionIn],
        Field(min_length=1, max_length=MAX_ZONE_OPTIONS, description="distinct option_ids; the first is the default"),
    ]

    @field_validator("countries")
    @classmethod
    def _countries_once(cls, countries: list[str]) -> list[str]:
        if len(set(countries)) != len(countries):
            raise ValueError("countries must not repeat")
        return countries

    @field_validator("options")
    @classmethod
    def _options_once(cls, options: list[ShippingOptionIn]) -> list[ShippingOptionIn]:
        if len({option.option_id for option in options}) != len(options):
            raise ValueError("option_ids must not repeat within a zone")
        return options


class TaxRateIn(Body):
    """The country's rate, and the subdivisions of it (ISO 3166-2 codes that start with the country's code) that
    have a rate of their own."""

    rate_bps: RateBps
    regions: (
        Annotated[
            dict[Region, RateBps],
            Field(max_length=MAX_TAX_REGIONS, json_schema_extra={"additionalProperties": False}),
        ]
        | MISSING
    ) = MISSING


class ShippingOptions(Model):
    """The options a destination ships by, at their list prices (a quote says what each charges an order)."""

    country: str
    zone_id: str | None = Field(description="the zone shipping there; null when none does")
    options: list[ShippingOptionSetting]


class QuoteFromLines(Body):
    """A quote of the lines given here."""

    lines: Lines
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING
    promo_code: PromoCode | MISSING = MISSING


class QuoteFromSession(Body):
    """A quote of a session's cart."""

    session_id: SessionRef
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING
    promo_code: PromoCode | MISSING = MISSING


class QuoteIn(OneOfBody):
    """Exactly one of ``session_id`` (quote a session's cart) or ``lines``, plus the address, and the shipping
    option as POST /orders takes them."""

    ALTERNATIVES = (QuoteFromLines, QuoteFromSession)

    session_id: SessionRef | MISSING = MISSING
    lines: Lines | MISSING = MISSING
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING
    promo_code: PromoCode | MISSING = MISSING

    @model_validator(mode="after")
    def _exactly_one_source(self) -> QuoteIn:
        if ("session_id" in self.model_fields_set) == ("lines" in self.model_fields_set):
            raise ValueError("give exactly one of session_id or lines")
        return self


class QuotedOption(Model):
    option_id: str
    name: str
    price_cents: int = Field(description="what the option charges this order for shipping (0 past its free_over)")
    free_over_cents: int | None = None


class Quote(Model):
    """What POST /orders with the same body would store now: its lines and its total's breakdown."""

    lines: list[OrderLine]
    subtotal_cents: int
    discount_cents: int
    shipping_cents: int
    shipping_tax_cents: int
    tax_cents: int
    total_cents: int = Field(description="subtotal - discount + shipping + (tax unless prices include it)")
    currency: str = Field(pattern=r"^[a-z]{3}$")
    prices_include_tax: bool
    tax_rate_bps: int | None = Field(description="the destination's rate; null when the shop has none for it (tax 0)")
    shipping_option: OrderShipping | None = Field(description="the option the order would ship by")
    shipping_options: list[QuotedOption] = Field(description="every option the destination ships by, priced")
    promotions: list[OrderPromotion] = Field(
        description="the automatic promotions that apply, then the code's; what each took off"
    )


_KIND_RULES: list[JsonValue] = [
    {
        "if": {"properties": {"kind": {"const": "percent"}}},
        "then": {"required": ["value"], "properties": {"value": {"minimum": 1, "maximum": 100}}},
    },
    {
        "if": {"properties": {"kind": {"const": "fixed"}}},
        "then": {"required": ["value"], "properties": {"value": {"minimum": 1}}},
    },
    {"if": {"properties": {"kind": {"const": "free_shipping"}}}, "then": {"not": {"required": ["value"]}}},
    {
        "if": {"properties": {"automatic": {"const": True}}, "required": ["automatic"]},
        "then": {"not": {"required": ["code"]}},
        "else": {"required": ["code"]},
    },
]
# An RFC 3339 instant with its offset, of the years 1970 to 2999 (so that it stays a four-digit year in UTC), to the
# microsecond: the pattern says all of it but the calendar (format: date-time, the model's parse).
INSTANT_PATTERN = (
    r"^(19[7-9][0-9]|2[0-9]{3})-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
    r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)


def _in_utc(text: str) -> str:
    """The instant as shop.clock writes it (UTC, microseconds): instants then compare as text."""
    return clock.iso(datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC))


Instant = Annotated[
    str,
    Field(
        pattern=INSTANT_PATTERN,
        json_schema_extra={"format": "date-time"},
        description="RFC 3339 with its offset, 1970 to 2999, e.g. 2027-06-01T00:00:00+02:00",
    ),
    AfterValidator(_in_utc),
]


class PromotionIn(Body):
    """A promotion: a `code` customers give, or `automatic: true` (every order it fits, no code), not both.
    `value` is a whole percent from 1 to 100 (`percent`), cents from 1 (`fixed`), and absent for `free_shipping`.
    It applies from `starts_at` (default: now) until before `ends_at` (default: never), which is after it."""

    model_config = ConfigDict(json_schema_extra={"allOf": _KIND_RULES})

    code: PromoCode | MISSING = MISSING
    kind: Literal["percent", "fixed", "free_shipping"]
    value: Annotated[StrictInt, Field(ge=1, le=MAX_PRICE_CENTS), INTEGRAL] | MISSING = MISSING
    min_subtotal_cents: Cents | MISSING = MISSING
    starts_at: Instant | MISSING = MISSING
    ends_at: Instant | MISSING = MISSING
    automatic: StrictBool | MISSING = MISSING
    usage_limit: Annotated[StrictInt, Field(ge=1, le=MAX_USAGE_LIMIT), INTEGRAL] | MISSING = Field(
        default=MISSING, description="uses it has in all, by orders not cancelled, expired or failed"
    )
    per_customer_limit: Annotated[StrictInt, Field(ge=1, le=MAX_PER_CUSTOMER_LIMIT), INTEGRAL] | MISSING = Field(
        default=MISSING, description="uses one customer has"
    )

    @model_validator(mode="after")
    def _as_the_schema_says(self) -> PromotionIn:
        value = given(self.value)
        if self.kind == "percent" and (value is None or value > 100):
            raise ValueError("a percent promotion takes a value from 1 to 100")
        if self.kind == "fixed" and value is None:
            raise ValueError("a fixed promotion takes a value")
        if self.kind == "free_shipping" and value is not None:
            raise ValueError("a free-shipping promotion takes no value")
        if (given(self.automatic) is True) == ("code" in self.model_fields_set):
            raise ValueError("give a code, or automatic: true, not both")
        return self


class PromotionPatch(Body):
    """What changes: its value, minimum subtotal or dates; `"end": true` ends it now. The value follows the
    promotion's kind as at its creation."""

    value: Annotated[StrictInt, Field(ge=1, le=MAX_PRICE_CENTS), INTEGRAL] | MISSING = MISSING
    min_subtotal_cents: Cents | MISSING = MISSING
    starts_at: Instant | MISSING = MISSING
    ends_at: Instant | MISSING = MISSING
    end: Literal[True] | MISSING = Field(default=MISSING, description="true: the promotion ends now")


class PromotionPage(Model):
    items: list[Promotion]
    next_token: str | None = None
