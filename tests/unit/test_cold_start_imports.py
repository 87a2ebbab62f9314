"""The cold-start measures keep every import working and keep unused packages out of the process."""

from __future__ import annotations

import pytest

from tests.support.fresh_python import fresh_python


@pytest.mark.parametrize("function", ["customers", "products", "orders", "sessions", "order_events"])
def test_a_handler_import_leaves_out_what_it_does_not_use(function):
    loaded = fresh_python(
        "import json, sys\n"
        "from local_runtime.worker import import_handler_module\n"
        f"module = import_handler_module('functions/{function}', 'handler')\n"
        "print(json.dumps({'asyncio': 'asyncio' in sys.modules, 'xray': 'aws_xray_sdk' in sys.modules,"
        " 'appsync': any('appsync' in name for name in sys.modules), 'handler': callable(module.handler),"
        " 'parameters': 'aws_lambda_powertools.utilities.parameters' in sys.modules}))"
    )
    # Powertools' batch module (the stream processor's) defines its async processor at import.
    uses_asyncio = function == "order_events"
    # the pagination key's parameters utility loads on the first paginated request, not at init
    assert loaded == {"asyncio": uses_asyncio, "xray": False, "appsync": False, "handler": True, "parameters": False}


def test_every_name_of_the_lazily_loaded_packages_still_imports():
    loaded = fresh_python(
        "import json\n"
        "from shop import lazy_packages\n"
        "lazy_packages.install()\n"
        "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, AppSyncResolver, Response\n"
        "from aws_lambda_powertools.event_handler import content_types\n"
        "from aws_lambda_powertools.utilities.data_classes import DynamoDBStreamEvent, SQSEvent\n"
        "import aws_lambda_powertools.event_handler as eh\n"
        "print(json.dumps({'names': [c.__name__ for c in (APIGatewayHttpResolver, AppSyncResolver, Response,"
        " DynamoDBStreamEvent, SQSEvent)], 'json': content_types.APPLICATION_JSON,"
        " 'all': 'APIGatewayHttpResolver' in eh.__all__}))"
    )
    assert loaded == {
        "names": ["APIGatewayHttpResolver", "AppSyncResolver", "Response", "DynamoDBStreamEvent", "SQSEvent"],
        "json": "application/json",
        "all": True,
    }
