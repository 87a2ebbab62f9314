"""Each error code has one owner, and each owner one HTTP status."""

from __future__ import annotations

from shop import errors
from shop.http_api import auth
from shop.http_api import errors as http_errors


def every_error_class() -> set[type[errors.DomainError]]:
    found, frontier = set(), [errors.DomainError]
    while frontier:
        for sub in frontier.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                frontier.append(sub)
    return found


def test_every_code_is_declared_by_exactly_one_class():
    assert auth.InvalidSubject in every_error_class()  # the HTTP layer's own errors are counted too
    owners: dict[str, list[str]] = {}
    for cls in every_error_class() | {errors.DomainError}:
        if "code" in vars(cls):
            owners.setdefault(cls.code, []).append(cls.__qualname__)
    assert {code: names for code, names in owners.items() if len(names) > 1} == {}


def test_a_class_that_inherits_its_code_is_a_kind_of_its_owner_with_its_status():
    for cls in every_error_class():
        if "code" not in vars(cls):
            owner = next(base for base in cls.__mro__ if "code" in vars(base))
            assert http_errors.status_for(cls.__new__(cls)) == http_errors.status_for(owner.__new__(owner)), cls


def test_http_errors_answer_as_before():
    assert http_errors.describe(errors.NotFound("no such route"))[:2] == (
        404,
        {"error": {"code": "NOT_FOUND", "message": "no such route"}},
    )
    assert http_errors.status_for(errors.Forbidden("administrators only")) == 403
    assert http_errors.status_for(auth.InvalidSubject("bad sub")) == 403
    assert errors.InvalidRequest.code == "VALIDATION_ERROR"
