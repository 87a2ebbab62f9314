"""The checkout's settings on DynamoDB Local (shop.repository.checkout_settings; docs/decisions.md, 076): an edit is one
transaction of the zone or rate, the VERSION item conditional on the version read and every copy of it; a snapshot
is one Query; a use checks the kept snapshot with one strongly consistent GetItem of one copy; edits racing on real
threads serialise, so two zones never both take a country. The rules on the memory store:
tests/unit/handlers/test_checkout_total_handlers.py."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from shop import clock, errors, keys
from shop.limits import CHECKOUT_VERSION_SHARDS
from shop.models.checkout import ShippingOptionSetting, ShippingZone, TaxRate
from shop.repository.checkout_settings import CheckoutSettingsRepository
from shop.repository.store import from_item, to_item
from shop.services.checkout_settings import CheckoutSettingsService
from tests.support.calls import counting
from tests.support.factories import ADMIN

pytestmark = [pytest.mark.table_without_stream, pytest.mark.dynamodb_semantics]

STANDARD = ShippingOptionSetting(option_id="standard", name="Standard", price_cents=499)


def zone(zone_id: str, *countries: str, price_cents: int = 499) -> ShippingZone:
    option = STANDARD.model_copy(update={"price_cents": price_cents})
    return ShippingZone(
        zone_id=zone_id, name=zone_id, countries=list(countries), options=[option], updated_at=clock.iso_now()
    )


def copies(store: Any) -> list[tuple[int, str]]:
    found = []
    for shard in range(CHECKOUT_VERSION_SHARDS):
        item = store.client.get_item(
            TableName=store.table.name, Key=to_item(keys.checkout_version_shard_key(shard)), ConsistentRead=True
        )["Item"]
        plain = from_item(item)
        found.append((int(plain["version"]), plain["edit_id"]))
    return found


def test_an_edit_writes_the_item_the_version_and_every_copy_in_one_transaction(store):
    repository = CheckoutSettingsRepository(store.table)
    assert repository.edit_id(0) is None
    assert repository.snapshot().version == 0
    with counting(store.client) as calls:
        assert repository.put_zone(zone("europe", "DE", "AT"), read_version=0) == 1
    assert calls.operations == ["TransactWriteItems"]
    rate = TaxRate(country="DE", rate_bps=1900, updated_at=clock.iso_now())
    assert repository.put_rate(rate, read_version=1) == 2
    snapshot = repository.snapshot()
    assert snapshot.version == 2
    assert [z.zone_id for z in snapshot.zones] == ["europe"]
    assert snapshot.rates["DE"].rate_bps == 1900
    assert snapshot.rate_for("DE", None) == 1900
    assert set(copies(store)) == {(2, snapshot.edit_id)}

    with pytest.raises(errors.VersionMismatch):  # an edit that read version 1 lost to the one that made 2
        repository.put_zone(zone("europe", "DE"), read_version=1)
    assert repository.snapshot().zones[0].countries == ["DE", "AT"]


def test_a_kept_snapshot_costs_one_consistent_getitem_and_an_edit_one_query_more(store):
    service = CheckoutSettingsService(CheckoutSettingsRepository(store.table))
    service.put_zone(ADMIN, "europe", name="Europe", countries=["DE"], options=[STANDARD])
    service.current()
    with counting(store.client) as calls:
        assert service.current().zone_for("DE") is not None
    assert calls.operations == ["GetItem"]
    cheaper = STANDARD.model_copy(update={"price_cents": 1})
    service.put_zone(ADMIN, "europe", name="Europe", countries=["DE"], options=[cheaper])
    with counting(store.client) as calls:
        assert service.current().zones[0].options[0].price_cents == 1
    assert calls.operations == ["GetItem", "Query"]


def test_zones_racing_for_one_country_on_threads_leave_it_in_one(store):
    services = [CheckoutSettingsService(CheckoutSettingsRepository(store.table)) for _ in range(6)]
    barrier = threading.Barrier(len(services))
    outcomes: list[str] = []

    def claim(index: int) -> None:
        barrier.wait()
        try:
            services[index].put_zone(ADMIN, f"zone-{index}", name="Z", countries=["FR"], options=[STANDARD])
            outcomes.append("won")
        except errors.ShippingCountryTaken:
            outcomes.append("taken")
        except errors.ServiceUnavailable:
            outcomes.append("busy")

    threads = [threading.Thread(target=claim, args=(index,)) for index in range(len(services))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("won") == 1, outcomes
    snapshot = CheckoutSettingsRepository(store.table).snapshot()
    assert len(snapshot.zones) == 1
    assert snapshot.version == 1


def test_an_orders_promotions_are_an_item_beside_it_read_with_it_and_archived_with_it(store):
    from shop import wiring
    from shop.repository.order_archive import OrderArchivalRepository
    from shop.services.orders import RequestedLine
    from tests.support.factories import ADDRESS, ALICE, percent_code, product

    settings = CheckoutSettingsService(CheckoutSettingsRepository(store.table))
    percent_code(settings, "TEN")
    pids = [product(store.table, price_cents=price, stock=10) for price in (1999, 4550, 333)]
    orders = wiring.order_service(store.table)
    lines = [RequestedLine(pid, quantity) for pid, quantity in zip(pids, (3, 1, 7), strict=True)]
    placed = orders.place(ALICE, address=ADDRESS, lines=lines, promo_code="ten")
    assert placed.discount_cents == 1288  # 10 % of 12,878, rounded half up
    assert [line.discount_cents for line in placed.lines] == [600, 455, 233]
    assert orders.get(ALICE, placed.order_id) == placed  # the order and its DISCOUNTS item, one Query

    def item(sort_key: str) -> dict[str, Any]:
        key = {keys.PK: keys.order_pk(placed.order_id), keys.SK: sort_key}
        return from_item(store.client.get_item(TableName=store.table.name, Key=to_item(key))["Item"])

    order_item = item(keys.ORDER_SK)
    assert "promotions" not in order_item
    assert all("discount_cents" not in line for line in order_item["lines"])
    assert [p["discount_cents"] for p in item(keys.ORDER_DISCOUNTS_SK)["promotions"]] == [1288]
    archival = OrderArchivalRepository(store.table)
    left = archival.remains(placed.order_id)
    assert archival.order(order_item, left.history).promotions == placed.promotions


def test_a_placement_checks_its_kept_settings_in_its_transaction_and_prices_again_after_an_edit(store):
    from shop import wiring
    from shop.services.orders import RequestedLine
    from tests.support.factories import ADDRESS, ALICE, product

    zone_in = {"name": "Home", "countries": [ADDRESS.country]}
    admin = CheckoutSettingsService(CheckoutSettingsRepository(store.table))  # another instance: the admin's
    admin.put_zone(ADMIN, "home", options=[STANDARD], **zone_in)
    pid = product(store.table, price_cents=1000, stock=10)
    orders = wiring.order_service(store.table)
    line = [RequestedLine(pid, 1)]
    orders.place(ALICE, address=ADDRESS, lines=line)  # this instance reads the settings and keeps them
    with counting(store.client) as calls:
        steady = orders.place(ALICE, address=ADDRESS, lines=line)
    assert calls.operations == ["BatchGetItem", "TransactWriteItems"]  # checked in the transaction
    assert steady.shipping_cents == 499

    admin.put_zone(ADMIN, "home", options=[STANDARD.model_copy(update={"price_cents": 799})], **zone_in)
    with counting(store.client) as calls:
        repriced = orders.place(ALICE, address=ADDRESS, lines=line)
    # the check refused the kept settings: read again (one Query), priced again, placed
    assert calls.operations == ["BatchGetItem", "TransactWriteItems", "Query", "TransactWriteItems"]
    assert repriced.shipping_cents == 799
