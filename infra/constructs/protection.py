"""What a protected stage keeps when its stack is deleted or a resource replaced (DeployConfig.protected)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy

from infra.settings import DeployConfig


def removal_policy(config: DeployConfig) -> RemovalPolicy:
    return RemovalPolicy.RETAIN if config.protected else RemovalPolicy.DESTROY
