"""DynamoDB Local for the run, the single table as the synthesized template defines it, the function env."""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from local_runtime.functions import SHARED_LAYER
from local_runtime.template import REPO_ROOT

DATA_TEMPLATE = REPO_ROOT / "cdk.out" / "ShopData.template.json"
PAGINATION_SECRET = "bench-pagination-secret-0123456789abcdef"


def function_env(endpoint: str, table_name: str, service: str = "bench") -> dict[str, str]:
    """The environment a deployed function gets (docs/conventions.md), pointed at DynamoDB Local."""
    return {
        "TABLE_NAME": table_name,
        "STATUS_SHARDS": "4",
        "PAGINATION_SECRET": PAGINATION_SECRET,
        "SESSION_TTL_SECONDS": "3600",
        "IDEMPOTENCY_TTL_SECONDS": "86400",
        "POWERTOOLS_SERVICE_NAME": service,
        "POWERTOOLS_METRICS_NAMESPACE": "Shop",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "PYDANTIC_DISABLE_PLUGINS": "__all__",
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
        "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_SESSION_TOKEN": "local",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "AWS_LAMBDA_FUNCTION_NAME": service,
    }


class Store:
    """One DynamoDB Local process (in memory) for the whole run."""

    def __init__(self, *, measured: bool = True) -> None:
        from local_runtime.dynamodb_local import FULL_JIT, QUICK_START, DynamoDBLocal

        if str(SHARED_LAYER) not in sys.path:
            sys.path.append(str(SHARED_LAYER))
        # measured: the JIT's every tier, as a long-running store runs; the smoke run's figures are not results
        self.ddb = DynamoDBLocal(jvm_options=FULL_JIT if measured else QUICK_START).start()
        self.endpoint = self.ddb.endpoint
        self.template: pathlib.Path | None = DATA_TEMPLATE if DATA_TEMPLATE.is_file() else None

    def client(self, service: str = "dynamodb", **kwargs: Any) -> Any:
        return self.ddb.client(service, **kwargs)

    def create_table(self, name: str) -> str:
        from local_runtime.dynamodb_local import create_table

        create_table(self.client(), name, self.template)
        return name

    def delete_table(self, name: str) -> None:
        with contextlib.suppress(Exception):
            self.client().delete_table(TableName=name)

    def use(self, table_name: str) -> None:
        """Point this process (settings, the shop's client) at one table."""
        from shop.config import settings
        from shop.repository import store

        os.environ.update(function_env(self.endpoint, table_name))
        settings.cache_clear()
        store.reset_client()

    def stop(self) -> None:
        self.ddb.stop()


@contextlib.contextmanager
def own_store(ctx: dict[str, Any]) -> Iterator[Store]:
    """A DynamoDB Local for one phase's bulk tables, stopped after it. After 100,000-item tables were filled and
    dropped, a shared one took writes at ~20 items/s instead of ~2,800 (measured), slowing every later phase."""
    store = Store()
    try:
        yield store
    finally:
        store.stop()
        scenario = ctx.get("scenario")
        if scenario is not None:
            ctx["store"].use(scenario.table_name)  # the later phases run on the run's own store


@contextlib.contextmanager
def quiet_stdout(log: pathlib.Path | None = None) -> Iterator[None]:
    """Send fd 1 (the functions' Powertools logs and EMF metrics) to a log file while the block runs."""
    sys.stdout.flush()
    saved = os.dup(1)
    target = open(log, "ab") if log else tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    try:
        os.dup2(target.fileno(), 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        target.close()
