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
