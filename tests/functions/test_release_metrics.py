"""A broken release is visible: an unexpected exception answered 500 is counted per function and per version.

Lambda's Errors metric counts only unhandled errors, and the resolver handles every exception (a 500), so
the canary (infra.constructs.functions.live_alias) alarms on this count of the version being deployed.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.functions.apigw import call


class Bug:
    """A before-send hook raising what no code path expects, as a bug in a handler would."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def __call__(self, **_: Any) -> None:
        raise RuntimeError("a bug")

    def __enter__(self) -> Bug:
        self.client.meta.events.register_first("before-send.dynamodb", self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.meta.events.unregister("before-send.dynamodb", self)


def _emf(output: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]
    return [line for line in lines if "_aws" in line]


def _counted(blobs: list[dict[str, Any]], name: str) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    found = []
    for blob in blobs:
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            if any(metric["Name"] == name for metric in directive["Metrics"]):
                for dimensions in directive["Dimensions"]:
                    found.append((tuple(dimensions), {d: blob[d] for d in dimensions} | {name: blob[name]}))
    return found


def test_an_unexpected_exception_counts_a_server_error_of_the_function_and_its_version(moto_api, monkeypatch, capsys):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_VERSION", "7")
    capsys.readouterr()
    with Bug(moto_api.client):
        reply = call("GET", "/products/prod-keyboard")
    assert (reply.status, reply.code) == (500, "INTERNAL_ERROR")
    counted = _counted(_emf(capsys.readouterr().out), "ServerErrors")
    by_version = [values for dimensions, values in counted if dimensions == ("service", "function_version")]
    by_function = [values for dimensions, values in counted if dimensions == ("service",)]  # its own alarm
    service = os.environ["POWERTOOLS_SERVICE_NAME"]  # the function's name on Lambda (infra: POWERTOOLS_SERVICE_NAME)
    assert by_version == [{"service": service, "function_version": "7", "ServerErrors": [1.0]}]
    assert by_function == [{"service": service, "ServerErrors": [1.0]}]


@pytest.mark.parametrize(("path", "status"), [("/products/prod-keyboard", 200), ("/products/no-such-product", 404)])
def test_answers_that_are_not_server_errors_count_nothing(moto_api, capsys, path, status):
    capsys.readouterr()
    assert call("GET", path).status == status
    assert _counted(_emf(capsys.readouterr().out), "ServerErrors") == []
