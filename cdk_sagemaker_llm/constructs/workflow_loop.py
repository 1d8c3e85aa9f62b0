"""The signalling loop of a deploy-time workflow, shared by ``EndpointBenchmark``'s two engines
and ``OptimizationJob``'s poll workflow.

- ``lambda_task``: a Step Functions task invoking a handler, retried on Lambda's transient
  errors with exponential backoff and full jitter (Step Functions developer guide, "Handling
  errors in Step Functions workflows": ``Retry`` with ``BackoffRate``, ``MaxDelaySeconds``
  and ``JitterStrategy``); ``cdk_retried_task`` keeps aws-cdk-lib's default retry instead.
- ``signalling_loop``: the Standard workflow ``<step>`` -> ``Done``? -> (work, or wait)
  -> ``<step>``. The step's handler signals the wait condition once done; a broken step runs
  the same handler as ``ReportFailure`` (it signals FAILURE with the error) and fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from .deploy_time import HandlerPlacement, logged_workflow
from .validation import ValidationError

MAX_HISTORY_EVENTS = 25_000
"""A Standard workflow's execution history: past 25,000 events the execution fails, its catch
unrun, so nothing signals the wait condition and the deployment waits out its timeout with no
reason (Step Functions developer guide, "Step Functions service quotas", quotas related to
state machine executions: 25,000 events in one execution's history)."""
EVENTS_PER_POLL = 9
"""History events of one poll iteration: the Lambda task's TaskStateEntered, TaskScheduled,
TaskStarted, TaskSucceeded and TaskStateExited, then the Choice's and the Wait's Entered and
Exited."""
HISTORY_RESERVE = 1_000
"""Events kept for retried polls (three more each), the failure report and the execution's
own start and end."""
MAX_POLLS = (MAX_HISTORY_EVENTS - HISTORY_RESERVE) // EVENTS_PER_POLL
"""Poll iterations one execution may run."""


def check_poll_count(prop: str, interval_seconds: int, wait_seconds: int, fix: str) -> None:
    """A poll loop of ``interval_seconds`` that may run ``wait_seconds`` stays within a
    Standard workflow's execution history (``MAX_POLLS`` iterations); ``fix`` is what else the
    user may change (e.g. ", or shorten max_runtime")."""
    polls = math.ceil(wait_seconds / interval_seconds)
    if polls <= MAX_POLLS:
        return
    raise ValidationError(
        prop,
        interval_seconds,
        f"polling every {interval_seconds} s for up to {wait_seconds} s is up to {polls} polls "
        f"of {EVENTS_PER_POLL} history events each, past a Standard workflow's "
        f"{MAX_HISTORY_EVENTS:,}-event execution history, where the execution fails without "
        "signalling the deployment",
        f"poll every {math.ceil(wait_seconds / MAX_POLLS)} seconds or more{fix}",
    )


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
