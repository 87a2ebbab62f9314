"""Country codes a shipping address accepts: ISO 3166-1 alpha-2, from the maintained iso3166 package.

Loaded on first use, not when a function starts. The stored address keeps only the ``[A-Z]{2}`` shape, so an order
placed with a code a later release withdraws still reads back.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, Field


@cache
def country_codes() -> frozenset[str]:
    import iso3166

    return frozenset(iso3166.countries_by_alpha2)


def _known(code: str) -> str:
    if code not in country_codes():
        raise ValueError("not an ISO 3166-1 alpha-2 country code")
    return code


def _as_enum(schema: dict[str, Any]) -> None:
    schema["enum"] = sorted(country_codes())


CountryCode = Annotated[
    str,
    AfterValidator(_known),
    Field(description="ISO 3166-1 alpha-2 code, e.g. US", json_schema_extra=_as_enum),
]


def with_country_enum(schema: dict[str, Any]) -> None:
    """A parameter's schema: the codes a country parameter accepts, as its enum."""
    _as_enum(schema)


def known_country(code: str, name: str = "country") -> str:
    """`code` when it is an ISO 3166-1 alpha-2 code; InvalidRequest (422) naming the parameter otherwise."""
    from shop import errors

    if code not in country_codes():
        raise errors.InvalidRequest("not an ISO 3166-1 alpha-2 country code", {name: "not an ISO 3166-1 alpha-2 code"})
    return code
