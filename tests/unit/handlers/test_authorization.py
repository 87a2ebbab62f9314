"""The authorization matrix (every route of shop/http_api/routes.py as anonymous, alice, bob and an admin) in the
fast lane: the same cells as tests/functions/test_authorization.py, the handlers on the in-memory store holding
the seed. Who may call a route is decided before the store is touched; each cell still gets a fresh store, so a
cell's answer (201, 409, 404) is the seed's, not an earlier cell's."""

from __future__ import annotations

import pytest

from tests.functions.test_authorization import CALLERS, CASES, MATRIX, NOT_FOUND_CODES, _route_of


@pytest.mark.parametrize(("method", "path", "kwargs", "caller", "expected"), CASES)
def test_authorization_matrix(handlers, method, path, kwargs, caller, expected):  # noqa: PLR0917
    reply = handlers.call(method, path, claims=CALLERS[caller], **kwargs)
    assert reply.status == expected, reply.body
    codes = {401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "ORDER_NOT_FOUND"}
    codes[404] = NOT_FOUND_CODES.get((method, path), {}).get(caller, codes[404])
    if expected in codes:
        assert reply.code == codes[expected]


def test_the_matrix_is_every_route_of_the_table():
    from shop.http_api.routes import ROUTES

    assert {_route_of(method, path) for method, path, _, _ in MATRIX} == set(ROUTES)
