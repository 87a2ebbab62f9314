"""The templates' schedules run locally (local_runtime.schedules): which rules become schedules, what the function
receives and when, on a fake clock and invoker; then a real worker, whose failed run is in its log and is followed
by the next run."""

from __future__ import annotations

import json
import logging
import pathlib
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local_runtime.functions import Functions
from local_runtime.schedules import Scheduler, scheduled_event
from local_runtime.template import AppModel, ScheduleDef, load_app, rate_seconds
from tests.support.polling import until

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "scheduled"
START = 1000.0
WALL = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def load(root: pathlib.Path) -> AppModel:
    shutil.copytree(FIXTURES / "functions", root / "functions")
    templates = {
        name: json.loads((FIXTURES / f"{name}.template.json").read_text()) for name in ("Scheduled", "Monitoring")
    }
    return load_app(templates=templates, root=root)


@pytest.fixture
def schedules_app(tmp_path: pathlib.Path) -> AppModel:
    return load(tmp_path)


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [
        ("rate(1 minute)", 60),
        ("rate(5 minutes)", 300),
        ("rate(1 hour)", 3600),
        ("rate(2 days)", 172_800),
        ("rate(30 seconds)", 30),
        ("rate( 10 minutes )", 600),
        ("rate(0 minutes)", None),
        ("rate(1 fortnight)", None),
        ("cron(0 3 * * ? *)", None),
        ("", None),
    ],
)
def test_rate_expressions(expression: str, seconds: int | None) -> None:
    assert rate_seconds(expression) == seconds


def test_every_rule_with_a_schedule_targeting_a_function_of_the_app_is_read(schedules_app: AppModel) -> None:
    found = {(s.logical_id, s.function, s.expression, s.enabled, json.dumps(s.input)) for s in schedules_app.schedules}
    assert found == {
        ("PaymentWindowSweepRule", "payment_steps", "rate(1 minute)", True, "null"),
        (
            "HourlyJobRule",
            "payment_steps",
            "rate(1 hour)",
            True,
            '{"job": "hourly"}',
        ),  # through its alias; not the queue
        ("PausedRule", "payment_steps", "rate(5 minutes)", False, "null"),
        ("NightlyRule", "payment_steps", "cron(0 3 * * ? *)", True, "null"),
        ("SweepFromAnotherStackRule", "payment_steps", "rate(2 minutes)", True, "null"),  # its target imported
    }  # OrderPlacedRule matches events: not a schedule
    names = {s.logical_id: s.name for s in schedules_app.schedules}
    assert names["HourlyJobRule"] == "hourly-job"  # its Name
    assert names["PaymentWindowSweepRule"] == "PaymentWindowSweepRule"  # unnamed: its logical id


class FakeClock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@dataclass
class Result:
    ok: bool
    payload: Any


class FakeInvoker:
    """Records each invocation; answers what `answers` holds next (a Result, or an exception to raise), else ok."""

    def __init__(self, clock: FakeClock | None = None, takes: float = 0.0) -> None:
        self.calls: list[tuple[float, str, dict[str, Any]]] = []
        self.answers: list[Result | Exception] = []
        self.clock = clock
        self.takes = takes  # seconds of the fake clock each run lasts

    def __call__(self, function: str, event: dict[str, Any]) -> Result:
        self.calls.append((self.clock() if self.clock else 0.0, function, event))
        if self.clock is not None:
            self.clock.now += self.takes
        answer = self.answers.pop(0) if self.answers else Result(True, {"swept": 0})
        if isinstance(answer, Exception):
            raise answer
        return answer


def sweep(app: AppModel) -> ScheduleDef:
    (schedule,) = [s for s in app.schedules if s.logical_id == "PaymentWindowSweepRule"]
    return schedule


def test_a_schedule_runs_one_period_after_the_start_then_every_period_with_a_scheduled_event(
    schedules_app: AppModel,
) -> None:
    clock, invoker = FakeClock(), FakeInvoker()
    scheduler = Scheduler([sweep(schedules_app)], invoker, clock=clock, wall=lambda: WALL)
    assert scheduler.run_due() == 0  # EventBridge's first run comes one period after the rule
    clock.now = START + 59.9
    assert scheduler.run_due() == 0
    assert scheduler.next_due() == pytest.approx(0.1)
    clock.now = START + 60
    assert scheduler.run_due() == 1
    assert scheduler.run_due() == 0  # once per period
    clock.now = START + 120.5
    assert scheduler.run_due() == 1
    assert scheduler.next_due() == pytest.approx(59.5)  # on the period's beat, not a period after a late run

    (_, function, first), (_, _, second) = invoker.calls
    assert function == "payment_steps"
    assert first == {
        "version": "0",
        "id": first["id"],
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": "2030-01-02T03:04:05Z",
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:000000000000:rule/PaymentWindowSweepRule"],
        "detail": {},
    }
    assert second["id"] != first["id"]  # one event per run
    # the keys the handler reads, as in the sample event the docs name
    sample = json.loads(
        (pathlib.Path(__file__).parents[2] / "events/payment_steps/payment_window_sweep.json").read_text()
    )
    assert {k: first[k] for k in ("detail-type", "source", "detail")} == {
        k: sample[k] for k in ("detail-type", "source", "detail")
    }


def test_a_local_interval_replaces_every_rate(schedules_app: AppModel) -> None:
    clock, invoker = FakeClock(), FakeInvoker()
    runnable = [s for s in schedules_app.schedules if s.enabled and s.rate_s]
    scheduler = Scheduler(runnable, invoker, interval_s=2.5, clock=clock)
    for step in range(1, 5):
        clock.now = START + 2.5 * step
        assert scheduler.run_due() == len(runnable)
    assert len(invoker.calls) == 4 * len(runnable) == 12


def test_each_schedule_keeps_its_own_rate(schedules_app: AppModel) -> None:
    clock = FakeClock()
    runnable = [s for s in schedules_app.schedules if s.enabled and s.rate_s]
    scheduler = Scheduler(runnable, FakeInvoker(), clock=clock)
    while clock.now < START + 3600:  # an hour, from one due run to the next
        clock.now += scheduler.next_due() or 0.0
        scheduler.run_due()
    ran = {plan.schedule.logical_id: plan.runs for plan in scheduler.planned}
    assert ran == {"PaymentWindowSweepRule": 60, "HourlyJobRule": 1, "SweepFromAnotherStackRule": 30}


def test_a_targets_constant_input_is_sent_instead_of_the_event(schedules_app: AppModel) -> None:
    (hourly,) = [s for s in schedules_app.schedules if s.logical_id == "HourlyJobRule"]
    assert scheduled_event(hourly, WALL) == {"job": "hourly"}


def test_disabled_and_cron_rules_are_named_in_the_banner_and_never_run(schedules_app: AppModel) -> None:
    clock, invoker = FakeClock(), FakeInvoker()
    scheduler = Scheduler(schedules_app.schedules, invoker, interval_s=10, clock=clock)
    assert scheduler.describe() == (
        "payment_steps every 10s (PaymentWindowSweepRule: rate(1 minute) deployed); "
        "payment_steps every 10s (hourly-job: rate(1 hour) deployed); "
        "payment_steps every 10s (SweepFromAnotherStackRule: rate(2 minutes) deployed); "
        "payment_steps not run (PausedRule: rate(5 minutes), disabled); "
        "payment_steps not run (nightly: cron(0 3 * * ? *), not a rate)"
    )
    clock.now = START + 1000
    scheduler.run_due()
    assert {event.get("resources", ["input"])[0].rsplit("/", 1)[-1] for _, _, event in invoker.calls} == {
        "PaymentWindowSweepRule",
        "input",  # hourly-job's constant Input
        "SweepFromAnotherStackRule",
    }
    assert Scheduler([], invoker).describe() == "none in the templates"
    assert not Scheduler([s for s in schedules_app.schedules if not s.enabled], invoker)  # nothing to start


def test_a_failed_run_is_logged_and_the_next_comes_as_planned(
    schedules_app: AppModel, caplog: pytest.LogCaptureFixture
) -> None:
    clock, invoker = FakeClock(), FakeInvoker()
    invoker.answers = [
        Result(False, {"errorType": "ServiceUnavailable", "errorMessage": "the sweep left 2 orders to the next run"}),
        RuntimeError("function pool is closed"),
    ]
    scheduler = Scheduler([sweep(schedules_app)], invoker, interval_s=1, clock=clock)
    with caplog.at_level(logging.INFO, logger="local_runtime.schedules"):
        for step in (1, 2, 3):
            clock.now = START + step
            assert scheduler.run_due() == 1
    (plan,) = scheduler.planned
    assert (plan.runs, plan.failures) == (3, 2)
    text = caplog.text
    assert "payment_steps failed: ServiceUnavailable: the sweep left 2 orders to the next run" in text
    assert "invoking payment_steps failed" in text
    assert "RuntimeError: function pool is closed" in text
    assert "-> {'swept': 0}" in text  # the third run


def test_a_run_longer_than_the_period_delays_the_next_one_instead_of_piling_runs_up(schedules_app: AppModel) -> None:
    clock = FakeClock()
    invoker = FakeInvoker(clock, takes=3.5)  # every run lasts 3.5 s of a 1 s period
    scheduler = Scheduler([sweep(schedules_app)], invoker, interval_s=1, clock=clock)
    clock.now = START + 1
    for _ in range(3):
        assert scheduler.run_due() == 1
    assert [round(at - START, 1) for at, _, _ in invoker.calls] == [1.0, 4.5, 8.0]


def test_a_zero_or_negative_interval_is_refused(schedules_app: AppModel) -> None:
    with pytest.raises(ValueError, match="positive"):
        Scheduler([sweep(schedules_app)], FakeInvoker(), interval_s=0)


def test_the_scheduler_invokes_the_function_in_its_worker_and_a_failed_run_lands_in_its_log(
    schedules_app: AppModel, tmp_path: pathlib.Path
) -> None:
    code = schedules_app.functions["payment_steps"].code_dir
    (code / "fail").touch()  # the first run fails
    logs = tmp_path / "logs"
    logs.mkdir()
    functions = Functions(
        schedules_app, table_name="shop-local", endpoint="http://127.0.0.1:9", state_dir=tmp_path, log_dir=logs
    )
    scheduler = Scheduler([sweep(schedules_app)], functions.invoke, interval_s=0.2).start()
    try:
        lines = until(
            lambda: (
                (events := code / "events.jsonl").exists()
                and len(found := events.read_text().splitlines()) >= 3
                and found
            ),
            "three runs",
        )
    finally:
        scheduler.stop()
        functions.close()
    events = [json.loads(line) for line in lines]
    assert {e["detail-type"] for e in events} == {"Scheduled Event"}
    assert len({e["id"] for e in events}) == len(events)
    assert not (code / "fail").exists()
    (plan,) = scheduler.planned
    assert plan.failures == 1
    assert plan.runs >= 3
    log = (logs / "payment_steps.log").read_text()
    assert "RuntimeError: the sweep left 1 orders to the next run" in log  # its traceback, as CloudWatch holds it
    assert datetime.strptime(events[0]["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) > datetime.now(
        UTC
    ) - timedelta(minutes=5)
