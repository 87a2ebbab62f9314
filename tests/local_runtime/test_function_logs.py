"""`make dev`'s function logs (issue 27): files per function, followed readably or as the JSON lines."""

from __future__ import annotations

import io
import json
import pathlib

from local_runtime.function_logs import Follower, readable, start_run

RECORD = {
    "level": "INFO",
    "location": "log:56",
    "message": "order placed",
    "timestamp": "2026-11-27 01:36:48,325+0000",
    "service": "orders",
    "cold_start": True,
    "function_request_id": "495589ec",
    "order_id": "01ABC",
}
EMF = {"_aws": {"CloudWatchMetrics": [{"Metrics": [{"Name": "OrdersPlaced", "Unit": "Count"}]}]}, "OrdersPlaced": [1.0]}


def test_a_record_reads_as_one_line():
    assert readable("orders", json.dumps(RECORD)) == "01:36:48 orders       INFO    order placed  order_id=01ABC"
    assert readable("orders", json.dumps(EMF)).split() == ["orders", "METRIC", "OrdersPlaced=1.0"]
    assert readable("orders", "Traceback (most recent call last):").endswith("Traceback (most recent call last):")


def test_the_follower_prints_what_is_appended_whole_lines_only(tmp_path: pathlib.Path):
    directory = start_run(tmp_path, ["orders", "products"])
    (directory / "orders.log").write_text(json.dumps(RECORD) + "\n")  # before the follower: not shown
    readable_out, raw_out = io.StringIO(), io.StringIO()
    readable_follower = Follower(directory, readable_out, raw=False)
    raw_follower = Follower(directory, raw_out, raw=True)
    with (directory / "products.log").open("a") as log:
        log.write(json.dumps({**RECORD, "service": "products"}) + "\n" + '{"level": "WA')
    assert readable_follower.poll() == 1
    assert raw_follower.poll() == 1
    assert readable_out.getvalue().startswith("01:36:48 products")
    assert json.loads(raw_out.getvalue())["service"] == "products"
    with (directory / "products.log").open("a") as log:
        log.write('RNING", "message": "late"}\n')
    assert raw_follower.poll() == 1
    assert json.loads(raw_out.getvalue().splitlines()[-1])["message"] == "late"


def test_a_new_run_empties_the_files(tmp_path: pathlib.Path):
    directory = start_run(tmp_path, ["orders"])
    (directory / "orders.log").write_text("old\n")
    start_run(tmp_path, ["orders"])
    assert (directory / "orders.log").read_text() == ""
