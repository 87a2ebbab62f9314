"""The functions' logs under `make dev`: one file per function in `<state dir>/logs/`, as CloudWatch holds them.

A worker's stderr (Powertools' JSON log lines, EMF metric lines, tracebacks) is appended to
`<state dir>/logs/<function>.log` as it is, so the terminal keeps the banner. `python -m local_runtime logs`
(`make logs`) and `dev -v` follow those files; a person watching gets one readable line per record, a pipe
gets the JSON lines as deployed (docs/local-runtime.md, "Function logs").
"""

from __future__ import annotations

import json
import pathlib
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

LOG_DIR = "logs"
POLL_S = 0.2
# Powertools' own keys, shown in a readable line's head, not repeated among its extra fields.
_HEAD = {"level", "message", "timestamp", "service", "location", "cold_start", "function_name"}
_HIDDEN = {
    "function_arn",
    "function_memory_size",
    "function_request_id",
    "xray_trace_id",
    "sampling_rate",
    "correlation_id",
}


def log_dir(state_dir: pathlib.Path) -> pathlib.Path:
    return state_dir / LOG_DIR


def start_run(state_dir: pathlib.Path, functions: list[str]) -> pathlib.Path:
    """The log directory of a new `dev` run: each function's file emptied (the last run's lines are gone)."""
    directory = log_dir(state_dir)
    directory.mkdir(parents=True, exist_ok=True)
    for name in functions:
        (directory / f"{name}.log").write_bytes(b"")
    return directory


def readable(function: str, line: str) -> str:
    """One record as a person reads it: `time function LEVEL message key=value...`; other lines as they are."""
    try:
        record = json.loads(line)
    except ValueError:
        return f"{'':8} {function:<12} {line}"
    if not isinstance(record, dict):
        return f"{'':8} {function:<12} {line}"
    if "_aws" in record:  # an EMF metrics line: the values, not the definitions
        names = [m["Name"] for d in record["_aws"].get("CloudWatchMetrics", []) for m in d.get("Metrics", [])]
        values = " ".join(f"{name}={_short(record.get(name))}" for name in names)
        return f"{'':8} {function:<12} METRIC  {values}"
    when = str(record.get("timestamp", ""))
    clock = when[11:19] if len(when) >= 19 else when
    extra = " ".join(f"{k}={_short(v)}" for k, v in record.items() if k not in _HEAD and k not in _HIDDEN)
    message = record.get("message", "")
    return f"{clock:8} {function:<12} {record.get('level', '')!s:<7} {message}{'  ' + extra if extra else ''}"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
    if isinstance(value, list) and len(value) == 1:
        text = json.dumps(value[0], default=str)
    return text if len(text) <= 300 else text[:297] + "..."


class Follower:
    """Prints every line appended to the log directory's files from now on (or from their start)."""

    def __init__(
        self,
        directory: pathlib.Path,
        out: IO[str] | None = None,
        *,
        raw: bool | None = None,
        from_start: bool = False,
    ) -> None:
        self.directory = directory
        self.out = out or sys.stdout
        self.raw = (not self.out.isatty()) if raw is None else raw
        self._offsets: dict[pathlib.Path, int] = {}
        self._partial: dict[pathlib.Path, bytes] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if not from_start:
            for path in self._files():
                self._offsets[path] = path.stat().st_size

    def _files(self) -> list[pathlib.Path]:
        return sorted(self.directory.glob("*.log")) if self.directory.is_dir() else []

    def poll(self) -> int:
        """Print what was appended since the last poll; how many lines."""
        printed = 0
        for path in self._files():
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                continue
            offset = self._offsets.get(path, 0)
            if size < offset:  # emptied by a new run
                offset = 0
                self._partial.pop(path, None)
            if size == offset:
                continue
            with path.open("rb") as handle:
                handle.seek(offset)
                chunk = handle.read(size - offset)
            self._offsets[path] = size
            data = self._partial.pop(path, b"") + chunk
            *lines, rest = data.split(b"\n")
            if rest:
                self._partial[path] = rest
            for line in lines:
                text = line.decode(errors="replace")
                if text.strip():
                    self.out.write((text if self.raw else readable(path.stem, text)) + "\n")
                    printed += 1
        if printed:
            self.out.flush()
        return printed

    def run(self, until: Callable[[], bool] | None = None) -> None:
        while not self._stop.wait(POLL_S) and not (until and until()):
            self.poll()
        self.poll()

    def start(self) -> Follower:
        self._thread = threading.Thread(target=self.run, name="function-logs", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
