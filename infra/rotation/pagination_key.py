"""Secrets Manager rotation of the pagination key: a new random key becomes AWSCURRENT, the old one AWSPREVIOUS.

createSecret stores a new random key as AWSPENDING, finishSecret promotes it; setSecret and testSecret have nothing
to do (only the shop's own functions use the key). Every step is safe to repeat.
"""

from __future__ import annotations

from typing import Any

import boto3

KEY_LENGTH = 64
CURRENT, PENDING = "AWSCURRENT", "AWSPENDING"


class RotationError(RuntimeError):
    pass


def handler(event: dict[str, Any], context: Any, client: Any = None) -> None:
    client = client or boto3.client("secretsmanager")
    arn, token, step = event["SecretId"], event["ClientRequestToken"], event["Step"]
    versions: dict[str, list[str]] = client.describe_secret(SecretId=arn).get("VersionIdsToStages", {})
    stages = versions.get(token, [])
    if CURRENT in stages:
        return  # this rotation already finished
    if step == "createSecret":
        _create(client, arn, token)
        return
    if PENDING not in stages:
        raise RotationError(f"version {token} of the secret is not pending rotation")
    if step == "finishSecret":
        current = next(version for version, names in versions.items() if CURRENT in names)
        client.update_secret_version_stage(
            SecretId=arn, VersionStage=CURRENT, MoveToVersionId=token, RemoveFromVersionId=current
        )
    elif step not in ("setSecret", "testSecret"):
        raise RotationError(f"unknown rotation step {step!r}")


def _create(client: Any, arn: str, token: str) -> None:
    try:
        client.get_secret_value(SecretId=arn, VersionId=token, VersionStage=PENDING)
        return  # created by an earlier attempt of this step
    except client.exceptions.ResourceNotFoundException:
        pass
    key = client.get_random_password(PasswordLength=KEY_LENGTH, ExcludePunctuation=True)["RandomPassword"]
    client.put_secret_value(SecretId=arn, ClientRequestToken=token, SecretString=key, VersionStages=[PENDING])
