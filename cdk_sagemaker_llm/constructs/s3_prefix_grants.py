"""Least-privilege S3 grants on exactly one key or key prefix: ``s3:GetObject`` (or
``s3:DeleteObject``) on the objects, ``s3:ListBucket`` conditioned on ``s3:prefix``, and decrypt
on the bucket's key (Amazon S3 user guide, "Policy condition keys for Amazon S3": ``s3:prefix``)."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from .nag import acknowledge_wildcard_resources


def grant_read(grantee: iam.IGrantable, bucket: s3.IBucket, key: str, is_prefix: bool) -> None:
    """Read ``key`` (an object, or every object under a prefix when ``is_prefix``)."""
    pattern = key + "*" if is_prefix else key
    iam.Grant.add_to_principal(
        grantee=grantee, actions=["s3:GetObject"], resource_arns=[bucket.arn_for_objects(pattern)]
    )
    if is_prefix:
        acknowledge_prefix(grantee, bucket, key)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [pattern]}},
            )
        )
    if bucket.encryption_key is not None:
        bucket.encryption_key.grant_decrypt(grantee)


def acknowledge_prefix(grantee: iam.IGrantable, bucket: s3.IBucket, key: str) -> None:
    """Acknowledge the wildcard of an exact-prefix S3 grant on the grantee's role."""
    principal = grantee.grant_principal
    if isinstance(principal, Construct):
        acknowledge_wildcard_resources(
            principal,
            [bucket.arn_for_objects(f"{key}*")],
            "Objects under exactly one S3 prefix (a model's weights, a job's output folders).",
        )


def grant_delete(grantee: iam.IGrantable, bucket: s3.IBucket, key_stem: str) -> None:
    """Delete (and list) the objects whose keys start with ``key_stem``."""
    iam.Grant.add_to_principal(
        grantee=grantee,
        actions=["s3:DeleteObject"],
        resource_arns=[bucket.arn_for_objects(key_stem + "*")],
    )
    acknowledge_prefix(grantee, bucket, key_stem)
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [key_stem + "*"]}},
        )
    )
