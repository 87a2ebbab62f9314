"""CATEGORY_MOVE_STEP_PRODUCTS: products a category move's step re-files, 1 to MOVE_STEP_PRODUCTS (issue 23, item 1)."""

from __future__ import annotations

import pytest

from shop.config import ConfigurationError, move_step_products
from shop.limits import MOVE_STEP_PRODUCTS


def test_a_move_step_re_files_a_full_page_unless_told_fewer(monkeypatch):
    monkeypatch.delenv("CATEGORY_MOVE_STEP_PRODUCTS", raising=False)
    assert move_step_products() == MOVE_STEP_PRODUCTS
    monkeypatch.setenv("CATEGORY_MOVE_STEP_PRODUCTS", "5")
    assert move_step_products() == 5


@pytest.mark.parametrize("wrong", ["0", "101", "-1", "five", "2.5", "٣"])
def test_a_step_size_outside_one_to_a_page_stops_the_function(monkeypatch, wrong):
    monkeypatch.setenv("CATEGORY_MOVE_STEP_PRODUCTS", wrong)
    with pytest.raises(ConfigurationError, match="CATEGORY_MOVE_STEP_PRODUCTS"):
        move_step_products()
