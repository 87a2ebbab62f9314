"""The gateway over real HTTP and the stream poller, on stand-in functions and DynamoDB Local."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import socket
import struct
import threading
import time

import pytest
import requests

from local_runtime import auth, failures
from local_runtime import poller as poller_module
from local_runtime.dynamodb_local import DynamoDBLocal, create_table
from local_runtime.functions import Functions, InvokeResult
from local_runtime.gateway import Gateway, swagger_assets_dir
from local_runtime.poller import StreamPoller
from local_runtime.template import load_app

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def copied_mini_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(FIXTURES / "functions", root / "functions")
    return load_app(templates={"Mini": json.loads((FIXTURES / "mini.template.json").read_text())}, root=root)


@pytest.fixture(scope="module")
def gateway_and_poller(copied_mini_app, tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    functions = Functions(
        copied_mini_app, table_name="shop-local", endpoint="http://127.0.0.1:9", state_dir=state, concurrency=2
    )
    keys = auth.load_or_create_keys(state)
    gateway = Gateway(
        copied_mini_app.routes, functions.invoke, auth.JwtAuthorizer(keys), openapi=lambda: {"openapi": "3.1.0"},
        swagger_dir=swagger_assets_dir(),
    )  # fmt: skip
    server = gateway.server("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", keys, functions
    server.shutdown()
    server.server_close()
    functions.close()


def test_public_route_invokes_the_function_with_a_payload_2_event(gateway_and_poller):
    url, _keys, _ = gateway_and_poller
    res = requests.get(f"{url}/products/p1?x=1", headers={"Cookie": "c=1"}, timeout=30)
    assert res.status_code == 200
    assert res.headers["x-fn"] == "products"
    assert res.headers["apigw-requestid"]
    assert res.cookies.get("a") == "1"
    body = res.json()
    event = body["event"]
    assert event["routeKey"] == "GET /products/{product_id}"
    assert event["pathParameters"] == {"product_id": "p1"}
    assert event["queryStringParameters"] == {"x": "1"}
    assert event["cookies"] == ["c=1"]
    assert "authorizer" not in event["requestContext"]
    assert body["env"]["TABLE_NAME"] == "shop-local"
    assert body["env"]["EVENT_BUS_NAME"] is None
    assert body["env"]["AWS_ENDPOINT_URL_DYNAMODB"] == "http://127.0.0.1:9"
    assert body["context"]["function_name"] == "shop-local-products"
    assert body["context"]["memory_limit_in_mb"] == 512
    assert 0 < body["context"]["remaining"] <= 10_000


def test_protected_route_needs_a_valid_token(gateway_and_poller):
    url, keys, _ = gateway_and_poller
    assert requests.post(f"{url}/products", json={}, timeout=30).status_code == 401
    bad = requests.post(f"{url}/products", json={}, headers={"Authorization": "Bearer x"}, timeout=30)
    assert bad.status_code == 401
    assert bad.json() == {"message": "Unauthorized"}
    token = auth.issue_token(keys, "demo-admin", groups=["admin"])
    ok = requests.post(f"{url}/products", json={"a": 1}, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert ok.status_code == 200
    event = ok.json()["event"]
    assert event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] == "demo-admin"
    assert event["requestContext"]["authorizer"]["jwt"]["claims"]["cognito:groups"] == "[admin]"
    assert json.loads(event["body"]) == {"a": 1}


def test_every_connection_is_served_with_tcp_nodelay_and_kept_alive(copied_mini_app, tmp_path):
    """The head and the body of an answer are two writes: with Nagle's algorithm on, the body waited for the client's
    delayed ACK of the head, about 40 ms on every request of a keep-alive connection (schemathesis', a browser's)."""
    gateway = Gateway(
        copied_mini_app.routes, functions_never_invoked, auth.JwtAuthorizer(auth.load_or_create_keys(tmp_path))
    )
    server = gateway.server("127.0.0.1", 0)
    handler_class = server.RequestHandlerClass
    nodelay: list[int] = []
    setup = handler_class.setup

    def recording_setup(handler):
        setup(handler)
        nodelay.append(handler.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    handler_class.setup = recording_setup
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with requests.Session() as session:
            answers = [session.get(f"{url}/no-such-route", timeout=30).status_code for _ in range(3)]
    finally:
        server.shutdown()
        server.server_close()
    assert answers == [404, 404, 404]
    assert len(nodelay) == 1  # one connection served all three
    assert nodelay[0] != 0


def functions_never_invoked(*_args, **_kwargs):
    raise AssertionError("an unknown route reaches no function")


def test_unknown_route_errors_and_docs(gateway_and_poller):
    url, keys, _ = gateway_and_poller
    missing = requests.get(f"{url}/nope", timeout=30)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "NOT_FOUND"
    token = auth.issue_token(keys, "u")
    boom = requests.get(f"{url}/products/p1/boom", headers={"Authorization": token}, timeout=30)
    assert boom.status_code == 500
    assert boom.json() == {"message": "Internal Server Error"}
    raw = requests.get(f"{url}/products/p1/raw", headers={"Authorization": token}, timeout=30)
    assert raw.status_code == 200
    assert raw.json() == {"hello": "world"}
    assert requests.get(f"{url}/openapi.json", timeout=30).json() == {"openapi": "3.1.0"}
    docs = requests.get(f"{url}/docs", timeout=30)
    assert docs.status_code == 200
    assert "swagger-ui" in docs.text
    assert requests.get(f"{url}/docs/swagger-ui-bundle.min.js", timeout=30).status_code == 200


def test_concurrent_requests(gateway_and_poller):
    url, _keys, _ = gateway_and_poller
    results: list[int] = []

    def call() -> None:
        results.append(requests.get(f"{url}/products/p1", timeout=60).status_code)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 8


def test_a_worker_killed_mid_request_is_a_500_like_api_gateway_and_a_fresh_worker_serves_the_next(gateway_and_poller):
    url, _keys, functions = gateway_and_poller
    answers: list[requests.Response] = []
    in_flight = threading.Thread(target=lambda: answers.append(requests.get(f"{url}/products/slow", timeout=60)))
    in_flight.start()
    pool = functions.pools["products"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and pool._idle.qsize() == len(pool._all):  # wait until one is busy
        time.sleep(0.05)
    time.sleep(0.3)
    busy = [w.proc.pid for w in list(pool._all) if w not in list(pool._idle.queue)]
    assert busy, (answers, pool._idle.qsize(), len(pool._all))
    for pid in busy:
        os.kill(pid, signal.SIGKILL)
    in_flight.join(30)
    [crashed] = answers
    assert crashed.status_code == 500
    assert crashed.json() == {"message": "Internal Server Error"}
    assert crashed.headers["apigw-requestid"]
    assert requests.get(f"{url}/products/p1", timeout=60).status_code == 200
    assert not set(busy) & {w.proc.pid for w in pool._all}


@pytest.mark.parametrize(
    ("segment", "decoded"),
    [
        ("auth0%7C123", "auth0|123"),
        ("auth0|123", "auth0|123"),
        ("jos%C3%A9", "josé"),
        ("a%20b", "a b"),
        ("a+b", "a+b"),
        ("a%2Bb", "a+b"),
        ("%E2%82%AC%5Bx%5D%23", "€[x]#"),
    ],
)
def test_paths_are_decoded_before_routing_as_api_gateway_does(gateway_and_poller, segment, decoded):
    url, _keys, _ = gateway_and_poller
    res = requests.get(f"{url}/products/{segment}", timeout=30)
    assert res.status_code == 200
    event = res.json()["event"]
    assert event["routeKey"] == "GET /products/{product_id}"
    assert event["pathParameters"] == {"product_id": decoded}
    assert event["rawPath"] == event["requestContext"]["http"]["path"] == f"/products/{decoded}"


def test_an_encoded_slash_separates_segments_as_api_gateway_does(gateway_and_poller):
    url, keys, _ = gateway_and_poller
    token = auth.issue_token(keys, "u")
    res = requests.get(f"{url}/products/a%2Fb", headers={"Authorization": token}, timeout=30)
    assert res.status_code == 200
    event = res.json()["event"]
    assert event["routeKey"] == "ANY /products/{product_id}/{proxy+}"
    assert event["pathParameters"] == {"product_id": "a", "proxy": "b"}


def test_a_path_that_does_not_decode_to_utf8_is_400(gateway_and_poller):
    url, _keys, _ = gateway_and_poller
    res = requests.get(f"{url}/products/%FF", timeout=30)
    assert res.status_code == 400
    assert res.json() == {"message": "Bad Request"}


def test_an_event_over_lambdas_6_mb_request_limit_is_413(gateway_and_poller):
    url, keys, _ = gateway_and_poller
    headers = {"Authorization": f"Bearer {auth.issue_token(keys, 'u')}", "Content-Type": "application/json"}
    too_big = b'{"pad": "' + b"x" * (6 * 1024 * 1024) + b'"}'
    refused = requests.post(f"{url}/products", data=too_big, headers=headers, timeout=60)
    assert refused.status_code == 413
    assert refused.json() == {"message": "Request Too Long"}
    fits = b'{"pad": "' + b"x" * 6_000_000 + b'"}'
    assert requests.post(f"{url}/products", data=fits, headers=headers, timeout=60).status_code == 200


def test_a_body_over_the_http_apis_10_mb_limit_is_413_without_reading_it(gateway_and_poller):
    url, _keys, _ = gateway_and_poller
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(b"POST /products HTTP/1.1\r\nHost: local\r\nContent-Length: 10485761\r\n\r\n")
        reply = conn.makefile("rb").read()
    assert reply.startswith(b"HTTP/1.1 413 ")
    assert reply.endswith(b'{"message": "Request Entity Too Large"}')


@pytest.mark.integration
def test_poller_filters_batches_retries_and_dead_letters(copied_mini_app, tmp_path, monkeypatch):
    mapping = copied_mini_app.mappings[0]
    batches = copied_mini_app.function("order_events").code_dir / "batches.jsonl"
    batches.unlink(missing_ok=True)
    with DynamoDBLocal() as ddb:
        client = ddb.client()
        create_table(client, "shop-local", spec=copied_mini_app.table.spec)
        functions = Functions(copied_mini_app, table_name="shop-local", endpoint=ddb.endpoint, state_dir=tmp_path)
        poller = StreamPoller(
            mapping,
            dynamodb=client,
            streams=ddb.client("dynamodbstreams"),
            table_name="shop-local",
            invoke=lambda event: functions.invoke("order_events", event),
            state_dir=tmp_path,
        )
        try:
            for i in range(3):
                item = {"PK": {"S": f"ORDER#{i}"}, "SK": {"S": "ORDER"}, "entity": {"S": "ORDER"}}
                if i == 1:
                    item["poison"] = {"BOOL": True}
                client.put_item(TableName="shop-local", Item=item)
            client.put_item(
                TableName="shop-local", Item={"PK": {"S": "PRODUCT#1"}, "SK": {"S": "P"}, "entity": {"S": "PRODUCT"}}
            )
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not poller.poll_once():
                time.sleep(0.2)
            monkeypatch.setattr(poller_module, "SHARD_LIST_MAX_AGE_S", 3600.0)  # passes a loaded machine spaces out
            idle_calls = _calls_of_idle_passes(poller, 3)
        finally:
            functions.close()
    # an idle pass reads each open shard and nothing else: the ARN and the shard list are kept between passes
    assert idle_calls == ["GetRecords"] * 3
    delivered = [json.loads(line) for line in batches.read_text().splitlines()]
    keys = [[r["dynamodb"]["Keys"]["PK"]["S"] for r in b["Records"]] for b in delivered]
    # first the whole batch, then retries from the poison record (1 + 3 retries), never the product
    assert keys[0] == ["ORDER#0", "ORDER#1", "ORDER#2"]
    assert keys[1:] == [["ORDER#1", "ORDER#2"]] * 3
    assert delivered[0]["Records"][0]["eventSource"] == "aws:dynamodb"
    store = failures.DirectoryStore(tmp_path / failures.LOCAL_DIR)
    failed = [store.read(key) for key in store.object_keys()]
    assert len(failed) == 1
    assert failed[0]["requestContext"]["condition"] == "RetryAttemptsExhausted"
    records = failures.event_of(failed[0])["Records"]
    assert [r["dynamodb"]["Keys"]["PK"]["S"] for r in records] == ["ORDER#1", "ORDER#2"]
    assert json.loads((tmp_path / "stream-checkpoints-order_events.json").read_text())


def _calls_of_idle_passes(poller: StreamPoller, passes: int) -> list[str]:
    calls: list[str] = []

    def record(model, **_):
        calls.append(model.name)

    for client in (poller.dynamodb, poller.streams):
        client.meta.events.register("before-call.*", record)
    for _ in range(passes):
        assert poller.poll_once() is False
    return calls


def _order(client, n: int) -> None:
    item = {"PK": {"S": f"ORDER#resume-{n}"}, "SK": {"S": "ORDER"}, "entity": {"S": "ORDER"}}
    client.put_item(TableName="shop-local", Item=item)


def _delivered_keys(batches: pathlib.Path) -> list[str]:
    if not batches.exists():
        return []
    return [
        r["dynamodb"]["Keys"]["PK"]["S"]
        for line in batches.read_text().splitlines()
        for r in json.loads(line)["Records"]
    ]


def _poll_until(poller: StreamPoller, batches: pathlib.Path, key: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and key not in _delivered_keys(batches):
        poller.poll_or_recover()
        time.sleep(0.2)


def test_poller_resumes_after_the_store_restarts_and_after_its_own_restart(copied_mini_app, tmp_path):
    """Store gone and back on the same data, then a new poller (a killed one restarted): every record once."""
    batches = copied_mini_app.function("order_events").code_dir / "batches.jsonl"
    batches.unlink(missing_ok=True)
    ddb = DynamoDBLocal(data_dir=tmp_path / "data").start()
    functions = Functions(copied_mini_app, table_name="shop-local", endpoint=ddb.endpoint, state_dir=tmp_path)

    def poller() -> StreamPoller:
        return StreamPoller(
            copied_mini_app.mappings[0],
            dynamodb=ddb.client(),
            streams=ddb.client("dynamodbstreams"),
            table_name="shop-local",
            invoke=lambda event: functions.invoke("order_events", event),
            state_dir=tmp_path,
        )

    try:
        create_table(ddb.client(), "shop-local", spec=copied_mini_app.table.spec)
        first = poller()
        _order(ddb.client(), 1)
        _poll_until(first, batches, "ORDER#resume-1")
        ddb.stop()
        assert first.poll_or_recover() is False  # the store is gone: no crash, nothing delivered
        ddb.restart()
        _order(ddb.client(), 2)
        _poll_until(first, batches, "ORDER#resume-2")
        _order(ddb.client(), 3)
        _poll_until(poller(), batches, "ORDER#resume-3")  # a fresh poller starts from the checkpoint
    finally:
        functions.close()
        ddb.stop()
    assert _delivered_keys(batches) == ["ORDER#resume-1", "ORDER#resume-2", "ORDER#resume-3"]


class _HeldAnswers:
    """An invoker whose answers (1 MB each) wait until the test lets them go, and the gateway's server with a mark set
    once it has finished with each connection (after any error it reports)."""

    def __init__(self, app, tmp_path):
        self.release = threading.Event()
        self.invoked: list[str] = []
        gateway = Gateway(app.routes, self.invoke, auth.JwtAuthorizer(auth.load_or_create_keys(tmp_path)))
        self.server = gateway.server("127.0.0.1", 0)
        self.closed = threading.Semaphore(0)
        shutdown_request = self.server.shutdown_request

        def counted(request):
            shutdown_request(request)
            self.closed.release()

        self.server.shutdown_request = counted  # type: ignore[method-assign]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def invoke(self, name, event):
        self.invoked.append(event["rawPath"])
        self.release.wait(30)
        return InvokeResult(True, {"statusCode": 200, "body": "x" * 1_000_000}, 1.0, "req-1")

    def connect(self):
        client = socket.create_connection(("127.0.0.1", self.server.server_address[1]), timeout=30)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() resets at once
        return client

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_client_that_goes_away_mid_answer_is_let_go_quietly(copied_mini_app, tmp_path, capfd):
    held = _HeldAnswers(copied_mini_app, tmp_path)
    try:
        client = held.connect()
        client.sendall(b"GET /products/gone HTTP/1.1\r\nHost: local\r\n\r\n")
        while not held.invoked:
            time.sleep(0.01)
        client.close()  # the client gives up while the function runs
        held.release.set()
        assert held.closed.acquire(timeout=30)  # the gateway wrote into the reset connection, and let it go

        assert requests.get(f"{held.url}/products/next", timeout=30).status_code == 200  # still serving
    finally:
        held.stop()
    printed = capfd.readouterr().err
    assert "Traceback" not in printed
    assert "Error" not in printed


def test_a_request_whose_client_goes_away_mid_body_invokes_nothing(copied_mini_app, tmp_path, capfd):
    held = _HeldAnswers(copied_mini_app, tmp_path)
    try:
        client = held.connect()
        client.sendall(b"GET /products/cut HTTP/1.1\r\nHost: local\r\nContent-Length: 1000\r\n\r\n" + b"{" * 10)
        client.shutdown(socket.SHUT_WR)  # 10 bytes of the 1,000 announced, then the client is gone
        assert held.closed.acquire(timeout=30)
        client.close()
    finally:
        held.stop()
    assert held.invoked == []
    printed = capfd.readouterr().err
    assert "Traceback" not in printed
