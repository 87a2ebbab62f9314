"""The order's total: what a quote answers and an order stores, and what a return refunds, in integer cents.

One pure function prices a checkout (`price`): the lines, the shipping option, the destination's tax rate, the
promotions that may apply and whether prices include tax. The quote and the placement both call it, so a quote is
what the order stores; Stripe is asked for the result's `total_cents`. `refund` splits what was paid among
returned units. No float anywhere: every rounding is named below, done once, on integers.

The rules (docs/decisions.md, 074):
- `subtotal` is the lines' totals (unit price x quantity), as the catalogue states prices: gross when prices include
  tax, net when they do not.
- Promotions apply in the order given (the caller passes the automatic ones first, then the code's), each only if
  the subtotal reaches its `min_subtotal_cents`: a percent one takes `round_half_up(subtotal * percent / 100)`, a
  fixed one its value, each capped at what the ones before left of the subtotal, so the discount never exceeds it.
  A free-shipping one waives the shipping price.
- The discount is shared among the lines by the largest remainder, in proportion to their totals: every share is the
  exact share rounded down or up, and the shares sum to the discount (never a cent lost or made).
- Shipping is the option's price, nothing when the goods after discount reach its `free_over_cents`, or when a
  free-shipping promotion applies. An option whose `max_weight_grams` the lines exceed is not available.
- Tax is rounded once per line and once for shipping, half up, on what is charged for it (its total less its
  discount share): exclusive, `round_half_up(net * rate_bps / 10000)`; inclusive, the gross less its net
  `round_half_up(gross * 10000 / (10000 + rate_bps))`. Shipping is taxed at the destination's rate. A destination
  the shop has no rate for is taxed 0, and the total says so (`rate_bps` None).
- `total = subtotal - discount + shipping + (tax unless prices include it)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

# The roundings are written once, with the line-total rule, where an order read back derives its taxes too.
from shop.models.pricing import largest_remainder, line_total, round_half_up, tax_on

PERCENT = 100


def _require(holds: bool, what: str) -> None:
    """The inputs' preconditions: the schemas that build them enforce the same, so only a caller's bug fails one."""
    if not holds:
        raise ValueError(what)


class PromotionKind(StrEnum):
    PERCENT = "percent"
    FIXED = "fixed"
    FREE_SHIPPING = "free_shipping"


@dataclass(frozen=True)
class Promotion:
    """What `price` needs of a promotion the caller found eligible by its dates and uses: its kind and value (a
    whole percent from 1 to 100, or cents), its minimum subtotal, and its code (None: automatic)."""

    promotion_id: str
    kind: PromotionKind
    value: int = 0
    min_subtotal_cents: int = 0
    code: str | None = None

    def __post_init__(self) -> None:
        if self.kind is PromotionKind.PERCENT:
            _require(1 <= self.value <= 100, f"a percent promotion takes 1 to 100, not {self.value}")
        else:
            _require(self.value >= 0, f"a promotion's value is never negative: {self.value}")
        _require(self.min_subtotal_cents >= 0, "a minimum subtotal is never negative")


@dataclass(frozen=True)
class ShippingOption:
    option_id: str
    name: str
    price_cents: int
    free_over_cents: int | None = None
    max_weight_grams: int | None = None

    def __post_init__(self) -> None:
        _require(self.price_cents >= 0, "a shipping price is never negative")
        _require(self.free_over_cents is None or self.free_over_cents >= 0, "a free-over threshold is never negative")
        _require(self.max_weight_grams is None or self.max_weight_grams >= 0, "a weight limit is never negative")


@dataclass(frozen=True)
class LineToPrice:
    """A line as the catalogue prices it; `line_id` is what the line is of (a variant)."""

    line_id: str
    unit_price_cents: int
    quantity: int
    weight_grams: int = 0

    def __post_init__(self) -> None:
        _require(self.unit_price_cents >= 0, "a unit price is never negative")
        _require(self.quantity >= 1, f"a line holds at least one unit, not {self.quantity}")
        _require(self.weight_grams >= 0, "a weight is never negative")


# The results are NamedTuples, the inputs dataclasses (they validate): a frozen dataclass costs the orders
# function's import about 0.8 ms to define, a NamedTuple a tenth of it.
class PricedLine(NamedTuple):
    line_id: str
    quantity: int
    unit_price_cents: int
    line_total_cents: int
    discount_cents: int
    tax_cents: int


class AppliedPromotion(NamedTuple):
    promotion_id: str
    kind: PromotionKind
    code: str | None
    discount_cents: int  # off the lines, or the shipping a free-shipping promotion waived


class Total(NamedTuple):
    lines: tuple[PricedLine, ...]
    subtotal_cents: int
    discount_cents: int
    shipping_cents: int
    shipping_tax_cents: int
    tax_cents: int  # the lines' and the shipping's
    total_cents: int
    prices_include_tax: bool
    rate_bps: int | None  # None: the shop has no rate for the destination (tax 0, stated as such)
    shipping_option: ShippingOption | None
    shipping_available: bool  # False: the lines weigh more than the option carries
    promotions: tuple[AppliedPromotion, ...]
    not_reached: tuple[str, ...]  # promotions whose minimum subtotal the lines do not reach

    def paid_for_line(self, line: PricedLine) -> int:
        """What the customer pays for a line: its total less its discount, plus its tax unless included."""
        return line.line_total_cents - line.discount_cents + (0 if self.prices_include_tax else line.tax_cents)

    @property
    def paid_for_shipping(self) -> int:
        return self.shipping_cents + (0 if self.prices_include_tax else self.shipping_tax_cents)


def price(
    lines: Sequence[LineToPrice],
    *,
    shipping: ShippingOption | None,
    rate_bps: int | None,
    promotions: Sequence[Promotion] = (),
    prices_include_tax: bool = False,
) -> Total:
    """The order's total for these lines (see the module's rules). `rate_bps` is the destination's rate, None when
    the shop has none for it (tax 0); `shipping` None charges no shipping. The lines are of distinct `line_id`s (a cart
    holds one line per variant); ValueError otherwise."""
    _require(len({line.line_id for line in lines}) == len(lines), "two lines of one line_id: merge them first")
    _require(rate_bps is None or rate_bps >= 0, f"a tax rate is never negative: {rate_bps}")
    rate = rate_bps or 0
    totals = [line_total(line.unit_price_cents, line.quantity) for line in lines]
    subtotal = sum(totals)
    discount = 0
    free_shipping: list[Promotion] = []
    applied: list[AppliedPromotion] = []
    not_reached: list[str] = []
    for promotion in promotions:
        if subtotal < promotion.min_subtotal_cents:
            not_reached.append(promotion.promotion_id)
            continue
        if promotion.kind is PromotionKind.FREE_SHIPPING:
            free_shipping.append(promotion)
            continue
        if promotion.kind is PromotionKind.PERCENT:
            wanted = round_half_up(subtotal * promotion.value, PERCENT)
        else:
            wanted = promotion.value
        taken = min(wanted, subtotal - discount)
        discount += taken
        applied.append(AppliedPromotion(promotion.promotion_id, promotion.kind, promotion.code, taken))
    shares = largest_remainder(discount, totals)

    shipping_cents = 0
    available = True
    if shipping is not None:
        weight = sum(line.weight_grams * line.quantity for line in lines)
        available = shipping.max_weight_grams is None or weight <= shipping.max_weight_grams
        free_over = shipping.free_over_cents is not None and subtotal - discount >= shipping.free_over_cents
        shipping_cents = 0 if free_over else shipping.price_cents
    for promotion in free_shipping:
        applied.append(AppliedPromotion(promotion.promotion_id, promotion.kind, promotion.code, shipping_cents))
        shipping_cents = 0

    priced = tuple(
        PricedLine(
            line_id=line.line_id,
            quantity=line.quantity,
            unit_price_cents=line.unit_price_cents,
            line_total_cents=total,
            discount_cents=share,
            tax_cents=tax_on(total - share, rate, included=prices_include_tax),
        )
        for line, total, share in zip(lines, totals, shares, strict=True)
    )
    shipping_tax = tax_on(shipping_cents, rate, included=prices_include_tax)
    tax = sum(line.tax_cents for line in priced) + shipping_tax
    return Total(
        lines=priced,
        subtotal_cents=subtotal,
        discount_cents=discount,
        shipping_cents=shipping_cents,
        shipping_tax_cents=shipping_tax,
        tax_cents=tax,
        total_cents=subtotal - discount + shipping_cents + (0 if prices_include_tax else tax),
        prices_include_tax=prices_include_tax,
        rate_bps=rate_bps,
        shipping_option=shipping,
        shipping_available=available,
        promotions=tuple(applied),
        not_reached=tuple(not_reached),
    )


class Refund(NamedTuple):
    lines: dict[str, int]  # line_id -> cents refunded for its units returned now
    shipping_cents: int  # what was paid for shipping, with the return that takes the last unit only
    total_cents: int


def refund(total: Total, returned_before: Mapping[str, int], returning: Mapping[str, int]) -> Refund:
    """What returning `returning` units (line_id -> units) refunds, after `returned_before` were.

    A line's units share what was paid for it by their count, the cumulative share rounded down (`paid * k // q`
    for the first k units), so the refunds of a line's returns sum to what was paid for it when its last unit is
    back, and never more. Shipping goes back with the order's last unit. ValueError for a unit not bought."""
    by_id = {line.line_id: line for line in total.lines}
    refunded: dict[str, int] = {}
    for line_id, units in returning.items():
        line = by_id.get(line_id)
        before = returned_before.get(line_id, 0)
        if line is None or units < 0 or before < 0 or before + units > line.quantity:
            raise ValueError(f"{units} unit(s) of {line_id!r} cannot be returned after {before}")
        paid = total.paid_for_line(line)
        refunded[line_id] = paid * (before + units) // line.quantity - paid * before // line.quantity
    everything_back = all(
        returned_before.get(line.line_id, 0) + returning.get(line.line_id, 0) == line.quantity for line in total.lines
    )
    was_back = all(returned_before.get(line.line_id, 0) == line.quantity for line in total.lines)
    shipping = total.paid_for_shipping if everything_back and not was_back else 0
    return Refund(lines=refunded, shipping_cents=shipping, total_cents=sum(refunded.values()) + shipping)
