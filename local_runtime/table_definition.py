"""The single table's definition: built-in default and the one read from a synthesized template.

The built-in default is the one place the local runtime spells the table (docs/conventions.md, "Table");
`tests/local_runtime/test_table_definition.py` keeps it equal to what `cdk synth` writes.
"""

from __future__ import annotations

import copy
import json
import pathlib
from dataclasses import dataclass, field
from typing import Any

TABLE_RESOURCE_TYPES = ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable")

# Properties of a GSI/LSI that CreateTable understands (CloudFormation adds others, e.g.
# ContributorInsightsSpecification, WarmThroughput, that DynamoDB Local does not need).
_INDEX_KEYS = ("IndexName", "KeySchema", "Projection")


@dataclass(frozen=True)
class TableSpec:
    """What CreateTable + UpdateTimeToLive need, independent of the table's name."""

    key_schema: list[dict[str, str]]
    attribute_definitions: list[dict[str, str]]
    billing_mode: str = "PAY_PER_REQUEST"
    provisioned_throughput: dict[str, int] | None = None
    global_secondary_indexes: list[dict[str, Any]] = field(default_factory=list)
    local_secondary_indexes: list[dict[str, Any]] = field(default_factory=list)
    stream_view_type: str | None = None
    ttl_attribute: str | None = None

    def create_table_kwargs(self, table_name: str) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "KeySchema": copy.deepcopy(self.key_schema),
            "AttributeDefinitions": copy.deepcopy(self.attribute_definitions),
            "BillingMode": self.billing_mode,
        }
        if self.billing_mode == "PROVISIONED":
            kwargs["ProvisionedThroughput"] = dict(
                self.provisioned_throughput or {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
            )
        if self.global_secondary_indexes:
            kwargs["GlobalSecondaryIndexes"] = copy.deepcopy(self.global_secondary_indexes)
        if self.local_secondary_indexes:
            kwargs["LocalSecondaryIndexes"] = copy.deepcopy(self.local_secondary_indexes)
        if self.stream_view_type:
            kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": self.stream_view_type}
        return kwargs

    def normalized(self) -> dict[str, Any]:
        """An order-insensitive form, for comparing two specs."""
        return {
            "key_schema": self.key_schema,
            "attribute_definitions": sorted(self.attribute_definitions, key=lambda a: a["AttributeName"]),
            "billing_mode": self.billing_mode,
            "global_secondary_indexes": sorted(self.global_secondary_indexes, key=lambda i: i["IndexName"]),
            "local_secondary_indexes": sorted(self.local_secondary_indexes, key=lambda i: i["IndexName"]),
            "stream_view_type": self.stream_view_type,
            "ttl_attribute": self.ttl_attribute,
        }


# The intended table (docs/conventions.md): PK/SK strings, GSI1 on GSI1PK/GSI1SK with projection ALL,
# on-demand, stream NEW_AND_OLD_IMAGES, TTL on `expires_at`.
DEFAULT_TABLE_SPEC = TableSpec(
    key_schema=[
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ],
    attribute_definitions=[
        {"AttributeName": "PK", "AttributeType": "S"},
        {"AttributeName": "SK", "AttributeType": "S"},
        {"AttributeName": "GSI1PK", "AttributeType": "S"},
        {"AttributeName": "GSI1SK", "AttributeType": "S"},
    ],
    billing_mode="PAY_PER_REQUEST",
    global_secondary_indexes=[
        {
            "IndexName": "GSI1",
            "KeySchema": [
                {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        }
    ],
    stream_view_type="NEW_AND_OLD_IMAGES",
    ttl_attribute="expires_at",
)


def load_template(path: pathlib.Path) -> dict[str, Any]:
    data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a CloudFormation template (top level is not an object)")
    return data


def find_table_resources(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Logical id -> resource, for every DynamoDB table in the template."""
    resources = template.get("Resources") or {}
    return {
        logical_id: res
        for logical_id, res in resources.items()
        if isinstance(res, dict) and res.get("Type") in TABLE_RESOURCE_TYPES
    }


def _index(raw: dict[str, Any]) -> dict[str, Any]:
    index = {k: copy.deepcopy(raw[k]) for k in _INDEX_KEYS if k in raw}
    projection = index.get("Projection") or {"ProjectionType": "ALL"}
    index["Projection"] = {k: v for k, v in projection.items() if k in ("ProjectionType", "NonKeyAttributes")}
    return index


def spec_from_resource(resource: dict[str, Any]) -> TableSpec:
    """Read a TableSpec out of an AWS::DynamoDB::Table or AWS::DynamoDB::GlobalTable resource.

    Point-in-time recovery, SSE, deletion protection, tags and replicas are ignored: DynamoDB Local
    neither needs nor supports them.
    """
    rtype = resource.get("Type")
    props = resource.get("Properties") or {}
    if rtype not in TABLE_RESOURCE_TYPES:
        raise ValueError(f"not a DynamoDB table resource: {rtype!r}")
    provisioned = props.get("ProvisionedThroughput")
    billing = props.get("BillingMode") or ("PROVISIONED" if provisioned else "PAY_PER_REQUEST")
    if rtype == "AWS::DynamoDB::GlobalTable" and billing == "PROVISIONED":
        # GlobalTable spells capacity as WriteProvisionedThroughputSettings/replica read settings.
        provisioned = None
    stream = props.get("StreamSpecification") or {}
    if rtype == "AWS::DynamoDB::Table" and stream.get("StreamEnabled") is False:
        stream = {}
    ttl = props.get("TimeToLiveSpecification") or {}
    ttl_enabled = ttl.get("Enabled", True) and ttl.get("AttributeName")
    return TableSpec(
        key_schema=copy.deepcopy(props["KeySchema"]),
        attribute_definitions=copy.deepcopy(props["AttributeDefinitions"]),
        billing_mode=billing,
        provisioned_throughput=(
            {
                "ReadCapacityUnits": int(provisioned["ReadCapacityUnits"]),
                "WriteCapacityUnits": int(provisioned["WriteCapacityUnits"]),
            }
            if provisioned
            else None
        ),
        global_secondary_indexes=[_index(i) for i in props.get("GlobalSecondaryIndexes") or []],
        local_secondary_indexes=[_index(i) for i in props.get("LocalSecondaryIndexes") or []],
        stream_view_type=stream.get("StreamViewType"),
        ttl_attribute=ttl.get("AttributeName") if ttl_enabled else None,
    )


def spec_from_template(template_or_path: dict[str, Any] | pathlib.Path, logical_id: str | None = None) -> TableSpec:
    """The table's spec from a synthesized template (the only table, or the one named by logical_id)."""
    template = template_or_path if isinstance(template_or_path, dict) else load_template(template_or_path)
    tables = find_table_resources(template)
    if logical_id is not None:
        if logical_id not in tables:
            raise ValueError(f"no DynamoDB table {logical_id!r} in the template (found: {sorted(tables)})")
        return spec_from_resource(tables[logical_id])
    if len(tables) != 1:
        raise ValueError(f"expected exactly one DynamoDB table in the template, found {len(tables)}: {sorted(tables)}")
    return spec_from_resource(next(iter(tables.values())))
