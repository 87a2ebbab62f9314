"""A category move through the handlers on the in-memory store: PATCH /categories/{slug} moves the category and
writes the move item; each of the item's stream records runs one step in order_events (re-path the subtree, then
re-file its products a page at a time) until the item is gone. The same steps on DynamoDB Local, with their
conditions and real records: tests/stream."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.apigw import ADMIN
from tests.support.memory_stream import MemoryChange
from tests.support.memory_wiring import Handlers

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics")


def moves_only(change: MemoryChange) -> bool:
    return change.entity == "CATEGORY_MOVE"


def listed(handlers: Handlers, category: str) -> list[str]:
    reply = handlers.call("GET", "/products", query={"category": category, "limit": "100"})
    assert reply.status == 200, reply.body
    return sorted(item["product_id"] for item in reply.body["items"])


def category(handlers: Handlers, slug: str) -> dict[str, Any]:
    reply = handlers.call("GET", f"/categories/{slug}")
    assert reply.status == 200, reply.body
    return reply.body


@pytest.fixture
def trackball(handlers: Handlers, monkeypatch: pytest.MonkeyPatch) -> str:
    """A sub-category (mice) under peripherals, holding one product; moves re-file 2 products a step."""
    monkeypatch.setenv("CATEGORY_MOVE_STEP_PRODUCTS", "2")
    body = {"slug": "mice", "name": "Mice", "parent": "peripherals"}
    assert handlers.call("POST", "/categories", claims=ADMIN, body=body).status == 201
    created = handlers.call(
        "POST", "/products", claims=ADMIN, body={"name": "Trackball", "category": "mice", "price_cents": 4000}
    )
    assert created.status == 201, created.body
    handlers.wiring.stream.read()
    return created.body["product_id"]


def test_a_move_rewrites_the_subtree_and_its_listings_step_by_step(handlers, trackball):
    under_peripherals = sorted(["prod-keyboard", "prod-mouse", "prod-soldout", trackball])
    assert listed(handlers, "computers") == sorted([*under_peripherals, "prod-cable"])

    moved = handlers.call("PATCH", "/categories/peripherals", claims=ADMIN, body={"parent": "audio"})
    assert moved.status == 200, moved.body
    assert (moved.body["path"], moved.body["moving"]) == ("/audio/peripherals", True)
    second = handlers.call("PATCH", "/categories/cables", claims=ADMIN, body={"parent": "audio"})
    assert (second.status, second.code) == (409, "MOVE_IN_PROGRESS")

    steps: list[MemoryChange] = []
    while True:
        changes, response = handlers.stream(moves_only)
        if not changes:
            break
        assert response == {"batchItemFailures": []}
        steps += changes
    # INSERT (categories), MODIFY (products page 1), MODIFY (page 2: 4 products, 2 a step), REMOVE when done
    assert [change.event_name for change in steps] == ["INSERT", "MODIFY", "MODIFY", "REMOVE"]

    assert category(handlers, "mice")["path"] == "/audio/peripherals/mice"
    done = category(handlers, "peripherals")
    assert (done["moving"], [crumb["slug"] for crumb in done["breadcrumbs"]]) == (False, ["audio", "peripherals"])
    assert listed(handlers, "computers") == ["prod-cable"]
    assert listed(handlers, "audio") == sorted([*under_peripherals, "prod-flash"])
    assert listed(handlers, "mice") == [trackball]

    assert handlers.replay(steps) == {"batchItemFailures": []}  # every step delivered again: nothing moves
    assert handlers.wiring.store.state.move is None
    assert listed(handlers, "audio") == sorted([*under_peripherals, "prod-flash"])
    assert listed(handlers, "computers") == ["prod-cable"]
    again = handlers.call("PATCH", "/categories/cables", claims=ADMIN, body={"parent": "audio"})
    assert again.status == 200, again.body  # the move is over: the next may start


def test_a_move_into_its_own_subtree_is_refused_and_starts_nothing(handlers, trackball):
    refused = handlers.call("PATCH", "/categories/peripherals", claims=ADMIN, body={"parent": "mice"})
    assert (refused.status, refused.code) == (409, "INVALID_MOVE")
    assert handlers.wiring.stream.read() == []
