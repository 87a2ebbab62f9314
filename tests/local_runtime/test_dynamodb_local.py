"""The DynamoDB Local launcher: start, table creation (built-in and from a template), streams, stop."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from local_runtime import dynamodb_local
from local_runtime.dynamodb_local import DynamoDBLocal, create_table, find_jar, free_port, require_java

pytestmark = pytest.mark.integration

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is not running Java any more
    stat = pathlib.Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


@pytest.fixture(scope="module")
def ddb():
    with DynamoDBLocal() as instance:
        yield instance


def test_find_jar_and_java():
    jar, lib = find_jar()
    assert jar.name == "DynamoDBLocal.jar"
    assert lib.is_dir()
    assert require_java()


def test_find_jar_explains_missing_install(tmp_path, monkeypatch):
    monkeypatch.delenv("DYNAMODB_LOCAL_JAR", raising=False)
    with pytest.raises(RuntimeError, match="npm ci"):
        find_jar(tmp_path)


def test_require_java_missing_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    require_java.cache_clear()
    try:
        with pytest.raises(RuntimeError) as info:
            require_java()
    finally:
        require_java.cache_clear()
    message = str(info.value)
    assert "\n" not in message
    assert message == dynamodb_local.JAVA_MISSING
    assert "apt-get install openjdk-17-jre-headless" in message


def test_starts_and_answers(ddb):
    assert ddb.endpoint.startswith("http://127.0.0.1:")
    assert ddb.client().list_tables()["TableNames"] is not None


def test_default_table_has_keys_gsi_stream_and_ttl(ddb):
    client = ddb.client()
    create_table(client, "shop-default")
    table = client.describe_table(TableName="shop-default")["Table"]
    assert table["KeySchema"] == [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ]
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["LatestStreamArn"]
    (gsi,) = table["GlobalSecondaryIndexes"]
    assert gsi["IndexName"] == "GSI1"
    assert gsi["Projection"] == {"ProjectionType": "ALL"}
    assert [k["AttributeName"] for k in gsi["KeySchema"]] == ["GSI1PK", "GSI1SK"]
    ttl = client.describe_time_to_live(TableName="shop-default")["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}


def test_a_table_for_tests_has_ttl_off_so_only_the_emulator_deletes(ddb):
    client = ddb.client()
    create_table(client, "shop-no-native-ttl", native_ttl=False)
    ttl = client.describe_time_to_live(TableName="shop-no-native-ttl")["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "DISABLED"


def test_create_table_exist_ok(ddb):
    client = ddb.client()
    create_table(client, "shop-twice")
    with pytest.raises(client.exceptions.ResourceInUseException):
        create_table(client, "shop-twice")
    create_table(client, "shop-twice", exist_ok=True)


def test_short_table_name_is_refused(ddb):
    with pytest.raises(ValueError, match="at least 3"):
        create_table(ddb.client(), "ab")


def test_table_from_template_and_stream_records(ddb):
    client = ddb.client()
    create_table(client, "shop-from-template", FIXTURES / "mini.template.json")
    table = client.describe_table(TableName="shop-from-template")["Table"]
    assert table["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert {i["IndexName"] for i in table["GlobalSecondaryIndexes"]} == {"GSI1"}
    client.put_item(TableName="shop-from-template", Item={"PK": {"S": "A#1"}, "SK": {"S": "A"}})
    streams = ddb.client("dynamodbstreams")
    shards = streams.describe_stream(StreamArn=table["LatestStreamArn"])["StreamDescription"]["Shards"]
    records = []
    for shard in shards:
        iterator = streams.get_shard_iterator(
            StreamArn=table["LatestStreamArn"], ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records += streams.get_records(ShardIterator=iterator)["Records"]
    assert [r["eventName"] for r in records] == ["INSERT"]
    assert records[0]["dynamodb"]["NewImage"]["PK"] == {"S": "A#1"}


def test_stop_leaves_no_process():
    ddb = DynamoDBLocal().start()
    pid = ddb.pid
    assert pid is not None
    assert _alive(pid)
    ddb.stop()
    ddb.stop()  # idempotent
    assert not _alive(pid)


def test_persistent_data_dir_survives_restart(tmp_path):
    with DynamoDBLocal(data_dir=tmp_path / "db") as first:
        create_table(first.client(), "shop-persist")
        first.client().put_item(TableName="shop-persist", Item={"PK": {"S": "X"}, "SK": {"S": "Y"}})
    with DynamoDBLocal(data_dir=tmp_path / "db") as second:
        item = second.client().get_item(TableName="shop-persist", Key={"PK": {"S": "X"}, "SK": {"S": "Y"}})
        assert item["Item"]["PK"] == {"S": "X"}


def test_requested_port_is_used():
    port = free_port()
    with DynamoDBLocal(port=port) as ddb:
        assert ddb.endpoint == f"http://127.0.0.1:{port}"


def test_killed_parent_leaves_no_java(tmp_path):
    """Even a SIGKILLed Python parent takes Java with it (PR_SET_PDEATHSIG)."""
    pid_file = tmp_path / "pid"
    script = (
        "import pathlib, time\n"
        "from local_runtime.dynamodb_local import DynamoDBLocal\n"
        "d = DynamoDBLocal().start()\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(d.pid))\n"
        "time.sleep(120)\n"
    )
    root = pathlib.Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "child never started DynamoDB Local"
            assert proc.poll() is None, "child died"
            time.sleep(0.2)
        java_pid = int(pid_file.read_text())
        assert _alive(java_pid)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while _alive(java_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(java_pid)


def test_fixture_template_is_valid_json():
    json.loads((FIXTURES / "mini.template.json").read_text())
