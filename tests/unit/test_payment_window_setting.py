"""PAYMENT_WINDOW_MINUTES or PAYMENT_WINDOW_SECONDS: how long an unpaid order holds its stock (shop.config)."""

from __future__ import annotations

import pytest

from shop.config import ConfigurationError, payment_settings
from shop.limits import DEFAULT_PAYMENT_WINDOW_MINUTES, MAX_PAYMENT_WINDOW_MINUTES


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("PAYMENT_WINDOW_MINUTES", raising=False)
    monkeypatch.delenv("PAYMENT_WINDOW_SECONDS", raising=False)
    payment_settings.cache_clear()
    yield
    payment_settings.cache_clear()


def test_the_default_window_is_thirty_minutes():
    paying = payment_settings()
    assert paying.payment_window_minutes == DEFAULT_PAYMENT_WINDOW_MINUTES == 30
    assert paying.payment_window_seconds == 30 * 60


def test_a_window_in_minutes_is_that_many_seconds_times_sixty(monkeypatch):
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "1")
    assert (payment_settings().payment_window_minutes, payment_settings().payment_window_seconds) == (1, 60)


def test_a_window_in_seconds_is_taken_as_is_and_its_minutes_rounded_up(monkeypatch):
    monkeypatch.setenv("PAYMENT_WINDOW_SECONDS", "90")
    assert (payment_settings().payment_window_seconds, payment_settings().payment_window_minutes) == (90, 2)


def test_both_settings_at_once_are_refused(monkeypatch):
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "1")
    monkeypatch.setenv("PAYMENT_WINDOW_SECONDS", "10")
    with pytest.raises(ConfigurationError, match="not both"):
        payment_settings()


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "ten", "٣", str(MAX_PAYMENT_WINDOW_MINUTES * 60 + 1)])
def test_a_window_in_seconds_outside_one_second_to_a_day_is_refused(monkeypatch, value):
    monkeypatch.setenv("PAYMENT_WINDOW_SECONDS", value)
    with pytest.raises(ConfigurationError, match=r"PAYMENT_WINDOW_SECONDS must be 1\.\.86400"):
        payment_settings()


def test_a_day_in_seconds_is_the_longest_window(monkeypatch):
    monkeypatch.setenv("PAYMENT_WINDOW_SECONDS", str(MAX_PAYMENT_WINDOW_MINUTES * 60))
    assert payment_settings().payment_window_seconds == 86_400
