"""`make -s pay` says what is wrong in one line and exits non-zero: no ORDER, no running `make dev`, payments off.
(The orders that can no longer be paid are tried on a running stack: tests/e2e/test_dev_loop.py.)"""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from local_runtime import cli, dev_state

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_make_pay_without_an_order_prints_its_usage() -> None:
    done = subprocess.run(
        ["make", "-s", "-o", "setup", "pay"], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "usage: make -s pay ORDER=<order id> [CARD=declined]" in done.stderr
    assert "localstripe" not in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_pay_without_an_order_exits_2_with_the_usage(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]):
    assert cli.main(["pay", "--order", " ", "--data-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().startswith("usage: make -s pay ORDER=<order id>")


def test_pay_without_a_running_dev_says_so(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["pay", "--order", "ord-1", "--data-dir", str(tmp_path)]) == 1
    said = capsys.readouterr()
    assert (said.out, said.err.count("\n")) == ("", 1)
    assert "no `make dev` is running" in said.err


def test_pay_on_a_dev_without_payments_says_they_are_off(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev_state.record(
        tmp_path, gateway="http://127.0.0.1:9", dynamodb_port=9, aws="http://127.0.0.1:9", localstripe=None
    )
    assert cli.main(["pay", "--order", "ord-1", "--data-dir", str(tmp_path)]) == 1
    said = capsys.readouterr().err
    assert said.count("\n") == 1
    assert "PAYMENTS=none" in said
