from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace

import boto3
import pytest
from botocore.exceptions import BotoCoreError

from infra.settings import ALL_FUNCTIONS
from shop import errors
from shop.aws_config import (
    CONFLICT_ATTEMPTS,
    Budget,
    DeadlineExceeded,
    client_config,
    conflict_backoff_ceiling,
    invocation_deadline,
    standard_backoff_ceiling,
    with_conflict_retries,
)
from shop.repository.store import translated_errors


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DYNAMODB_CONNECT_TIMEOUT", raising=False)
    monkeypatch.delenv("DYNAMODB_READ_TIMEOUT", raising=False)


def test_standard_mode_sleeps_at_most_one_then_two_seconds():
    assert standard_backoff_ceiling(1) == 0
    assert standard_backoff_ceiling(3) == 1 + 2


@pytest.mark.parametrize("spec", ALL_FUNCTIONS, ids=lambda spec: spec.name)
def test_every_deployed_function_answers_itself_with_a_margin(spec):
    budget = Budget.for_timeout(spec.timeout_s)
    worst_case = budget.attempts * (budget.connect_timeout_s + budget.read_timeout_s)
    worst_case += standard_backoff_ceiling(budget.attempts)
    assert worst_case == budget.worst_case_s()
    assert worst_case <= spec.timeout_s - budget.margin_s
    assert budget.margin_s >= 0.5


def test_the_api_functions_budget_is_three_attempts_of_half_a_second_and_one_and_a_half():
    budget = Budget.for_timeout(10)
    assert (budget.attempts, budget.connect_timeout_s, budget.read_timeout_s, budget.margin_s) == (3, 0.5, 1.5, 1.0)
    assert budget.worst_case_s() == 9.0  # 3 x 2 s + 1 s + 2 s of backoff: 1 s left to answer 503


def test_a_short_timeout_drops_attempts_rather_than_outliving_the_function():
    budget = Budget.for_timeout(3)
    assert budget.attempts < 3
    assert budget.worst_case_s() <= 3 - budget.margin_s


def test_a_timeout_with_no_room_for_one_attempt_is_refused():
    with pytest.raises(ValueError, match="no time"):
        Budget.for_timeout(0.6)


def test_conflict_retries_alone_sleep_less_than_the_api_budget():
    assert conflict_backoff_ceiling(CONFLICT_ATTEMPTS) < Budget.for_timeout(10).answer_within_s


def test_the_client_takes_the_derived_budget(deployed, monkeypatch):
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "10")
    config = client_config()
    assert config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert (config.connect_timeout, config.read_timeout) == (0.5, 1.5)


def test_timeouts_can_be_widened_for_a_slow_local_store(monkeypatch):
    monkeypatch.setenv("DYNAMODB_CONNECT_TIMEOUT", "5")
    monkeypatch.setenv("DYNAMODB_READ_TIMEOUT", "15")
    config = client_config()
    assert (config.connect_timeout, config.read_timeout) == (5, 15)


@pytest.fixture
def silent_store() -> Iterator[str]:
    """A loopback endpoint that accepts connections and never answers: a stalled DynamoDB."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        server.close()


def _client(endpoint: str) -> object:
    return with_conflict_retries(
        boto3.session.Session().client(
            "dynamodb",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
            config=client_config(),
        )
    )


def test_a_stalled_store_costs_one_call_no_more_than_the_derived_budget(deployed, monkeypatch, silent_store):
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "4")
    budget = Budget.for_timeout(4)
    client = _client(silent_store)
    started = time.monotonic()
    with pytest.raises(errors.ServiceUnavailable), translated_errors():
        client.get_item(TableName="t", Key={"PK": {"S": "x"}, "SK": {"S": "x"}})  # type: ignore[attr-defined]
    assert time.monotonic() - started <= budget.worst_case_s() + 0.5


def test_the_invocation_deadline_bounds_a_chain_of_calls(deployed, monkeypatch, silent_store):
    """Three calls to a stalled store would take 3 x the per-call worst case; the deadline stops them."""
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "4")
    client = _client(silent_store)
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 4000)
    started = time.monotonic()
    raised: list[BaseException] = []
    with invocation_deadline(context) as deadline:
        for _ in range(3):
            try:
                client.get_item(TableName="t", Key={"PK": {"S": "x"}, "SK": {"S": "x"}})  # type: ignore[attr-defined]
            except BotoCoreError as exc:
                raised.append(exc)
    assert time.monotonic() <= deadline + 0.2
    assert time.monotonic() - started < 4 - Budget.for_timeout(4).margin_s + 0.2
    assert any(isinstance(exc, DeadlineExceeded) for exc in raised)


def test_no_deadline_outside_an_invocation(deployed, silent_store):
    client = _client(silent_store)
    with pytest.raises(BotoCoreError) as caught:
        client.get_item(TableName="t", Key={"PK": {"S": "x"}, "SK": {"S": "x"}})  # type: ignore[attr-defined]
    assert not isinstance(caught.value, DeadlineExceeded)
