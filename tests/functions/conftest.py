"""Fixtures of the HTTP API tests: fresh seeded tables on moto and DynamoDB Local, handlers in-process.

`api` (DynamoDB Local) and `moto_api` are the HTTP-test counterparts of the root `store` and `moto_store` (same `Store`
object, same env: TABLE_NAME and the shop's global client point at a fresh table) but they keep one
boto3 session (moto) or client (DynamoDB Local) per module instead of one per test: creating a client
costs ~100 ms. Every test still gets its own table, loaded with events/seed.json.

The seed is written through the repositories (transactions) once per backend per test process; every
later table is a copy: on DynamoDB Local a new table receiving those items (BatchWriteItem), on moto a
copy of moto's own seeded table object (tests/support/moto_tables.py: writing the items through moto's
API cost about a second a test, most of a handler test's time).
Writing the seed is proved by the first table of each backend and by tests/local_runtime.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Store
from tests.functions.apigw import API, FUNCTIONS
from tests.support import moto_tables
from tests.support.factories import category

_names = itertools.count()
# The seeded items, as DynamoDB returns them, per backend: written once through the repositories.
_seeded: dict[str, list[dict[str, Any]]] = {}
# Top-level categories the HTTP tests file products under, beside the seed's (products need existing ones).
TEST_CATEGORIES = ("c", "bulk", "paged", "tools", "x", "limits", "lights")


@pytest.fixture(scope="session", autouse=True)
def _handlers_loaded() -> None:
    for name in FUNCTIONS:
        API.handler(name)


@pytest.fixture(scope="module")
def _local_client(dynamodb_local: Any) -> tuple[Any, dict[str, str]]:
    from shop.aws_config import client_config

    return dynamodb_local.client("dynamodb", config=client_config()), dynamodb_local.env()


def _fresh_store(backend: str, client: Any, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    from local_runtime.dynamodb_local import create_table
    from local_runtime.sample_data import load_seed
    from local_runtime.table_definition import DEFAULT_TABLE_SPEC
    from shop.config import settings
    from shop.repository import store as store_module

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    name = f"api-{os.getpid()}-{next(_names)}"
    monkeypatch.setenv("TABLE_NAME", name)
    monkeypatch.setattr(store_module, "_client", client)
    settings.cache_clear()
    fresh = Store(backend, client, None, name, env.get("AWS_ENDPOINT_URL_DYNAMODB"))

    # No stream on DynamoDB Local: nothing reads one from these tables (the Store has no streams client), and
    # every record DynamoDB Local keeps makes each later write of the worker cost it more (docs/testing.md, "Time")
    spec = dataclasses.replace(DEFAULT_TABLE_SPEC, stream_view_type=None) if backend == "local" else None

    def seeded(table_name: str) -> None:
        create_table(client, table_name, spec=spec, native_ttl=False)  # expiry on the test's clock: the TTL emulator's
        load_seed(fresh.table)
        for slug in TEST_CATEGORIES:
            category(fresh.table, slug)

    if backend == "moto":
        moto_tables.fresh_table(client, name, "seeded", seeded)
    elif backend in _seeded:
        create_table(client, name, spec=spec, native_ttl=False)
        copy_items(client, name, _seeded[backend])
    else:
        seeded(name)
        _seeded[backend] = all_items(client, name)
    try:
        yield fresh
    finally:
        if backend == "local":
            client.delete_table(TableName=name)


def all_items(client: Any, name: str) -> list[dict[str, Any]]:
    """Every item of table `name`, as DynamoDB returns them (a Scan: tests only)."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": name, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        items += page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def copy_items(client: Any, name: str, items: list[dict[str, Any]]) -> None:
    """Write `items` into table `name` (BatchWriteItem, retrying what comes back unprocessed)."""
    for start in range(0, len(items), 25):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        while requests:
            unprocessed = client.batch_write_item(RequestItems={name: requests}).get("UnprocessedItems", {})
            requests = unprocessed.get(name, [])


@pytest.fixture
def moto_api(_moto_clients_session: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """A fresh moto mock, client and table with the seed."""
    from moto import mock_aws

    from shop.aws_config import client_config

    with mock_aws():
        client = _moto_clients_session.client("dynamodb", config=client_config())
        yield from _fresh_store("moto", client, {}, monkeypatch)


@pytest.fixture
def local_api(_local_client: tuple[Any, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """A fresh DynamoDB Local table with the seed."""
    client, env = _local_client
    yield from _fresh_store("local", client, env, monkeypatch)


@pytest.fixture
def api(local_api: Store) -> Store:
    """A fresh seeded table on DynamoDB Local, for an HTTP test whose answer depends on what the store does
    (conflicts, idempotency, versions, limits). Until issue 24 it ran each test on moto too, which proved
    nothing more; what the store cannot change (validation, routing, authorization) runs on `moto_api`."""
    return local_api
