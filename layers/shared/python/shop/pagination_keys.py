"""The HMAC keys of next tokens: a local literal, or the pagination secret's current and previous versions.

Deployed, the key is read at run time from the secret (`PAGINATION_SECRET_ARN`); otherwise `PAGINATION_SECRET` is
the one key. Caching and rotation: docs/decisions.md, "Production infrastructure: secrets that rotate".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any

from shop import errors
from shop.config import ConfigurationError, settings

MAX_AGE_S = 300
REFRESH_AFTER_MISMATCH_S = 30
CURRENT, PREVIOUS = "AWSCURRENT", "AWSPREVIOUS"
# Secrets Manager errors that say the deployment is wrong (no secret, no permission, no key), not busy.
MISCONFIGURED = {"ResourceNotFoundException", "AccessDeniedException", "DecryptionFailure", "InvalidRequestException"}

_lock = threading.Lock()
_last_refresh = 0.0
_no_previous_until = 0.0  # a secret never rotated has no AWSPREVIOUS: remembered like a cached key


@cache
def _providers() -> dict[str, Any]:
    # Lazy: the parameters utility (and a Secrets Manager client) load on the first paginated request only.
    from aws_lambda_powertools.utilities.parameters import SecretsProvider

    from shop.aws_config import client_config

    # One provider per version stage: a provider caches by name, not by the stage it was asked for.
    return {stage: SecretsProvider(boto_config=client_config()) for stage in (CURRENT, PREVIOUS)}


def clear() -> None:
    """Forget cached keys and clients (tests; a new process does the same)."""
    global _last_refresh, _no_previous_until
    _providers.cache_clear()
    _last_refresh = _no_previous_until = 0.0


def _fetch(arn: str, stage: str, *, force: bool = False) -> bytes | None:
    from aws_lambda_powertools.utilities.parameters import GetParameterError

    global _no_previous_until
    if stage == PREVIOUS and not force and time.monotonic() < _no_previous_until:
        return None
    try:
        value = _providers()[stage].get(arn, max_age=MAX_AGE_S, force_fetch=force, VersionStage=stage)
    except GetParameterError as error:
        code = _code(error.__context__)
        if stage == PREVIOUS and code == "ResourceNotFoundException":
            _no_previous_until = time.monotonic() + MAX_AGE_S
            return None
        if code in MISCONFIGURED:
            raise ConfigurationError(f"the pagination key {arn} cannot be read: {code}") from error
        raise errors.ServiceUnavailable("the pagination key could not be read") from error  # throttled, down
    return value.encode() if isinstance(value, str) else value


def _code(error: BaseException | None) -> str | None:
    response = getattr(error, "response", None)
    return response.get("Error", {}).get("Code") if isinstance(response, dict) else None


def _literal() -> bytes:
    if settings().pagination_secret is None:
        raise ConfigurationError("environment variable PAGINATION_SECRET_ARN (or PAGINATION_SECRET) is not set")
    return settings().pagination_secret  # type: ignore[return-value]


def signing_key() -> bytes:
    arn = settings().pagination_secret_arn
    if arn is None:
        return _literal()
    key = _fetch(arn, CURRENT)
    assert key is not None  # AWSCURRENT always exists
    return key


def verify(matches: Callable[[bytes], bool]) -> bool:
    """True when `matches` accepts the current or the previous key."""
    arn = settings().pagination_secret_arn
    if arn is None:
        return matches(_literal())
    if _any_matches(arn, matches, force=False):
        return True
    return _refresh_allowed() and _any_matches(arn, matches, force=True)


def _any_matches(arn: str, matches: Callable[[bytes], bool], *, force: bool) -> bool:
    for stage in (CURRENT, PREVIOUS):
        key = _fetch(arn, stage, force=force)
        if key is not None and matches(key):
            return True
    return False


def _refresh_allowed() -> bool:
    global _last_refresh
    with _lock:
        now = time.monotonic()
        if _last_refresh and now - _last_refresh < REFRESH_AFTER_MISMATCH_S:
            return False
        _last_refresh = now
        return True
