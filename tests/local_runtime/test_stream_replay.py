"""A stream batch the processor gives up lands in the failure store whole, and `replay` re-drives it once.

The real order_events (source of functions/order_events, the synthesized mapping: retries, bisect,
partial batch responses) on DynamoDB Local, through the local poller. The fault is transient: the
processor cannot reach the table (its endpoint refuses connections) until the replay.
"""

from __future__ import annotations

import functools
import pathlib
import time
from typing import Any

import pytest

from local_runtime import cli, failures
from local_runtime.cli import DEFAULT_TABLE_NAME
from local_runtime.dynamodb_local import DynamoDBLocal, create_table
from local_runtime.functions import Functions
from local_runtime.poller import StreamPoller
from local_runtime.stack import templates_only
from local_runtime.template import AppModel, TemplateError, load_app
from shop import wiring
from shop.repository import Table
from shop.services.orders import RequestedLine
from tests.stream.conftest import dump
from tests.support.factories import ADDRESS, ADMIN, ALICE, product

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("stream-replay")]

REPO = pathlib.Path(__file__).resolve().parents[2]
TABLE = DEFAULT_TABLE_NAME  # the table `make dev` (and so `make replay`) uses
UNREACHABLE = "http://127.0.0.1:9"  # connection refused at once: the store is "down"


@pytest.fixture(scope="module")
def templates_copy(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    try:  # templates only: the functions run from source, never a stale asset
        return templates_only(REPO / "cdk.out", tmp_path_factory.mktemp("cdk.out"))
    except TemplateError as exc:
        pytest.fail(f"{exc} (make test does)")


@pytest.fixture(scope="module")
def synthesized_app(templates_copy: pathlib.Path) -> AppModel:
    return load_app(templates_copy, root=REPO)


def status(table: Table, order_id: str) -> str:
    return str(wiring.order_service(table).get(ADMIN, order_id).status.value)


def drain(poller: StreamPoller, *, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not poller.poll_once():
        time.sleep(0.2)


def redrive(app: AppModel, endpoint: str, state: pathlib.Path) -> failures.ReplayReport:
    functions = Functions(app, table_name=TABLE, endpoint=endpoint, state_dir=state, concurrency=1)
    try:
        store = failures.DirectoryStore(state / failures.LOCAL_DIR)
        return failures.replay(store, functools.partial(functions.invoke, "order_events"))
    finally:
        functions.close()


def test_a_given_up_batch_is_archived_whole_and_replayed_exactly_once(
    synthesized_app, templates_copy, tmp_path, capsys
):
    # the templates of make synth (-c payments=stripe) hold the stream's two consumers; this is order_events'
    (mapping,) = [m for m in synthesized_app.mappings if m.table is not None and m.function == "order_events"]
    with DynamoDBLocal() as ddb:
        client = ddb.client()
        create_table(client, TABLE, spec=synthesized_app.table.spec)
        table = Table(client, TABLE)
        pid = product(table, name="Widget", price_cents=1250, stock=10)
        order_id = wiring.order_service(table).place(ALICE, address=ADDRESS, lines=[RequestedLine(pid, 2)]).order_id

        down = Functions(synthesized_app, table_name=TABLE, endpoint=UNREACHABLE, state_dir=tmp_path, concurrency=1)
        poller = StreamPoller(
            mapping,
            dynamodb=client,
            streams=ddb.client("dynamodbstreams"),
            table_name=TABLE,
            invoke=functools.partial(down.invoke, "order_events"),
            state_dir=tmp_path,
        )
        try:
            drain(poller)
        finally:
            down.close()

        store = failures.DirectoryStore(tmp_path / failures.LOCAL_DIR)
        (key,) = store.object_keys()
        assert key.startswith(f"aws/lambda/{mapping.logical_id}/")
        record = store.read(key)
        assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
        assert record["requestContext"]["approximateInvokeCount"] == mapping.maximum_retry_attempts + 1
        # The record itself, not only its sequence number, with what followed it on the shard: the order's
        # stock move (a product MODIFY the processor skips without calling the store).
        archived = failures.event_of(record)["Records"]
        assert record["DDBStreamBatchInfo"]["batchSize"] == len(archived)
        kinds = sorted((r["eventName"], r["dynamodb"]["Keys"]["SK"]["S"]) for r in archived)
        assert kinds in ([("INSERT", "ORDER")], [("INSERT", "ORDER"), ("MODIFY", "PRODUCT")])
        (insert,) = [r for r in archived if r["eventName"] == "INSERT"]
        assert insert["dynamodb"]["NewImage"]["order_id"]["S"] == order_id
        assert status(table, order_id) == "PENDING"

        # what `make replay` runs while `make dev` is up (docs/operations.md)
        code = cli.main(
            ["replay", "--data-dir", str(tmp_path), "--cdk-out", str(templates_copy), "--endpoint", ddb.endpoint]
        )
        assert code == 0
        assert f"replayed  {key}" in capsys.readouterr().out
        assert status(table, order_id) == "CONFIRMED"
        after_first = dump(_Store(client))
        assert list(store.object_keys()) == []

        again = redrive(synthesized_app, ddb.endpoint, tmp_path)
        assert (again.replayed, again.failed) == ([], [])

        # Even the same object re-driven on purpose changes nothing: every effect is conditional.
        (tmp_path / failures.LOCAL_DIR / failures.REPLAYED / key).replace(tmp_path / failures.LOCAL_DIR / key)
        forced = redrive(synthesized_app, ddb.endpoint, tmp_path)
        assert forced.replayed == [key]
        assert dump(_Store(client)) == after_first


class _Store:
    """What tests.stream.conftest.dump reads."""

    def __init__(self, client: Any) -> None:
        self.client, self.table_name = client, TABLE
