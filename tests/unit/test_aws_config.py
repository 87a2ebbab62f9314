from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import botocore.endpoint
import pytest
import urllib3
from botocore.exceptions import BotoCoreError, ReadTimeoutError

from infra.settings import ALL_FUNCTIONS
from shop import aws_config, errors
from shop.aws_config import (
    CONFLICT_ATTEMPTS,
    Budget,
    DeadlineExceeded,
    client_config,
    invocation_deadline,
    standard_backoff_ceiling,
    with_conflict_retries,
)
from shop.repository.store import translated_errors
from tests.support.store_budget import conflict_backoff_ceiling, worst_case_s


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
    assert worst_case_s(budget) <= spec.timeout_s - budget.margin_s
    assert budget.margin_s >= 0.5


def test_the_api_functions_budget_is_three_attempts_of_half_a_second_and_one_and_a_half():
    budget = Budget.for_timeout(10)
    assert (budget.attempts, budget.connect_timeout_s, budget.read_timeout_s, budget.margin_s) == (3, 0.5, 1.5, 1.0)
    assert worst_case_s(budget) == 9.0  # 3 x 2 s + 1 s + 2 s of backoff: 1 s left to answer 503


def test_a_short_timeout_drops_attempts_rather_than_outliving_the_function():
    budget = Budget.for_timeout(3)
    assert budget.attempts < 3
    assert worst_case_s(budget) <= 3 - budget.margin_s


def test_a_timeout_with_no_room_for_one_attempt_is_refused():
    with pytest.raises(ValueError, match="no time"):
        Budget.for_timeout(0.6)


def test_conflict_retries_alone_sleep_less_than_the_api_budget():
    budget = Budget.for_timeout(10)
    assert conflict_backoff_ceiling(CONFLICT_ATTEMPTS) < budget.function_timeout_s - budget.margin_s


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


class FakeClock:
    """The clock deadlines are read on, advanced only by the stalled store's waits and botocore's retry sleeps."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


class StalledSession:
    """A DynamoDB that accepts the connection and never answers, on the fake clock: each attempt waits out the
    read timeout the real HTTP session would give urllib3 (the request's own, else the client's), then fails
    as urllib3 does. `test_the_http_session_gives_urllib3_the_capped_read_timeout` proves the real one uses it.
    With `connect_s`, each connection is first accepted only that late (at most the client's connect timeout,
    which botocore cannot set per request)."""

    def __init__(self, clock: FakeClock, client_read_timeout: float, connect_s: float = 0.0) -> None:
        self.clock = clock
        self.client_read_timeout = client_read_timeout
        self.connect_s = connect_s
        self.waits: list[float] = []

    def send(self, request: Any) -> Any:
        wait = self.connect_s + (request.context.get("read_timeout") or self.client_read_timeout)
        self.waits.append(wait)
        self.clock.t += wait
        raise ReadTimeoutError(endpoint_url=request.url)

    def close(self) -> None:
        pass


@pytest.fixture
def fake_now_and_sleep(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(aws_config, "now", fake)
    # botocore's retry loop sleeps with time.sleep in botocore.endpoint: there, on the fake clock
    monkeypatch.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=fake.sleep))
    return fake


def _client(endpoint: str = "http://127.0.0.1:9") -> Any:
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


def _stalled_client(clock: FakeClock, connect_s: float = 0.0) -> tuple[Any, StalledSession]:
    client = _client()
    session = StalledSession(clock, float(client.meta.config.read_timeout), connect_s)
    client._endpoint.http_session = session
    return client, session


def _get(client: Any) -> None:
    client.get_item(TableName="t", Key={"PK": {"S": "x"}, "SK": {"S": "x"}})


def test_a_stalled_store_costs_one_call_no_more_than_the_derived_budget(deployed, monkeypatch, fake_now_and_sleep):
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "4")
    budget = Budget.for_timeout(4)
    client, session = _stalled_client(fake_now_and_sleep)
    started = fake_now_and_sleep()
    with pytest.raises(errors.ServiceUnavailable), translated_errors():
        _get(client)
    assert len(session.waits) == budget.attempts
    assert fake_now_and_sleep() - started <= worst_case_s(budget)


def test_the_invocation_deadline_bounds_a_chain_of_calls(deployed, monkeypatch, fake_now_and_sleep):
    """Three calls to a stalled store would take 3 x the per-call worst case; the deadline stops them."""
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "4")
    client, _ = _stalled_client(fake_now_and_sleep)
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 4000)
    started = fake_now_and_sleep()
    raised: list[BaseException] = []
    with invocation_deadline(context) as deadline:
        for _ in range(3):
            try:
                _get(client)
            except BotoCoreError as exc:
                raised.append(exc)
    assert fake_now_and_sleep() <= deadline
    assert fake_now_and_sleep() - started <= 4 - Budget.for_timeout(4).margin_s
    assert any(isinstance(exc, DeadlineExceeded) for exc in raised)


def test_widened_local_timeouts_cannot_outlast_the_function(monkeypatch, fake_now_and_sleep):
    """`make dev` widens the timeouts (5 s connect, 15 s read) for a slow DynamoDB Local: one stalled attempt
    would wait 15 s in a 10 s function, which Lambda (and the local gateway) then ends with a 500. Each attempt's
    read is cut to the deadline, so the handler answers 503 itself, inside the function's timeout."""
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "10")
    monkeypatch.setenv("DYNAMODB_CONNECT_TIMEOUT", "5")
    monkeypatch.setenv("DYNAMODB_READ_TIMEOUT", "15")
    client, session = _stalled_client(fake_now_and_sleep)
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 10_000)
    started = fake_now_and_sleep()
    with invocation_deadline(context) as deadline, pytest.raises(errors.ServiceUnavailable), translated_errors():
        _get(client)
    assert session.waits
    assert max(session.waits) < 15
    assert fake_now_and_sleep() <= deadline == started + 10 - Budget.for_timeout(10).margin_s


def test_a_connect_that_takes_its_whole_timeout_still_ends_before_the_deadline(monkeypatch, fake_now_and_sleep):
    """botocore cuts only the read timeout per request: a connect that takes `make dev`'s whole 5 s, then a read cut
    to the time left, would end 5 s past the deadline. The read is cut to the time left after such a connect."""
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "10")
    monkeypatch.setenv("DYNAMODB_CONNECT_TIMEOUT", "5")
    monkeypatch.setenv("DYNAMODB_READ_TIMEOUT", "15")
    client, session = _stalled_client(fake_now_and_sleep, connect_s=5)
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 10_000)
    with invocation_deadline(context) as deadline, pytest.raises(errors.ServiceUnavailable), translated_errors():
        _get(client)
    assert session.waits  # an attempt ran, and neither it nor a retry ended after the deadline
    assert fake_now_and_sleep() <= deadline


def test_no_attempt_starts_with_less_time_left_than_a_widened_connect_may_take(monkeypatch, fake_now_and_sleep):
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "10")
    monkeypatch.setenv("DYNAMODB_CONNECT_TIMEOUT", "5")
    monkeypatch.setenv("DYNAMODB_READ_TIMEOUT", "15")
    client, session = _stalled_client(fake_now_and_sleep, connect_s=5)
    # 4 s left before the deadline: room for a deployed attempt (2 s), not for a 5 s connect
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 5_000)
    with invocation_deadline(context), pytest.raises(DeadlineExceeded):
        _get(client)
    assert session.waits == []


def test_no_deadline_outside_an_invocation(deployed, fake_now_and_sleep):
    client, session = _stalled_client(fake_now_and_sleep)
    with pytest.raises(BotoCoreError) as caught:
        _get(client)
    assert not isinstance(caught.value, DeadlineExceeded)
    assert len(session.waits) == Budget.for_timeout(10).attempts  # every attempt of standard mode ran


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


def test_the_http_session_gives_urllib3_the_capped_read_timeout(monkeypatch, silent_store):
    """On a real socket: the read timeout the guard sets on the request is the one urllib3 waits, not the
    client's widened 15 s (a 1 s function: one attempt, at most 0.4 s of real waiting). The connect timeout is
    the client's: botocore has no per-request one, so the read leaves room for it."""
    monkeypatch.setenv("FUNCTION_TIMEOUT_SECONDS", "1")
    monkeypatch.setenv("DYNAMODB_CONNECT_TIMEOUT", "0.2")
    monkeypatch.setenv("DYNAMODB_READ_TIMEOUT", "15")
    reads: list[float | None] = []
    connects: list[float | None] = []
    urlopen = urllib3.HTTPConnectionPool.urlopen

    def recording(pool: Any, *args: Any, **kwargs: Any) -> Any:
        timeout = kwargs.get("timeout")
        reads.append(timeout.read_timeout if isinstance(timeout, urllib3.Timeout) else None)
        connects.append(timeout.connect_timeout if isinstance(timeout, urllib3.Timeout) else None)
        return urlopen(pool, *args, **kwargs)

    monkeypatch.setattr(urllib3.HTTPConnectionPool, "urlopen", recording)
    client = _client(silent_store)
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: 1100)
    with invocation_deadline(context), pytest.raises(ReadTimeoutError):
        _get(client)
    assert len(reads) == 1
    assert reads[0] is not None
    assert connects == [0.2]
    assert reads[0] <= 1.1 - Budget.for_timeout(1).margin_s - 0.2
