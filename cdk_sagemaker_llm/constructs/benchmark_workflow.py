"""The deploy-time workflow both engines of ``EndpointBenchmark`` share: Lambda workers
(``benchmark``) and a SageMaker AI benchmark job (``managed_benchmark``).

- ``lambda_task``: a Step Functions task invoking a handler, retried on Lambda's transient
  errors with exponential backoff and full jitter (Step Functions developer guide, "Handling
  errors in Step Functions workflows": ``Retry`` with ``BackoffRate``, ``MaxDelaySeconds``
  and ``JitterStrategy``).
- ``signalling_loop``: the Standard workflow ``<step>`` -> ``Done``? -> (run a level, or wait)
  -> ``<step>``. The step's handler signals the wait condition once done; a broken step runs
  the same handler as ``ReportFailure`` (it signals FAILURE with the error) and fails.
  ``OptimizationJob``'s poll workflow is the same loop, with its own retry policy.
- ``starter_function``: the custom resource's handler, which starts an execution of the
  workflow and, on Delete, stops it (``StartExecution``, ``StopExecution`` on this workflow's
  executions only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from .deploy_time import HandlerPlacement, depend_on_policy_only, handler_function, logged_workflow

ENGINE_SOURCES = (
    "errors.py",
    "prop_types.py",
    "planning/__init__.py",
    "planning/workload.py",
    "lambdas/runtime_support.py",
    "lambdas/benchmark",
    "benchmarking",
)
"""What both engines' handler assets ship: the Lambda engine's handlers (results, gate,
signal) and the benchmark engine (boto3/botocore and the standard library only)."""

LAMBDA_RETRY_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]
"""Transient Lambda errors retried by the workflow (with backoff and full jitter)."""


def lambda_task(scope: Construct, id: str, function: lambda_.IFunction) -> tasks.LambdaInvoke:
    """A task that invokes ``function`` with the state as payload and passes on its answer;
    Lambda's transient errors are retried up to 6 times (2 s, doubling, at most 60 s)."""
    task = tasks.LambdaInvoke(
        scope,
        id,
        lambda_function=function,
        payload_response_only=True,
        retry_on_service_exceptions=False,
    )
    task.add_retry(
        errors=LAMBDA_RETRY_ERRORS,
        interval=Duration.seconds(2),
        max_attempts=6,
        backoff_rate=2,
        max_delay=Duration.seconds(60),
        jitter_strategy=sfn.JitterType.FULL,
    )
    return task


TaskFactory = Callable[[Construct, str, lambda_.IFunction], tasks.LambdaInvoke]
"""Builds a loop's Lambda task: ``(scope, id, function) -> LambdaInvoke``."""


def cdk_retried_task(scope: Construct, id: str, function: lambda_.IFunction) -> tasks.LambdaInvoke:
    """A task that invokes ``function`` with the state as payload and passes on its answer,
    with aws-cdk-lib's default retry of Lambda's service errors (``retry_on_service_exceptions``:
    6 attempts from 2 s, doubling, no jitter)."""
    return tasks.LambdaInvoke(
        scope,
        id,
        lambda_function=function,
        payload_response_only=True,
        retry_on_service_exceptions=True,
    )


def signalling_loop(
    scope: Construct,
    function: lambda_.IFunction,
    *,
    step_id: str,
    failed_id: str,
    error: str,
    between: Callable[[sfn.Chain], sfn.INextable],
    timeout: Duration,
    placement: HandlerPlacement,
    invoked: Sequence[lambda_.IFunction],
    summary: str,
    done_id: str = "Done",
    task: TaskFactory = lambda_task,
    step_retry: sfn.RetryProps | None = None,
) -> sfn.StateMachine:
    """``<step_id>`` (``function``) -> ``<done_id>``? -> ``between(report)`` -> ``<step_id>``,
    as a logged Standard workflow (``Workflow``).

    ``$.Done`` true ends it (``Signalled``). Any error of the step (after ``step_retry``, if
    given) runs ``function`` again as ``ReportFailure`` (the error under ``$.Error``), then
    fails (``<failed_id>``, ``error``); ``between`` gets that chain to route its own errors
    there. ``task`` builds both Lambda tasks (default ``lambda_task``, which retries Lambda's
    transient errors). ``invoked`` and ``summary`` are ``logged_workflow``'s.
    """
    step = task(scope, step_id, function)
    if step_retry is not None:
        step.add_retry(
            errors=step_retry.errors,
            interval=step_retry.interval,
            max_attempts=step_retry.max_attempts,
            backoff_rate=step_retry.backoff_rate,
            max_delay=step_retry.max_delay,
            jitter_strategy=step_retry.jitter_strategy,
        )
    report = task(scope, "ReportFailure", function).next(sfn.Fail(scope, failed_id, error=error))
    step.add_catch(report, errors=["States.ALL"], result_path="$.Error")
    middle = between(report)
    done = (
        sfn.Choice(scope, done_id)
        .when(sfn.Condition.boolean_equals("$.Done", True), sfn.Succeed(scope, "Signalled"))
        .otherwise(middle.next(step))
    )
    return logged_workflow(
        scope,
        definition=step.next(done),
        timeout=timeout,
        log_encryption_key=placement.log_encryption_key,
        invoked=invoked,
        summary=summary,
    )


def starter_function(
    scope: Construct,
    *,
    code: lambda_.Code,
    placement: HandlerPlacement,
    state_machine: sfn.StateMachine,
    description: str,
) -> tuple[lambda_.Function, str]:
    """The custom resource's handler (``Starter``, ``index.on_event``): it may start an
    execution of ``state_machine`` and stop its executions. Returns it and the ARN pattern of
    those executions (``execution:<state machine name>:*``), for its wildcard acknowledgment.
    Call ``depend_on_policy_only`` on it once every grant is in place."""
    starter = handler_function(
        scope,
        "Starter",
        placement=placement,
        code=code,
        handler="index.on_event",
        timeout=Duration.minutes(1),
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
