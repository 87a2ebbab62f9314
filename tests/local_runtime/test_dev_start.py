"""What `dev`'s start relies on to start the functions' workers while Java boots and to announce itself only once
they are initialised: every port known at its server's spawn, and each worker's ready signal waited for."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import threading
from typing import Any

import pytest

from local_runtime import dynamodb_local
from local_runtime.dynamodb_local import DynamoDBLocal
from local_runtime.functions import Functions
from local_runtime.local_aws import LocalAws
from local_runtime.localstripe import LocalStripe
from local_runtime.stack import descendants, still_alive
from local_runtime.template import AppModel, load_app
from tests.support.polling import until

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "scheduled"


@pytest.fixture
def workers_app(tmp_path: pathlib.Path) -> AppModel:
    shutil.copytree(FIXTURES / "functions", tmp_path / "functions")
    return load_app(
        templates={"Scheduled": json.loads((FIXTURES / "Scheduled.template.json").read_text())}, root=tmp_path
    )


def only(app: AppModel, *names: str) -> AppModel:
    return AppModel(app.templates, {n: app.functions[n] for n in names}, [], {}, [], app.tables)


def test_waiting_for_the_warm_workers_ends_with_their_init_and_reports_a_failed_one(
    workers_app: AppModel, tmp_path: pathlib.Path
) -> None:
    functions = Functions(
        only(workers_app, "slow_init", "broken_init"),
        table_name="shop-local",
        endpoint="http://127.0.0.1:9",
        state_dir=tmp_path,
        log_dir=tmp_path,
    )
    code = workers_app.functions["slow_init"].code_dir
    try:
        functions.warm()
        waited: dict[str, Any] = {}
        waiting = threading.Thread(target=lambda: waited.update(functions.wait_warm(60)))
        waiting.start()
        until((code / "importing").exists, "slow_init's import started")
        assert waiting.is_alive()  # its import cannot end before the mark below: neither can the wait
        (code / "go").touch()
        waiting.join(60)
        assert not waiting.is_alive()
        assert waited["slow_init"] == {"ready": True, "error": None}
        assert (code / "imported").read_text() == (code / "importing").read_text()  # the worker's own init, done
        assert waited["broken_init"]["ready"] is False
        assert waited["broken_init"]["error"]["errorType"] == "Runtime.ImportModuleError"
        assert "missing_dependency" in waited["broken_init"]["error"]["errorMessage"]
        # the warm worker serves the first invocation: no second import
        served = functions.invoke("slow_init", {})
        assert served.ok
        assert str(served.payload["imported_by"]) == (code / "imported").read_text()
        assert functions.invoke("broken_init", {}).payload["errorType"] == "Runtime.ImportModuleError"
    finally:
        (code / "go").touch()
        functions.close()


def test_a_timed_out_invocation_leaves_the_runtimes_line_in_the_functions_log(
    workers_app: AppModel, tmp_path: pathlib.Path
) -> None:
    functions = Functions(
        only(workers_app, "sleeper"),
        table_name="shop-local",
        endpoint="http://127.0.0.1:9",
        state_dir=tmp_path,
        log_dir=tmp_path,
    )
    try:
        result = functions.invoke("sleeper", {})
    finally:
        functions.close()
    assert not result.ok
    assert result.payload["errorType"] == "Sandbox.Timedout"
    (line,) = (tmp_path / "sleeper.log").read_text().splitlines()
    record = json.loads(line)
    assert record["level"] == "ERROR"
    assert record["errorType"] == "Sandbox.Timedout"
    assert record["message"] == f"RequestId: {result.request_id} Error: Task timed out after 1.00 seconds"
    assert record["requestId"] == result.request_id


@pytest.mark.integration
def test_localstripes_port_is_known_before_it_answers() -> None:
    server = LocalStripe().spawn()
    try:
        port = server.wait_port()
        assert server.endpoint == f"http://127.0.0.1:{port}"  # what `dev` gives its workers before it waits
        assert server.start() is server
        assert server.port == port
        server.request("POST", "/v1/customers", {"email": "early@example.com"})
    finally:
        server.stop()


@pytest.mark.integration
def test_motos_port_is_known_before_it_answers_and_its_objects_outlive_it(tmp_path: pathlib.Path) -> None:
    # Under xdist the worker may hold another stack's moto child already (a session stack of another test).
    others = {p.pid for p in descendants(os.getpid()) if "local_runtime.local_aws" in p.cmdline}
    aws = LocalAws(tmp_path).spawn()
    try:
        port = aws.wait_port()
        assert aws.endpoint == f"http://127.0.0.1:{port}"  # what `dev` gives its workers before it waits
        aws.wait_ready()
        aws.create_buckets(["shop-local-archive"])
        aws.client("s3").put_object(Bucket="shop-local-archive", Key="orders/o1.json", Body=b'{"order_id": "o1"}')
        (child,) = [
            p for p in descendants(os.getpid()) if "local_runtime.local_aws" in p.cmdline and p.pid not in others
        ]
    finally:
        aws.stop()
    assert (tmp_path / "s3" / "shop-local-archive" / "orders/o1.json").read_bytes() == b'{"order_id": "o1"}'
    assert not still_alive(child)


@pytest.mark.integration
def test_dynamodb_locals_port_is_known_at_its_spawn_and_start_moves_it_if_it_was_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`dev` gives its workers the endpoint `spawn` names; when that port is taken before Java binds it, `start`
    answers on another one, and `dev` starts the workers again with it."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        picks = iter([busy])
        real = dynamodb_local.free_port
        monkeypatch.setattr(dynamodb_local, "free_port", lambda: next(picks, None) or real())
        ddb = DynamoDBLocal(jvm_options=dynamodb_local.QUICK_START)
        try:
            assert ddb.spawn().endpoint == f"http://127.0.0.1:{busy}"
            ddb.start()
            assert ddb.port != busy
            assert ddb.client().list_tables()["TableNames"] == []
        finally:
            ddb.stop()
