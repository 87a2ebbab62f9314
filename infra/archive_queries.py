"""The archive as a table: its columns (the archive document of shop/repository/order_archive.py), its
partitions (orders/year=/month=/day=, projected), and the named queries.

The queries are written in the SQL both Athena (Trino) and DuckDB read. The two differences are here and
only here (`query(name, dialect)`): how the table is named (`{orders}`: Athena's `"<database>"."orders"`,
DuckDB's view over the objects, local_runtime/archive_query.py), and how an array becomes rows (Trino's
UNNEST of an array of rows expands each row into one column per field, which DuckDB's does not, so DuckDB
reads the fields from a subquery). Either way: `{orders_with_lines}` is the orders with a line's fields as the
columns `line_<field>`; `{order_returns}` one row per accepted return (`returned_order_id`,
`return_refund_cents`); `{returned_lines}` one row per line of an accepted return (`returned_order_id`,
`returned_variant_id`, `returned_quantity`).

Returns: a `RETURNED` order without accepted returns (returned before returns per line) gave back every unit
and was refunded its total; any other order gave back what its `returns` list (a `RETURNED` one, every unit).
"""

from __future__ import annotations

TABLE_NAME = "orders"
# Glue types of the archive document's fields (Order.model_dump(mode="json") + archived_at).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("order_id", "string"),
    ("customer_id", "string"),
    ("status", "string"),
    ("version", "int"),
    ("total_cents", "bigint"),
    ("created_at", "string"),
    ("updated_at", "string"),
    ("delivered_at", "string"),
    ("archived_at", "string"),
    (
        "lines",
        "array<struct<product_id:string,variant_id:string,name:string,unit_price_cents:bigint,quantity:int,"
        "line_total_cents:bigint,discount_cents:bigint,tax_cents:bigint>>",
    ),
    (
        "shipping_address",
        "struct<name:string,line1:string,line2:string,city:string,postal_code:string,country:string,region:string>",
    ),
    (
        "history",
        "array<struct<status:string,at:string,carrier:string,tracking_number:string,reason:string,"
        "shipped_without_payment:boolean>>",
    ),
    ("shipment", "struct<carrier:string,tracking_number:string,shipped_at:string>"),
    ("payment_expires_at", "string"),  # RFC 3339 while PENDING_PAYMENT: null in every archived (final) order
    ("shipped_without_payment", "boolean"),  # shipped after its card authorisation lapsed (ship_without_payment)
    # The total's breakdown (version 4; orders archived before it read their defaults: no shipping, tax or discount)
    ("subtotal_cents", "bigint"),
    ("discount_cents", "bigint"),
    ("shipping_cents", "bigint"),
    ("shipping_tax_cents", "bigint"),
    ("tax_cents", "bigint"),
    ("prices_include_tax", "boolean"),
    ("tax_rate_bps", "int"),
    ("currency", "string"),
    ("shipping_option", "struct<zone_id:string,option_id:string,name:string,price_cents:bigint>"),
    ("promotions", "array<struct<promotion_id:string,code:string,kind:string,discount_cents:bigint>>"),
    # Returns per line (decision 079): the accepted returns, and a request still waiting (null once decided)
    (
        "returns",
        "array<struct<version:int,accepted_at:string,lines:array<struct<variant_id:string,quantity:int,"
        "refund_cents:bigint>>,shipping_refund_cents:bigint,refund_cents:bigint,refunded_cents:bigint>>",
    ),
    ("return_request", "struct<lines:array<struct<variant_id:string,quantity:int>>,requested_at:string>"),
)
# The key's partition folders (strings: zero-padded as the archive writes them).
PARTITION_KEYS: tuple[str, ...] = ("year", "month", "day")
FIRST_YEAR = 2025
LAST_YEAR = 2099

# Revenue kept: what delivered orders were paid less what their returns refunded (a cancelled order was never
# charged). Units: what delivered orders kept. Return rate: units returned over units delivered.
DELIVERED = "('DELIVERED', 'PARTIALLY_RETURNED', 'RETURNED')"
KEPT = "('DELIVERED', 'PARTIALLY_RETURNED')"  # a RETURNED order's returns gave back every unit and all it was paid
# A line's units given back: every unit of an order returned before returns per line, else its returns' units.
LINE_RETURNED = (
    "CASE WHEN status = 'RETURNED' AND units_back IS NULL THEN line_quantity ELSE COALESCE(units_back, 0) END"
)
RETURNED_BY_LINE = """LEFT JOIN (
  SELECT returned_order_id, returned_variant_id, SUM(returned_quantity) AS units_back
  FROM {returned_lines}
  GROUP BY returned_order_id, returned_variant_id
) AS back ON back.returned_order_id = order_id AND back.returned_variant_id = COALESCE(line_variant_id, line_product_id)"""
QUERIES: dict[str, tuple[str, str]] = {
    "revenue-by-day": (
        "Revenue kept (cents: paid less refunded) and orders delivered and kept, by the day they were placed",
        """SELECT year || '-' || month || '-' || day AS order_day,
       COUNT(*) AS orders,
       SUM(total_cents - COALESCE(refunded, 0)) AS revenue_cents
FROM {orders}
LEFT JOIN (
  SELECT returned_order_id, SUM(return_refund_cents) AS refunded
  FROM {order_returns}
  GROUP BY returned_order_id
) AS refunds ON refunds.returned_order_id = order_id
WHERE status IN {kept}
GROUP BY year, month, day
ORDER BY order_day""",
    ),
    "top-products-by-units": (
        "The 20 products with the most units kept in delivered orders, and the line totals of those units",
        """SELECT line_product_id AS product_id,
       SUM(line_quantity - ({line_returned})) AS units,
       CAST(ROUND(SUM(CAST(line_line_total_cents AS DOUBLE) * (line_quantity - ({line_returned})) / line_quantity))
            AS BIGINT) AS revenue_cents
FROM {orders_with_lines}
{returned_by_line}
WHERE status IN {kept}
GROUP BY line_product_id
HAVING SUM(line_quantity - ({line_returned})) > 0
ORDER BY units DESC, product_id
LIMIT 20""",
    ),
    "return-rate-by-product": (
        "Units returned over units delivered, by product",
        """SELECT line_product_id AS product_id,
       SUM({line_returned}) AS units_returned,
       SUM(line_quantity) AS units_delivered,
       ROUND(CAST(SUM({line_returned}) AS DOUBLE) / SUM(line_quantity), 4) AS return_rate
FROM {orders_with_lines}
{returned_by_line}
WHERE status IN {delivered}
GROUP BY line_product_id
ORDER BY return_rate DESC, product_id""",
    ),
}


LINE_FIELDS: tuple[str, ...] = tuple(
    field.split(":")[0] for field in dict(COLUMNS)["lines"].removeprefix("array<struct<").removesuffix(">>").split(",")
)
LINE_COLUMNS = ", ".join(f"line_{field}" for field in LINE_FIELDS)


RETURN_FIELDS: tuple[str, ...] = (
    "version",
    "accepted_at",
    "lines",
    "shipping_refund_cents",
    "refund_cents",
    "refunded_cents",
)


def athena_sources(database: str) -> dict[str, str]:
    table = f'"{database}"."{TABLE_NAME}"'
    returns = f'{table} CROSS JOIN UNNEST("returns") AS r({", ".join(f"return_{f}" for f in RETURN_FIELDS)})'
    return {
        "orders": table,
        "orders_with_lines": f"{table} CROSS JOIN UNNEST(lines) AS t({LINE_COLUMNS})",
        "order_returns": (
            f"(SELECT order_id AS returned_order_id, return_refund_cents FROM {returns}) AS order_returns"  # noqa: S608
        ),
        "returned_lines": (
            "(SELECT order_id AS returned_order_id, returned_variant_id, returned_quantity "  # noqa: S608
            f"FROM {returns} CROSS JOIN UNNEST(return_lines) AS u(returned_variant_id, returned_quantity, "
            "returned_refund_cents)) AS returned_lines"
        ),
    }


def duckdb_sources() -> dict[str, str]:
    fields = ", ".join(f"l.{field} AS line_{field}" for field in LINE_FIELDS)
    returns = f'(SELECT order_id, UNNEST("returns") AS r FROM {TABLE_NAME})'  # noqa: S608
    return {
        "orders": TABLE_NAME,
        "orders_with_lines": (
            f"{TABLE_NAME} CROSS JOIN LATERAL (SELECT {fields} FROM (SELECT UNNEST({TABLE_NAME}.lines) AS l)) AS t"  # noqa: S608
        ),
        "order_returns": (
            f"(SELECT order_id AS returned_order_id, r.refund_cents AS return_refund_cents FROM {returns}) AS order_returns"  # noqa: S608
        ),
        "returned_lines": (
            "(SELECT order_id AS returned_order_id, l.variant_id AS returned_variant_id, "  # noqa: S608
            f"l.quantity AS returned_quantity FROM (SELECT order_id, UNNEST(r.lines) AS l FROM {returns})) "
            "AS returned_lines"
        ),
    }


def query(name: str, sources: dict[str, str]) -> str:
    """The named query's SQL in one dialect: `athena_sources(database)` or `duckdb_sources()`."""
    fragments = {
        "delivered": DELIVERED,
        "kept": KEPT,
        "line_returned": LINE_RETURNED,
        "returned_by_line": RETURNED_BY_LINE.format(**sources),
    }
    return QUERIES[name][1].format(**sources, **fragments)
