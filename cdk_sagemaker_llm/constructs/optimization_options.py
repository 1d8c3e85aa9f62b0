"""An optimization job's own options, grouped as ``CreateOptimizationJob`` groups them
(SageMaker API reference): where the optimized model goes (``OutputConfig``, and what deleting
does to it), how long the job may run and how it is watched (``StoppingCondition``, the poll
workflow, the job names), and what it runs as and in (``RoleArn``, ``VpcConfig``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..prop_types import typed_factory, typed_props
from .nag import acknowledge_key_grant
from .networking import place_in_vpc
from .s3_prefix_grants import acknowledge_prefix, grant_delete, grant_read
from .validation import (
    SAGEMAKER_NAME,
    ValidationError,
    check_range,
    is_unresolved,
    whole_seconds,
)
from .workflow_loop import check_poll_count

if TYPE_CHECKING:  # annotations only: most stacks place nothing in a VPC (networking.py)
    from aws_cdk import aws_ec2 as ec2

MAX_WAIT_SECONDS = 43_200
"""A CloudFormation wait condition's longest timeout (12 hours)."""
START_MARGIN = Duration.minutes(30)
"""Added to the max runtime for the poller: a job may queue before its runtime starts."""
SIGNAL_MARGIN = Duration.minutes(20)
"""The poller gives up this long before the wait condition times out, to report why. It is
longer than the worst case of a failing poll and its retries (5 attempts of at most 1 minute
each plus 150 s of backoff, then the failure report), so a reason always reaches
CloudFormation before the wait condition's own timeout."""
MAX_RUNTIME_SECONDS = MAX_WAIT_SECONDS - int(START_MARGIN.plus(SIGNAL_MARGIN).to_seconds())
DEFAULT_MAX_RUNTIME = Duration.hours(10)
"""The SageMaker Python SDK's default max runtime (36,000 s)."""
DEFAULT_OUTPUT_PREFIX = "optimized/"
DEFINITION_HASH_LENGTH = 8
HANDLE_HASH_LENGTH = 6
MAX_PREFIX_LENGTH = 63 - DEFINITION_HASH_LENGTH - HANDLE_HASH_LENGTH - 2
"""Of a job name prefix: job names are ``<prefix>-<definition hash>-<handle hash>``."""
MAX_SECURITY_GROUPS = 5
MAX_SUBNETS = 16


@typed_props
@dataclass(frozen=True, kw_only=True)
class OptimizationOutput:
    """Where the job writes the optimized model (``OutputConfig``), and what deleting the job
    does to it: ``OptimizationOutput.in_bucket(bucket, prefix=..., encryption_key=...,
    removal_policy=...)``. Each job writes to its own folder under ``prefix``."""

    bucket: s3.IBucket
    """The bucket the artifacts are written to."""
    prefix: str = DEFAULT_OUTPUT_PREFIX
    """The key prefix (ending in ``/``) under which each job writes its own folder."""
    encryption_key: kms.IKey | None = None
    """The key encrypting the artifacts (``OutputConfig.KmsKeyId``); None: the bucket's."""
    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN
    """``DESTROY`` deletes the job's output folder with the resource (once the job has ended:
    a Delete waits for a stopping job, see ``OptimizationJob``); otherwise it is kept."""

    def __post_init__(self) -> None:
        _check_prefix("OptimizationOutput.in_bucket(prefix)", self.prefix)

    @staticmethod
    @typed_factory
    def in_bucket(
        bucket: s3.IBucket,
        *,
        prefix: str = DEFAULT_OUTPUT_PREFIX,
        encryption_key: kms.IKey | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> OptimizationOutput:
        """The optimized model goes to ``bucket``, each job in a folder of its own under
        ``prefix`` (ending in ``/``; default ``optimized/``), encrypted with
        ``encryption_key`` (default the bucket's encryption). ``removal_policy``: RETAIN
        (default) keeps the artifacts when the job resource is deleted, DESTROY deletes its
        output folder once the job has ended; a running job is always stopped."""
        return OptimizationOutput(
            bucket=bucket,
            prefix=prefix,
            encryption_key=encryption_key,
            removal_policy=removal_policy,
        )

    @property
    def location_stem(self) -> str:
        """``s3://<bucket>/<prefix>``: each job's folder is this plus the job name."""
        return f"s3://{self.bucket.bucket_name}/{self.prefix}"

    @property
    def destroys_artifacts(self) -> bool:
        """True when deleting the job resource deletes its output folder."""
        return self.removal_policy is RemovalPolicy.DESTROY

    def render(self) -> dict[str, Any]:
        """The request's ``OutputConfig`` (the handler adds the job's ``S3OutputLocation``)."""
        return {"KmsKeyId": self.encryption_key.key_arn} if self.encryption_key else {}

    def grant_write(self, role: iam.IRole, key_stem: str) -> None:
        """Write (and read back) exactly the job folders starting with ``key_stem``, and
        encrypt with the output key (or the bucket's)."""
        iam.Grant.add_to_principal(
            grantee=role,
            actions=[
                "s3:PutObject",
                "s3:GetObject",
                "s3:AbortMultipartUpload",
                "s3:ListMultipartUploadParts",
            ],
            resource_arns=[self.bucket.arn_for_objects(key_stem + "*")],
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [key_stem + "*"]}},
            )
        )
        acknowledge_prefix(role, self.bucket, key_stem)
        key = self.encryption_key or self.bucket.encryption_key
        if key is not None:
            key.grant_encrypt_decrypt(role)
            acknowledge_key_grant(
                role,
                "Key.grant_encrypt_decrypt's action families on exactly the output key: the "
                "job writes (and reads back) its SSE-KMS artifacts",
            )

    def grant_delete(self, grantee: iam.IGrantable, key_stem: str) -> None:
        """Delete (and list) the job folders starting with ``key_stem`` (``DESTROY``)."""
        grant_delete(grantee, self.bucket, key_stem)

    def grant_read(self, grantee: iam.IGrantable, key_prefix: str) -> None:
        """Read every object under ``key_prefix`` (one job's folder), decrypting them."""
        grant_read(grantee, self.bucket, key_prefix, True)
        if self.encryption_key is not None:
            self.encryption_key.grant_decrypt(grantee)


@typed_props
@dataclass(frozen=True, kw_only=True)
class OptimizationRun:
    """How long the job may run (``StoppingCondition``), how often the deploy-time workflow
    checks it, and how its jobs are named."""

    max_runtime: Duration = DEFAULT_MAX_RUNTIME
    """Stop the job after this long: 1 s to 11 h 10 min (the poller allows 30 minutes more for
    the job to queue, and the deployment 20 more for the poller to report, within
    CloudFormation's 12 hours); default 10 hours, the SageMaker Python SDK's."""
    poll_interval: Duration = Duration.minutes(1)
    """How often the workflow describes the job: 10 s to 10 min, and no more often than one
    execution's 25,000 history events allow over the wait (every 17 s or more for the longest
    ``max_runtime``); default 1 minute."""
    job_name_prefix: str | None = None
    """Job names start with this (1-47 of [a-z0-9-]); default derived from the construct path.
    The handlers may act only on jobs with this prefix."""

    def __post_init__(self) -> None:
        # StoppingCondition.MaxRuntimeInSeconds and a Wait state's Seconds are whole seconds;
        # the CDK's to_seconds() raises a bare "CannotConvertedIntoWhole" for part seconds.
        whole_seconds("OptimizationRun(max_runtime)", self.max_runtime)
        whole_seconds("OptimizationRun(poll_interval)", self.poll_interval)
        check_range(
            "OptimizationRun(max_runtime) (seconds)",
            self.max_runtime_seconds,
            minimum=1,
            maximum=MAX_RUNTIME_SECONDS,
            fix=f"set max_runtime between 1 second and {MAX_RUNTIME_SECONDS // 60} minutes (the "
            "deployment waits 50 minutes longer, and CloudFormation waits at most 12 hours)",
        )
        check_range(
            "OptimizationRun(poll_interval) (seconds)",
            int(self.poll_interval.to_seconds()),
            minimum=10,
            maximum=600,
        )
        check_poll_count(
            "OptimizationRun(poll_interval) (seconds)",
            int(self.poll_interval.to_seconds()),
            self.wait_seconds,
            ", or shorten max_runtime",
        )
        if self.job_name_prefix is not None:
            check_job_name_prefix(self.job_name_prefix)

    @property
    def max_runtime_seconds(self) -> int:
        """``StoppingCondition.MaxRuntimeInSeconds``."""
        return int(self.max_runtime.to_seconds())

    @property
    def wait_seconds(self) -> int:
        """How long the deployment waits: the max runtime, the start margin the poller allows
        for queueing and the signal margin it keeps to report why it gave up (at most
        CloudFormation's 12 hours, which ``max_runtime``'s bound keeps)."""
        margins = int(START_MARGIN.plus(SIGNAL_MARGIN).to_seconds())
        return self.max_runtime_seconds + margins


@typed_props
@dataclass(frozen=True, kw_only=True)
class OptimizationSecurity:
    """What the job runs as (``RoleArn``) and in (``VpcConfig``):
    ``OptimizationSecurity.managed_network(role=...)`` or
    ``OptimizationSecurity.in_vpc(vpc, vpc_subnets=..., security_groups=..., role=...)``."""

    role: iam.IRole | None = None
    """The role the job runs as; None: a new least-privilege role (reads exactly the source,
    writes exactly this job's output folders)."""
    vpc: ec2.IVpc | None = None
    """Run the job in this VPC; None: SageMaker's managed network."""
    vpc_subnets: ec2.SubnetSelection | None = None
    """Subnets within ``vpc``; None: the private subnets (1-16)."""
    security_groups: Sequence[ec2.ISecurityGroup] | None = None
    """1-5 security groups; None: one new group, no inbound rules."""

    def __post_init__(self) -> None:
        if self.vpc is None and (self.vpc_subnets is not None or self.security_groups):
            raise ValidationError(
                "OptimizationSecurity(vpc)",
                None,
                "vpc_subnets and security_groups need a vpc",
                "use OptimizationSecurity.in_vpc(vpc, vpc_subnets=..., security_groups=...)",
            )
        if self.security_groups:
            _check_count(
                "OptimizationSecurity.in_vpc(security_groups)",
                [g.security_group_id for g in self.security_groups],
                MAX_SECURITY_GROUPS,
            )

    @staticmethod
    @typed_factory
    def managed_network(*, role: iam.IRole | None = None) -> OptimizationSecurity:
        """The job runs in SageMaker's managed network, as ``role`` (default a new
        least-privilege role)."""
        return OptimizationSecurity(role=role)

    @staticmethod
    @typed_factory
    def in_vpc(
        vpc: ec2.IVpc,
        *,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        role: iam.IRole | None = None,
    ) -> OptimizationSecurity:
        """The job runs in ``vpc``: in ``vpc_subnets`` (default the private subnets, 1-16),
        with ``security_groups`` (1-5; default one new group, no inbound rules), as ``role``
        (default a new least-privilege role, granted the network-interface rights)."""
        return OptimizationSecurity(
            role=role, vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups
        )

    def render_vpc_config(self, scope: Construct, role: iam.IRole) -> dict[str, Any] | None:
        """The request's ``VpcConfig`` (None: managed network), creating the default security
        group in ``scope`` and granting ``role`` the network-interface rights."""
        network = place_in_vpc(
            scope,
            vpc=self.vpc,
            vpc_subnets=self.vpc_subnets,
            security_groups=self.security_groups,
            role=role,
        )
        if network is None:
            return None
        _check_count("OptimizationSecurity.in_vpc(vpc_subnets)", network.subnet_ids, MAX_SUBNETS)
        return {"SecurityGroupIds": network.security_group_ids, "Subnets": network.subnet_ids}


def check_job_name_prefix(prefix: str) -> None:
    """A job name prefix leaves room for the hashes within SageMaker's 63 characters."""
    if is_unresolved(prefix) or (
        0 < len(prefix) <= MAX_PREFIX_LENGTH
        and SAGEMAKER_NAME.match(prefix)
        and prefix == prefix.lower()
    ):
        return
    raise ValidationError(
        "OptimizationRun(job_name_prefix)",
        prefix,
        f"job names are <prefix>-<definition hash>-<handle hash> within SageMaker's 63 "
        f"characters, so the prefix is 1-{MAX_PREFIX_LENGTH} lowercase letters, digits or "
        "hyphens, starting and ending with a letter or digit",
        "shorten the prefix or replace other characters with hyphens",
    )


MAX_OUTPUT_PREFIX = 900 - len("s3://") - 63 - 1
"""Of an output prefix: the handler's ``OutputLocationStem`` (``s3://<bucket>/<prefix>``) is
at most 900 characters, so that a job folder's ``S3OutputLocation`` stays within the API's
1024; a bucket name is at most 63."""


def _check_prefix(prop: str, prefix: str) -> None:
    if is_unresolved(prefix):
        return
    if "://" in prefix:
        raise ValidationError(
            prop,
            prefix,
            "a key prefix within the bucket, not an S3 URI (it would be written under "
            "s3://<bucket>/s3://...)",
            "pass the bucket as the bucket and only the key part as prefix, e.g. 'optimized/'",
        )
    if "//" in prefix or len(prefix) > MAX_OUTPUT_PREFIX:
        folders = "/".join(part for part in prefix.split("/") if part)
        raise ValidationError(
            prop,
            prefix if len(prefix) <= 80 else f"{prefix[:40]}... ({len(prefix)} characters)",
            f"a key prefix has no empty folder ('//') and at most {MAX_OUTPUT_PREFIX} characters",
            f"pass {folders[: MAX_OUTPUT_PREFIX - 1] + '/'!r}",
        )
    if any(c.isspace() or not c.isprintable() for c in prefix):
        # The job handler takes the output location as s3://<bucket>/<prefix> without
        # whitespace (job_properties.OUTPUT_STEM): a prefix with a space failed at deploy.
        raise ValidationError(
            prop,
            prefix,
            "an optimization job's output prefix has no whitespace or control characters",
            f"pass {''.join('-' if c.isspace() or not c.isprintable() else c for c in prefix)!r}",
        )
    if prefix.startswith("/") or (prefix and not prefix.endswith("/")):
        raise ValidationError(
            prop,
            prefix,
            "an S3 key prefix must end with '/' and not start with '/'",
            f"pass {prefix.strip('/') + '/'!r}",
        )


def _check_count(prop: str, values: Sequence[str], maximum: int) -> None:
    if not is_unresolved(values) and not 1 <= len(values) <= maximum:
        raise ValidationError(
            prop,
            len(values),
            f"an optimization job takes 1 to {maximum}",
            f"select between 1 and {maximum}",
        )
