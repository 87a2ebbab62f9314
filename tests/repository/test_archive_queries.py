"""The archive's named queries (infra/archive_queries.py) give the expected rows on a known archive: written
by the real archival code (ArchiveBucket.put, moto's S3), copied as `aws s3 sync` would, read by DuckDB
through local_runtime.archive_query (the one place the SQL's table is named for DuckDB)."""

from __future__ import annotations

import pathlib
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra import archive_queries
from local_runtime.archive_query import duckdb_type, main, run
from shop.models import Order
from shop.repository.order_archive import ArchiveBucket

BUCKET = "shop-test-order-archive"
PRICES = {"p1": 250, "p2": 1000, "p3": 100}


def order(
    order_id: str, status: str, day: str, lines: dict[str, int], returns: tuple[dict[str, int], ...] = ()
) -> Order:
    """`returns`: the accepted returns, each the units given back by product (one variant each), refunded at
    the unit price."""
    at = f"{day}T10:00:00Z"
    return Order.model_validate(
        {
            "order_id": order_id,
            "customer_id": "c1",
            "status": status,
            "version": 3,
            "total_cents": sum(PRICES[p] * q for p, q in lines.items()),
            "created_at": at,
            "updated_at": at,
            "lines": [
                {
                    "product_id": p,
                    "name": p.upper(),
                    "unit_price_cents": PRICES[p],
                    "quantity": q,
                    "line_total_cents": PRICES[p] * q,
                }
                for p, q in lines.items()
            ],
            "shipping_address": {
                "name": "A",
                "line1": "1 Road",
                "city": "Town",
                "postal_code": "1000",
                "country": "BE",
            },
            "history": [{"status": "PENDING", "at": at}, {"status": status, "at": at}],
            "returns": [
                {
                    "version": 5 + index,
                    "accepted_at": at,
                    "lines": [{"variant_id": p, "quantity": q, "refund_cents": PRICES[p] * q} for p, q in back.items()],
                    "shipping_refund_cents": 0,
                    "refund_cents": sum(PRICES[p] * q for p, q in back.items()),
                    "refunded_cents": sum(PRICES[p] * q for p, q in back.items()),
                }
                for index, back in enumerate(returns)
            ],
        }
    )


ORDERS = [
    order("o1", "DELIVERED", "2025-03-04", {"p1": 2, "p2": 1}),
    order("o2", "DELIVERED", "2025-03-04", {"p1": 3}),
    order("o3", "RETURNED", "2025-03-05", {"p1": 1}),
    order("o4", "CANCELLED", "2025-03-05", {"p2": 5}),
    order("o5", "DELIVERED", "2025-04-01", {"p3": 4}),
    order("o6", "RETURNED", "2025-04-01", {"p2": 1}),
    # o3 and o6 were returned before returns per line (no returns listed): every unit came back
    order("o7", "PARTIALLY_RETURNED", "2025-04-01", {"p1": 4, "p3": 2}, returns=({"p1": 1},)),
    order("o8", "RETURNED", "2025-04-02", {"p2": 2}, returns=({"p2": 1}, {"p2": 1})),
]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    target = tmp_path_factory.mktemp("archive")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        bucket = ArchiveBucket(BUCKET, s3)
        for placed in ORDERS:
            bucket.put(placed, archived_at="2025-06-01T00:00:00Z")
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
            for entry in page.get("Contents", []):
                path = target / entry["Key"]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(s3.get_object(Bucket=BUCKET, Key=entry["Key"])["Body"].read())
    assert len(list(target.glob("orders/year=2025/month=*/day=*/*.json"))) == len(ORDERS)
    return target


def test_revenue_by_day_is_what_orders_kept_on_the_day_they_were_placed(archive):
    assert run("revenue-by-day", archive) == [
        {"order_day": "2025-03-04", "orders": 2, "revenue_cents": 2250},
        # o5 400, and o7's 1,200 less its return's 250; the returned o6 kept nothing
        {"order_day": "2025-04-01", "orders": 2, "revenue_cents": 1350},
    ]


def test_top_products_by_the_units_delivered_orders_kept(archive):
    assert run("top-products-by-units", archive) == [
        {"product_id": "p1", "units": 8, "revenue_cents": 2000},  # o7 kept 3 of its 4, 750 of its line's 1,000
        {"product_id": "p3", "units": 6, "revenue_cents": 600},
        {"product_id": "p2", "units": 1, "revenue_cents": 1000},
    ]


def test_return_rate_by_product_counts_the_units_each_return_gave_back(archive):
    assert run("return-rate-by-product", archive) == [
        {"product_id": "p2", "units_returned": 3, "units_delivered": 4, "return_rate": 0.75},
        {"product_id": "p1", "units_returned": 2, "units_delivered": 10, "return_rate": 0.2},
        {"product_id": "p3", "units_returned": 0, "units_delivered": 6, "return_rate": 0.0},
    ]


def test_every_named_query_runs_and_an_empty_archive_has_no_rows(tmp_path):
    for name in archive_queries.QUERIES:
        assert run(name, tmp_path) == []


def test_glue_types_translate_to_duckdbs():
    assert duckdb_type("array<struct<a:string,b:bigint>>") == 'STRUCT("a" VARCHAR, "b" BIGINT)[]'
    assert duckdb_type("struct<x:array<int>,y:string>") == 'STRUCT("x" INTEGER[], "y" VARCHAR)'


def test_the_command_prints_one_json_row_a_line(archive, capsys: Any):
    assert main(["--name", "revenue-by-day", "--archive-dir", str(archive)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == '{"order_day": "2025-03-04", "orders": 2, "revenue_cents": 2250}'
    assert main(["--name", "nothing"]) == 2


def test_athenas_unnesting_names_every_field_of_a_return_in_the_glue_types_order():
    from local_runtime.archive_query import _split_top_level

    glue = dict(archive_queries.COLUMNS)["returns"].removeprefix("array<struct<").removesuffix(">>")
    assert tuple(field.split(":", 1)[0] for field in _split_top_level(glue)) == archive_queries.RETURN_FIELDS
    lines = dict(field.split(":", 1) for field in _split_top_level(glue))["lines"]
    assert lines == "array<struct<variant_id:string,quantity:int,refund_cents:bigint>>"  # u(...) in athena_sources
