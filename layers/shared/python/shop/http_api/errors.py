"""Domain errors -> HTTP: ONE table, looked up by class (most specific first), never by message.

Every 4xx/5xx body is ``{"error": {"code", "message", "details"?}}``; the code comes from the
error class, so clients can branch on it. Anything not in the table is a bug and answers 500.
"""

from __future__ import annotations

from typing import Any

from shop import errors


class Unauthorized(errors.DomainError):
    """A protected route was invoked without JWT claims (API Gateway normally answers this itself)."""

    code = "UNAUTHORIZED"


class BadRequest(errors.DomainError):
    """The request cannot be parsed at all (malformed JSON, undecodable body)."""

    code = "BAD_REQUEST"


class UnsupportedMediaType(errors.DomainError):
    code = "UNSUPPORTED_MEDIA_TYPE"


class PreconditionRequired(errors.DomainError):
    code = "PRECONDITION_REQUIRED"


class IdempotencyKeyReused(errors.Conflict):
    code = "IDEMPOTENCY_KEY_REUSED"


class IdempotencyInProgress(errors.Conflict):
    code = "IDEMPOTENCY_IN_PROGRESS"


class InternalError(errors.DomainError):
    code = "INTERNAL_ERROR"


# The one mapping. Lookup walks the error's MRO, so subclasses (e.g. OutOfStock < Conflict)
# inherit their parent's status unless they are listed themselves.
STATUS_BY_ERROR: dict[type[errors.DomainError], int] = {
    BadRequest: 400,
    errors.InvalidNextToken: 400,
    errors.InvalidWebhookSignature: 400,
    errors.InvalidWebhookPayload: 400,
    Unauthorized: 401,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.VersionMismatch: 412,
    UnsupportedMediaType: 415,
    errors.InvalidRequest: 422,
    errors.CartFull: 422,
    PreconditionRequired: 428,
    InternalError: 500,
    errors.ServiceUnavailable: 503,
    # the Stripe secret unfilled or a key Stripe refuses: an outage to the client, an alarm to operations
    errors.PaymentCredentialsUnusable: 503,
}

# Errors answered with ``Retry-After`` (seconds).
RETRY_AFTER_SECONDS = 1

# Messages for statuses whose domain message could carry internal detail.
_GENERIC_MESSAGES = {500: "internal error", 503: "the service is temporarily unavailable, retry later"}


def status_for(error: errors.DomainError) -> int:
    for cls in type(error).__mro__:
        status = STATUS_BY_ERROR.get(cls)
        if status is not None:
            return status
    return 500


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return {"error": body}


def describe(error: errors.DomainError) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, body, extra headers) for a domain error."""
    status = status_for(error)
    headers: dict[str, str] = {}
    if status >= 500:
        code = error.code if status == 503 else InternalError.code
        body = error_body(code, _GENERIC_MESSAGES.get(status, "internal error"))
        if status == 503:
            headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return status, body, headers
    details = error.details
    if status == 422 and isinstance(details, dict):
        # 422 bodies always list fields, whether the schema or a domain rule rejected them.
        details = [
            {"location": "body", "field": str(field), "message": error.message, "type": "invalid"} for field in details
        ]
    return status, error_body(error.code, error.message, details), headers
