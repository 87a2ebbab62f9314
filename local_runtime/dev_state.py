"""The running `dev`'s ports, for the commands that work on it (`make migrate`, `make replay`, `make pay`).

`dev` writes `<data-dir>/stack.json` once everything listens (gateway, DynamoDB Local, the local S3/EventBridge,
localstripe when payments are on) and removes it when it stops. A file whose process is gone (a `make dev` killed
with kill -9) is no stack: the process is told by its pid and its start time, so a reused pid does not count.
"""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import asdict, dataclass

from local_runtime.stack import read_proc

STATE_FILE = "stack.json"


class NoStack(RuntimeError):
    pass


@dataclass(frozen=True)
class RunningDev:
    pid: int
    started: int  # the process's start, in clock ticks since boot
    gateway: str
    dynamodb_port: int
    aws: str
    localstripe: str | None

    @property
    def dynamodb(self) -> str:
        return f"http://127.0.0.1:{self.dynamodb_port}"


def record(
    state_dir: pathlib.Path,
    *,
    gateway: str,
    dynamodb_port: int,
    aws: str,
    localstripe: str | None,
    pid: int | None = None,
) -> RunningDev:
    """Write the stack's ports for this process (or `pid`)."""
    pid = os.getpid() if pid is None else pid
    proc = read_proc(pid)
    running = RunningDev(pid, proc.start if proc else 0, gateway, dynamodb_port, aws, localstripe)
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / STATE_FILE
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(asdict(running), indent=1) + "\n")
    partial.replace(path)
    return running


def running(state_dir: pathlib.Path) -> RunningDev | None:
    """The `dev` running on this data directory, None when none is."""
    try:
        found = RunningDev(**json.loads((state_dir / STATE_FILE).read_text()))
    except (FileNotFoundError, ValueError, TypeError):
        return None
    proc = read_proc(found.pid)
    alive = proc is not None and proc.start == found.started and proc.state not in ("Z", "X")
    return found if alive else None


def forget(state_dir: pathlib.Path) -> None:
    """Remove the file if this process wrote it (a second `dev` that failed to start leaves the first one's)."""
    path = state_dir / STATE_FILE
    try:
        pid = json.loads(path.read_text()).get("pid")
    except (FileNotFoundError, ValueError):
        return
    if pid == os.getpid():
        path.unlink(missing_ok=True)


def no_stack_message(state_dir: pathlib.Path) -> str:
    return (
        f"no `make dev` is running on {state_dir} (its ports are in {STATE_FILE} while it runs): "
        "start `make dev` first, or give DYNAMODB_PORT=<port> (--dynamodb-port, --endpoint)"
    )


def dynamodb_endpoint(state_dir: pathlib.Path) -> str:
    """The running `dev`'s DynamoDB Local; NoStack when none runs."""
    found = running(state_dir)
    if found is None:
        raise NoStack(no_stack_message(state_dir))
    return found.dynamodb


def endpoint_for(endpoint: str | None, port: int | None, state_dir: pathlib.Path) -> str:
    """DynamoDB's endpoint as a command was given it (an endpoint, a port), else the running `dev`'s."""
    if endpoint:
        return endpoint
    if port:
        return f"http://127.0.0.1:{port}"
    return dynamodb_endpoint(state_dir)
