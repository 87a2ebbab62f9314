"""`make help` lists every target of the Makefile (every name on its .PHONY lines), one line each, and nothing else."""

from __future__ import annotations

import pathlib
import re
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]


def phony_targets() -> set[str]:
    text = (REPO / "Makefile").read_text().replace("\\\n", " ")
    found = {name for line in re.findall(r"^\.PHONY:(.*)$", text, re.MULTILINE) for name in line.split()}
    assert {"dev", "test", "help"} <= found
    return found


def help_lines() -> list[str]:
    done = subprocess.run(["make", "-s", "help"], cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    assert done.stderr == ""
    return done.stdout.splitlines()


def test_make_help_lists_every_target_once_with_a_description() -> None:
    listed: dict[str, str] = {}
    for line in help_lines():
        if not line.startswith("  "):
            continue  # the heading
        target, _, description = line.strip().partition(" ")
        assert target not in listed, f"{target} listed twice"
        listed[target] = description.strip()
    assert sorted(listed) == sorted(phony_targets())
    assert all(listed.values()), [target for target, description in listed.items() if not description]


def test_make_help_needs_no_setup() -> None:
    """It answers on a fresh clone at once: the rule has no prerequisite (no .venv, no npm ci first)."""
    (rule,) = re.findall(r"^help:(.*)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert rule.strip() == ""
