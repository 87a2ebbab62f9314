"""The order archive bucket's name and object ARNs, for the data stack that creates the bucket and the
functions' stacks that are granted it (neither imports the other for them)."""

from __future__ import annotations

from aws_cdk import Aws

from infra.settings import ARCHIVE_BUCKET_SUFFIX, DeployConfig


def archive_bucket_name(config: DeployConfig) -> str:
    """The archive bucket's name (a token in the account and region): the functions' stacks build its ARN
    from it, so neither the grant nor ARCHIVE_BUCKET imports anything from the data stack."""
    return f"{config.name(ARCHIVE_BUCKET_SUFFIX)}-{Aws.ACCOUNT_ID}-{Aws.REGION}"


def archive_objects_arn(config: DeployConfig, prefix: str) -> str:
    return f"arn:{Aws.PARTITION}:s3:::{archive_bucket_name(config)}/{prefix}*"
