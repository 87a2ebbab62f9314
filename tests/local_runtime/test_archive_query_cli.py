"""`make archive-query` without an archive to read says so and exits non-zero, instead of printing no rows."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from local_runtime import archive_query

REPO = pathlib.Path(__file__).resolve().parents[2]
QUERY = "revenue-by-day"


def test_a_missing_archive_dir_is_an_error(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-copy"
    assert archive_query.main(["--name", QUERY, "--archive-dir", str(missing)]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err == f"error: no archive at {missing}: ARCHIVE_DIR must name a copy of the archive bucket\n"


def test_an_archive_dir_without_orders_is_an_error(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "orders" / "year=2025").mkdir(parents=True)  # a copy with the folders but no object
    assert archive_query.main(["--name", QUERY, "--archive-dir", str(tmp_path)]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.startswith(f"error: no archived order in {tmp_path}")
    assert "orders/year=*/month=*/day=*/*.json" in said.err


def test_no_saved_archive_is_an_error(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(archive_query, "LOCAL_BUCKETS", tmp_path / "s3")
    assert archive_query.main(["--name", QUERY]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert f"no archive under {tmp_path / 's3'}" in said.err


def test_make_archive_query_on_an_empty_archive_dir_fails_with_the_message(tmp_path: pathlib.Path) -> None:
    done = subprocess.run(
        ["make", "-s", "-o", "setup", "archive-query", f"NAME={QUERY}", f"ARCHIVE_DIR={tmp_path}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert done.stdout == ""
    assert f"error: no archived order in {tmp_path}" in done.stderr
    assert "Traceback" not in done.stderr
