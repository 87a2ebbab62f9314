"""Versions over HTTP: the ``ETag`` a versioned entity is answered with and the ``If-Match`` it is changed with.

The ETag is the quoted integer version (``"3"``); ``If-Match`` accepts ``"3"``, ``3`` and ``W/"3"``, and anything
else names no version (docs/decisions.md, "Hardening: customer versions").
"""

from __future__ import annotations

import re
from typing import Annotated, Protocol

from aws_lambda_powertools.event_handler.openapi.params import Header

_IF_MATCH = re.compile(r'^(?:W/)?"?([0-9]{1,9})"?$')
NO_VERSION = -1

IfMatch = Annotated[
    str | None, Header(alias="If-Match", max_length=200, description='the ETag of the version you read: "3"')
]


class Versioned(Protocol):
    @property
    def version(self) -> int: ...


def etag(entity: Versioned) -> dict[str, str]:
    return {"ETag": f'"{entity.version}"'}


def expected_version(if_match: str) -> int:
    """``"3"``, ``3`` and ``W/"3"`` name version 3; anything else names no version (``NO_VERSION``)."""
    found = _IF_MATCH.match(if_match.strip())
    return int(found.group(1)) if found else NO_VERSION
