"""The one lazy-client helper: every process-wide boto3 client is created once, on first use, in its module."""

from __future__ import annotations

import sys
import threading
import types

import boto3
import pytest

from shop.lazy_client import ProcessClient


@pytest.fixture
def module(monkeypatch):
    holder = types.ModuleType("tests_lazy_client_holder")
    holder._client = None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, holder.__name__, holder)
    return holder


def test_concurrent_first_uses_create_one_client_kept_in_the_module(module, monkeypatch):
    made: list[str] = []
    started = threading.Barrier(8)

    class Session:
        def client(self, service, config):
            made.append(service)
            return object()

    monkeypatch.setattr(boto3.session, "Session", Session)
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
