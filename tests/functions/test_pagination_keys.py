"""Pagination keys read at run time from Secrets Manager survive a rotation (moto's Secrets Manager).

A token signed before a rotation still reads after it (AWSPREVIOUS); new tokens are signed with the
new key; a token signed with a key older than the previous one is refused (400 INVALID_NEXT_TOKEN).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from infra.rotation import pagination_key as rotation
from shop import errors, pagination_keys
from shop.config import ConfigurationError, settings
from shop.repository import pagination
from tests.support.pagination_key import current_key, deploy_key, forget_keys, rotate

SCOPE = "customer-orders:alice"


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    with mock_aws():
        yield deploy_key(monkeypatch)
    forget_keys()


def test_a_token_signed_before_a_rotation_still_reads_after_it(secret):
    client, arn = secret
    position = {"PK": "CUSTOMER#alice", "SK": "ORDER#1"}
    old_key = current_key(client, arn)
    token = pagination.encode(SCOPE, position)
    assert pagination.decode(token, SCOPE, old_key) == position  # signed with AWSCURRENT

    rotate(client, arn)
    pagination_keys.clear()  # a fresh instance after the rotation
    new_key = current_key(client, arn)
    assert new_key != old_key
    assert pagination.decode(token, SCOPE) == position  # read with AWSPREVIOUS
    fresh = pagination.encode(SCOPE, position)
    assert pagination.decode(fresh, SCOPE, new_key) == position  # signed with the new key


def test_a_token_older_than_the_previous_key_is_refused(secret):
    client, arn = secret
    token = pagination.encode(SCOPE, {"k": 1})
    rotate(client, arn)
    rotate(client, arn)
    pagination_keys.clear()
    with pytest.raises(errors.InvalidNextToken):
        pagination.decode(token, SCOPE)


def test_an_instance_with_keys_cached_before_a_rotation_reads_tokens_of_the_new_key(secret):
    client, arn = secret
    pagination.encode(SCOPE, {"k": 0})  # caches the key before the rotation
    rotate(client, arn)
    token = pagination.encode(SCOPE, {"k": 1}, current_key(client, arn))  # from an instance that refreshed
    assert pagination.decode(token, SCOPE) == {"k": 1}


@pytest.mark.usefixtures("secret")
def test_the_key_is_read_once_per_max_age_not_per_request():
    calls: list[str] = []
    pagination_keys.clear()
    provider_client = pagination_keys._providers()["AWSCURRENT"].client
    provider_client.meta.events.register("before-call.secrets-manager.GetSecretValue", lambda **_: calls.append("x"))
    for n in range(5):
        pagination.decode(pagination.encode(SCOPE, {"n": n}), SCOPE)
    assert len(calls) == 1


def test_rotation_steps_are_safe_to_repeat(secret):
    client, arn = secret
    token = str(uuid.uuid4())
    event = {"SecretId": arn, "ClientRequestToken": token, "Step": "createSecret"}
    rotation.handler(event, None, client)
    pending = client.get_secret_value(SecretId=arn, VersionStage="AWSPENDING")["SecretString"]
    rotation.handler(event, None, client)
    assert client.get_secret_value(SecretId=arn, VersionStage="AWSPENDING")["SecretString"] == pending
    rotation.handler({**event, "Step": "finishSecret"}, None, client)
    rotation.handler({**event, "Step": "finishSecret"}, None, client)
    assert client.get_secret_value(SecretId=arn, VersionStage="AWSCURRENT")["SecretString"] == pending


def test_a_missing_secret_is_a_configuration_error_not_a_retry(secret, monkeypatch):
    monkeypatch.setenv("PAGINATION_SECRET_ARN", secret[1] + "-gone")
    settings.cache_clear()
    pagination_keys.clear()
    with pytest.raises(ConfigurationError, match="ResourceNotFoundException"):
        pagination.encode(SCOPE, {"k": 1})


def test_a_never_rotated_secret_has_no_previous_key_and_forged_tokens_cost_no_calls(secret):
    token = pagination.encode("other-scope", {"k": 1})  # a valid token of another list: forged for this one
    calls: list[str] = []
    for provider in pagination_keys._providers().values():
        provider.client.meta.events.register(
            "provide-client-params.secrets-manager.GetSecretValue",
            lambda params, **_: calls.append(params["VersionStage"]),
        )
    for _ in range(5):
        with pytest.raises(errors.InvalidNextToken):  # current does not match, there is no previous: refused
            pagination.decode(token, SCOPE)
    # one look for AWSPREVIOUS, then the one refresh a mismatch may trigger; then nothing (cached, rate-limited)
    assert calls == ["AWSPREVIOUS", "AWSCURRENT", "AWSPREVIOUS"]
