"""The functions driven in-process for the bench: local_runtime's harness, with the bench's callers.

A caller is a `sub` and its groups, passed as the JWT authorizer's claims (`local_runtime.in_process`).
"""

from __future__ import annotations

from typing import Any

from local_runtime.in_process import InProcessFunctions, Reply
from local_runtime.streams import StreamReader
from local_runtime.template import load_app

HEADERS = {"host": "bench.local", "user-agent": "bench", "accept": "application/json"}


def claims(sub: str | None, groups: list[str] | None = None) -> dict[str, Any] | None:
    """What the JWT authorizer passes for a caller's access token (None: an anonymous request)."""
    if sub is None:
        return None
    found: dict[str, Any] = {"sub": sub, "iss": "https://bench.local", "token_use": "access"}
    if groups:
        found["cognito:groups"] = groups
    return found


class Functions(InProcessFunctions):
    """Every function, imported at once; `errors` says why one cannot be called."""

    def __init__(self) -> None:
        super().__init__(headers=HEADERS)
        self.errors = self.load()

    def has(self, function: str) -> bool:
        return function not in self.errors

    def request(
        self, method: str, path: str, *, sub: str | None = None, groups: list[str] | None = None, **kwargs: Any
    ) -> Reply:
        return super().request(method, path, claims=claims(sub, groups), **kwargs)

    def http_event(
        self, method: str, path: str, *, sub: str | None = None, groups: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        return super().http_event(method, path, claims=claims(sub, groups), **kwargs)


def order_events_reader(dynamodb: Any, streams: Any, table_name: str) -> StreamReader:
    """The table's stream as order_events' event source mapping delivers it: FilterCriteria and BatchSize
    from the synthesized template, as the local runtime reads them (`make bench` synthesizes first)."""
    mapping = next(m for m in load_app().mappings if m.function == "order_events")
    return StreamReader(dynamodb, streams, table_name, mapping=mapping)


def payment_steps_reader(dynamodb: Any, streams: Any, table_name: str) -> StreamReader | None:
    """The table's stream as payment_steps' mapping delivers it (its from-status filters); None when the
    synthesized template has no payment_steps (synthesized with -c payments=none)."""
    mapping = next((m for m in load_app().mappings if m.function == "payment_steps"), None)
    if mapping is None:
        return None
    return StreamReader(dynamodb, streams, table_name, mapping=mapping)
