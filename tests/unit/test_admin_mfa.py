"""The pre token generation trigger keeps `admin` in a token only for users with TOTP MFA.

Events have the shape Cognito sends a version 2 trigger (docs: user-pool-lambda-pre-token-generation);
Cognito applies `response.claimsAndScopeOverrideDetails.groupOverrideDetails` to the `cognito:groups`
claim of both the ID and the access token, and leaves the groups as they are when it is null.
AdminGetUser is answered by botocore's Stubber (moto's cognito-idp needs joserfc, which is not a
dependency of this project); the Stubber checks the request parameters against the service model.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from infra.cognito import admin_mfa

POOL_ID = "eu-west-1_EXAMPLE12"


@pytest.fixture
def cognito() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("cognito-idp", region_name="eu-west-1")
    with Stubber(client) as stub:  # a call without a stubbed answer fails the test
        yield client, stub
        stub.assert_no_pending_responses()


def user_is(stub: Stubber, username: str, mfa: list[str]) -> None:
    """AdminGetUser's answer for a confirmed user with these MFA methods enabled."""
    stub.add_response(
        "admin_get_user",
        {
            "Username": username,
            "UserAttributes": [{"Name": "sub", "Value": "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111"}],
            "UserCreateDate": datetime(2026, 1, 1, tzinfo=UTC),
            "Enabled": True,
            "UserStatus": "CONFIRMED",
            "UserMFASettingList": mfa,
            **({"PreferredMfaSetting": mfa[0]} if mfa else {}),
        },
        {"UserPoolId": POOL_ID, "Username": username},
    )


def token_event(pool_id: str, username: str, groups: list[str]) -> dict[str, Any]:
    return {
        "version": "2",
        "triggerSource": "TokenGeneration_Authentication",
        "region": "us-east-1",
        "userPoolId": pool_id,
        "userName": username,
        "callerContext": {"awsSdkVersion": "aws-sdk-unknown-unknown", "clientId": "1example23456789"},
        "request": {
            "userAttributes": {"sub": "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111", "email": f"{username}@example.com"},
            "groupConfiguration": {"groupsToOverride": groups, "iamRolesToOverride": [], "preferredRole": None},
            "scopes": ["aws.cognito.signin.user.admin"],
        },
        "response": {"claimsAndScopeOverrideDetails": None},
    }


def token_groups(event: dict[str, Any]) -> list[str]:
    """The groups Cognito writes into the tokens after the trigger answered."""
    overrides = event["response"]["claimsAndScopeOverrideDetails"]
    if overrides is None or "groupOverrideDetails" not in overrides:
        return list(event["request"]["groupConfiguration"]["groupsToOverride"])
    return list(overrides["groupOverrideDetails"]["groupsToOverride"])


def answer(client: Any, username: str, groups: list[str]) -> dict[str, Any]:
    event = token_event(POOL_ID, username, groups)
    response = admin_mfa.handler(copy.deepcopy(event), None, client=client)
    assert response["request"] == event["request"]
    return response


def test_an_admin_with_totp_mfa_keeps_admin(cognito) -> None:
    client, stub = cognito
    user_is(stub, "alice", ["SOFTWARE_TOKEN_MFA"])
    response = answer(client, "alice", ["ops", "admin"])
    assert response["response"]["claimsAndScopeOverrideDetails"] is None  # the tokens carry the groups as they are
    assert token_groups(response) == ["ops", "admin"]


@pytest.mark.parametrize("mfa", [[], ["SMS_MFA"], ["EMAIL_OTP"]], ids=["none", "sms", "email"])
def test_an_admin_without_totp_mfa_loses_admin_and_keeps_the_other_groups(cognito, caplog, mfa) -> None:
    client, stub = cognito
    user_is(stub, "bob", mfa)
    with caplog.at_level(logging.WARNING, logger=admin_mfa.__name__):
        response = answer(client, "bob", ["ops", "admin"])
    assert token_groups(response) == ["ops"]
    assert response["response"]["claimsAndScopeOverrideDetails"]["groupOverrideDetails"] == {
        "groupsToOverride": ["ops"],
        "iamRolesToOverride": [],
        "preferredRole": None,
    }
    assert "no TOTP MFA" in caplog.text


def test_users_outside_admin_are_left_alone_without_reading_the_user(cognito) -> None:
    client, _ = cognito  # nothing stubbed: a call to Cognito would fail the test
    for groups in ([], ["ops"], ["administrators", "ADMIN"]):
        event = token_event(POOL_ID, "carol", groups)
        assert admin_mfa.handler(copy.deepcopy(event), None, client=client) == event


@pytest.mark.parametrize("code", ["AccessDeniedException", "UserNotFoundException", "TooManyRequestsException"])
def test_an_admin_whose_user_cannot_be_read_loses_admin(cognito, caplog, code) -> None:
    client, stub = cognito
    stub.add_client_error("admin_get_user", service_error_code=code, http_status_code=400)
    with caplog.at_level(logging.ERROR, logger=admin_mfa.__name__):
        response = answer(client, "dave", ["admin", "ops"])
    assert token_groups(response) == ["ops"]
    assert "could not be read" in caplog.text
    assert code in caplog.text


def test_an_admin_whose_user_cannot_be_reached_loses_admin(caplog) -> None:
    client = boto3.client("cognito-idp", region_name="eu-west-1", config=Config(retries={"total_max_attempts": 1}))

    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://cognito-idp.eu-west-1.amazonaws.com/")

    client.meta.events.register("before-send.cognito-idp.AdminGetUser", unreachable)
    with caplog.at_level(logging.ERROR, logger=admin_mfa.__name__):
        response = answer(client, "erin", ["admin"])
    assert token_groups(response) == []
    assert "Could not connect to the endpoint URL" in caplog.text
