"""The operations stacks (issue 28): the migration state machine (a distributed map over the Scan
segments, the worker's least privilege) and the archive as an Athena table (Glue table with partition
projection, workgroup, named queries). cdk-nag and cfn-lint cover them in test_guardrails.py."""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from infra import archive_queries
from infra.stacks.operations import (
    ATHENA_BYTES_SCANNED_CUTOFF,
    MIGRATION_READ_ACTIONS,
    MIGRATION_WRITE_ACTIONS,
    MIGRATION_WRITE_PARTITIONS,
)
from shop import keys
from shop.migrations import MIGRATIONS
from shop.migrations.changes import Put
from shop.models import Order
from shop.repository.order_archive import archive_document

pytestmark = [pytest.mark.xdist_group("infra")]  # the session's synths are this group's worker's


def _definition(template: dict[str, Any]) -> dict[str, Any]:
    (machine,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    return json.loads(
        "".join(part if isinstance(part, str) else '"<ref>"' for part in parts).replace('""<ref>""', '"<ref>"')
    )


def _worker_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    (role_id,) = [
        k for k, r in template["Resources"].items() if r["Type"] == "AWS::IAM::Role" and k.startswith("WorkerRole")
    ]
    return [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_the_state_machine_maps_the_segments_distributed_one_worker_loop_each(arm64) -> None:
    definition = _definition(arm64.templates["ShopMigrations"])
    assert definition["StartAt"] == "Start"
    states = definition["States"]
    assert states["AlreadyApplied"]["Choices"][0]["Next"] == "NothingToDo"
    segments = states["Segments"]
    assert segments["Type"] == "Map"
    assert segments["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert segments["ItemsPath"] == "$.items"
    assert segments["Next"] == "Finish"
    child = segments["ItemProcessor"]["States"]
    assert child["MigrateSegment"]["Parameters"]["action"] == "segment"
    assert child["MigrateSegment"]["Next"] == "SegmentDone"
    assert child["SegmentDone"]["Default"] == "MigrateSegment"  # invoked again until its segment is done
    assert child["SegmentDone"]["Choices"][0] == {
        "Variable": "$.done",
        "BooleanEquals": True,
        "Next": "SegmentMigrated",
    }
    assert states["Finish"]["Parameters"]["action"] == "finish"
    Template.from_json(arm64.templates["ShopMigrations"]).has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {"TracingConfiguration": {"Enabled": True}, "LoggingConfiguration": Match.object_like({"Level": "ALL"})},
    )


def test_the_worker_scans_and_writes_only_the_partitions_migrations_write(arm64) -> None:
    statements = _worker_statements(arm64.templates["ShopMigrations"])
    table = [s for s in statements if any(a.startswith("dynamodb:") for a in s["Action"])]
    reads, writes = sorted(table, key=lambda s: "dynamodb:Scan" not in s["Action"])
    assert sorted(reads["Action"]) == sorted(MIGRATION_READ_ACTIONS)
    assert sorted(writes["Action"]) == sorted(MIGRATION_WRITE_ACTIONS)
    assert writes["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(MIGRATION_WRITE_PARTITIONS)}
    }
    for statement in table:
        assert "Fn::ImportValue" in statement["Resource"]  # the table itself: no index, no other table
    others = [a for s in statements for a in s["Action"] if not a.startswith(("dynamodb:", "logs:"))]
    assert others == []


def test_every_migration_writes_inside_the_workers_partitions() -> None:
    version_1 = {
        **keys.product_key("p1"),
        **keys.product_category_gsi_v1("beans", "Dark", "p1"),
        "product_id": "p1",
        "name": "Dark",
        "category": "beans",
        "price_cents": 100,
        "stock": 1,
        "created_at": "2025-01-01T00:00:00Z",
        "updated_at": "2025-01-01T00:00:00Z",
    }
    order_id = next(f"o{n}" for n in range(100) if keys.status_shard(f"o{n}", 4) != keys.status_shard(f"o{n}", 16))
    order = {
        **keys.order_key(order_id),
        **keys.order_status_gsi("PENDING", order_id, "2025-01-01T00:00:00Z", 4),
        "order_id": order_id,
        "status": "PENDING",
        "version": 1,
    }
    samples = {  # an item each migration changes, and the context it plans with (a new migration adds one)
        "0001-list-version-1-products": (version_1, {"paths": {"beans": "/coffee/beans"}}),
        "0002-move-status-shards": (order, {"next": 16}),
    }
    assert set(samples) == set(MIGRATIONS)
    for migration in MIGRATIONS.values():
        item, context = samples[migration.name]
        change = migration.plan(item, context)
        assert change is not None
        written = [op.item[keys.PK] if isinstance(op, Put) else op.key[keys.PK] for op in change.operations]
        written += [
            keys.migration_key(migration.name)[keys.PK],
            keys.migration_segment_key(migration.name, 4, 0)[keys.PK],
        ]
        for pk in written:
            assert any(fnmatchcase(pk, pattern) for pattern in MIGRATION_WRITE_PARTITIONS), pk


def _glue_table(template: dict[str, Any]) -> dict[str, Any]:
    (table,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Glue::Table"]
    return table["Properties"]["TableInput"]  # type: ignore[no-any-return]


def test_the_glue_table_projects_the_archive_partitions_without_a_crawler(arm64) -> None:
    template = arm64.templates["ShopArchiveQueries"]
    assert not [r for r in template["Resources"].values() if r["Type"] == "AWS::Glue::Crawler"]
    table = _glue_table(template)
    assert [k["Name"] for k in table["PartitionKeys"]] == ["year", "month", "day"]
    parameters = table["Parameters"]
    assert parameters["projection.enabled"] == "true"
    assert parameters["projection.month.digits"] == parameters["projection.day.digits"] == "2"
    location = parameters["storage.location.template"]
    assert json.dumps(location).endswith('/orders/year=${year}/month=${month}/day=${day}/"]]}')
    descriptor = table["StorageDescriptor"]
    assert descriptor["SerdeInfo"]["SerializationLibrary"] == "org.openx.data.jsonserde.JsonSerDe"


def test_the_tables_columns_are_the_archive_documents_fields(arm64) -> None:
    order = Order.model_validate(
        {
            "order_id": "o1",
            "customer_id": "c1",
            "status": "DELIVERED",
            "version": 4,
            "total_cents": 500,
            "created_at": "2025-03-04T05:06:07Z",
            "updated_at": "2025-03-05T05:06:07Z",
            "lines": [
                {"product_id": "p", "name": "P", "unit_price_cents": 250, "quantity": 2, "line_total_cents": 500}
            ],
            "shipping_address": {"name": "A", "line1": "1", "city": "C", "postal_code": "1", "country": "FR"},
            "history": [{"status": "PENDING", "at": "2025-03-04T05:06:07Z"}],
        }
    )
    document = json.loads(archive_document(order, archived_at="2025-06-01T00:00:00Z"))
    columns = {
        c["Name"]: c["Type"] for c in _glue_table(arm64.templates["ShopArchiveQueries"])["StorageDescriptor"]["Columns"]
    }
    assert set(columns) == set(document)
    line_fields = columns["lines"].removeprefix("array<struct<").removesuffix(">>").split(",")
    assert {field.split(":")[0] for field in line_fields} == set(document["lines"][0])
    address_fields = columns["shipping_address"].removeprefix("struct<").removesuffix(">").split(",")
    assert {field.split(":")[0] for field in address_fields} == set(document["shipping_address"])


def test_the_workgroup_encrypts_results_and_limits_bytes_scanned(arm64) -> None:
    template = Template.from_json(arm64.templates["ShopArchiveQueries"])
    template.has_resource_properties(
        "AWS::Athena::WorkGroup",
        {
            "WorkGroupConfiguration": Match.object_like(
                {
                    "EnforceWorkGroupConfiguration": True,
                    "BytesScannedCutoffPerQuery": ATHENA_BYTES_SCANNED_CUTOFF,
                    "ResultConfiguration": {
                        "EncryptionConfiguration": {"EncryptionOption": "SSE_S3"},
                        "OutputLocation": Match.any_value(),
                    },
                }
            )
        },
    )
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": Match.any_value(),
            "PublicAccessBlockConfiguration": Match.object_like({"BlockPublicAcls": True}),
        },
    )


def test_athena_unnests_a_line_into_one_column_per_field_in_the_tables_order() -> None:
    """Trino expands an unnested row into its fields, in the declared order: the aliases must match it."""
    lines = dict(archive_queries.COLUMNS)["lines"]
    sql = archive_queries.query("top-products-by-units", archive_queries.athena_sources("db"))
    assert 'FROM "db"."orders" CROSS JOIN UNNEST(lines) AS t(line_product_id, line_variant_id, line_name, ' in sql
    assert lines.startswith("array<struct<product_id:string,variant_id:string,name:string,")
    assert archive_queries.LINE_FIELDS == (
        "product_id",
        "variant_id",
        "name",
        "unit_price_cents",
        "quantity",
        "line_total_cents",
        "discount_cents",
        "tax_cents",
    )


def test_the_named_queries_are_the_ones_tested_locally(arm64) -> None:
    template = arm64.templates["ShopArchiveQueries"]
    queries = {
        r["Properties"]["Name"]: r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Athena::NamedQuery"
    }
    assert set(queries) == {f"shop-dev-{name}" for name in archive_queries.QUERIES}
    for name in archive_queries.QUERIES:
        query = queries[f"shop-dev-{name}"]
        assert query["Database"] == "shop_dev_archive"
        assert query["QueryString"] == archive_queries.query(name, archive_queries.athena_sources("shop_dev_archive"))
        assert query["WorkGroup"] == {"Ref": "WorkGroup"}
