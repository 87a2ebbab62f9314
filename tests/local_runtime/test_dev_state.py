"""`make migrate` and `make replay` find the running `make dev`'s ports in its state file (`<data-dir>/stack.json`),
whatever ports it runs on, and say so clearly when no stack runs; an explicit port still wins."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from local_runtime import cli, dev_state, migrate
from local_runtime.stack import templates_only
from local_runtime.template import TemplateError

REPO = pathlib.Path(__file__).resolve().parents[2]
MIGRATION = "0001-list-version-1-products"


def _exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _record(state_dir: pathlib.Path, *, pid: int | None = None, dynamodb_port: int = 8123) -> None:
    dev_state.record(
        state_dir,
        gateway="http://127.0.0.1:3123",
        dynamodb_port=dynamodb_port,
        aws="http://127.0.0.1:4123",
        localstripe="http://127.0.0.1:5123",
        pid=pid,
    )


def test_the_running_dev_is_found_with_its_ports(tmp_path: pathlib.Path) -> None:
    _record(tmp_path)
    running = dev_state.running(tmp_path)
    assert running is not None
    assert (running.gateway, running.dynamodb_port, running.dynamodb, running.localstripe) == (
        "http://127.0.0.1:3123",
        8123,
        "http://127.0.0.1:8123",
        "http://127.0.0.1:5123",
    )
    assert dev_state.dynamodb_endpoint(tmp_path) == "http://127.0.0.1:8123"

    dev_state.forget(tmp_path)
    assert not (tmp_path / dev_state.STATE_FILE).exists()


def test_a_state_file_left_by_a_dead_dev_is_no_stack(tmp_path: pathlib.Path) -> None:
    _record(tmp_path, pid=_exited_pid())  # e.g. `make dev` killed with kill -9: its file stays
    assert dev_state.running(tmp_path) is None
    with pytest.raises(dev_state.NoStack, match="no `make dev` is running"):
        dev_state.dynamodb_endpoint(tmp_path)


def test_forget_leaves_another_runs_file(tmp_path: pathlib.Path) -> None:
    """A second `make dev` on the same data directory that fails to start must not erase the running one's file."""
    _record(tmp_path, pid=_exited_pid())
    dev_state.forget(tmp_path)
    assert (tmp_path / dev_state.STATE_FILE).exists()


def test_migrate_without_a_port_runs_on_the_running_devs_dynamodb(
    local_store: Any, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = int(local_store.endpoint.rsplit(":", 1)[1])
    assert port != 8000  # the port migrate assumed before it read the running stack's
    _record(tmp_path, dynamodb_port=port)
    args = ["--name", MIGRATION, "--data-dir", str(tmp_path), "--table", local_store.table_name, "--quiet"]
    assert migrate.main([*args, "--dry-run"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["migration"], report["dry_run"], report["failed"]) == (MIGRATION, True, 0)


def test_migrate_and_replay_without_a_running_dev_say_so(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert migrate.main(["--name", MIGRATION, "--data-dir", str(tmp_path), "--quiet"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert "no `make dev` is running" in said.err
    assert "DYNAMODB_PORT=" in said.err

    try:
        cdk_out = templates_only(REPO / "cdk.out", tmp_path / "cdk.out")
    except TemplateError as exc:
        pytest.fail(f"{exc} (make test does)")
    assert cli.main(["replay", "--data-dir", str(tmp_path / "state"), "--cdk-out", str(cdk_out)]) == 2
    said = capsys.readouterr()
    assert "no `make dev` is running" in said.err
    assert "replayed" not in said.out


def test_replay_without_a_port_runs_on_the_running_devs_dynamodb(
    local_store: Any, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        cdk_out = templates_only(REPO / "cdk.out", tmp_path / "cdk.out")
    except TemplateError as exc:
        pytest.fail(f"{exc} (make test does)")
    state = tmp_path / "state"
    _record(state, dynamodb_port=int(local_store.endpoint.rsplit(":", 1)[1]))
    assert cli.main(["replay", "--data-dir", str(state), "--cdk-out", str(cdk_out)]) == 0
    assert capsys.readouterr().out.strip().endswith("0 replayed, 0 failed again")


def _dry_run(target: str, *assignments: str) -> str:
    command = ["make", "-n", "-o", "setup", "-o", "synth", target, *assignments]
    env = {k: v for k, v in os.environ.items() if k != "DYNAMODB_PORT"}
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("target", ["migrate", "replay"])
def test_make_passes_a_dynamodb_port_only_when_one_is_given(target: str) -> None:
    assert "--dynamodb-port" not in _dry_run(target, f"NAME={MIGRATION}")
    assert "--dynamodb-port 8123" in _dry_run(target, f"NAME={MIGRATION}", "DYNAMODB_PORT=8123")
