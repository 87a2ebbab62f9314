"""What the local servers' launchers share (DynamoDB Local, localstripe, moto): a child in its own process group that
dies with its parent, stopped as a group, with its log kept for error messages, and stopped at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import weakref
from typing import IO, Any, Protocol


class Stoppable(Protocol):
    def stop(self) -> None: ...


_RUNNING: weakref.WeakSet[Any] = weakref.WeakSet()


def set_pdeathsig() -> None:  # runs in the child between fork and exec: it dies with its parent
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def track(server: Stoppable) -> None:
    """Stop `server` when this process exits, unless it was stopped before."""
    _RUNNING.add(server)


def untrack(server: Stoppable) -> None:
    _RUNNING.discard(server)


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        with contextlib.suppress(Exception):
            server.stop()


def stop_group(proc: subprocess.Popen[Any], timeout: float) -> None:
    """SIGTERM the child's process group, SIGKILL it if it does not exit in `timeout`, and SIGKILL whatever
    it left in its group."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def read_port(proc: subprocess.Popen[str], prefix: str, timeout: float, log: IO[Any] | None) -> int:
    """The port a child reports on its first stdout line (`<prefix><port>`), as soon as it has bound it; RuntimeError
    with its log's tail when it says anything else, exits or stays silent for `timeout` seconds."""
    stdout = proc.stdout
    assert stdout is not None
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    line = found[0] if found else ""
    if not line.startswith(prefix):
        raise RuntimeError(f"{prefix.split(maxsplit=1)[0]} did not start: {line.strip()!r} {log_tail(log)}")
    return int(line[len(prefix) :].strip())


def log_tail(log: IO[Any] | None, limit: int = 2000) -> str:
    """The end of a child's log file (text or bytes) on one line, for an error message."""
    if log is None:
        return ""
    try:
        log.flush()
        log.seek(0)
        content = log.read()
    except (OSError, ValueError):
        return ""
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content)
    return text[-limit:].strip().replace("\n", " | ")


def close_log(log: IO[Any] | None) -> None:
    if log is not None:
        with contextlib.suppress(OSError):
            log.close()
