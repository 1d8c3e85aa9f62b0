"""Pieces shared by deploy-time workflows (optimization jobs, benchmarks): handler Lambdas with
their own role and log group, and a logged Step Functions Standard workflow that invokes them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
    Annotations,
    ArnFormat,
    AssetHashType,
    BundlingOptions,
    CfnResource,
    CustomResource,
    DockerImage,
    Duration,
    ILocalBundling,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_cloudformation as cloudformation
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..prop_types import typed_props
from .nag import acknowledge, acknowledge_wildcard_resources, own_role
from .validation import ValidationError

HANDLER_RUNTIME = lambda_.Runtime.PYTHON_3_13
"""The runtime of every handler the library ships."""

LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
"""How long handler and workflow logs are kept."""

CUSTOM_RESOURCE_TIMEOUT = Duration.minutes(5)
"""How long CloudFormation waits for a handler's answer (the work itself is waited for by a
wait condition), unless the handler may run longer (``answer_timeout``)."""

ANSWER_MARGIN = Duration.minutes(1)
"""What CloudFormation waits past a handler's Lambda timeout, for the invocation's start and
the answer's upload."""


def answer_timeout(handler: lambda_.IFunction) -> Duration:
    """How long CloudFormation waits for ``handler``'s answer (the custom resource's
    ``ServiceTimeout``): ``CUSTOM_RESOURCE_TIMEOUT``, or the handler's Lambda timeout and
    ``ANSWER_MARGIN`` where that is longer. A handler that may run longer than the
    ``ServiceTimeout`` (a Delete waiting for a job to stop) would otherwise fail the stack
    operation with CloudFormation's timeout while it still works, and its own reason would
    never be read ("ServiceTimeout": "The maximum time, in seconds, that can elapse before a
    custom resource operation times out", AWS::CloudFormation::CustomResource)."""
    own = handler.timeout if isinstance(handler, lambda_.Function) else None
    if own is None or own.to_seconds() + ANSWER_MARGIN.to_seconds() <= (
        CUSTOM_RESOURCE_TIMEOUT.to_seconds()
    ):
        return CUSTOM_RESOURCE_TIMEOUT
    return Duration.seconds(own.to_seconds() + ANSWER_MARGIN.to_seconds())


@typed_props
@dataclass(frozen=True, kw_only=True)
class HandlerPlacement:
    """Where a construct's handler Lambdas run, and which key encrypts their logs."""

    vpc: ec2.IVpc | None = None
    """Run the handlers in this VPC (it needs a route to the AWS APIs they call and to S3);
    default none (Lambda's own network)."""
    vpc_subnets: ec2.SubnetSelection | None = None
    """Subnets within ``vpc``; default the private subnets with egress."""
    security_groups: Sequence[ec2.ISecurityGroup] = ()
    """Security groups of the handlers; default one new group per handler, egress only."""
    log_encryption_key: kms.IKey | None = None
    """Customer key for the handler and workflow log groups; default CloudWatch Logs' own
    encryption."""


PACKAGE_ROOT = Path(__file__).resolve().parent.parent
"""The ``cdk_sagemaker_llm`` package directory, where handler sources live."""
_STUB = '"""Stub package of a Lambda asset: handler modules only, no aws_cdk."""\n'


@dataclass(frozen=True)
class HandlerAsset:
    """A Lambda asset bundled by copying files, never through Docker.

    The handler modules keep their place under a stub ``cdk_sagemaker_llm`` package (whose
    ``__init__`` imports no aws_cdk), so their relative imports (``..runtime_support``, the
    benchmark engine) work the same in the repository and in the Lambda; a top-level
    ``<entry_module>.py`` re-exports the entry points for the function's ``handler`` setting.
    """

    sources: tuple[str, ...]
    """Files or directories (their ``*.py``), relative to the package directory."""
    entry_module: str
    """The top-level module name, e.g. ``index`` for handlers named ``index.on_event``."""
    entry_source: str
    """That module's source: imports of the entry points."""

    def files(self) -> list[tuple[str, Path]]:
        """``(path in the asset, source file)`` of every file copied, sorted."""
        files: list[tuple[str, Path]] = []
        for source in self.sources:
            path = PACKAGE_ROOT / source
            found = sorted(path.glob("*.py")) if path.is_dir() else [path]
            files += [(f"cdk_sagemaker_llm/{f.relative_to(PACKAGE_ROOT)}", f) for f in found]
        return sorted(files)

    def bundle(self, output_dir: str | os.PathLike[str]) -> None:
        """Lay the asset out in ``output_dir``."""
        out = Path(output_dir)
        for target, source in self.files():
            (out / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out / target)
        for package in ("cdk_sagemaker_llm", "cdk_sagemaker_llm/lambdas"):
            (out / package / "__init__.py").write_text(_STUB)
        (out / f"{self.entry_module}.py").write_text(self.entry_source)

    def hash(self) -> str:
        """A hash of the asset's sources (paths and contents): deterministic, Docker-free."""
        digest = hashlib.sha256(self.entry_module.encode() + self.entry_source.encode())
        digest.update(_STUB.encode())
        for target, source in self.files():
            digest.update(target.encode() + b"\0" + source.read_bytes() + b"\0")
        return digest.hexdigest()

    def code(self) -> lambda_.Code:
        """The Lambda code, bundled locally (the placeholder Docker image is never pulled)."""
        return lambda_.Code.from_asset(
            str(PACKAGE_ROOT / "lambdas"),
            asset_hash_type=AssetHashType.CUSTOM,
            asset_hash=self.hash(),
            bundling=BundlingOptions(
                image=DockerImage.from_registry("unused-local-bundling"),
                local=_CopyFiles(self),
            ),
        )


@jsii.implements(ILocalBundling)
class _CopyFiles:
    """Local bundling that copies the asset's files (CDK then never runs Docker)."""

    def __init__(self, asset: HandlerAsset) -> None:
        self._asset = asset

    def try_bundle(self, output_dir: str, *_options: Any, **_keywords: Any) -> bool:
        self._asset.bundle(output_dir)
        return True


def _log_group(scope: Construct, id: str, key: kms.IKey | None) -> logs.LogGroup:
    if key is not None:
        _let_logs_use(scope, key)
    return logs.LogGroup(
        scope,
        id,
        retention=LOG_RETENTION,
        removal_policy=RemovalPolicy.DESTROY,
        encryption_key=key,
    )


def _let_logs_use(scope: Construct, key: kms.IKey) -> None:
    """CloudWatch Logs' key-policy statement, for this account's log groups only (CloudWatch
    Logs user guide, "Encrypt log data in CloudWatch Logs using AWS KMS": the
    ``kms:EncryptionContext:aws:logs:arn`` condition). An imported key's policy cannot be
    changed here: a warning says what it must allow, else the log groups fail to create."""
    stack = Stack.of(scope)
    principal = f"logs.{stack.region}.amazonaws.com"
    log_groups = stack.format_arn(
        service="logs",
        resource="log-group",
        resource_name="*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    added = key.add_to_resource_policy(
        iam.PolicyStatement(
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*",
                     "kms:Describe*"],
            principals=[iam.ServicePrincipal(principal)],
            resources=["*"],
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_groups}},
        )
    )  # fmt: skip
    if not added.statement_added:
        Annotations.of(scope).add_warning_v2(
            "cdk-sagemaker-llm:log-key-policy",
            f"handler_placement.log_encryption_key is imported, so its key policy cannot be "
            f"changed here: it must let {principal} use it for this account's log groups, or "
            "the handlers' log groups fail to create.",
        )


def _check_handler_subnets(placement: HandlerPlacement) -> None:
    """Without ``vpc_subnets`` the handlers go to the VPC's private subnets with egress (they
    call SageMaker, S3 and CloudFormation's endpoints): a VPC without any is refused here
    rather than by the CDK's own error, which names no property."""
    vpc = placement.vpc
    if vpc is None or placement.vpc_subnets is not None or vpc.private_subnets:
        return
    raise ValidationError(
        "handler_placement.vpc_subnets",
        None,
        f"{vpc.node.path} has no private subnets with egress, where the handlers go by default",
        "pass vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED) "
        "with interface endpoints for SageMaker, S3, STS and CloudFormation, or a VPC with a "
        "NAT gateway",
    )


def handler_function(
    scope: Construct,
    id: str,
    *,
    code: lambda_.Code,
    handler: str,
    timeout: Duration,
    description: str,
    memory_size: int = 256,
    placement: HandlerPlacement | None = None,
) -> lambda_.Function:
    """A handler Lambda (ARM) with a role of its own that may only write its own log group.

    The caller grants whatever else the handler needs; call ``depend_on_policy_only`` once the
    grants are in place.
    """
    placement = placement or HandlerPlacement()
    if placement.vpc is None and (placement.vpc_subnets or placement.security_groups):
        raise ValidationError(
            "handler_placement.vpc",
            None,
            "vpc_subnets and security_groups need a vpc",
            "pass vpc as well, or drop vpc_subnets and security_groups",
        )
    log_group = _log_group(scope, f"{id}Logs", placement.log_encryption_key)
    role = iam.Role(
        scope,
        f"{id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{description} ({scope.node.path})",
    )
    own_role(role)
    log_group.grant_write(role)
    if placement.vpc is not None:
        _check_handler_subnets(placement)
        # Lambda attaches this itself only to a role it creates: without it, creating the
        # function fails ("The provided execution role does not have permissions to call
        # CreateNetworkInterface on EC2", AWS Lambda developer guide, "Giving Lambda functions
        # access to resources in an Amazon VPC": AWSLambdaVPCAccessExecutionRole).
        role.add_managed_policy(
            iam.ManagedPolicy.from_aws_managed_policy_name(
                "service-role/AWSLambdaVPCAccessExecutionRole"
            )
        )
    function = lambda_.Function(
        scope,
        id,
        runtime=HANDLER_RUNTIME,
        architecture=lambda_.Architecture.ARM_64,
        handler=handler,
        code=code,
        timeout=timeout,
        memory_size=memory_size,
        role=role,
        log_group=log_group,
        description=description,
        vpc=placement.vpc,
        vpc_subnets=placement.vpc_subnets
        or (
            ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
            if placement.vpc
            else None
        ),
        security_groups=list(placement.security_groups) or None,
    )
    if placement.vpc is not None:
        acknowledge(
            role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaVPCAccessExecutionRole]",
            "Lambda's network-interface rights for a function in a VPC; AWS maintains them.",
        )
    acknowledge(
        function,
        "AwsSolutions-L1",
        f"The handlers run on {HANDLER_RUNTIME.name}, a supported runtime the library tests "
        "against; they are moved deliberately, not on each release.",
    )
    return function


def logged_workflow(
    scope: Construct,
    *,
    definition: sfn.IChainable,
    timeout: Duration,
    invoked: Sequence[lambda_.IFunction],
    summary: str,
    log_encryption_key: kms.IKey | None = None,
) -> sfn.StateMachine:
    """A Standard workflow (``Workflow``) whose every state is logged (``WorkflowLogs``).

    ``invoked`` are the functions its tasks call; ``summary`` says what the workflow is, as
    the reason for not tracing it with X-Ray.
    """
    log_group = _log_group(scope, "WorkflowLogs", log_encryption_key)
    state_machine = sfn.StateMachine(
        scope,
        "Workflow",
        definition_body=sfn.DefinitionBody.from_chainable(definition),
        state_machine_type=sfn.StateMachineType.STANDARD,
        timeout=timeout,
        logs=sfn.LogOptions(
            destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False
        ),
        tracing_enabled=False,
    )
    acknowledge(state_machine, "AwsSolutions-SF2", f"{summary}; its logs record every state.")
    acknowledge_wildcard_resources(
        state_machine,
        ["*", *(f"{function.function_arn}:*" for function in invoked)],
        "CDK's grants: log delivery calls support no resource scoping, and invoking a "
        "function covers its versions.",
    )
    return state_machine


@dataclass(frozen=True)
class SignalledWork:
    """Deploy-time work: the custom resource that starts it, and the wait condition that
    holds the deployment until the work signals the wait handle."""

    resource: CustomResource
    wait_condition: cloudformation.CfnWaitCondition


def signalled_work(
    scope: Construct,
    *,
    definition_hash: str,
    handler: lambda_.IFunction,
    resource_type: str,
    properties: Mapping[str, Any],
    wait_seconds: int,
) -> SignalledWork:
    """Start work with a custom resource (``Resource``, answered in seconds) and wait up to
    ``wait_seconds`` for it to signal the handle passed as the ``WaitHandle`` property.

    The handle and the wait condition carry ``definition_hash`` in their ids: a wait
    condition cannot be updated, so a changed definition gets a new handle, hence new work,
    and an unchanged one leaves the template, hence CloudFormation, untouched.
    """
    handle = cloudformation.CfnWaitConditionHandle(scope, f"WaitHandle{definition_hash}")
    resource = CustomResource(
        scope,
        "Resource",
        service_token=handler.function_arn,
        resource_type=resource_type,
        service_timeout=answer_timeout(handler),
        properties={**properties, "WaitHandle": handle.ref},
    )
    wait_condition = cloudformation.CfnWaitCondition(
        scope, f"Wait{definition_hash}", handle=handle.ref, timeout=str(wait_seconds), count=1
    )
    wait_condition.node.add_dependency(resource)
    return SignalledWork(resource, wait_condition)


def depend_on_policy_only(construct: Construct, role: iam.IRole | None) -> None:
    """Keep only the inline-policy dependency CDK adds (the role is already referenced), which
    cfn-lint would otherwise flag as a redundant DependsOn (W3005)."""
    resource = construct.node.default_child
    policy = role.node.try_find_child("DefaultPolicy") if role is not None else None
    if isinstance(resource, CfnResource) and policy is not None:
        policy_resource = policy.node.default_child
        assert isinstance(policy_resource, CfnResource)
        resource.add_override("DependsOn", [policy_resource.logical_id])
