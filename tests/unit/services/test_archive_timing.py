"""When a finished order may be archived (shop.services.archive_timing): its TTL, never sooner than the grace;
which stream records are fresh; the grace setting. The TTL an order's status change sets, and how an archived order
reads: test_orders.py; the archiving itself: test_archival.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shop.limits import DEFAULT_ARCHIVE_GRACE_SECONDS, MAX_ARCHIVE_GRACE_SECONDS, RETURN_WINDOW_DAYS
from shop.models import OrderStatus
from shop.services.archive_timing import DAY_SECONDS, FRESH_RECORD_MARGIN_SECONDS, archive_at, fresh_record


def test_final_statuses_expire_after_the_setting_delivered_after_its_return_window_too():
    at = 1_800_000_000
    assert archive_at(OrderStatus.CANCELLED, at, 365, 0) == at + 365 * DAY_SECONDS
    assert archive_at(OrderStatus.DELIVERED, at, 365, 0) == at + (RETURN_WINDOW_DAYS + 365) * DAY_SECONDS
    assert archive_at(OrderStatus.CANCELLED, at, 0, 0) == at
    for status in (OrderStatus.PENDING, OrderStatus.CONFIRMED, OrderStatus.SHIPPED):
        assert archive_at(status, at, 365, 0) is None
    for name in ("RETURNED",):  # the returns' final status, when the status machine has it
        if name in OrderStatus.__members__:
            assert archive_at(OrderStatus(name), at, 7, 0) == at + 7 * DAY_SECONDS


@pytest.mark.parametrize("status", list(OrderStatus))
@pytest.mark.parametrize("days", [0, 1, 7, 365])
@pytest.mark.parametrize(
    "grace", [0, 1, 3600, DEFAULT_ARCHIVE_GRACE_SECONDS, 3 * DAY_SECONDS, MAX_ARCHIVE_GRACE_SECONDS]
)
def test_no_order_is_archivable_sooner_than_the_grace_after_its_change(status, days, grace):
    """Whatever the status and the days rule: a TTL, when there is one, is at least `grace` after the change,
    and the later of the two rules."""
    at = 1_800_000_000
    ttl = archive_at(status, at, days, grace)
    without = archive_at(status, at, days, 0)
    assert (ttl is None) == (without is None)
    if ttl is not None and without is not None:
        assert ttl >= at + grace
        assert ttl == max(without, at + grace)


def test_a_record_is_fresh_only_while_younger_than_the_grace_less_the_margin():
    written = datetime(2026, 1, 1, tzinfo=UTC)
    grace = DEFAULT_ARCHIVE_GRACE_SECONDS
    limit = grace - FRESH_RECORD_MARGIN_SECONDS
    assert fresh_record(written, written, grace)
    assert fresh_record(written, written + timedelta(seconds=limit - 1), grace)
    assert fresh_record(written, written + timedelta(seconds=limit - 0.001), grace)
    assert not fresh_record(written, written + timedelta(seconds=limit), grace)  # exactly at the boundary: checked
    assert not fresh_record(written, written + timedelta(days=3), grace)  # a replay days later
    assert not fresh_record(None, written, grace)  # the record's time unknown
    assert fresh_record(written, written - timedelta(seconds=5), grace)  # a clock behind DynamoDB's: younger still
    assert not fresh_record(written, written - timedelta(seconds=FRESH_RECORD_MARGIN_SECONDS), grace)  # no skew
    assert not fresh_record(written, written - timedelta(days=365), grace)  # a record stamped a year ahead


@pytest.mark.parametrize("grace", [0, 1, FRESH_RECORD_MARGIN_SECONDS])
def test_a_grace_within_the_margin_makes_no_record_fresh(grace):
    written = datetime(2026, 1, 1, tzinfo=UTC)
    assert not fresh_record(written, written, grace)


def test_the_margin_covers_the_processors_timeout_and_the_slowest_writer():
    """The margin must exceed what can pass between a record's time and its effects' last write (order_events'
    timeout), plus how much earlier than its record a change's TTL can be counted from (a request or a payment
    step within its function's timeout), with room for clock skew."""
    from infra.settings import ALL_FUNCTIONS, STREAM_FUNCTION

    slowest_writer = max(spec.timeout_s for spec in ALL_FUNCTIONS)
    assert STREAM_FUNCTION.timeout_s + slowest_writer + 300 < FRESH_RECORD_MARGIN_SECONDS


@pytest.mark.parametrize("value", ["-1", "1.5", "abc", str(MAX_ARCHIVE_GRACE_SECONDS + 1), "٣"])
def test_the_grace_setting_is_validated_like_archive_after_days(monkeypatch, value):
    from shop.config import ConfigurationError, settings

    monkeypatch.setenv("ARCHIVE_GRACE_SECONDS", value)
    settings.cache_clear()
    with pytest.raises(ConfigurationError, match="ARCHIVE_GRACE_SECONDS must be 0"):
        settings()


def test_the_grace_defaults_to_a_day_and_the_deployment_passes_what_it_is_given(monkeypatch):
    from infra.settings import DeployConfig
    from shop.config import settings

    monkeypatch.delenv("ARCHIVE_GRACE_SECONDS", raising=False)
    settings.cache_clear()
    assert settings().archive_grace_seconds == DEFAULT_ARCHIVE_GRACE_SECONDS == DAY_SECONDS
    assert DeployConfig.from_context({}.get).archive_grace_seconds == DEFAULT_ARCHIVE_GRACE_SECONDS
    assert DeployConfig.from_context({"archive_grace_seconds": "0"}.get).archive_grace_seconds == 0
    with pytest.raises(ValueError, match="context archive_grace_seconds must be 0"):
        DeployConfig.from_context({"archive_grace_seconds": str(MAX_ARCHIVE_GRACE_SECONDS + 1)}.get)
