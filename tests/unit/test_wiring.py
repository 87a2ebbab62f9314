"""The composition root: each factory builds its service on the DynamoDB adapters of the table given, and
loads only the modules that service needs (a function's cold start stays what it was)."""

from __future__ import annotations

import inspect

import pytest

from shop import wiring
from shop.repository.store import Table
from tests.support.fresh_python import fresh_python


@pytest.fixture
def table() -> Table:
    return Table(client=object(), table_name="shop-wiring")  # no call is made: building touches no AWS


def test_every_store_of_a_service_is_a_repository_on_the_table_given(table):
    services = {
        "catalog": wiring.catalog_service(table),
        "categories": wiring.category_service(table),
        "customers": wiring.customer_service(table),
        "orders": wiring.order_service(table, 4),
        "sessions": wiring.session_service(table, 600),
        "carts": wiring.cart_service(table),
        "alerts": wiring.alert_service(table),
        "sales": wiring.sales_service(table),
    }
    stores = {
        (name, attribute): store
        for name, service in services.items()
        for attribute, store in vars(service).items()
        if type(store).__module__.startswith("shop.repository.") and attribute != "archive"
    }
    assert len(stores) == 14  # catalog 2, categories 1, customers 1, orders 4, sessions 2, carts 2, alerts, sales
    assert all(store.table is table for store in stores.values())
    assert services["orders"].orders.shards == 4  # type: ignore[attr-defined]
    assert type(services["orders"].archive).__name__ == "ArchiveBucket"


def test_the_stream_processor_builds_the_rules_of_rarer_records_on_first_use(table):
    processor = wiring.order_events_service(table)
    assert processor.effects.table is table  # type: ignore[attr-defined]
    assert processor.effects.sales.table is table  # type: ignore[attr-defined]
    assert processor.products.alerts.table is table  # type: ignore[attr-defined]
    assert processor.moves.categories.table is table  # type: ignore[attr-defined]
    assert processor.archival.remains.table is table  # type: ignore[attr-defined]
    assert processor.archival.now is processor.now


@pytest.mark.parametrize(
    ("factory", "used", "unused"),
    [
        (
            "catalog_service",
            {"shop.services.catalog", "shop.repository.products", "shop.repository.categories"},
            {"shop.services.orders", "shop.repository.orders", "shop.repository.sessions", "shop.repository.carts"},
        ),
        (
            "order_events_service",
            {"shop.services.order_events", "shop.services.sales", "shop.repository.order_effects"},
            {"shop.services.archival", "shop.services.category_moves", "shop.services.product_events"},
        ),
    ],
)
def test_a_factory_loads_only_its_services_modules(factory, used, unused):
    loaded = set(
        fresh_python(
            "import json, sys\n"
            "from shop import wiring\n"
            "from shop.repository.store import Table\n"
            f"wiring.{factory}(Table(object(), 't'))\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('shop.services.', 'shop.repository.')))))"
        )
    )
    assert used <= loaded
    assert not unused & loaded


class _Injected:
    """An InjectedStore whose every method answers its own name."""

    def __getattr__(self, name: str):
        return lambda: f"injected {name}"


def _factories_on_a_table() -> dict[str, object]:
    return {
        name: factory
        for name, factory in vars(wiring).items()
        if inspect.isfunction(factory)
        and not name.startswith("_")
        and next(iter(inspect.signature(factory).parameters), None) == "table"
    }


def test_under_built_on_every_factory_on_a_table_called_bare_answers_the_injected_store(table):
    factories = _factories_on_a_table()
    assert len(factories) == 15
    with wiring.built_on(_Injected()):  # type: ignore[arg-type]
        assert {name: factory() for name, factory in factories.items()} == {  # type: ignore[operator]
            name: f"injected {name}" for name in factories
        }
        assert type(wiring.customer_service(table)).__name__ == "CustomerService"  # a table given: built on it
    assert type(wiring.customer_service()).__name__ == "CustomerService"  # outside built_on: the function's table


def test_the_event_publisher_reads_the_bus_at_each_use_not_when_built(monkeypatch):
    from shop import config

    publisher = wiring.event_publisher()  # as the stream handlers build it, at import
    for bus in ("shop-bus-a", None, "shop-bus-b"):
        if bus is None:
            monkeypatch.delenv("EVENT_BUS_NAME", raising=False)
        else:
            monkeypatch.setenv("EVENT_BUS_NAME", bus)
        config.settings.cache_clear()
        try:
            assert publisher.bus_name == bus  # None: nothing is published
        finally:
            config.settings.cache_clear()
