"""Pieces shared by deploy-time workflows (optimization jobs, benchmarks): handler Lambdas with
their own role and log group, and a logged Step Functions Standard workflow that invokes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import CfnResource, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from .nag import acknowledge, acknowledge_wildcard_resources

HANDLER_RUNTIME = lambda_.Runtime.PYTHON_3_13
"""The runtime of every handler the library ships."""

LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
"""How long handler and workflow logs are kept."""


def handler_function(
    scope: Construct,
    id: str,
    *,
    code: lambda_.Code,
    handler: str,
    timeout: Duration,
    description: str,
    memory_size: int = 256,
) -> lambda_.Function:
    """A handler Lambda (ARM) with a role of its own that may only write its own log group.

    The caller grants whatever else the handler needs; call ``depend_on_policy_only`` once the
    grants are in place.
    """
    log_group = logs.LogGroup(
        scope, f"{id}Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
    role = iam.Role(
        scope,
        f"{id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{description} ({scope.node.path})",
    )
    log_group.grant_write(role)
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
) -> sfn.StateMachine:
    """A Standard workflow (``Workflow``) whose every state is logged (``WorkflowLogs``).

    ``invoked`` are the functions its tasks call; ``summary`` says what the workflow is, as
    the reason for not tracing it with X-Ray.
    """
    log_group = logs.LogGroup(
        scope, "WorkflowLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
    )
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


def depend_on_policy_only(construct: Construct, role: iam.IRole | None) -> None:
    """Keep only the inline-policy dependency CDK adds (the role is already referenced), which
    cfn-lint would otherwise flag as a redundant DependsOn (W3005)."""
    resource = construct.node.default_child
    policy = role.node.try_find_child("DefaultPolicy") if role is not None else None
    if isinstance(resource, CfnResource) and policy is not None:
        policy_resource = policy.node.default_child
        assert isinstance(policy_resource, CfnResource)
        resource.add_override("DependsOn", [policy_resource.logical_id])
