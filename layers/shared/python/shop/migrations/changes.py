"""What a migration asks to write for one item: plain values, serialised by the repository.

A `Change` is one conditional write or one transaction; its conditions make it idempotent (applied
twice, the second fails its condition and changes nothing) and safe beside live writers (an item
changed since the Scan read it fails the condition too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# TransactWriteItems costs 2 write units per item of up to 1 KB; a single write 1.
TRANSACTION_UNITS_PER_ITEM = 2
# Moving an item's entry in a global secondary index: the old entry deleted, the new one put.
INDEX_UNITS_PER_MOVE = 2


@dataclass(frozen=True)
class Put:
    item: dict[str, Any]
    condition: str | None = None
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Update:
    key: dict[str, str]
    expression: str
    condition: str | None = None
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Delete:
    key: dict[str, str]
    condition: str | None = None
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


Operation = Put | Update | Delete


@dataclass(frozen=True)
class Change:
    """The writes of one item, all or nothing."""

    operations: tuple[Operation, ...]
    # Index entries the change moves (a GSI key changed): each costs the index a delete and a put, which
    # DynamoDB counts in the write's consumed capacity too.
    index_moves: int = 0

    @property
    def estimated_units(self) -> int:
        """Write units if every item is under 1 KB; the runner settles the difference from what
        DynamoDB reports (ReturnConsumedCapacity)."""
        moves = INDEX_UNITS_PER_MOVE * self.index_moves
        if len(self.operations) == 1:
            return 1 + moves
        return TRANSACTION_UNITS_PER_ITEM * len(self.operations) + moves
