"""Every sample event in events/<function>/ answers the status its file name promises."""

from __future__ import annotations

import json
import re

import pytest

from tests.functions.apigw import REPO, invoke

API_FUNCTIONS = ("customers", "products", "orders", "sessions")
EVENT_FILES = sorted(path for name in API_FUNCTIONS for path in (REPO / "events" / name).glob("*.json"))
STATUS = re.compile(r"_(\d{3})\.json$")


def test_every_function_has_sample_events():
    folders = {path.parent.name for path in EVENT_FILES}
    assert {"customers", "products", "orders", "sessions"} <= folders
    assert all(STATUS.search(path.name) for path in EVENT_FILES)


@pytest.mark.parametrize("path", EVENT_FILES, ids=[f"{p.parent.name}/{p.stem}" for p in EVENT_FILES])
def test_sample_event(moto_api, path):
    expected = int(STATUS.search(path.name).group(1))  # type: ignore[union-attr]
    event = json.loads(path.read_text())
    assert event["version"] == "2.0"
    reply = invoke(path.parent.name, event)
    assert reply.status == expected, reply.body
    if expected >= 400:
        assert set(reply.body) == {"error"}
        assert re.fullmatch(r"[A-Z_]+", reply.body["error"]["code"])
        assert "Traceback" not in json.dumps(reply.body)


@pytest.mark.parametrize("function", API_FUNCTIONS)
def test_every_sample_event_in_sequence_on_one_table(moto_api, function):
    """As `for e in events/orders/*.json; do sam local invoke ... -e $e; done` runs them on one stage: no event
    depends on another not having run (each POST /orders has its own Idempotency-Key, issue 27)."""
    from tests.functions.generate_events import SAMPLES

    answered = []
    for name in SAMPLES[function]:
        reply = invoke(function, json.loads((REPO / "events" / function / f"{name}.json").read_text()))
        answered.append((name, reply.status, reply.body if reply.status >= 400 else None))
    wrong = [(name, status, body) for name, status, body in answered if status != int(name[-3:])]
    assert len(answered) >= 10
    assert wrong == []


def test_the_committed_events_are_the_generators():
    """tests/functions/generate_events.py is the source of truth: run it after changing its list."""
    from tests.functions.generate_events import SAMPLES, sample

    for function, samples in SAMPLES.items():
        committed = {path.stem for path in (REPO / "events" / function).glob("*.json")}
        assert committed == set(samples), function
        for name, (method, path, route, kwargs) in samples.items():
            on_disk = json.loads((REPO / "events" / function / f"{name}.json").read_text())
            assert on_disk == sample(name, method, path, route, kwargs), f"{function}/{name}"
