"""The local stack as a child process (`python -m local_runtime dev`): the e2e tests' and the fault drills' rig.

Free ports, its own data directory and process group; how to stop it is the caller's (docs/local-runtime.md).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from local_runtime.template import REPO_ROOT, template_paths

READY_MARK = "local stack ready at "


def templates_only(source: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    """A copy of the synthesized templates without their asset folders: the runtime then loads each
    function from `functions/<name>/` (the source synth packages), so a stale asset cannot hide a change.
    Raises TemplateError when there is nothing synthesized."""
    target.mkdir(parents=True, exist_ok=True)
    for path in template_paths(source):
        shutil.copy2(path, target / path.name)
    return target


def launch(
    data_dir: pathlib.Path,
    log_path: pathlib.Path,
    *,
    cdk_out: pathlib.Path | None = None,
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start the stack on free ports; the process and the log offset where this run's output starts.

    Its own process group: a Ctrl-C in the caller's terminal does not hit it twice, and a caller can
    send SIGINT to the group as a terminal would."""
    cmd = [sys.executable, "-m", "local_runtime", "dev", "--port", "0", "--data-dir", str(data_dir)]
    cmd += [*(["--cdk-out", str(cdk_out)] if cdk_out is not None else []), *options]
    data_dir.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        offset = log.tell()
        log.write(f"\n$ {' '.join(cmd)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    return proc, offset


def output(log_path: pathlib.Path, offset: int) -> str:
    """What the run printed so far."""
    with log_path.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def ready_url(printed: str) -> str | None:
    for line in printed.splitlines():
        if READY_MARK in line:
            return line.split(READY_MARK, 1)[1].split()[0]
    return None


def wait_ready(proc: subprocess.Popen[bytes], log_path: pathlib.Path, offset: int, timeout: float) -> str | None:
    """The stack's URL once it prints it; None when it exits or stays silent for `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        url = ready_url(output(log_path, offset))
        if url:
            return url
        if proc.poll() is not None:
            return None
        time.sleep(0.2)
    return None


# -- the run's processes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    start: int  # clock ticks since boot: tells a live process from a reused pid
    cmdline: str


def read_proc(pid: int) -> Proc | None:
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
        raw = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return Proc(pid, int(fields[1]), fields[0], int(fields[19]), raw.replace(b"\0", b" ").decode(errors="replace"))


def process_table() -> dict[int, Proc]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            proc = read_proc(int(entry))
            if proc is not None:
                table[proc.pid] = proc
    return table


def descendants(root: int) -> list[Proc]:
    """Every process below `root` (zombies included)."""
    children: dict[int, list[Proc]] = {}
    for proc in process_table().values():
        children.setdefault(proc.ppid, []).append(proc)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def still_alive(proc: Proc) -> bool:
    now = read_proc(proc.pid)
    return now is not None and now.start == proc.start and now.state not in ("Z", "X")


def processes_mentioning(text: str) -> list[Proc]:
    return [p for p in process_table().values() if text in p.cmdline and p.pid != os.getpid() and p.state != "Z"]
