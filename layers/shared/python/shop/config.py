"""Settings from the function's environment, read once and on first use."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

# The defaults (what a function run without the variable assumes) and bounds: one source, shop.limits.
from shop.limits import (
    CAPTURE_MODES,
    DEFAULT_ARCHIVE_AFTER_DAYS,
    DEFAULT_ARCHIVE_GRACE_SECONDS,
    DEFAULT_AUTHORISATION_WARN_DAYS,
    DEFAULT_CAPTURE,
    DEFAULT_CART_TTL_SECONDS,
    DEFAULT_CURRENCY,
    DEFAULT_HOT_PRODUCT_CACHE_SECONDS,
    DEFAULT_IDEMPOTENCY_TTL_SECONDS,
    DEFAULT_MAX_UNPAID_ORDERS,
    DEFAULT_MAX_UNPAID_UNITS,
    DEFAULT_PAYMENT_WINDOW_MINUTES,
    DEFAULT_PAYMENTS,
    DEFAULT_SESSION_TTL_SECONDS,
    DEFAULT_STATUS_SHARDS,
    MAX_ARCHIVE_AFTER_DAYS,
    MAX_ARCHIVE_GRACE_SECONDS,
    MAX_AUTHORISATION_WARN_DAYS,
    MAX_HOT_PRODUCT_CACHE_SECONDS,
    MAX_PAYMENT_WINDOW_MINUTES,
    MAX_STATUS_SHARDS,
    MAX_UNPAID_LIMIT,
    MOVE_STEP_PRODUCTS,
    PAYMENT_PROVIDERS,
)


class ConfigurationError(RuntimeError):
    pass


@dataclass(frozen=True)
class Settings:
    table_name: str
    status_shards: int  # the status index's shard count (STATUS_SHARDS)
    pagination_secret: bytes | None  # a literal key, used only without the ARN: local runs, tests
    pagination_secret_arn: str | None  # deployed: read at run time (shop.pagination_keys); only functions that paginate
    session_ttl_seconds: int
    idempotency_ttl_seconds: int
    cart_ttl_seconds: int
    event_bus_name: str | None
    archive_after_days: int  # a finished order's TTL: this many days after it finished (shop.services.archival)
    # A finished order is archivable no sooner than this after the change that finished it (ARCHIVE_GRACE_SECONDS)
    archive_grace_seconds: int
    archive_bucket: str | None  # where archived orders are (orders function: read; order_events: write)
    hot_product_cache_seconds: float  # shop.services.hot_products: a flash-sale product's reads kept this long
    # The status index's shard-count switch (migration 0002; docs/operations.md, "Changing the status
    # index's shard count"): with STATUS_SHARDS_NEXT set, readers read both counts; with STATUS_SHARDS_WRITERS=next,
    # writers index under the next count too.
    status_shards_next: int | None = None
    status_shards_writers_on_next: bool = False
    # PRICES_INCLUDE_TAX: true when the catalogue's prices include tax (a total adds none), false when tax is added
    prices_include_tax: bool = False

    @property
    def status_switch(self) -> StatusShardSwitch:
        return StatusShardSwitch(self.status_shards, self.status_shards_next, self.status_shards_writers_on_next)


@dataclass(frozen=True)
class StatusShardSwitch:
    """The status index's shard counts: `current`, and during a switch `next` (readers read both)."""

    current: int
    next: int | None = None
    writers_on_next: bool = False

    @property
    def writes(self) -> int:
        """The count new and changed orders are indexed under."""
        return self.next if self.next is not None and self.writers_on_next else self.current


def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ConfigurationError(f"environment variable {name} is not set")
    return value


def _status_shards() -> int:
    text = os.environ.get("STATUS_SHARDS") or str(DEFAULT_STATUS_SHARDS)
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_STATUS_SHARDS:
        raise ConfigurationError(f"STATUS_SHARDS must be 1..{MAX_STATUS_SHARDS}, got {text!r}")
    return int(text)


def _status_shards_next(current: int) -> int | None:
    text = os.environ.get("STATUS_SHARDS_NEXT") or ""
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_STATUS_SHARDS:
        raise ConfigurationError(f"STATUS_SHARDS_NEXT must be 1..{MAX_STATUS_SHARDS}, got {text!r}")
    next_count = int(text)
    # One count must divide the other: the shards orders leave and the shards they enter are then apart,
    # which is what lets a reader see every order while the migration moves them (docs/decisions.md).
    if next_count == current or (next_count % current and current % next_count):
        raise ConfigurationError(
            f"STATUS_SHARDS_NEXT ({next_count}) must differ from STATUS_SHARDS ({current}) and one must divide the other"
        )
    return next_count


def _status_shards_writers_on_next(next_count: int | None) -> bool:
    text = os.environ.get("STATUS_SHARDS_WRITERS") or "current"
    if text not in ("current", "next"):
        raise ConfigurationError(f"STATUS_SHARDS_WRITERS must be current or next, got {text!r}")
    if text == "next" and next_count is None:
        raise ConfigurationError("STATUS_SHARDS_WRITERS=next needs STATUS_SHARDS_NEXT")
    return text == "next"


def _archive_after_days() -> int:
    text = os.environ.get("ARCHIVE_AFTER_DAYS") or str(DEFAULT_ARCHIVE_AFTER_DAYS)
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_ARCHIVE_AFTER_DAYS:
        raise ConfigurationError(f"ARCHIVE_AFTER_DAYS must be 0..{MAX_ARCHIVE_AFTER_DAYS}, got {text!r}")
    return int(text)


def _archive_grace_seconds() -> int:
    text = os.environ.get("ARCHIVE_GRACE_SECONDS") or str(DEFAULT_ARCHIVE_GRACE_SECONDS)
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_ARCHIVE_GRACE_SECONDS:
        raise ConfigurationError(f"ARCHIVE_GRACE_SECONDS must be 0..{MAX_ARCHIVE_GRACE_SECONDS}, got {text!r}")
    return int(text)


def _prices_include_tax() -> bool:
    text = os.environ.get("PRICES_INCLUDE_TAX") or "false"
    if text not in ("true", "false"):
        raise ConfigurationError(f"PRICES_INCLUDE_TAX must be true or false, got {text!r}")
    return text == "true"


def _hot_product_cache_seconds() -> float:
    text = os.environ.get("HOT_PRODUCT_CACHE_SECONDS") or str(DEFAULT_HOT_PRODUCT_CACHE_SECONDS)
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_HOT_PRODUCT_CACHE_SECONDS:
        raise ConfigurationError(
            f"HOT_PRODUCT_CACHE_SECONDS must be 0..{MAX_HOT_PRODUCT_CACHE_SECONDS:g}, got {text!r}"
        )
    return seconds


@cache
def settings() -> Settings:
    arn = os.environ.get("PAGINATION_SECRET_ARN") or None
    literal = None if arn else os.environ.get("PAGINATION_SECRET") or None
    shards = _status_shards()
    next_shards = _status_shards_next(shards)
    return Settings(
        table_name=_required("TABLE_NAME"),
        status_shards=shards,
        pagination_secret=literal.encode() if literal else None,
        pagination_secret_arn=arn,
        session_ttl_seconds=int(os.environ.get("SESSION_TTL_SECONDS", str(DEFAULT_SESSION_TTL_SECONDS))),
        idempotency_ttl_seconds=int(os.environ.get("IDEMPOTENCY_TTL_SECONDS", str(DEFAULT_IDEMPOTENCY_TTL_SECONDS))),
        cart_ttl_seconds=int(os.environ.get("CART_TTL_SECONDS", str(DEFAULT_CART_TTL_SECONDS))),
        event_bus_name=os.environ.get("EVENT_BUS_NAME") or None,
        archive_after_days=_archive_after_days(),
        archive_grace_seconds=_archive_grace_seconds(),
        archive_bucket=os.environ.get("ARCHIVE_BUCKET") or None,
        hot_product_cache_seconds=_hot_product_cache_seconds(),
        status_shards_next=next_shards,
        status_shards_writers_on_next=_status_shards_writers_on_next(next_shards),
        prices_include_tax=_prices_include_tax(),
    )


def move_step_products() -> int:
    """Products one step of a category move re-files: MOVE_STEP_PRODUCTS, or fewer with
    CATEGORY_MOVE_STEP_PRODUCTS (a local or test run that wants a move of a few products to take many steps)."""
    text = os.environ.get("CATEGORY_MOVE_STEP_PRODUCTS") or str(MOVE_STEP_PRODUCTS)
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MOVE_STEP_PRODUCTS:
        raise ConfigurationError(f"CATEGORY_MOVE_STEP_PRODUCTS must be 1..{MOVE_STEP_PRODUCTS}, got {text!r}")
    return int(text)


SALES_LEGACY_MODES = ("auto", "check", "off")


def sales_legacy_markers() -> str:
    """When a sales count also checks the version's sales marker of older releases, which kept one per version
    (SALES_LEGACY_MARKERS). Such a release may have counted a version and died before its history entry: the
    check keeps a redelivery or a replay of that record from counting it again. `auto` (the default): only for
    records written before the table's cut-over (shop.services.sales.LegacyMarkerCheck); `check`: always; `off`:
    never (docs/operations.md, "Sales markers")."""
    text = os.environ.get("SALES_LEGACY_MARKERS") or "auto"
    if text not in SALES_LEGACY_MODES:
        raise ConfigurationError(f"SALES_LEGACY_MARKERS must be auto, check or off, got {text!r}")
    return text


# -- payments: read apart from settings(), so a function that takes no payment never needs them --


@dataclass(frozen=True)
class PaymentSettings:
    provider: str  # PAYMENTS: "none" (version 2's flow, the default) or "stripe"
    stripe_api_base: str | None  # STRIPE_API_BASE: localstripe's address locally; unset on AWS (api.stripe.com)
    stripe_secret_key: str | None  # STRIPE_SECRET_KEY: a literal test key, local runs and tests only
    stripe_webhook_secret: str | None  # STRIPE_WEBHOOK_SECRET: the endpoint's signing secret, local only
    # Deployed: the Secrets Manager secret holding {"secret_key", "webhook_secret"} (shop.payment_secrets), read
    # on first use by the functions that call Stripe; the literal values above are then ignored.
    stripe_secret_arn: str | None = None  # STRIPE_SECRET_ARN
    currency: str = DEFAULT_CURRENCY  # SHOP_CURRENCY: ISO 4217, lower case
    payment_window_minutes: int = DEFAULT_PAYMENT_WINDOW_MINUTES  # PAYMENT_WINDOW_MINUTES
    # The window in seconds, what the placement adds to its clock: PAYMENT_WINDOW_MINUTES x 60, or
    # PAYMENT_WINDOW_SECONDS when set instead (a window under a minute: a demo, an e2e test of expiry).
    payment_window_seconds: int = DEFAULT_PAYMENT_WINDOW_MINUTES * 60
    capture: str = DEFAULT_CAPTURE  # CAPTURE: on_ship (manual capture at SHIPPED) or on_confirm
    authorisation_warn_days: int = DEFAULT_AUTHORISATION_WARN_DAYS  # AUTHORISATION_WARN_DAYS
    max_unpaid_orders: int = DEFAULT_MAX_UNPAID_ORDERS  # MAX_UNPAID_ORDERS: PENDING_PAYMENT orders per customer
    max_unpaid_units: int = DEFAULT_MAX_UNPAID_UNITS  # MAX_UNPAID_UNITS: units those orders hold, per customer

    @property
    def captures_on_confirm(self) -> bool:
        return self.capture == "on_confirm"

    @property
    def enabled(self) -> bool:
        return self.provider != "none"


@cache
def payment_settings() -> PaymentSettings:
    provider = os.environ.get("PAYMENTS") or DEFAULT_PAYMENTS
    if provider not in PAYMENT_PROVIDERS:
        raise ConfigurationError(f"PAYMENTS must be one of {', '.join(PAYMENT_PROVIDERS)}, got {provider!r}")
    currency = os.environ.get("SHOP_CURRENCY") or DEFAULT_CURRENCY
    if not (len(currency) == 3 and currency.isascii() and currency.isalpha() and currency.islower()):
        raise ConfigurationError(f"SHOP_CURRENCY must be an ISO 4217 code in lower case, got {currency!r}")
    minutes, seconds = os.environ.get("PAYMENT_WINDOW_MINUTES"), os.environ.get("PAYMENT_WINDOW_SECONDS")
    if minutes and seconds:
        raise ConfigurationError("set PAYMENT_WINDOW_MINUTES or PAYMENT_WINDOW_SECONDS, not both")
    window = minutes or str(DEFAULT_PAYMENT_WINDOW_MINUTES)
    if not (window.isascii() and window.isdigit()) or not 1 <= int(window) <= MAX_PAYMENT_WINDOW_MINUTES:
        raise ConfigurationError(f"PAYMENT_WINDOW_MINUTES must be 1..{MAX_PAYMENT_WINDOW_MINUTES}, got {window!r}")
    window_s = int(window) * 60
    if seconds:
        most = MAX_PAYMENT_WINDOW_MINUTES * 60
        if not (seconds.isascii() and seconds.isdigit()) or not 1 <= int(seconds) <= most:
            raise ConfigurationError(f"PAYMENT_WINDOW_SECONDS must be 1..{most}, got {seconds!r}")
        window_s = int(seconds)
    capture = os.environ.get("CAPTURE") or DEFAULT_CAPTURE
    if capture not in CAPTURE_MODES:
        raise ConfigurationError(f"CAPTURE must be one of {', '.join(CAPTURE_MODES)}, got {capture!r}")
    return PaymentSettings(
        provider=provider,
        stripe_api_base=os.environ.get("STRIPE_API_BASE") or None,
        stripe_secret_key=os.environ.get("STRIPE_SECRET_KEY") or None,
        stripe_webhook_secret=os.environ.get("STRIPE_WEBHOOK_SECRET") or None,
        stripe_secret_arn=os.environ.get("STRIPE_SECRET_ARN") or None,
        currency=currency,
        payment_window_minutes=-(-window_s // 60),  # whole minutes, rounded up (a seconds window: at least 1)
        payment_window_seconds=window_s,
        capture=capture,
        authorisation_warn_days=_bounded_int(
            "AUTHORISATION_WARN_DAYS", DEFAULT_AUTHORISATION_WARN_DAYS, 1, MAX_AUTHORISATION_WARN_DAYS
        ),
        max_unpaid_orders=_bounded_int("MAX_UNPAID_ORDERS", DEFAULT_MAX_UNPAID_ORDERS, 1, MAX_UNPAID_LIMIT),
        max_unpaid_units=_bounded_int("MAX_UNPAID_UNITS", DEFAULT_MAX_UNPAID_UNITS, 1, MAX_UNPAID_LIMIT),
    )


def _bounded_int(name: str, default: int, low: int, high: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        raise ConfigurationError(f"{name} must be {low}..{high}, got {text!r}")
    return int(text)
