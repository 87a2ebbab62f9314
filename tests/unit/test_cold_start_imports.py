"""The cold-start measures keep every import working and keep unused packages out of the process."""

from __future__ import annotations

import importlib

import pytest

from tests.support.fresh_python import fresh_python


@pytest.mark.parametrize("function", ["customers", "products", "orders", "sessions", "order_events"])
def test_a_handler_import_leaves_out_what_it_does_not_use(function):
    loaded = fresh_python(
        "import json, sys\n"
        "from local_runtime.worker import import_handler_module\n"
        "from shop import config\n"
        f"module = import_handler_module('functions/{function}', 'handler')\n"
        "read = config.settings.cache_info().misses + config.payment_settings.cache_info().misses\n"
        "print(json.dumps({'settings_read': read, 'asyncio': 'asyncio' in sys.modules, 'xray': 'aws_xray_sdk' in sys.modules,"
        " 'appsync': any('appsync' in name for name in sys.modules), 'handler': callable(module.handler),"
        " 'parameters': 'aws_lambda_powertools.utilities.parameters' in sys.modules,"
        " 'boto3': 'boto3' in sys.modules}))"
    )
    # Powertools' batch module (the stream processor's) defines its async processor at import.
    uses_asyncio = function == "order_events"
    # the pagination key's parameters utility loads on the first paginated request, not at init
    # the shop's clients are botocore's (shop.runtime.botocore_clients); Powertools' idempotency (orders) still imports boto3
    uses_boto3 = function == "orders"
    assert loaded == {
        "settings_read": 0,  # at the first call: the services a handler builds at import read none
        "asyncio": uses_asyncio,
        "xray": False,
        "appsync": False,
        "handler": True,
        "parameters": False,
        "boto3": uses_boto3,
    }


def test_every_name_of_the_lazily_loaded_packages_still_imports():
    loaded = fresh_python(
        "import json\n"
        "from shop.runtime import lazy_powertools\n"
        "lazy_powertools.install()\n"
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


def test_the_catalogue_function_loads_only_the_models_and_repositories_it_uses():
    loaded = fresh_python(
        "import json, sys\n"
        "from local_runtime.worker import import_handler_module\n"
        "import_handler_module('functions/products', 'handler')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('shop.models.', 'shop.repository.')))))"
    )
    for unused in ("shop.models.orders", "shop.models.sessions", "shop.models.carts", "shop.repository.orders"):
        assert unused not in loaded
    assert "shop.models.products" in loaded


@pytest.mark.parametrize("package", ["shop.models", "shop.repository"])
def test_every_name_a_shop_package_exports_imports_and_no_other(package):
    loaded = fresh_python(
        "import importlib, json\n"
        f"package = importlib.import_module('{package}')\n"
        "values = {name: getattr(package, name).__module__ if hasattr(getattr(package, name), '__module__')"
        " else None for name in package.__all__}\n"
        "try:\n"
        "    package.NoSuchName\n"
        "    missing = 'found'\n"
        "except AttributeError as error:\n"
        "    missing = str(error)\n"
        "print(json.dumps({'values': values, 'missing': missing}))"
    )
    assert set(loaded["values"]) == set(importlib.import_module(package).__all__)
    assert all(module is None or module.startswith("shop.") for module in loaded["values"].values())
    assert loaded["missing"] == f"module {package!r} has no attribute 'NoSuchName'"


def test_the_stream_function_loads_the_rules_of_rarer_records_on_their_first_record():
    loaded = fresh_python(
        "import json, sys\n"
        "from local_runtime.worker import import_handler_module\n"
        "import_handler_module('functions/order_events', 'handler')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('shop.services.'))))"
    )
    for rarer in ("shop.services.category_moves", "shop.services.product_events", "shop.services.archival"):
        assert rarer not in loaded
    assert "shop.services.order_events" in loaded


def test_the_runtime_package_itself_imports_nothing():
    # a handler's first line imports shop.runtime.lean_init: the package costs no import of its own
    loaded = fresh_python(
        "import json, sys\n"
        "import shop\n"
        "before = set(sys.modules)\n"
        "import shop.runtime\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    assert loaded == ["shop.runtime"]
