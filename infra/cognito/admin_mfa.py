"""Cognito pre token generation trigger (event version 2): admin rights only with TOTP MFA enabled.

Removes `admin` from the token's groups unless AdminGetUser shows TOTP MFA; fails closed (no `admin`) and never
raises. Why: docs/decisions.md, "Production infrastructure: admin MFA".
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

ADMIN_GROUP = "admin"
TOTP_MFA = "SOFTWARE_TOKEN_MFA"
# Cognito waits 5 s for the trigger: two attempts of at most 1.5 s and a backoff of at most 1 s fit.
CLIENT_CONFIG = Config(connect_timeout=0.5, read_timeout=1, retries={"mode": "standard", "total_max_attempts": 2})

logger = logging.getLogger(__name__)


def handler(event: dict[str, Any], context: Any, client: Any = None) -> dict[str, Any]:
    group_configuration = event["request"].get("groupConfiguration") or {}
    groups: list[str] = group_configuration.get("groupsToOverride") or []
    if ADMIN_GROUP not in groups or _has_totp_mfa(client, event["userPoolId"], event["userName"]):
        return event
    overrides = event["response"].get("claimsAndScopeOverrideDetails") or {}
    overrides["groupOverrideDetails"] = {
        **group_configuration,
        "groupsToOverride": [group for group in groups if group != ADMIN_GROUP],
    }
    event["response"]["claimsAndScopeOverrideDetails"] = overrides
    return event


@functools.cache
def _cognito() -> Any:
    return boto3.client("cognito-idp", config=CLIENT_CONFIG)


def _has_totp_mfa(client: Any, user_pool_id: str, username: str) -> bool:
    client = client or _cognito()
    try:
        user = client.admin_get_user(UserPoolId=user_pool_id, Username=username)
    except (ClientError, BotoCoreError) as error:
        logger.error(
            "admin group dropped from the token: the user's MFA settings could not be read: %s",
            error,
            extra={"user_pool_id": user_pool_id, "username": username},
        )
        return False
    if TOTP_MFA in user.get("UserMFASettingList", []):
        return True
    logger.warning(
        "admin group dropped from the token: the user has no TOTP MFA",
        extra={"user_pool_id": user_pool_id, "username": username},
    )
    return False
