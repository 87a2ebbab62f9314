"""The checkout's settings as the rules use them: the admin's edits of zones and rates, the snapshot every quote and
placement prices with, and where an order ships by (docs/decisions.md, 076).

A snapshot is kept by this instance. A quote checks it before use with one strongly consistent read of one of the
latest edit id's copies; a placement checks it in its own transaction (a ConditionCheck on one copy, the way a hot
product's cached price is checked), and prices again from a fresh read when it was edited meanwhile. Either way a
price is never charged after the edit that changed it was answered, no key carries a flash sale's every checkout (a
random copy of 32), and the partition is read again only after an edit.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shop import clock, errors, ids
from shop.limits import (
    CHECKOUT_EDIT_ATTEMPTS,
    CHECKOUT_VERSION_SHARDS,
    MAX_PROMO_USE_SHARDS,
    MAX_PROMOTIONS,
    MAX_SHIPPING_ZONES,
)
from shop.models import Page, ShippingAddress
from shop.models.checkout import (
    CheckoutSettings,
    Promotion,
    PromotionKind,
    SettingsCheck,
    ShippingOptionSetting,
    ShippingZone,
    TaxRate,
)
from shop.services.actor import Actor
from shop.services.ports import CheckoutSettingsStore


def _any_copy() -> int:
    return random.randrange(CHECKOUT_VERSION_SHARDS)


@dataclass(frozen=True)
class Destination:
    """Where an order ships and what it is charged for it: the zone's option it ships by (None: the shop has no
    zones, so it charges no shipping), the options it could ship by, and the destination's tax rate (None: the shop
    has none for its country, tax 0)."""

    country: str
    region: str | None
    zone_id: str | None
    option: ShippingOptionSetting | None
    options: tuple[ShippingOptionSetting, ...]
    rate_bps: int | None


def destination(settings: CheckoutSettings, address: ShippingAddress, option_id: str | None) -> Destination:
    """The destination of `address` under `settings`, shipped by `option_id` or by its zone's first option.

    A shop with no zones ships everywhere at no charge (and `option_id` names nothing); once it has one, a country
    no zone covers, or an option its zone lacks, is ShippingUnavailable (422)."""
    country, region = address.country, address.region
    rate = settings.rate_for(country, region)
    if not settings.zones:
        if option_id is not None:
            raise errors.ShippingUnavailable("the shop has no shipping options", country, option_id)
        return Destination(country, region, None, None, (), rate)
    zone = settings.zone_for(country)
    if zone is None:
        raise errors.ShippingUnavailable(f"the shop does not ship to {country}", country, option_id)
    if option_id is None:
        option = zone.options[0]
    else:
        found = next((option for option in zone.options if option.option_id == option_id), None)
        if found is None:
            raise errors.ShippingUnavailable(f"{option_id!r} does not ship to {country}", country, option_id)
        option = found
    return Destination(country, region, zone.zone_id, option, tuple(zone.options), rate)


class CheckoutSettingsService:
    def __init__(self, store: CheckoutSettingsStore, *, copy: Callable[[], int] = _any_copy) -> None:
        self.store = store
        self._copy = copy
        self._kept = CheckoutSettings()
        self._loaded = False

    def kept(self) -> CheckoutSettings:
        """The snapshot this instance keeps, unchecked (a placement's transaction checks it: `check`); read as
        `current` reads it the first time."""
        if not self._loaded:
            return self.current()
        return self._kept

    def refreshed(self) -> CheckoutSettings:
        """The settings read again (one Query), after a placement's transaction found the kept ones edited since."""
        self._kept = fresh = self.store.snapshot()
        return fresh

    def check(self, settings: CheckoutSettings) -> SettingsCheck:
        """The condition a placement's transaction puts on a random copy of the latest edit's id."""
        return SettingsCheck(self._copy(), settings.edit_id)

    def current(self) -> CheckoutSettings:
        """The settings as of the latest edit: the kept snapshot when one copy of the version names its edit (one
        strongly consistent GetItem), else the partition read again (one Query), then kept."""
        edit_id = self.store.edit_id(self._copy())
        self._loaded = True
        kept = self._kept
        if kept.edit_id == edit_id:
            return kept
        self._kept = fresh = self.store.snapshot()
        return fresh

    def put_zone(
        self, actor: Actor, zone_id: str, *, name: str, countries: list[str], options: list[ShippingOptionSetting]
    ) -> ShippingZone:
        """The zone as given, replacing the one of its id. A country another zone ships to is ShippingCountryTaken;
        a zone beyond MAX_SHIPPING_ZONES is TooManyShippingZones."""
        actor.require_admin()
        zone = ShippingZone(
            zone_id=zone_id, name=name, countries=countries, options=options, updated_at=clock.iso_now()
        )
        for _ in range(CHECKOUT_EDIT_ATTEMPTS):
            settings = self.store.snapshot()
            taken = {
                country: other.zone_id
                for other in settings.zones
                if other.zone_id != zone_id
                for country in other.countries
                if country in countries
            }
            if taken:
                raise errors.ShippingCountryTaken(taken)
            is_new = all(other.zone_id != zone_id for other in settings.zones)
            if is_new and len(settings.zones) >= MAX_SHIPPING_ZONES:
                raise errors.TooManyShippingZones(f"a shop has at most {MAX_SHIPPING_ZONES} shipping zones")
            try:
                self.store.put_zone(zone, read_version=settings.version)
            except errors.VersionMismatch:
                continue
            return zone
        raise errors.ServiceUnavailable("the checkout's settings are being edited, retry")

    def put_rate(self, actor: Actor, country: str, *, rate_bps: int, regions: dict[str, int]) -> TaxRate:
        """The country's tax rate (and its subdivisions' own), replacing what it had."""
        actor.require_admin()
        rate = TaxRate(country=country, rate_bps=rate_bps, regions=regions, updated_at=clock.iso_now())
        for _ in range(CHECKOUT_EDIT_ATTEMPTS):
            settings = self.store.snapshot()
            try:
                self.store.put_rate(rate, read_version=settings.version)
            except errors.VersionMismatch:
                continue
            return rate
        raise errors.ServiceUnavailable("the checkout's settings are being edited, retry")

    def zone_for(self, country: str) -> ShippingZone | None:
        """The zone shipping to `country`, as of the latest edit."""
        return self.current().zone_for(country)

    # -- promotions (decision 077) ------------------------------------------------------------------

    def create_promotion(
        self,
        actor: Actor,
        *,
        kind: PromotionKind,
        value: int,
        code: str | None,
        automatic: bool,
        min_subtotal_cents: int,
        starts_at: str | None,
        ends_at: str | None,
        usage_limit: int | None = None,
        per_customer_limit: int | None = None,
    ) -> Promotion:
        """A new promotion; a usage limit's uses are counted on min(limit, MAX_PROMO_USE_SHARDS) counters. A code another promotion has (in any case) is PromoCodeTaken; beyond MAX_PROMOTIONS,
        TooManyPromotions."""
        actor.require_admin()
        now = clock.iso_now()
        promotion = Promotion(
            promotion_id=ids.new_id(),
            code=code,
            kind=kind,
            value=value,
            min_subtotal_cents=min_subtotal_cents,
            starts_at=starts_at,
            ends_at=ends_at,
            automatic=automatic,
            usage_limit=usage_limit,
            per_customer_limit=per_customer_limit,
            use_shards=min(usage_limit, MAX_PROMO_USE_SHARDS) if usage_limit else 0,
            created_at=now,
            updated_at=now,
        )
        _dates_in_order(promotion)
        return self._put_promotion(lambda _: promotion, new=True)

    def update_promotion(self, actor: Actor, promotion_id: str, changes: dict[str, Any], *, end: bool) -> Promotion:
        """The promotion with `changes` (its value, minimum subtotal and dates); `end` ends it now."""
        actor.require_admin()

        def edited(settings: CheckoutSettings) -> Promotion:
            found = settings.promotion(promotion_id)
            if found is None:
                raise errors.PromotionNotFound("no such promotion", {"promotion_id": promotion_id})
            now = clock.iso_now()
            promotion = found.model_copy(update={**changes, "updated_at": now, **({"ends_at": now} if end else {})})
            _value_fits_kind(promotion)
            _dates_in_order(promotion)
            return promotion

        return self.counted(self._put_promotion(edited, new=False))

    def promotion(self, actor: Actor, promotion_id: str) -> Promotion:
        actor.require_admin()
        found = self.current().promotion(promotion_id)
        if found is None:
            raise errors.PromotionNotFound("no such promotion", {"promotion_id": promotion_id})
        return self.counted(found)

    def free_counters(self, promotion: Promotion) -> list[int]:
        """The counters of a limited promotion that have room left (one consistent read of them all)."""
        used = self.store.uses(promotion)
        return [shard for shard, count in enumerate(used) if count < promotion.allotment(shard)]

    def counted(self, promotion: Promotion) -> Promotion:
        """The promotion with its uses counted: a limited one's uses held (one consistent read of its counters), one
        without a usage limit its confirmed orders less those cancelled since (one read of the stream's counters)."""
        if not promotion.use_shards:
            return promotion.model_copy(update={"used_count": sum(self.store.counts(promotion))})
        return promotion.model_copy(update={"used_count": sum(self.store.uses(promotion))})

    def promotions(self, actor: Actor, *, limit: int, next_token: str | None) -> Page[Promotion]:
        actor.require_admin()
        return self.store.promotions_page(limit=limit, next_token=next_token)

    def _put_promotion(self, build: Callable[[CheckoutSettings], Promotion], *, new: bool) -> Promotion:
        for _ in range(CHECKOUT_EDIT_ATTEMPTS):
            settings = self.store.snapshot()
            promotion = build(settings)
            if new and len(settings.promotions) >= MAX_PROMOTIONS:
                raise errors.TooManyPromotions(f"a shop has at most {MAX_PROMOTIONS} promotions")
            if promotion.code is not None:
                taken = settings.by_code(promotion.code)
                if taken is not None and taken.promotion_id != promotion.promotion_id:
                    raise errors.PromoCodeTaken("another promotion has this code", {"code": promotion.code})
            try:
                self.store.put_promotion(promotion, read_version=settings.version)
            except errors.VersionMismatch:
                continue
            return promotion
        raise errors.ServiceUnavailable("the checkout's settings are being edited, retry")


def _dates_in_order(promotion: Promotion) -> None:
    if promotion.starts_at is not None and promotion.ends_at is not None and promotion.ends_at <= promotion.starts_at:
        raise errors.InvalidRequest("a promotion ends after it starts", {"ends_at": "not after starts_at"})


def _value_fits_kind(promotion: Promotion) -> None:
    """What the create's schema says of the value, checked again after an edit (the kind is stored)."""
    if promotion.kind == "percent" and not 1 <= promotion.value <= 100:
        raise errors.InvalidRequest("a percent promotion takes 1 to 100", {"value": "1 to 100 for percent"})
    if promotion.kind == "fixed" and promotion.value < 1:
        raise errors.InvalidRequest("a fixed promotion takes at least 1 cent", {"value": "at least 1 for fixed"})
    if promotion.kind == "free_shipping" and promotion.value != 0:
        raise errors.InvalidRequest("a free-shipping promotion takes no value", {"value": "none for free_shipping"})


def applying(settings: CheckoutSettings, promo_code: str | None, now: str) -> tuple[list[Promotion], Promotion | None]:
    """The promotions an order at `now` is priced with: the automatic ones that apply, oldest first, then the one of
    `promo_code` (PromoCodeInvalid: no promotion has it, or it does not apply now)."""
    automatic = settings.automatic_at(now)
    if promo_code is None:
        return automatic, None
    found = settings.by_code(promo_code)
    if found is None or found.automatic or not found.live_at(now):
        raise errors.PromoCodeInvalid(promo_code)
    return [*automatic, found], found
