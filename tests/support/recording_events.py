"""An EventBridge client double (the `recorded_bus` fixture's, tests/conftest.py): pure Python, for the fast lane too."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any


class RecordingEvents:
    """An EventBridge client double: records PutEvents, optionally rejects chosen entries or calls."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []
        self.reject: Callable[[dict[str, Any]], str | None] = lambda entry: None

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(Entries)
        results: list[dict[str, Any]] = []
        for entry in Entries:
            code = self.reject(entry)
            results.append({"ErrorCode": code, "ErrorMessage": "rejected"} if code else {"EventId": str(uuid.uuid4())})
        return {"FailedEntryCount": sum(1 for r in results if "ErrorCode" in r), "Entries": results}

    @property
    def events(self) -> list[dict[str, Any]]:
        return [
            {"type": entry["DetailType"], "source": entry["Source"], **json.loads(entry["Detail"])}
            for call in self.calls
            for entry in call
        ]
