"""The process-wide clients (shop.runtime.botocore_clients): each created once, on first use, in its module, by
botocore without boto3, resolving endpoints as botocore's whole file does."""

from __future__ import annotations

import sys
import threading
import types

import pytest

from shop.runtime import botocore_clients, cut_botocore_endpoints
from shop.runtime.botocore_clients import ProcessClient


@pytest.fixture
def module(monkeypatch):
    holder = types.ModuleType("tests_botocore_clients_holder")
    holder._client = None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, holder.__name__, holder)
    return holder


def test_concurrent_first_uses_create_one_client_kept_in_the_module(module, monkeypatch):
    made: list[str] = []
    started = threading.Barrier(8)

    def create_client(service):
        made.append(service)
        return object()

    monkeypatch.setattr(botocore_clients, "create_client", create_client)
    lazy = ProcessClient(module.__name__, "events")
    got: list[object] = []

    def first_use() -> None:
        started.wait()
        got.append(lazy.get())

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == ["events"]
    assert len({id(client) for client in got}) == 1
    assert module._client is got[0]
    lazy.reset()
    assert module._client is None
    assert lazy.get() is not got[0]
    assert made == ["events", "events"]


def test_a_client_a_test_puts_in_the_module_is_the_one_used(module):
    replaced = object()
    module._client = replaced
    assert ProcessClient(module.__name__, "s3").get() is replaced


def test_the_store_the_archive_and_the_publisher_use_the_helper():
    from shop import publishing
    from shop.repository import order_archive, store

    helpers = [store._dynamodb, order_archive._s3, publishing._events]
    assert all(isinstance(helper, ProcessClient) for helper in helpers)
    assert [helper._service for helper in helpers] == ["dynamodb", "s3", "events"]


def test_clients_are_botocore_clients_made_without_importing_boto3(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setattr(botocore_clients, "_shared_loader", None)
    dynamodb = botocore_clients.create_client("dynamodb")
    streams = botocore_clients.create_client("dynamodbstreams")
    assert dynamodb.meta.service_model.service_name == "dynamodb"
    assert dynamodb.meta.region_name == "eu-west-1"
    assert streams.meta.service_model.api_version == "2012-08-10"
    assert dynamodb.meta.config.retries == botocore_clients.client_config().retries
    script = (
        "import sys; from shop.runtime.botocore_clients import create_client; create_client('dynamodb'); "
        "sys.exit(int('boto3' in sys.modules or 's3transfer' in sys.modules))"
    )
    import os
    import pathlib
    import subprocess

    # the child finds `shop` where this process found it: the layer's path given explicitly, since pytest's
    # `pythonpath` setting reaches only this process (a run outside make has no PYTHONPATH to inherit)
    layer = str(pathlib.Path(botocore_clients.__file__).resolve().parents[2])
    env = {**os.environ, "AWS_DEFAULT_REGION": "eu-west-1", "PYTHONPATH": layer}
    child = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
    assert child.returncode == 0, child.stderr


def test_an_unknown_service_is_still_refused():
    from botocore.exceptions import DataNotFoundError, UnknownServiceError

    with pytest.raises((DataNotFoundError, UnknownServiceError)):
        botocore_clients.create_client("no-such-service")


def test_the_cut_endpoints_file_is_cut_from_the_pinned_botocore():
    import json

    import botocore
    from botocore.loaders import Loader

    full = Loader(include_default_search_paths=False, extra_search_paths=[Loader.BUILTIN_DATA_PATH]).load_data(
        "endpoints"
    )
    committed = json.loads(botocore_clients.ENDPOINTS_FILE.read_text(encoding="utf-8"))
    assert committed == cut_botocore_endpoints.cut_endpoints(full, botocore.__version__), (
        "botocore changed: run `PYTHONPATH=layers/shared/python python -m shop.runtime.cut_botocore_endpoints` and commit the file"
    )


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1", "cn-north-1", "us-gov-west-1", "us-iso-east-1", "local"])
@pytest.mark.parametrize("service", sorted(botocore_clients.ENDPOINT_PREFIXES))
def test_clients_resolve_endpoints_and_signing_as_with_botocores_whole_file(monkeypatch, region, service):
    import botocore.session

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "AWS_DATA_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", region)
    ours = botocore_clients.create_client(service)
    whole = botocore.session.Session().create_client(service, config=botocore_clients.client_config())
    assert ours._endpoint.host == whole._endpoint.host
    seen = [(c.meta.region_name, c._request_signer._signing_name, c._request_signer.region_name) for c in (ours, whole)]
    assert seen[0] == seen[1]


def test_another_botocore_version_reads_botocores_whole_file(monkeypatch):
    monkeypatch.setattr(botocore_clients, "_endpoints", None)
    monkeypatch.setattr(botocore_clients, "ENDPOINTS_FILE", botocore_clients.ENDPOINTS_FILE.with_name("missing.json"))
    assert botocore_clients._cut_endpoints() is None
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert botocore_clients.create_client("dynamodb")._endpoint.host == "https://dynamodb.eu-west-1.amazonaws.com"
