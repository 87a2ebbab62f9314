"""`make test` runs pytest-xdist with `--dist loadgroup` so that each `xdist_group` (a local stack, the smoke bench)
runs on one worker and starts what it shares once. Some pytest and pytest-xdist pairs silently stop grouping
(pytest-xdist#1386: under pytest 9.2 the group suffix xdist writes into each nodeid no longer takes effect), and then
every group runs on both workers: nothing fails, the suite only gets slower. This runs the pinned pair on two grouped
tests in two files and checks they share a worker."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

GROUPED = """
import json, os, pathlib
import pytest

@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("n", range(3))
def test_records_its_worker(n):
    pathlib.Path(os.environ["RECORD_DIR"], f"{__name__}-{n}").write_text(json.dumps(os.environ["PYTEST_XDIST_WORKER"]))
"""


def test_loadgroup_runs_a_group_on_one_worker(tmp_path: pathlib.Path) -> None:
    for name in ("test_first.py", "test_second.py"):
        (tmp_path / name).write_text(GROUPED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the project's configuration
    records = tmp_path / "records"
    records.mkdir()
    # Only xdist is loaded (the other installed plugins cost each of the three processes seconds to import).
    env = {**os.environ, "RECORD_DIR": str(records), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    args = ["-p", "xdist", "-p", "no:cacheprovider", "-q", "-n", "2", "--dist", "loadgroup", "--rootdir", str(tmp_path)]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *args, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    workers = {path.name: json.loads(path.read_text()) for path in records.iterdir()}
    assert len(workers) == 6
    assert len(set(workers.values())) == 1, workers


def test_every_infra_file_shares_the_infra_groups_worker() -> None:
    """The infra tests' session fixtures synthesize the app (several seconds each): a file outside the group can
    land on the other worker, which then synthesizes the same app again."""
    infra = pathlib.Path(__file__).resolve().parents[1] / "infra"
    outside = [path.name for path in sorted(infra.glob("test_*.py")) if 'xdist_group("infra")' not in path.read_text()]
    assert outside == []
