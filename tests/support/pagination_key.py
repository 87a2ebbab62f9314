"""The pagination key as deployed: a Secrets Manager secret (moto's), read at run time, rotated on schedule."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest

from infra.rotation import pagination_key as rotation
from shop import pagination_keys
from shop.config import settings


def deploy_key(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """A new secret the functions read their key from (PAGINATION_SECRET_ARN, as deployed); inside a moto mock.

    Returns the Secrets Manager client and the secret's ARN; key caches are cleared (a fresh instance)."""
    client = boto3.client("secretsmanager")
    arn = client.create_secret(Name=f"shop-test-pagination-{uuid.uuid4()}", SecretString="k" * 64)["ARN"]
    monkeypatch.delenv("PAGINATION_SECRET", raising=False)
    monkeypatch.setenv("PAGINATION_SECRET_ARN", arn)
    forget_keys()
    return client, arn


def forget_keys() -> None:
    """What a fresh instance starts with: settings and pagination keys read anew."""
    settings.cache_clear()
    pagination_keys.clear()


def rotate(client: Any, arn: str) -> None:
    """What Secrets Manager does on schedule: the four steps, each through the rotation function."""
    token = str(uuid.uuid4())
    for step in ("createSecret", "setSecret", "testSecret", "finishSecret"):
        rotation.handler({"SecretId": arn, "ClientRequestToken": token, "Step": step}, None, client)


def current_key(client: Any, arn: str) -> bytes:
    return client.get_secret_value(SecretId=arn, VersionStage="AWSCURRENT")["SecretString"].encode()
