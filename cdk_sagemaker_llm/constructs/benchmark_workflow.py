"""The deploy-time workflow both engines of ``EndpointBenchmark`` share: Lambda workers
(``benchmark``) and a SageMaker AI benchmark job (``managed_benchmark``).

- the loop itself (``<step>`` -> ``Done``? -> run a level, or wait) is ``workflow_loop``'s
  ``signalling_loop``, which ``OptimizationJob``'s poll workflow shares.
- ``starter_function``: the custom resource's handler, which starts an execution of the
  workflow and, on Delete, stops it (``StartExecution``, ``StopExecution`` on this workflow's
  executions only).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from .deploy_time import HandlerPlacement, depend_on_policy_only, handler_function

ENGINE_SOURCES = (
    "errors.py",
    "prop_types.py",
    "prop_docs.py",
    "signatures.py",
    "template_metadata.py",
    "planning/__init__.py",
    "planning/knee.py",
    "planning/workload.py",
    "lambdas/runtime_support.py",
    "lambdas/event_checks.py",
    "lambdas/benchmark",
    "benchmarking",
)
"""What both engines' handler assets ship: the Lambda engine's handlers (results, gate,
signal) and the benchmark engine (boto3/botocore and the standard library only)."""


def starter_function(
    scope: Construct,
    *,
    code: lambda_.Code,
    placement: HandlerPlacement,
    state_machine: sfn.StateMachine,
    description: str,
    timeout: Duration = Duration.minutes(1),
) -> tuple[lambda_.Function, str]:
    """The custom resource's handler (``Starter``, ``index.on_event``): it may start an
    execution of ``state_machine`` and stop its executions. Returns it and the ARN pattern of
    those executions (``execution:<state machine name>:*``), for its wildcard acknowledgment.
    ``timeout`` bounds one request (a Delete that waits for a job to stop needs more).
    Call ``depend_on_policy_only`` on it once every grant is in place."""
    starter = handler_function(
        scope,
        "Starter",
        placement=placement,
        code=code,
        handler="index.on_event",
        timeout=timeout,
        description=description,
    )
    state_machine.grant_start_execution(starter)
    # Delete stops the run's execution: only this state machine's executions.
    executions = Stack.of(scope).format_arn(
        service="states",
        resource="execution",
        resource_name=f"{state_machine.state_machine_name}:*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    iam.Grant.add_to_principal(
        grantee=starter, actions=["states:StopExecution"], resource_arns=[executions]
    )
    return starter, executions


def depend_on_policies_only(
    functions: Sequence[lambda_.Function], state_machine: sfn.StateMachine
) -> None:
    """``depend_on_policy_only`` on each handler and the workflow, once their grants are in."""
    for function in functions:
        depend_on_policy_only(function, function.role)
    depend_on_policy_only(state_machine, state_machine.role)
