"""The code says what it holds; which issue or stop brought it is history, kept in docs/decisions.md. A reader of
layers/, functions/, infra/ or local_runtime/ meets the design, not the project's timeline."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHIPPED = ("layers", "functions", "infra", "local_runtime")
HISTORY = re.compile(r"\b(?:issues?|stops?) \d+\b", re.IGNORECASE)


def test_no_issue_or_stop_numbers_in_the_code() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for folder in SHIPPED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "site-packages" not in path.parts and not path.is_relative_to(ROOT / "layers" / "deps")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if HISTORY.search(line)
    ]
    assert found == []
