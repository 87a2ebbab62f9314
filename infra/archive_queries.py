"""The archive as a table: its columns (the archive document of shop/repository/order_archive.py), its
partitions (orders/year=/month=/day=, projected), and the named queries.

The queries are written in the SQL both Athena (Trino) and DuckDB read. The two differences are here and
only here (`query(name, dialect)`): how the table is named (`{orders}`: Athena's `"<database>"."orders"`,
DuckDB's view over the objects, local_runtime/archive_query.py), and how an order's lines become rows
(`{orders_with_lines}`: Trino's UNNEST of an array of rows expands each row into one column per field,
which DuckDB's does not, so DuckDB reads the fields from a lateral subquery). Either way a line's fields
are the columns `line_<field>`.
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

# Revenue kept: delivered orders (a cancelled order was never charged, a returned one is refunded).
# Units: delivered orders' lines. Return rate: units returned over units delivered or returned.
QUERIES: dict[str, tuple[str, str]] = {
    "revenue-by-day": (
        "Revenue (cents) and orders of delivered orders, by the day they were placed",
        """SELECT year || '-' || month || '-' || day AS order_day,
       COUNT(*) AS orders,
       SUM(total_cents) AS revenue_cents
FROM {orders}
WHERE status = 'DELIVERED'
GROUP BY year, month, day
ORDER BY order_day""",
    ),
    "top-products-by-units": (
        "The 20 products with the most units in delivered orders",
        """SELECT line_product_id AS product_id,
       SUM(line_quantity) AS units,
       SUM(line_line_total_cents) AS revenue_cents
FROM {orders_with_lines}
WHERE status = 'DELIVERED'
GROUP BY line_product_id
ORDER BY units DESC, product_id
LIMIT 20""",
    ),
    "return-rate-by-product": (
        "Units returned over units delivered or returned, by product",
        """SELECT line_product_id AS product_id,
       SUM(CASE WHEN status = 'RETURNED' THEN line_quantity ELSE 0 END) AS units_returned,
       SUM(line_quantity) AS units_delivered,
       ROUND(CAST(SUM(CASE WHEN status = 'RETURNED' THEN line_quantity ELSE 0 END) AS DOUBLE)
             / SUM(line_quantity), 4) AS return_rate
FROM {orders_with_lines}
WHERE status IN ('DELIVERED', 'RETURNED')
GROUP BY line_product_id
ORDER BY return_rate DESC, product_id""",
    ),
}


LINE_FIELDS: tuple[str, ...] = tuple(
    field.split(":")[0] for field in dict(COLUMNS)["lines"].removeprefix("array<struct<").removesuffix(">>").split(",")
)
LINE_COLUMNS = ", ".join(f"line_{field}" for field in LINE_FIELDS)


def athena_sources(database: str) -> dict[str, str]:
    table = f'"{database}"."{TABLE_NAME}"'
    return {"orders": table, "orders_with_lines": f"{table} CROSS JOIN UNNEST(lines) AS t({LINE_COLUMNS})"}


def duckdb_sources() -> dict[str, str]:
    fields = ", ".join(f"l.{field} AS line_{field}" for field in LINE_FIELDS)
    return {
        "orders": TABLE_NAME,
        "orders_with_lines": (
            f"{TABLE_NAME} CROSS JOIN LATERAL (SELECT {fields} FROM (SELECT UNNEST({TABLE_NAME}.lines) AS l)) AS t"  # noqa: S608
        ),
    }


def query(name: str, sources: dict[str, str]) -> str:
    """The named query's SQL in one dialect: `athena_sources(database)` or `duckdb_sources()`."""
    return QUERIES[name][1].format(**sources)
