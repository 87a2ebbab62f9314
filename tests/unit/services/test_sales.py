"""Sales by date (issue 13): which order changes count, on which day, once; the admins' reports."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop import errors
from shop.limits import MAX_SALES_DAYS
from shop.models import OrderLine, OrderStatus, OrderSummary
from shop.services.sales import CUTOVER_MARGIN_SECONDS, LegacyMarkerCheck, sales_change
from tests.support.factories import ADMIN, ALICE
from tests.support.memory_store import MemoryStore

LINES = [OrderLine.priced("hammer", "Hammer", 1500, 2), OrderLine.priced("nails", "Nails", 250, 10)]
PLACED = "2026-03-01T23:59:58.000000Z"
CONFIRMED = "2026-03-02T00:00:01.000000Z"  # the next UTC day


def version(status: OrderStatus, number: int, updated_at: str) -> OrderSummary:
    return OrderSummary(
        order_id="o-1",
        customer_id="alice",
        status=status,
        version=number,
        total_cents=5500,
        created_at=PLACED,
        updated_at=updated_at,
    )


def test_a_confirmation_adds_every_line_on_the_confirmation_day():
    change = sales_change(version(OrderStatus.CONFIRMED, 2, CONFIRMED), LINES, "PENDING", CONFIRMED)
    assert change is not None
    assert (change.order_id, change.version, change.day) == ("o-1", 2, "2026-03-02")
    assert [(line.product_id, line.units, line.revenue_cents) for line in change.lines] == [
        ("hammer", 2, 3000),
        ("nails", 10, 2500),
    ]


@pytest.mark.parametrize(
    ("previous", "status"), [("CONFIRMED", OrderStatus.CANCELLED), ("RETURN_REQUESTED", OrderStatus.RETURNED)]
)
def test_a_cancellation_or_a_return_takes_the_sale_back_from_the_confirmation_day(previous, status):
    change = sales_change(version(status, 6, "2026-04-20T10:00:00.000000Z"), LINES, previous, CONFIRMED)
    assert change is not None
    assert change.day == "2026-03-02"
    assert [(line.units, line.revenue_cents) for line in change.lines] == [(-2, -3000), (-10, -2500)]


def test_an_order_confirmed_before_confirmation_times_were_kept_counts_on_its_placement_day():
    change = sales_change(
        version(OrderStatus.RETURNED, 6, "2026-04-20T10:00:00.000000Z"), LINES, "RETURN_REQUESTED", None
    )
    assert change is not None
    assert change.day == "2026-03-01"


@pytest.mark.parametrize(
    ("previous", "status"),
    [
        ("PENDING", OrderStatus.CANCELLED),  # never confirmed: never counted
        ("CONFIRMED", OrderStatus.SHIPPED),
        ("SHIPPED", OrderStatus.DELIVERED),
        ("DELIVERED", OrderStatus.RETURN_REQUESTED),
        ("RETURN_REQUESTED", OrderStatus.DELIVERED),  # a rejected return keeps the sale
        ("CONFIRMED", OrderStatus.CONFIRMED),
    ],
)
def test_other_changes_do_not_count(previous, status):
    assert sales_change(version(status, 3, CONFIRMED), LINES, previous, CONFIRMED) is None


@given(st.permutations(range(4)), st.integers(0, 4))
def test_each_version_counts_once_in_any_order_and_any_replay(order, replays):
    """Confirm, then cancel a second order, each record delivered in any order, some several times."""
    service = MemoryStore().sales_service()
    records = [
        (version(OrderStatus.CONFIRMED, 2, CONFIRMED), "PENDING"),
        (version(OrderStatus.CONFIRMED, 2, CONFIRMED).model_copy(update={"order_id": "o-2"}), "PENDING"),
        (version(OrderStatus.CANCELLED, 3, CONFIRMED).model_copy(update={"order_id": "o-2"}), "CONFIRMED"),
        (version(OrderStatus.SHIPPED, 3, CONFIRMED), "CONFIRMED"),
    ]
    for index in [*order, *order[:replays]]:
        summary, previous = records[index]
        service.record(summary, LINES, previous, CONFIRMED)
    report = service.product_sales(ADMIN, "hammer", "2026-03-02", "2026-03-02")
    assert [(d.units, d.revenue_cents) for d in report.days] == [(2, 3000)]


def test_daily_report_covers_every_day_of_the_range(memory):
    service = memory.sales_service()
    service.record(version(OrderStatus.CONFIRMED, 2, CONFIRMED), LINES, "PENDING", CONFIRMED)
    report = service.product_sales(ADMIN, "hammer", "2026-03-01", "2026-03-04")
    assert report.product_id == "hammer"
    assert [(d.date, d.units, d.revenue_cents) for d in report.days] == [
        ("2026-03-01", 0, 0),
        ("2026-03-02", 2, 3000),
        ("2026-03-03", 0, 0),
        ("2026-03-04", 0, 0),
    ]


def test_the_range_is_at_most_366_days_and_in_order(memory):
    service = memory.sales_service()
    assert len(service.product_sales(ADMIN, "hammer", "2024-01-01", "2024-12-31").days) == MAX_SALES_DAYS
    with pytest.raises(errors.InvalidRequest):
        service.product_sales(ADMIN, "hammer", "2024-01-01", "2025-01-01")
    with pytest.raises(errors.InvalidRequest):
        service.product_sales(ADMIN, "hammer", "2024-01-02", "2024-01-01")
    with pytest.raises(errors.InvalidRequest) as bad:
        service.product_sales(ADMIN, "hammer", "2024-02-30", "2024-03-01")
    assert bad.value.details == {"from": "2024-02-30"}


def test_reports_are_for_admins(memory):
    service = memory.sales_service()
    with pytest.raises(errors.Forbidden):
        service.product_sales(ALICE, "hammer", "2026-03-01", "2026-03-02")
    with pytest.raises(errors.Forbidden):
        service.top(ALICE, "2026-03-02", 10)


def test_top_sellers_most_units_first_then_by_product(memory):
    service = memory.sales_service()
    service.record(version(OrderStatus.CONFIRMED, 2, CONFIRMED), LINES, "PENDING", CONFIRMED)
    other = version(OrderStatus.CONFIRMED, 2, CONFIRMED).model_copy(update={"order_id": "o-2"})
    service.record(
        other, [OrderLine.priced("glue", "Glue", 300, 10), OrderLine.priced("saw", "Saw", 900, 1)], "PENDING", CONFIRMED
    )
    top = service.top(ADMIN, "2026-03-02", 3)
    assert [(t.product_id, t.units, t.revenue_cents) for t in top] == [
        ("glue", 10, 3000),
        ("nails", 10, 2500),
        ("hammer", 2, 3000),
    ]
    assert service.top(ADMIN, "2026-03-03", 3) == []


def test_a_line_that_took_stock_shards_counts_on_the_first_of_them():
    taken = {"hammer": {"21": 1, "07": 1}}
    change = sales_change(version(OrderStatus.CONFIRMED, 2, CONFIRMED), LINES, "PENDING", CONFIRMED, taken)
    assert change is not None
    assert [(line.product_id, line.shard) for line in change.lines] == [("hammer", 7), ("nails", None)]


def test_a_flash_sale_products_counter_shards_add_up_in_its_report(memory):
    service = memory.sales_service()
    taken = {"hammer": {"07": 2}}
    service.record(version(OrderStatus.CONFIRMED, 2, CONFIRMED), LINES, "PENDING", CONFIRMED, taken)
    service.record(version(OrderStatus.CONFIRMED, 2, CONFIRMED), LINES, "PENDING", CONFIRMED, taken)  # a replay
    second = version(OrderStatus.CONFIRMED, 2, CONFIRMED).model_copy(update={"order_id": "o-2"})
    service.record(second, LINES, "PENDING", CONFIRMED)  # a line counted on the base counter
    report = service.product_sales(ADMIN, "hammer", "2026-03-02", "2026-03-02")
    assert [(d.units, d.revenue_cents) for d in report.days] == [(4, 6000)]
    assert memory.state.sales_shards == {("hammer", "2026-03-02", 7)}


# -- the legacy sales markers' check (SALES_LEGACY_MARKERS) ---------------------------------------------------


class Cutover:
    """A SalesCutover double: the cut-over it was given, and how often it was asked."""

    def __init__(self, at: str) -> None:
        self.at, self.asked = at, 0

    def cutover_at(self, now: str) -> str:
        self.asked += 1
        return self.at


CUT = "2026-03-02T10:00:00Z"


def moment(seconds_after_cut: float) -> datetime:
    return datetime.fromisoformat(CUT) + timedelta(seconds=seconds_after_cut)


@pytest.mark.parametrize(
    ("written_after_cut", "checked"),
    [
        (-86_400, True),  # a day before: an older release may have handled it
        (0, True),
        (CUTOVER_MARGIN_SECONDS - 1, True),
        (CUTOVER_MARGIN_SECONDS, False),  # cut-over + margin: no older release ran then
        (30 * 86_400, False),
    ],
)
def test_auto_checks_the_legacy_marker_of_records_written_before_the_cut_over_and_its_margin(
    written_after_cut, checked
):
    cutover = Cutover(CUT)
    now = moment(max(written_after_cut, 0) + 5).isoformat()  # processed seconds after the write
    assert LegacyMarkerCheck("auto", cutover, now=lambda: now).needed(moment(written_after_cut)) is checked
    assert cutover.asked == 1


def test_a_record_stamped_further_ahead_than_the_margin_keeps_the_check():
    """A hand-made or damaged record's time says nothing about which release handled it."""
    rule = LegacyMarkerCheck("auto", Cutover(CUT), now=lambda: moment(2 * CUTOVER_MARGIN_SECONDS).isoformat())
    assert not rule.needed(moment(3 * CUTOVER_MARGIN_SECONDS))  # ahead by the margin exactly: clock skew
    assert rule.needed(moment(3 * CUTOVER_MARGIN_SECONDS + 1))


def test_a_record_of_unknown_time_keeps_the_check_without_reading_the_cut_over():
    cutover = Cutover(CUT)
    assert LegacyMarkerCheck("auto", cutover, now=lambda: CUT).needed(None)
    assert cutover.asked == 0


@pytest.mark.parametrize(("mode", "checked"), [("check", True), ("off", False)])
def test_check_and_off_decide_alone_and_never_read_the_cut_over(mode, checked):
    cutover = Cutover(CUT)
    rule = LegacyMarkerCheck(mode, cutover, now=lambda: CUT)
    assert [rule.needed(at) for at in (None, moment(-86_400), moment(86_400))] == [checked] * 3
    assert cutover.asked == 0


@pytest.mark.parametrize("value", ["", "auto", "check", "off", "Off", "yes"])
def test_the_setting_is_auto_by_default_and_one_of_three(monkeypatch, value):
    from shop.config import ConfigurationError, sales_legacy_markers

    monkeypatch.setenv("SALES_LEGACY_MARKERS", value)
    if value in ("", "auto", "check", "off"):
        assert sales_legacy_markers() == (value or "auto")
    else:
        with pytest.raises(ConfigurationError, match="auto, check or off"):
            sales_legacy_markers()
