"""The order's total (shop/services/order_total.py): the contract's invariants over random carts, rates, promotions
and returns (hypothesis), and the cases other shops' trackers record as broken, each by its numbers."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.limits import MAX_ORDER_LINES, MAX_PRICE_CENTS, MAX_QUANTITY
from shop.services.order_total import (
    LineToPrice,
    Promotion,
    PromotionKind,
    ShippingOption,
    Total,
    largest_remainder,
    price,
    refund,
    round_half_up,
    tax_on,
)

RATES = st.none() | st.sampled_from([0, 1, 500, 700, 1900, 2000, 2500, 2700]) | st.integers(0, 10_000)


@st.composite
def lines(draw: st.DrawFn) -> list[LineToPrice]:
    count = draw(st.integers(0, MAX_ORDER_LINES))
    cheap_or_any = st.integers(0, 10_000) | st.integers(0, MAX_PRICE_CENTS)
    return [
        LineToPrice(f"v{n}", draw(cheap_or_any), draw(st.integers(1, MAX_QUANTITY)), draw(st.integers(0, 5_000)))
        for n in range(count)
    ]


@st.composite
def promotions(draw: st.DrawFn) -> list[Promotion]:
    found = []
    for n in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(PromotionKind))
        value = {
            PromotionKind.PERCENT: draw(st.integers(1, 100)),
            PromotionKind.FIXED: draw(st.integers(0, 50_000) | st.integers(0, MAX_PRICE_CENTS)),
            PromotionKind.FREE_SHIPPING: 0,
        }[kind]
        minimum = draw(st.sampled_from([0, 0, 1_000, 10_000, 1_000_000]))
        found.append(Promotion(f"promo-{n}", kind, value, minimum, draw(st.none() | st.just(f"CODE{n}"))))
    return found


shipping_options = st.none() | st.builds(
    ShippingOption,
    option_id=st.just("standard"),
    name=st.just("Standard"),
    price_cents=st.integers(0, 5_000),
    free_over_cents=st.none() | st.integers(0, 100_000),
    max_weight_grams=st.none() | st.integers(0, 100_000),
)


@st.composite
def totals(draw: st.DrawFn) -> Total:
    return price(
        draw(lines()),
        shipping=draw(shipping_options),
        rate_bps=draw(RATES),
        promotions=draw(promotions()),
        prices_include_tax=draw(st.booleans()),
    )


@given(totals())
def test_the_total_is_subtotal_less_discount_plus_shipping_plus_tax_unless_included(total):
    tax = 0 if total.prices_include_tax else total.tax_cents
    assert total.total_cents == total.subtotal_cents - total.discount_cents + total.shipping_cents + tax
    assert total.total_cents >= 0
    assert 0 <= total.discount_cents <= total.subtotal_cents


@given(totals())
def test_the_lines_and_the_shipping_sum_to_the_total(total):
    assert sum(total.paid_for_line(line) for line in total.lines) + total.paid_for_shipping == total.total_cents
    assert sum(line.line_total_cents for line in total.lines) == total.subtotal_cents
    assert sum(line.tax_cents for line in total.lines) + total.shipping_tax_cents == total.tax_cents


@given(totals())
def test_the_discount_shares_sum_to_the_discount_each_within_its_line(total):
    assert sum(line.discount_cents for line in total.lines) == total.discount_cents
    assert all(0 <= line.discount_cents <= line.line_total_cents for line in total.lines)
    # a free-shipping promotion's figure is the shipping it waived, not a share of the lines
    off_lines = [p.discount_cents for p in total.promotions if p.kind is not PromotionKind.FREE_SHIPPING]
    assert sum(off_lines) == total.discount_cents


@given(totals())
def test_each_tax_is_rounded_once_half_up_on_what_is_charged(total):
    rate = total.rate_bps or 0
    for line in total.lines:
        charged = line.line_total_cents - line.discount_cents
        if total.prices_include_tax:
            net = Fraction(charged * 10_000, 10_000 + rate)
            assert line.tax_cents == charged - _half_up(net)
            assert 0 <= line.tax_cents <= charged
        else:
            assert line.tax_cents == _half_up(Fraction(charged * rate, 10_000))


def _half_up(exact: Fraction) -> int:
    floor = exact.numerator // exact.denominator
    return floor + (1 if exact - floor >= Fraction(1, 2) else 0)


@given(st.integers(0, 10**12), st.lists(st.integers(0, 10**9), max_size=30))
def test_largest_remainder_shares_are_the_exact_shares_rounded_and_sum_to_the_amount(amount, weights):
    shares = largest_remainder(amount, weights)
    whole = sum(weights)
    if whole == 0:
        assert shares == [0] * len(weights)
        return
    assert sum(shares) == amount
    for share, weight in zip(shares, weights, strict=True):
        exact = Fraction(amount * weight, whole)
        assert exact - 1 < share < exact + 1


@st.composite
def returns(draw: st.DrawFn) -> tuple[Total, list[dict[str, int]]]:
    """A total and a sequence of returns of some of its units, every unit back when `all_back` is drawn."""
    total = draw(totals())
    left = {line.line_id: line.quantity for line in total.lines}
    parts: list[dict[str, int]] = []
    all_back = draw(st.booleans())
    for _ in range(draw(st.integers(1, 4))):
        part = {line_id: draw(st.integers(0, units)) for line_id, units in left.items() if units}
        part = {line_id: units for line_id, units in part.items() if units}
        if part:
            parts.append(part)
            left = {line_id: units - part.get(line_id, 0) for line_id, units in left.items()}
    if all_back and any(left.values()):
        parts.append({line_id: units for line_id, units in left.items() if units})
    return total, parts


def _refund_all(total: Total, parts: list[dict[str, int]]) -> list[int]:
    before: dict[str, int] = {}
    refunds = []
    for part in parts:
        refunds.append(refund(total, before, part).total_cents)
        before = {line_id: before.get(line_id, 0) + part.get(line_id, 0) for line_id in {*before, *part}}
    return refunds


@given(returns())
def test_the_refunds_sum_to_at_most_what_was_paid_and_to_all_of_it_once_everything_is_back(case):
    total, parts = case
    refunds = _refund_all(total, parts)
    assert all(amount >= 0 for amount in refunds)
    assert sum(refunds) <= total.total_cents
    returned = {}
    for part in parts:
        for line_id, units in part.items():
            returned[line_id] = returned.get(line_id, 0) + units
    if all(returned.get(line.line_id, 0) == line.quantity for line in total.lines) and parts:
        assert sum(refunds) == total.total_cents


@given(returns())
def test_shipping_goes_back_only_with_the_last_unit(case):
    total, parts = case
    before: dict[str, int] = {}
    for index, part in enumerate(parts):
        back = refund(total, before, part)
        before = {line_id: before.get(line_id, 0) + part.get(line_id, 0) for line_id in {*before, *part}}
        last = all(before.get(line.line_id, 0) == line.quantity for line in total.lines)
        assert back.shipping_cents == (total.paid_for_shipping if last else 0), index


# ----- the trackers' cases, by their numbers -----


def _line(line_id: str, cents: int, quantity: int = 1, grams: int = 0) -> LineToPrice:
    return LineToPrice(line_id, cents, quantity, grams)


def test_a_discount_of_a_cent_less_than_even_is_shared_without_a_cent_lost():
    total = price(
        [_line("a", 1000), _line("b", 1000), _line("c", 1000)],
        shipping=None,
        rate_bps=0,
        promotions=[Promotion("ten", PromotionKind.FIXED, 100)],
    )
    assert [line.discount_cents for line in total.lines] == [34, 33, 33]
    assert total.total_cents == 2900


def test_a_fixed_discount_with_tax_included_takes_the_tax_down_with_the_price():
    """EUR 10 off a EUR 119 shirt at 19 % included: the customer pays 109, of which 17.40 is tax (not 19)."""
    total = price(
        [_line("shirt", 11_900)],
        shipping=None,
        rate_bps=1900,
        promotions=[Promotion("ten-off", PromotionKind.FIXED, 1000, code="TEN")],
        prices_include_tax=True,
    )
    assert (total.discount_cents, total.tax_cents, total.total_cents) == (1000, 1740, 10_900)


def test_a_fixed_discount_never_exceeds_the_subtotal_and_later_promotions_get_what_is_left():
    total = price(
        [_line("a", 500)],
        shipping=ShippingOption("std", "Standard", 400),
        rate_bps=2000,
        promotions=[
            Promotion("big", PromotionKind.FIXED, 10_000),
            Promotion("pct", PromotionKind.PERCENT, 10),
        ],
    )
    assert [(p.promotion_id, p.discount_cents) for p in total.promotions] == [("big", 500), ("pct", 0)]
    assert (total.discount_cents, total.shipping_cents, total.tax_cents, total.total_cents) == (500, 400, 80, 480)


def test_tax_rounds_per_line_once_and_the_lines_add_up_to_the_total():
    """Three lines of 3.33 at 7 %: 23.31 cents each rounds to 23; the total is 999 + 69, not 999 + 70."""
    total = price([_line("a", 333), _line("b", 333), _line("c", 333)], shipping=None, rate_bps=700)
    assert [line.tax_cents for line in total.lines] == [23, 23, 23]
    assert (total.tax_cents, total.total_cents) == (69, 1068)


def test_free_shipping_by_threshold_after_the_discount_and_by_promotion():
    option = ShippingOption("std", "Standard", 495, free_over_cents=5000)
    full = price([_line("a", 5000)], shipping=option, rate_bps=0)
    assert full.shipping_cents == 0
    discounted = price(
        [_line("a", 5000)], shipping=option, rate_bps=0, promotions=[Promotion("p", PromotionKind.PERCENT, 10)]
    )
    assert discounted.shipping_cents == 495  # 45.00 of goods after the discount is under the threshold
    waived = price(
        [_line("a", 1000)],
        shipping=option,
        rate_bps=1900,
        promotions=[Promotion("ship", PromotionKind.FREE_SHIPPING, code="SHIPFREE")],
    )
    assert (waived.shipping_cents, waived.shipping_tax_cents) == (0, 0)
    assert [(p.promotion_id, p.discount_cents) for p in waived.promotions] == [("ship", 495)]
    assert waived.discount_cents == 0


def test_shipping_is_taxed_at_the_destinations_rate():
    total = price([_line("a", 1000)], shipping=ShippingOption("std", "Standard", 500), rate_bps=1900)
    assert (total.shipping_tax_cents, total.tax_cents, total.total_cents) == (95, 285, 1785)
    included = price(
        [_line("a", 1190)], shipping=ShippingOption("std", "Standard", 595), rate_bps=1900, prices_include_tax=True
    )
    assert (included.shipping_tax_cents, included.tax_cents, included.total_cents) == (95, 285, 1785)


def test_an_option_too_light_for_the_lines_is_unavailable_and_a_minimum_not_reached_is_named():
    total = price(
        [_line("a", 1000, quantity=3, grams=400)],
        shipping=ShippingOption("letter", "Letter", 200, max_weight_grams=1000),
        rate_bps=0,
        promotions=[Promotion("min", PromotionKind.PERCENT, 10, min_subtotal_cents=5000, code="MIN50")],
    )
    assert total.shipping_available is False
    assert total.not_reached == ("min",)
    assert total.discount_cents == 0


def test_a_three_line_order_returned_in_two_parts_refunds_exactly_what_was_paid():
    total = price(
        [_line("a", 999, quantity=3), _line("b", 1500), _line("c", 250, quantity=2)],
        shipping=ShippingOption("std", "Standard", 495),
        rate_bps=1900,
        promotions=[Promotion("p", PromotionKind.PERCENT, 15, code="SAVE15")],
    )
    first = refund(total, {}, {"a": 2, "c": 1})
    second = refund(total, {"a": 2, "c": 1}, {"a": 1, "b": 1, "c": 1})
    assert first.shipping_cents == 0
    assert second.shipping_cents == total.paid_for_shipping == 589
    assert first.total_cents + second.total_cents == total.total_cents


def test_a_unit_not_bought_cannot_be_returned_nor_two_lines_share_an_id():
    total = price([_line("a", 100, quantity=2)], shipping=None, rate_bps=0)
    with pytest.raises(ValueError, match="cannot be returned after 1"):
        refund(total, {"a": 1}, {"a": 2})
    with pytest.raises(ValueError, match="'b' cannot be returned"):
        refund(total, {}, {"b": 1})
    with pytest.raises(ValueError, match="merge them first"):
        price([_line("a", 100), _line("a", 200)], shipping=None, rate_bps=0)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Promotion("p", PromotionKind.PERCENT, 0), "1 to 100, not 0"),
        (lambda: Promotion("p", PromotionKind.PERCENT, 101), "1 to 100, not 101"),
        (lambda: Promotion("p", PromotionKind.FIXED, -1), "never negative: -1"),
        (lambda: Promotion("p", PromotionKind.FIXED, 100, min_subtotal_cents=-1), "minimum subtotal"),
        (lambda: ShippingOption("s", "S", -1), "shipping price"),
        (lambda: ShippingOption("s", "S", 100, free_over_cents=-1), "free-over"),
        (lambda: ShippingOption("s", "S", 100, max_weight_grams=-1), "weight limit"),
        (lambda: _line("a", -1), "unit price"),
        (lambda: _line("a", 100, quantity=0), "at least one unit, not 0"),
        (lambda: _line("a", 100, grams=-5), "weight is never negative"),
        (lambda: price([_line("a", 100)], shipping=None, rate_bps=-1), "tax rate is never negative"),
    ],
)
def test_an_input_no_schema_admits_is_refused_never_priced(build, message):
    """A negative discount would raise a total, a zero quantity divide a refund by zero: never priced."""
    with pytest.raises(ValueError, match=message):
        build()


def test_a_destination_without_a_rate_is_taxed_nothing_and_says_so():
    total = price([_line("a", 1000)], shipping=ShippingOption("std", "Standard", 500), rate_bps=None)
    assert (total.rate_bps, total.tax_cents, total.total_cents) == (None, 0, 1500)
    assert price([_line("a", 1000)], shipping=None, rate_bps=0).rate_bps == 0  # a rate of 0 is a rate


def test_the_roundings_are_on_integers():
    assert [round_half_up(n, 2) for n in range(6)] == [0, 1, 1, 2, 2, 3]
    assert tax_on(1190, 1900, included=True) == 190
    assert tax_on(1000, 1900, included=False) == 190
    assert tax_on(0, 1900, included=True) == tax_on(0, 1900, included=False) == 0
