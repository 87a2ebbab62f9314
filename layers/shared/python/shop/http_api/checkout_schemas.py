"""Bodies of the checkout's settings and its quote (served by the orders function; docs/decisions.md, 076)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt, field_validator, model_validator

from shop.http_api.countries import CountryCode
from shop.http_api.order_schemas import AddressIn, Lines, SessionRef, ShippingOptionId
from shop.http_api.schemas import INTEGRAL, MISSING, Body, OneOfBody
from shop.limits import (
    MAX_ID_LENGTH,
    MAX_PRICE_CENTS,
    MAX_RATE_BPS,
    MAX_SHIPPING_NAME_LENGTH,
    MAX_TAX_REGIONS,
    MAX_ZONE_COUNTRIES,
    MAX_ZONE_OPTIONS,
)
from shop.models.checkout import ShippingOptionSetting, ShippingZone, TaxRate
from shop.models.common import Model
from shop.models.orders import OrderLine, OrderShipping

__all__ = [
    "OrderShipping",
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


class QuoteFromSession(Body):
    """A quote of a session's cart."""

    session_id: SessionRef
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING


class QuoteIn(OneOfBody):
    """Exactly one of ``session_id`` (quote a session's cart) or ``lines``, plus the address, and the shipping
    option as POST /orders takes them."""

    ALTERNATIVES = (QuoteFromLines, QuoteFromSession)

    session_id: SessionRef | MISSING = MISSING
    lines: Lines | MISSING = MISSING
    shipping_address: AddressIn
    shipping_option_id: ShippingOptionId | MISSING = MISSING

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
