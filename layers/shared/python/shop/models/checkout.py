"""The checkout's settings: shipping zones with their options, and tax rates by country and subdivision.

An admin PUTs each zone and each country's rate; a quote and a placement read them all at once, as one snapshot
(`CheckoutSettings`) of a version (shop.services.checkout_settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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


PromotionKind = Literal["percent", "fixed", "free_shipping"]


def code_key(code: str) -> str:
    """What codes compare by: case-insensitively."""
    return code.upper()


class Promotion(Model):
    """A discount: by a code the customer gives, or automatic (every order it fits), within its dates."""

    promotion_id: str
    code: str | None = Field(default=None, description="as the admin wrote it; customers' codes match it in any case")
    kind: PromotionKind
    value: int = Field(default=0, description="percent: a whole percent, 1 to 100; fixed: cents; free_shipping: 0")
    min_subtotal_cents: int = Field(default=0, description="the lines' total an order must reach")
    starts_at: Timestamp | None = None
    ends_at: Timestamp | None = Field(default=None, description="the first instant it no longer applies")
    automatic: bool = False
    usage_limit: int | None = Field(default=None, description="uses it has in all; null: no limit")
    per_customer_limit: int | None = Field(default=None, description="uses one customer has; null: no limit")
    use_shards: int = Field(default=0, description="the counters its uses are spread over (0: not counted)")
    used_count: int | None = Field(
        default=None,
        description="in the answers of one promotion: a limited promotion's uses by orders not cancelled, expired or "
        "failed; one without a usage_limit, its confirmed orders less those cancelled since (counted off the "
        "order's path by the stream processor, seconds behind); null in lists",
    )
    created_at: Timestamp
    updated_at: Timestamp

    def allotment(self, shard: int) -> int:
        """The uses counter `shard` may take: its share of the limit (the shares sum to it)."""
        limit = self.usage_limit or 0
        return limit // self.use_shards + (1 if shard < limit % self.use_shards else 0)

    def live_at(self, now: str) -> bool:
        """Whether it applies at `now` (instants as shop.clock writes them compare as text)."""
        return (self.starts_at is None or self.starts_at <= now) and (self.ends_at is None or now < self.ends_at)


@dataclass(frozen=True)
class PromotionUse:
    """A use a placement takes of a limited promotion: on counter `shard` (None: no total limit), within its
    `allotment`, and on the customer's own count within `customer_limit` (None: no per-customer limit)."""

    promotion_id: str
    shard: int | None
    allotment: int
    customer_limit: int | None


@dataclass(frozen=True)
class SettingsCheck:
    """What a placement's transaction checks its snapshot against: copy `shard` still names edit `edit_id` (None:
    the settings were never edited)."""

    shard: int
    edit_id: str | None


@dataclass(frozen=True)
class CheckoutSettings:
    """Every zone and rate as of `version` (0: nothing set yet, the shop charges neither shipping nor tax)."""

    version: int = 0
    edit_id: str | None = None  # the latest edit's unique id (shop.repository.checkout_settings)
    zones: tuple[ShippingZone, ...] = ()
    rates: dict[str, TaxRate] = field(default_factory=dict)
    promotions: tuple[Promotion, ...] = ()  # oldest first

    def zone_for(self, country: str) -> ShippingZone | None:
        """The zone that ships to `country` (a country is in one zone at most)."""
        return next((zone for zone in self.zones if country in zone.countries), None)

    def rate_for(self, country: str, region: str | None) -> int | None:
        """The destination's tax rate in basis points; None when the shop has none for its country."""
        rate = self.rates.get(country)
        return None if rate is None else rate.for_region(region)

    def promotion(self, promotion_id: str) -> Promotion | None:
        return next((promotion for promotion in self.promotions if promotion.promotion_id == promotion_id), None)

    def by_code(self, code: str) -> Promotion | None:
        """The promotion of `code`, in any case."""
        wanted = code_key(code)
        return next((p for p in self.promotions if p.code is not None and code_key(p.code) == wanted), None)

    def automatic_at(self, now: str) -> list[Promotion]:
        """The automatic promotions that apply at `now`, oldest first."""
        return [promotion for promotion in self.promotions if promotion.automatic and promotion.live_at(now)]
