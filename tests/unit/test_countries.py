"""Shipping countries come from the iso3166 package, loaded only when an address is validated."""

from __future__ import annotations

import iso3166

from shop.http_api.countries import country_codes
from shop.http_api.order_schemas import AddressIn
from tests.support.fresh_python import fresh_python


def test_the_document_lists_exactly_the_codes_the_validator_accepts():
    enum = AddressIn.model_json_schema()["properties"]["country"]["enum"]
    assert enum == sorted(iso3166.countries_by_alpha2)
    assert set(enum) == country_codes()
    assert {"US", "GB", "DE", "JP"} <= country_codes()
    assert not {"XX", "UK", "EU", "us"} & country_codes()


def test_the_orders_function_starts_without_loading_the_list():
    loaded = fresh_python(
        "import json, sys\n"
        "from local_runtime.worker import import_handler_module\n"
        "module = import_handler_module('functions/orders', 'handler')\n"
        "at_start = 'iso3166' in sys.modules\n"
        "from shop.http_api.order_schemas import AddressIn\n"
        "AddressIn(name='a', line1='b', city='c', postal_code='1', country='US')\n"
        "print(json.dumps([at_start, 'iso3166' in sys.modules]))"
    )
    assert loaded == [False, True]
