"""The ``Custom::SageMakerOptimizationJob`` and ``...Output`` resources: start, adopt, stop
and delete a SageMaker optimization job, and read a completed one's output."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Mapping
from typing import Any

from ..event_checks import (
    IGNORED_PROPERTIES,
    SAGEMAKER_NAME,
    boolean,
    check_request_type,
    mapping,
    matching,
    string,
)
from ..job_poll import describe_job
from ..runtime_support import (
    Budget,
    HandlerError,
    OutOfTime,
    Sleep,
    call_with_retry,
    error_code,
    explain,
)
from .job_properties import (
    OUTPUT_STEM,
    JobProperties,
    check_job_properties,
    is_job_name,
)

RUNNING = frozenset({"STARTING", "INPROGRESS"})
"""Statuses of a job that can still be stopped."""
TERMINAL = frozenset({"COMPLETED", "FAILED", "STOPPED"})
"""Statuses of a job that has ended: it writes nothing more to its output location.

``OptimizationJobStatus`` in botocore 1.44.5's SageMaker model is ``STARTING``, ``INPROGRESS``,
``STOPPING``, ``COMPLETED``, ``FAILED``, ``STOPPED``. ``StopOptimizationJob`` "ends a running
inference optimization job" (SageMaker API Reference, API_StopOptimizationJob) and does not wait
for it: ``DescribeOptimizationJob`` (API_DescribeOptimizationJob, ``OptimizationJobStatus``)
reports ``STOPPING`` until the job has ended as ``STOPPED`` (or, if it finished meanwhile,
``COMPLETED`` / ``FAILED``). Neither page says how long ``STOPPING`` lasts, and a job still
``STOPPING`` may still write its output, so a Delete that removes the artifacts waits for one of
these first (``wait_until_ended``)."""
STOP_POLL_S = 10.0
"""Seconds between ``DescribeOptimizationJob`` calls while a Delete waits for a job to end."""


def job_name(stem: str, handle_url: str) -> str:
    """The job name: ``<stem>-<6 hex digits of the wait-condition handle URL>``.

    ``stem`` is ``<prefix>-<hash of the synthesized definition>``. The handle part tells apart
    two deployments of the same definition (a retry after a failed update gets a new handle),
    while duplicates of one CloudFormation event (same handle) get the same name.
    """
    suffix = hashlib.sha256(handle_url.encode()).hexdigest()[:6]
    name = f"{stem}-{suffix}"
    if len(name) > 63:
        raise HandlerError(f"job name {name!r} exceeds 63 characters")
    return name


_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?"
    r"/(?P<repository>[a-z0-9._/-]+)[:@]"
)


def repository_arn(image_uri: str, partition: str) -> str:
    """The ECR repository ARN of an image URI, or empty for images outside ECR."""
    match = _ECR_IMAGE.match(image_uri or "")
    if match is None:
        return ""
    return (
        f"arn:{partition}:ecr:{match.group('region')}:{match.group('account')}"
        f":repository/{match.group('repository')}"
    )


def job_arn(state_machine_arn: str, name: str) -> str:
    """The ARN of job ``name``, which the handler created in the region and account of its
    poll workflow: ``arn:<partition>:sagemaker:<region>:<account>:optimization-job/<name>``
    (botocore's SageMaker model, shape ``OptimizationJobArn``)."""
    _, partition, _, region, account = state_machine_arn.split(":")[:5]
    return f"arn:{partition}:sagemaker:{region}:{account}:optimization-job/{name}"


def describe(sagemaker: Any, name: str, budget: Budget) -> dict[str, Any] | None:
    """``DescribeOptimizationJob``, or None when the job does not exist."""
    return describe_job(sagemaker.describe_optimization_job, budget, OptimizationJobName=name)


def output_of(job: Mapping[str, Any]) -> dict[str, str]:
    """The attributes a completed job exposes to the template."""
    output_uri = str(job.get("OutputConfig", {}).get("S3OutputLocation", ""))
    bucket_and_key = output_uri.split("://", 1)[-1]
    key = bucket_and_key.split("/", 1)[1] if "/" in bucket_and_key else ""
    if key and not key.endswith("/"):
        key += "/"
    image = str(job.get("OptimizationOutput", {}).get("RecommendedInferenceImage", ""))
    arn = str(job.get("OptimizationJobArn", ""))
    partition = arn.split(":")[1] if arn.count(":") >= 5 else "aws"
    return {
        "JobName": str(job.get("OptimizationJobName", "")),
        "JobArn": arn,
        "OutputS3Uri": output_uri if output_uri.endswith("/") else output_uri + "/",
        "OutputPrefix": key,
        "RecommendedInferenceImage": image,
        "RecommendedImageRepositoryArn": repository_arn(image, partition),
    }


def start_job(
    props: JobProperties, name: str, sagemaker: Any, sfn: Any, budget: Budget, now: float
) -> dict[str, Any]:
    """Create the job (adopting it when it already exists) and start its poller.

    Both calls are idempotent under one name: a job that exists is ours (the name hashes the
    definition and the wait-condition handle); Step Functions returns the running execution
    of that name, or raises ExecutionAlreadyExists once it has ended. A job this call created
    but could not start polling is stopped before the failure is reported (best effort; the
    rollback's Delete stops it otherwise), so no job runs unwatched.
    """
    request = dict(props.request)
    request["OptimizationJobName"] = name
    request["OutputConfig"] = {
        **request["OutputConfig"],
        "S3OutputLocation": f"{props.output_stem}{name}/",
    }
    created = False
    try:
        arn = call_with_retry(sagemaker.create_optimization_job, budget, **request)[
            "OptimizationJobArn"
        ]
        created = True
    except Exception as error:
        if error_code(error) != "ResourceInUse":
            raise
        existing = describe(sagemaker, name, budget)
        if existing is None:
            raise
        arn = existing["OptimizationJobArn"]
    execution_input = {
        "JobName": name,
        "HandleUrl": props.handle,
        "Deadline": int(now) + props.wait_seconds,
        "Done": False,
    }
    try:
        call_with_retry(
            sfn.start_execution,
            budget,
            stateMachineArn=props.state_machine_arn,
            name=name,
            input=json.dumps(execution_input, sort_keys=True),
        )
    except Exception as error:
        if error_code(error) == "ExecutionAlreadyExists":
            return {"JobName": name, "JobArn": arn}
        if created:
            with contextlib.suppress(Exception):  # the original error is the one to report
                stop_job(name, sagemaker, budget)
        raise
    return {"JobName": name, "JobArn": arn}


def stop_job(name: str, sagemaker: Any, budget: Budget) -> str:
    """Stop the job if it is still running; returns what was done: ``absent``, ``finished``
    (it had ended, ``TERMINAL``), ``stopping`` (it was already stopping) or ``stopped`` (asked
    to stop now; it may still be ``STOPPING``)."""
    job = describe(sagemaker, name, budget)
    if job is None:
        return "absent"
    status = job.get("OptimizationJobStatus")
    if status in TERMINAL:
        return "finished"
    if status not in RUNNING:
        return "stopping"
    try:
        call_with_retry(sagemaker.stop_optimization_job, budget, OptimizationJobName=name)
    except Exception as error:
        # A job that finished, began stopping or vanished meanwhile needs nothing more.
        if error_code(error) not in ("ValidationException", "ResourceNotFound"):
            raise
    return "stopped"


def wait_until_ended(name: str, output_uri: str, sagemaker: Any, budget: Budget) -> str:
    """Describe the job every ``STOP_POLL_S`` until it has ended (``TERMINAL``) or is gone;
    returns its final status (``absent`` when gone).

    Gives up while the budget still leaves time for one ``ListObjectsV2`` and one
    ``DeleteObjects`` after the next look, raising ``OutOfTime``: the Delete then fails with a
    reason that says the artifacts under ``output_uri`` were kept and how to finish, since
    deleting them under a job that may still write would leave objects behind silently.
    """
    while True:
        job = describe(sagemaker, name, budget)
        if job is None:
            return "absent"
        status = str(job.get("OptimizationJobStatus", ""))
        if status in TERMINAL:
            return status
        if budget.left() < STOP_POLL_S + 3 * budget.call_seconds:
            raise OutOfTime(
                f"Optimization job {name} is still {status or 'not ended'} as this Delete runs "
                f"out of time, so its artifacts under {output_uri} were not deleted (a job "
                "that has not stopped may still write there): retry the delete (or the "
                "rollback) once DescribeOptimizationJob reports it STOPPED, or retain this "
                "resource and delete them yourself"
            )
        budget.sleep(STOP_POLL_S)


def delete_artifacts(output_uri: str, s3: Any, budget: Budget) -> int:
    """Delete every object under ``output_uri``; returns how many."""
    bucket, _, prefix = output_uri.split("://", 1)[-1].partition("/")
    deleted = 0
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if token:
            kwargs["ContinuationToken"] = token
        page = call_with_retry(s3.list_objects_v2, budget, **kwargs)
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            call_with_retry(
                s3.delete_objects, budget, Bucket=bucket, Delete={"Objects": keys, "Quiet": True}
            )
            deleted += len(keys)
        if not page.get("IsTruncated"):
            return deleted
        token = page.get("NextContinuationToken")


def delete_job(event: Mapping[str, Any], sagemaker: Any, s3: Any, budget: Budget) -> dict[str, Any]:
    """Delete: stop the job if it still runs; artifacts go only with ``RemovalPolicy`` destroy.

    Deliberately lenient, so rollbacks never get stuck: a physical id that never became a job
    (a failed create's placeholder, anything malformed) or that this resource did not name
    succeeds without a call; a job already gone succeeds too.

    Without destroy, a job asked to stop is left ``STOPPING`` (nothing waits for it). With
    destroy, a job that was running or stopping is waited for until it has ended
    (``wait_until_ended``, within the Lambda's time) before its output folder is deleted:
    ``StopOptimizationJob`` returns while the job may still write there. Still not ended as
    the time runs out, the Delete fails naming the job and the kept folder; a retry, once the
    job has stopped, finds it ended and deletes the folder without waiting.
    """
    physical = event.get("PhysicalResourceId")
    props = event.get("ResourceProperties")
    props = props if isinstance(props, Mapping) else {}
    prefix = props.get("JobNamePrefix")
    echo = physical if isinstance(physical, str) and physical else "none"
    if not (
        is_job_name(physical)
        and isinstance(prefix, str)
        and SAGEMAKER_NAME.fullmatch(prefix)
        and str(physical).startswith(prefix + "-")
    ):
        return {"PhysicalResourceId": echo, "Data": {}}
    name = str(physical)
    stopped = stop_job(name, sagemaker, budget)
    if props.get("RemovalPolicy") == "destroy" and s3 is not None:
        stem = matching(
            props.get("OutputLocationStem"),
            "ResourceProperties.OutputLocationStem",
            OUTPUT_STEM,
            900,
        )
        output_uri = f"{stem}{name}/"
        if stopped in ("stopped", "stopping"):
            wait_until_ended(name, output_uri, sagemaker, budget)
        delete_artifacts(output_uri, s3, budget)
    return {"PhysicalResourceId": name, "Data": {}}


def handle_job_event(
    event: Mapping[str, Any],
    *,
    sagemaker: Any,
    sfn: Any,
    s3: Any = None,
    sleep: Sleep = time.sleep,
    now: float | None = None,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Handle one CloudFormation event of ``Custom::SageMakerOptimizationJob``.

    Returns ``{"PhysicalResourceId": ..., "Data": {...}}``; raises on failure.

    - Create: start the job and its poller; the physical id is the job name.
    - Update: a different job name (the definition or the wait handle changed) starts a new
      job; CloudFormation then deletes the old physical id. The same name starts nothing.
    - Delete: see ``delete_job``.

    ``budget`` (default: no time limit, waiting with ``sleep``) bounds the retries.
    """
    budget = budget or Budget(sleep=sleep)
    request_type = check_request_type(event)
    current = now if now is not None else time.time()
    if request_type == "Delete":
        return delete_job(event, sagemaker, s3, budget)
    props = check_job_properties(event.get("ResourceProperties"))
    name = job_name(props.stem, props.handle)
    if request_type == "Update":
        string(event.get("PhysicalResourceId"), "PhysicalResourceId", max_length=1024)
        if event["PhysicalResourceId"] == name:
            # CloudFormation replaces a custom resource's attributes with the Data of its
            # latest answer ("Custom resource response objects": Data), so an Update that
            # starts nothing still answers every attribute a Create does.
            arn = job_arn(props.state_machine_arn, name)
            return {"PhysicalResourceId": name, "Data": {"JobName": name, "JobArn": arn}}
    try:
        data = start_job(props, name, sagemaker, sfn, budget, current)
    except Exception as error:
        # A failed Create reports the job's name, so the rollback's Delete reaches (and stops)
        # a job that may exist; a failed Update keeps the current id, so the rollback's Update
        # finds the current job unchanged (a job this Update created was stopped already).
        keep = name if request_type == "Create" else None
        raise HandlerError(explain(error), physical_id=keep) from error
    return {"PhysicalResourceId": name, "Data": data}


def handle_output_event(
    event: Mapping[str, Any],
    *,
    sagemaker: Any,
    sleep: Sleep = time.sleep,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Handle ``Custom::SageMakerOptimizationJobOutput``: describe the completed job.

    It is created after the wait condition, so the job has completed; anything else means the
    signal and the job disagree, which fails the deployment with the job's status.
    """
    budget = budget or Budget(sleep=sleep)
    if check_request_type(event) == "Delete":
        physical = event.get("PhysicalResourceId")
        return {
            "PhysicalResourceId": physical if isinstance(physical, str) and physical else "none",
            "Data": {},
        }
    props = mapping(
        event.get("ResourceProperties"),
        "ResourceProperties",
        {"JobName", "RequireRecommendedImage"},
        IGNORED_PROPERTIES,
    )
    name = matching(props["JobName"], "ResourceProperties.JobName", SAGEMAKER_NAME, 63)
    require_image = boolean(
        props["RequireRecommendedImage"], "ResourceProperties.RequireRecommendedImage"
    )
    physical = f"{name}-output"
    job = describe(sagemaker, name, budget)
    if job is None:
        raise HandlerError(f"Optimization job {name} does not exist")
    if job["OptimizationJobStatus"] != "COMPLETED":
        reason = job.get("FailureReason") or "no failure reason given"
        raise HandlerError(
            f"Optimization job {name} is {job['OptimizationJobStatus']}, not COMPLETED: {reason}"
        )
    data = output_of(job)
    if require_image and not data["RecommendedImageRepositoryArn"]:
        image = data["RecommendedInferenceImage"] or "none"
        raise HandlerError(
            f"Optimization job {name} recommends no ECR inference image (got {image}); "
            "serve its output with an image of your choice instead of recommended_image()"
        )
    return {"PhysicalResourceId": physical, "Data": data}
