"""Fresh tables on moto's DynamoDB without paying for their set-up in every test.

A handler test on moto needs a table holding the seed: creating it and writing the seed's items through
moto's API costs about a second a test (moto parses, sizes and indexes every item of a BatchWriteItem),
and the test itself a fraction of that. So each kind of table is built once per test process through the
API (`build`), kept as a pickled copy of moto's own table object, and every later test gets its own copy
of that object under its own name: the same items, indexes, stream settings and TTL settings, with no
item shared between two tests (a copy, not a reference). What `build` does is still proved once per
process, and writing the seed by tests/local_runtime and the DynamoDB Local runs.

Only for tables inside `moto.mock_aws()`; DynamoDB Local tables are made with the API.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

_snapshots: dict[str, bytes] = {}


def _backend(client: Any) -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][client.meta.region_name]


def fresh_table(client: Any, name: str, kind: str, build: Callable[[str], None]) -> None:
    """Table `name` in the running mock: built by `build(name)` the first time `kind` is asked for in this
    process, then a copy of that first table (its items as they were right after `build`)."""
    backend = _backend(client)
    snapshot = _snapshots.get(kind)
    if snapshot is None:
        build(name)
        _snapshots[kind] = pickle.dumps(backend.tables[name])
        return
    table = pickle.loads(snapshot)  # noqa: S301 - our own bytes, made above in this process
    table.name = name
    table.table_arn = table._generate_arn(name)
    backend.tables[name] = table
