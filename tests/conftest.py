"""Fixtures shared by every test: a fake AWS environment and the store backends.

`store` is a fresh table on Amazon's DynamoDB Local (the real semantics: transactions, conditional
failures, streams, TTL attributes, consumed capacity); `moto_store` one on moto's in-process DynamoDB,
for adapter tests that prove no DynamoDB semantic. Each test gets its own fresh table.

Every test marked `dynamodb_semantics` must run on DynamoDB Local: collection fails otherwise
(docs/testing.md, "Which backend").
"""

from __future__ import annotations

import itertools
import os
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from local_runtime.local_aws import LocalAws
    from local_runtime.ttl import TtlDeletions
    from tests.support.fake_payments import FakePayments
    from tests.support.hand_clock import HandClock
    from tests.support.recording_events import RecordingEvents

os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "TABLE_NAME": "shop-test",
        "PAGINATION_SECRET": "test-pagination-secret",
        "STATUS_SHARDS": "4",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "ShopTest",
        "POWERTOOLS_SERVICE_NAME": "shop-test",
        "POWERTOOLS_DEV": "false",
        # DynamoDB Local under a parallel test run is far slower than DynamoDB (see shop.aws_config).
        "DYNAMODB_CONNECT_TIMEOUT": "5",
        "DYNAMODB_READ_TIMEOUT": "15",
    }
)
for _var in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "AWS_PROFILE"):
    os.environ.pop(_var, None)

_table_numbers = itertools.count()


@dataclass
class Store:
    """One fresh table on one backend."""

    backend: str
    client: Any
    streams: Any
    table_name: str
    endpoint: str | None

    @property
    def table(self) -> Any:
        from shop.repository import Table

        return Table(self.client, self.table_name)


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[Any]:
    from local_runtime.dynamodb_local import DynamoDBLocal

    instance = DynamoDBLocal().start()  # the JIT's first tier (the default): a third less CPU than both tiers
    try:
        yield instance
    finally:
        instance.stop()


# DynamoDB Local keeps every stream record of the process, deleted tables' included, and each write costs it
# more CPU the more there are: 300 puts took 1.3 s of its CPU fresh and 7 s once 21,000 records were kept
# (docs/testing.md, "Time"). So the worker's instance starts again, on the same port, once this many streamed
# tables were made on it, at the first such table made while no table is left (nothing a test holds is lost).
# Every 30 streamed tables: 257 s of CPU for tests/stream, repository, payments and integration on one worker,
# against 306 s never renewed and 279 s every 12 (a start is about 1.4 s of Java's CPU).
RENEW_AFTER_STREAMED_TABLES = 30
_streamed_tables = itertools.count(1)


def _renew_when_aged(instance: Any, client: Any) -> None:
    global _streamed_tables
    if next(_streamed_tables) < RENEW_AFTER_STREAMED_TABLES or client.list_tables(Limit=1)["TableNames"]:
        return
    instance.restart()
    _streamed_tables = itertools.count(1)


def _fresh_name() -> str:
    return f"shop-{os.getpid()}-{next(_table_numbers)}"


@pytest.fixture(scope="session")
def _moto_clients_session() -> Any:
    """One boto3 session for every moto test's clients.

    mock_aws() drops boto3's default session, so `boto3.client` under it reloads the service model and
    endpoint rules (about 0.15 s of CPU a client); a session kept here caches them. moto's request hook
    joins botocore's built-in handlers when moto.core.models is imported, and a session picks up only
    the built-in handlers it sees when it is created: import moto first.
    """
    import boto3
    import moto.core.models  # noqa: F401

    from tests.support import moto_transactions

    moto_transactions.install()
    return boto3.session.Session()


@pytest.fixture
def moto_store(_moto_clients_session: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    from moto import mock_aws

    from local_runtime.dynamodb_local import create_table
    from shop.aws_config import client_config
    from shop.repository import store as store_module
    from tests.support import moto_tables

    with mock_aws():
        client = _moto_clients_session.client("dynamodb", config=client_config())
        name = _fresh_name()
        # expiry on the test's clock: the TTL emulator's; built once per process, then copied (moto_tables)
        moto_tables.fresh_table(client, name, "empty", lambda table: create_table(client, table, native_ttl=False))
        monkeypatch.setenv("TABLE_NAME", name)
        store_module.reset_client()
        yield Store("moto", client, _moto_clients_session.client("dynamodbstreams"), name, None)
        store_module.reset_client()


@pytest.fixture
def local_store(
    dynamodb_local: Any, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Store]:
    """A fresh table on the worker's DynamoDB Local, with the template's stream unless the test is marked
    `table_without_stream` (it reads no stream record): DynamoDB Local keeps every stream record of the
    process, deleted tables included, and each later write on any streamed table costs more CPU the more
    there are (docs/testing.md, "Time"), so a bulk writer that reads no stream leaves it off."""
    import dataclasses

    from local_runtime.dynamodb_local import create_table
    from local_runtime.table_definition import DEFAULT_TABLE_SPEC
    from shop.aws_config import client_config
    from shop.repository import store as store_module

    for key, value in dynamodb_local.env().items():
        monkeypatch.setenv(key, value)
    client = dynamodb_local.client("dynamodb", config=client_config())
    name = _fresh_name()
    spec = DEFAULT_TABLE_SPEC
    if request.node.get_closest_marker("table_without_stream"):
        spec = dataclasses.replace(spec, stream_view_type=None)
    else:
        _renew_when_aged(dynamodb_local, client)
    create_table(client, name, spec=spec, native_ttl=False)  # expiry on the test's clock: the TTL emulator's
    monkeypatch.setenv("TABLE_NAME", name)
    store_module.reset_client()
    yield Store("local", client, dynamodb_local.client("dynamodbstreams"), name, dynamodb_local.endpoint)
    store_module.reset_client()
    client.delete_table(TableName=name)


@pytest.fixture
def store(local_store: Store) -> Store:
    """A fresh table on DynamoDB Local: what a test of a DynamoDB semantic asks for.

    It ran every test on moto too until issue 24: that second run proved nothing the DynamoDB Local one
    does not (moto models DynamoDB, DynamoDB Local is its reference) and cost 292 of 2,214 test runs.
    """
    return local_store


# Fixtures more than one folder asks for, each defined here once (tests/unit/test_fixture_names.py: one name, one
# meaning). Their imports are inside them: tests/unit, which refuses moto and DynamoDB Local, loads this file too.


@pytest.fixture
def recorded_bus(monkeypatch: pytest.MonkeyPatch) -> RecordingEvents:
    """EVENT_BUS_NAME set, PutEvents recorded in memory (works beside any store: memory, moto, DynamoDB Local)."""
    from shop import publishing
    from tests.support.recording_events import RecordingEvents

    fake = RecordingEvents()
    monkeypatch.setenv("EVENT_BUS_NAME", "shop-test-bus")
    monkeypatch.setattr(publishing, "events_client", lambda: fake)
    return fake


@pytest.fixture
def deletions() -> TtlDeletions:
    """The local TTL emulator's deletes, so that their REMOVEs carry the TTL service's identity."""
    from local_runtime.ttl import TtlDeletions

    return TtlDeletions("expires_at")


@pytest.fixture(scope="module")
def local_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAws]:
    """moto's S3 server (local_runtime.local_aws, what `make dev` runs), beside DynamoDB Local."""
    from local_runtime.local_aws import LocalAws

    with LocalAws(tmp_path_factory.mktemp("s3")) as aws:
        yield aws


@pytest.fixture
def wired_fake_payments(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePayments]:
    """PAYMENTS=stripe with a 30-minute payment window, and the fake provider (tests/support/fake_payments.py) as
    every function's `wiring.payments()`. (`fake_payments`, tests/unit/services/conftest.py: the same settings,
    the provider handed to the services rather than wired in.)"""
    from shop import config, wiring
    from tests.support.fake_payments import FakePayments

    provider = FakePayments()
    monkeypatch.setenv("PAYMENTS", "stripe")
    monkeypatch.setenv("PAYMENT_WINDOW_MINUTES", "30")
    monkeypatch.setattr(wiring, "payments", lambda: provider)
    config.payment_settings.cache_clear()
    yield provider
    config.payment_settings.cache_clear()


@pytest.fixture
def ttl_clock() -> HandClock:
    """The hot-product cache's clock (HotProductCache(ttl, now=ttl_clock)), moved by hand: `ttl_clock.at += s`."""
    from tests.support.hand_clock import HandClock

    return HandClock()


@pytest.fixture
def fresh_sales_instance() -> None:
    """A new stream processor instance for each test (its table is new too): shop.repository.sales's memo of day
    markers, rank refreshes and the cut-over forgotten (tests/support/streams.py::forget_instance_memo)."""
    from tests.support.streams import forget_instance_memo

    forget_instance_memo()


TIER_DIRECTORIES = {"e2e": "e2e", "infra": "infra", "unit": "unit"}  # tests/<directory> -> its tier's marker


# The files whose tests take a worker longest (worker seconds in a profile of `make test` under load,
# docs/testing.md "Time"), longest first; every other file keeps its place after them. Data, not a rule:
# a file missing here only starts later.
LONGEST_FIRST = (
    "tests/e2e/test_fuzz.py",
    "tests/e2e/test_drills.py",
    "tests/bench/test_bench_smoke.py",
    "tests/integration/test_scattered_stock.py",
    "tests/repository/test_status_migration.py",
    "tests/repository/test_migrations.py",
    "tests/stream/test_stock_low_shards.py",
    "tests/e2e/test_payments_flow.py",
    "tests/local_runtime/test_invoke_cli.py",
    "tests/stream/test_sales.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test carries its tier's marker (docs/testing.md), whatever its author remembered.

    `integration`: the test needs DynamoDB Local (it asks for it, directly or through a fixture);
    `e2e` and `infra`: the directory says so. `make integration`, `make infra` and `make e2e` select
    by these markers; `make unit` runs tests/unit, which refuses both moto and DynamoDB Local.
    """
    root = pathlib.Path(__file__).parent
    off_dynamodb_local: list[str] = []
    for item in items:
        on_dynamodb_local = "dynamodb_local" in getattr(item, "fixturenames", ())
        if on_dynamodb_local:
            item.add_marker(pytest.mark.integration)
        elif item.get_closest_marker("dynamodb_semantics") is not None:
            off_dynamodb_local.append(item.nodeid)
        if item.path.is_relative_to(root):
            directory = item.path.relative_to(root).parts[0]
            if directory in TIER_DIRECTORIES:
                item.add_marker(TIER_DIRECTORIES[directory])
    # Longest first: pytest-xdist hands out work in collection order (after its groups of several tests,
    # largest first), so a long test collected late is the run's tail on one worker while the other idles.
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: files stay whole
    if off_dynamodb_local:
        raise pytest.UsageError(
            "marked dynamodb_semantics but not run on DynamoDB Local (use store, api, local_store or local_api; "
            "docs/testing.md): " + ", ".join(off_dynamodb_local)
        )


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    from shop.config import settings

    settings.cache_clear()
    yield
    settings.cache_clear()
