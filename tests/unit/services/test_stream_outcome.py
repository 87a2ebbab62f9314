"""What the stream processor's rules answer about one record (shop.services.stream_outcome): a frozen outcome whose
action's value is the log line the order_events function writes for it. The rules that answer them:
test_order_events.py, test_product_events.py, test_category_moves.py, test_archival.py."""

from __future__ import annotations

import dataclasses

import pytest

from shop.services.stream_outcome import SKIPPED, Action, Outcome


def test_skipped_writes_and_sends_nothing():
    assert SKIPPED.action is Action.SKIPPED
    assert Outcome(Action.SKIPPED) == SKIPPED
    assert (SKIPPED.history_written, SKIPPED.sales_counted, SKIPPED.alert_written, SKIPPED.events) == (
        False,
        False,
        False,
        (),
    )


def test_an_outcome_cannot_change_once_answered():
    outcome = Outcome(Action.CONFIRMED, "o-1", "CONFIRMED", history_written=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.history_written = False


def test_each_action_logs_as_its_own_lower_case_name():
    assert [action.value for action in Action] == [action.name.lower() for action in Action]
    assert len({action.value for action in Action}) == len(Action)
