"""The templates' schedules (EventBridge rules with a rate), run locally: each invokes its function as EventBridge
does, with a `Scheduled Event` (or the target's constant Input), in the function's own workers.

Deployed, EventBridge invokes the function asynchronously every period; a function error is the function's (its
log, its error metric and alarm), never the caller's. `Scheduler` does the same on `make dev`'s clock: each
schedule runs once per interval (its rate, or `dev --schedule-interval`), the first one interval after the start,
one run at a time; a run that fails is logged (the function's own output, a traceback or the runtime's
timeout line, is in its log file, as in CloudWatch) and the next one comes as planned (docs/local-runtime.md,
"Schedules").
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from local_runtime.template import ACCOUNT_ID, REGION, ScheduleDef

log = logging.getLogger("local_runtime.schedules")

SCHEDULED_EVENT = "Scheduled Event"

# (function name, event) -> the invocation's result: functions.Functions.invoke (an object with `ok` and `payload`)
Invoker = Callable[[str, dict[str, Any]], Any]


def scheduled_event(schedule: ScheduleDef, at: datetime) -> dict[str, Any]:
    """What EventBridge sends the target when the rule's schedule fires (`sam local generate-event cloudwatch
    scheduled-event`'s shape), or the target's constant Input when it has one."""
    if schedule.input is not None:
        return dict(schedule.input) if isinstance(schedule.input, dict) else schedule.input
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": SCHEDULED_EVENT,
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [schedule.arn],
        "detail": {},
    }


@dataclass
class Planned:
    schedule: ScheduleDef
    interval_s: float
    due: float  # on the scheduler's clock
    runs: int = 0
    failures: int = 0


class Scheduler:
    """Runs each runnable schedule every interval on its function (see the module's docstring).

    `interval_s`: every schedule every that many seconds instead of its rate (a shorter local period: `make dev`'s
    SCHEDULE_INTERVAL); None: each at its own rate. `clock` (monotonic seconds), `wall` and `wait` are the tests'
    seams: `run_due()` runs whatever is due by `clock()`, and the thread sleeps with `wait(seconds)` between runs.
    """

    def __init__(
        self,
        schedules: list[ScheduleDef],
        invoke: Invoker,
        *,
        interval_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if interval_s is not None and interval_s <= 0:
            raise ValueError("interval_s must be positive (no schedules: do not start a Scheduler)")
        self.invoke = invoke
        self.clock = clock
        self.wall = wall
        self.skipped = [s for s in schedules if not s.enabled or s.rate_s is None]
        started = clock()
        self.planned = [
            Planned(s, float(interval_s if interval_s is not None else s.rate_s or 0), 0.0)
            for s in schedules
            if s.enabled and s.rate_s is not None
        ]
        for plan in self.planned:
            plan.due = started + plan.interval_s  # EventBridge's first run comes one period after the rule exists
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __bool__(self) -> bool:
        return bool(self.planned)

    def describe(self) -> str:
        """The banner's line: each schedule run, its period here and deployed; the ones not run, and why."""
        parts = [
            f"{p.schedule.function} every {p.interval_s:g}s ({p.schedule.name}: {p.schedule.expression} deployed)"
            for p in self.planned
        ]
        parts += [
            f"{s.function} not run ({s.name}: {s.expression}, {'disabled' if not s.enabled else 'not a rate'})"
            for s in self.skipped
        ]
        return "; ".join(parts) or "none in the templates"

    def run_due(self) -> int:
        """Run every schedule that is due now, once each; how many ran. Never raises for a run that failed."""
        ran = 0
        for plan in self.planned:
            if self._stop.is_set() or self.clock() < plan.due:
                continue
            self._run(plan)
            ran += 1
            # One run at a time: a run longer than the period delays the next, it does not pile runs up.
            plan.due = max(plan.due + plan.interval_s, self.clock())
        return ran

    def _run(self, plan: Planned) -> None:
        plan.runs += 1
        name, function = plan.schedule.name, plan.schedule.function
        try:
            result = self.invoke(function, scheduled_event(plan.schedule, self.wall()))
        except Exception:
            plan.failures += 1
            if not self._stop.is_set():  # at the stop the workers go first: not worth a line
                log.exception("schedule %s: invoking %s failed", name, function)
            return
        if not result.ok:
            plan.failures += 1
            payload = result.payload if isinstance(result.payload, dict) else {}
            log.info(
                "schedule %s: %s failed: %s: %s (its log has the rest)",
                name,
                function,
                payload.get("errorType"),
                payload.get("errorMessage"),
            )
        else:
            log.info("schedule %s: %s -> %s", name, function, result.payload)

    def next_due(self) -> float | None:
        """Seconds until the next run is due (0 when one is), None without schedules."""
        if not self.planned:
            return None
        return max(0.0, min(p.due for p in self.planned) - self.clock())

    def start(self) -> Scheduler:
        self._thread = threading.Thread(target=self._loop, name="scheduler", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop planning runs; a run under way is waited for up to `timeout` (the workers' close ends it after)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            wait = self.next_due()
            if wait is None or self._stop.wait(wait):
                return
            try:
                self.run_due()
            except Exception:  # the scheduler's own bug: logged, and it goes on
                log.exception("scheduler error")
                self._stop.wait(1.0)
