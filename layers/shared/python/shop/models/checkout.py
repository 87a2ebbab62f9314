"""The checkout's settings: shipping zones with their options, and tax rates by country and subdivision.

An admin PUTs each zone and each country's rate; a quote and a placement read them all at once, as one snapshot
(`CheckoutSettings`) of a version (shop.services.checkout_settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from shop.models.common import Model, Timestamp


class ShippingOptionSetting(Model):
    option_id: str
    name: str
    price_cents: int = Field(ge=0)
    free_over_cents: int | None = Field(
        default=None, ge=0, description="no shipping charged when the goods, less their discount, reach this"
    )


class ShippingZone(Model):
    zone_id: str
    name: str
    countries: list[str]
    options: list[ShippingOptionSetting]
    updated_at: Timestamp


class TaxRate(Model):
    country: str
    rate_bps: int = Field(ge=0, description="basis points: 1900 is 19 %")
    regions: dict[str, int] = Field(
        default_factory=dict, description="ISO 3166-2 subdivision (US-CA) -> its own rate in basis points"
    )
    updated_at: Timestamp

    def for_region(self, region: str | None) -> int:
        """The destination's rate: its subdivision's own, else the country's."""
        if region is not None and region in self.regions:
            return self.regions[region]
        return self.rate_bps


@dataclass(frozen=True)
class CheckoutSettings:
    """Every zone and rate as of `version` (0: nothing set yet, the shop charges neither shipping nor tax)."""

    version: int = 0
    edit_id: str | None = None  # the latest edit's unique id (shop.repository.checkout_settings)
    zones: tuple[ShippingZone, ...] = ()
    rates: dict[str, TaxRate] = field(default_factory=dict)

    def zone_for(self, country: str) -> ShippingZone | None:
        """The zone that ships to `country` (a country is in one zone at most)."""
        return next((zone for zone in self.zones if country in zone.countries), None)

    def rate_for(self, country: str, region: str | None) -> int | None:
        """The destination's tax rate in basis points; None when the shop has none for its country."""
        rate = self.rates.get(country)
        return None if rate is None else rate.for_region(region)
