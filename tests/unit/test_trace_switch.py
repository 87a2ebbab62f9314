"""POWERTOOLS_TRACE_DISABLED is read as Powertools reads it (issue 23, item 7): every spelling it takes as
true keeps Tracer and the X-Ray SDK out of the stream function and the API functions, checked in a fresh
interpreter per value; a false spelling still wraps the handler in Tracer."""

from __future__ import annotations

import pytest
from aws_lambda_powertools.shared.functions import strtobool

from tests.support.fresh_python import LAMBDA_LIKE_ENV, fresh_python

TRUE_SPELLINGS = ["1", "true", "True", "TRUE", "yes", "on", "t", "y"]

IMPORT = (
    "import json, sys\n"
    "from local_runtime.worker import import_handler_module\n"
    "module = import_handler_module('functions/{function}', 'handler')\n"
    "print(json.dumps({{'xray': sum(name.startswith('aws_xray_sdk') for name in sys.modules),"
    " 'handler': callable(module.handler)}}))"
)


def loaded(function: str, value: str) -> dict[str, int]:
    # In Lambda (LAMBDA_TASK_ROOT set) a Tracer that is on imports the X-Ray SDK's modules at once.
    env = {**LAMBDA_LIKE_ENV, "LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": value}
    return fresh_python(IMPORT.format(function=function), env=env)  # type: ignore[no-any-return]


@pytest.mark.parametrize("value", TRUE_SPELLINGS)
def test_every_spelling_powertools_takes_as_off_keeps_tracer_out_of_the_stream_function(value):
    assert strtobool(value)  # Powertools' own reading: off
    assert loaded("order_events", value) == {"xray": 0, "handler": True}


@pytest.mark.parametrize("value", ["1", "yes"])
def test_the_api_functions_read_it_the_same_way(value):
    assert loaded("products", value) == {"xray": 0, "handler": True}


@pytest.mark.parametrize("function", ["order_events", "products"])
def test_a_false_spelling_still_traces(function):
    assert loaded(function, "0")["xray"] > 0
