"""A provider outage while an unpaid order's window closes, on DynamoDB Local: the sweep must read the intent (its
authorisation's event may have been lost), so while the provider is down each run leaves the order as it is and
fails (its schedule counts the run failed and runs again a minute later), and the first run after the provider
answers again expires the order and gives its stock back, once. No order holds stock after the outage."""

from __future__ import annotations

import pytest

from shop import errors
from shop.models.payments import IntentStatus
from shop.services.payments import StepAction
from tests.payments.test_payment_stream import consume, order_of, provided, sweep_after_the_window
from tests.support.factories import product
from tests.support.fake_payments import FakePayments
from tests.support.streams import StreamReader
from tests.support.unpaid_orders import place_unpaid, stock

pytestmark = [
    pytest.mark.filterwarnings("ignore:No application metrics"),
    pytest.mark.dynamodb_semantics,
    pytest.mark.usefixtures("recorded_bus"),  # events go to a recording bus
]


def test_an_expiry_that_failed_in_an_outage_is_applied_by_the_next_run(local_store, monkeypatch):
    fake = FakePayments()
    provided(monkeypatch, fake)
    pid = product(local_store.table, name="Kettle", price_cents=2500, stock=5)
    unpaid = place_unpaid(local_store.table, fake, [(pid, "Kettle", 2500, 3)])
    consume(StreamReader(local_store))
    assert stock(local_store.table, pid) == 2

    fake.fail_next(3)  # the provider is down for three runs
    for _ in range(3):
        with pytest.raises(errors.ServiceUnavailable) as failed:
            sweep_after_the_window(local_store, fake)
        assert failed.value.details == {"orders": [unpaid.order_id]}
    assert order_of(local_store, unpaid.order_id)["status"] == "PENDING_PAYMENT"
    assert stock(local_store.table, pid) == 2

    assert sweep_after_the_window(local_store, fake) == [StepAction.EXPIRED]
    after = order_of(local_store, unpaid.order_id)
    assert (after["status"], after["payment"]["status"]) == ("EXPIRED", "CANCELED")
    assert stock(local_store.table, pid) == 5
    assert fake.get_intent(unpaid.intent_id).status is IntentStatus.CANCELED

    assert sweep_after_the_window(local_store, fake) == []  # the next run: nothing more
    assert stock(local_store.table, pid) == 5
