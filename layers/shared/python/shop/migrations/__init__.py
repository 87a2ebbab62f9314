"""Online migrations of the table: versioned, each a pure function item -> writes.

`runner` walks parallel Scan segments (the one place a Scan is allowed) through
`shop.repository.migrations`, checkpointing each segment in the table, at a rate in write units per
second; a migration done is recorded in the table (`keys.migration_key`).
"""

from __future__ import annotations

from shop.migrations.base import Migration
from shop.migrations.m0001_list_v1_products import ListVersion1Products
from shop.migrations.m0002_status_shards import MoveStatusShards

MIGRATIONS: dict[str, Migration] = {
    migration.name: migration for migration in (ListVersion1Products(), MoveStatusShards())
}


def migration(name: str) -> Migration:
    try:
        return MIGRATIONS[name]
    except KeyError:
        raise KeyError(f"no migration {name!r}; known: {', '.join(sorted(MIGRATIONS))}") from None
