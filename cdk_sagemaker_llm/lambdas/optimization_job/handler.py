"""Deploy-time handlers of ``OptimizationJob``: plain Python + boto3, no dependencies.

Three entry points share this module (one Lambda asset, two functions):

- ``on_event``: the CloudFormation custom resource handler for two resource types,
  ``Custom::SageMakerOptimizationJob`` (starts the job and the Step Functions poller) and
  ``Custom::SageMakerOptimizationJobOutput`` (describes a completed job: output location and
  recommended inference image, as resource attributes);
- ``poll``: one iteration of the Step Functions poll loop: describe the job and, when it has
  finished, signal the CloudFormation wait condition with SUCCESS or FAILURE + SageMaker's
  ``FailureReason``;
- ``report_error``: the poll loop's catch-all: signal FAILURE when polling itself broke.

The logic lives in pure functions over clients passed in (``handle_job_event``,
``handle_output_event``, ``poll_step``) with the clock, the sleep and the HTTP PUT injected,
so tests drive them with botocore's Stubber and a fake clock. The entry points only build
the real clients and do the HTTP PUTs.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

JOB_RESOURCE_TYPE = "Custom::SageMakerOptimizationJob"
OUTPUT_RESOURCE_TYPE = "Custom::SageMakerOptimizationJobOutput"

RUNNING = frozenset({"STARTING", "INPROGRESS"})
"""Statuses of a job that can still be stopped."""
TERMINAL = frozenset({"COMPLETED", "FAILED", "STOPPED"})

RETRYABLE_ERRORS = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ServiceUnavailable",
        "InternalFailure",
        "InternalServerError",
    }
)
MAX_ATTEMPTS = 6
MAX_REASON = 1000
"""CloudFormation shows reasons in stack events; keep them readable and within limits."""

Sleep = Callable[[float], None]
Put = Callable[[str, Mapping[str, Any]], None]


class HandlerError(Exception):
    """A failure reported to CloudFormation as the custom resource's reason.

    ``physical_id`` (when known) is reported with the failure, so that CloudFormation's
    rollback sends its Delete to the job that may have been created, which stops it.
    """

    def __init__(self, message: str, physical_id: str | None = None) -> None:
        super().__init__(message)
        self.physical_id = physical_id


# ----- helpers ---------------------------------------------------------------------------------


def error_code(error: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` (empty for anything else)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return ""
    return str(response.get("Error", {}).get("Code", ""))


def call_with_retry(call: Callable[..., Any], sleep: Sleep, /, **kwargs: Any) -> Any:
    """``call(**kwargs)``, retried with exponential backoff on throttling and 5xx errors."""
    for attempt in range(MAX_ATTEMPTS):
        try:
            return call(**kwargs)
        except Exception as error:
            if error_code(error) not in RETRYABLE_ERRORS or attempt == MAX_ATTEMPTS - 1:
                raise
            sleep(min(2.0**attempt, 20.0))
    raise AssertionError("unreachable")  # pragma: no cover


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


def truncate(text: str, limit: int = MAX_REASON) -> str:
    """``text`` cut to ``limit`` characters, marked when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def describe(sagemaker: Any, name: str, sleep: Sleep) -> dict[str, Any] | None:
    """``DescribeOptimizationJob``, or None when the job does not exist."""
    try:
        return dict(
            call_with_retry(sagemaker.describe_optimization_job, sleep, OptimizationJobName=name)
        )
    except Exception as error:
        if error_code(error) in ("ResourceNotFound", "ValidationException"):
            return None
        raise


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


# ----- the job resource ------------------------------------------------------------------------


def coerce_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """The API request from custom resource properties, in which CloudFormation has turned
    every number and boolean into a string."""
    result = json.loads(json.dumps(request))
    stopping = result.get("StoppingCondition", {})
    for key in ("MaxRuntimeInSeconds", "MaxWaitTimeInSeconds", "MaxPendingTimeInSeconds"):
        if key in stopping:
            stopping[key] = int(stopping[key])
    if "MaxInstanceCount" in result:
        result["MaxInstanceCount"] = int(result["MaxInstanceCount"])
    access = result.get("ModelSource", {}).get("S3", {}).get("ModelAccessConfig")
    if access is not None:
        access["AcceptEula"] = str(access["AcceptEula"]).lower() == "true"
    if not result.get("OutputConfig", {}).get("KmsKeyId", True):
        del result["OutputConfig"]["KmsKeyId"]
    return dict(result)


def start_job(
    props: Mapping[str, Any], name: str, sagemaker: Any, sfn: Any, sleep: Sleep, now: float
) -> dict[str, Any]:
    """Create the job (adopting it when it already exists) and start its poller.

    Both calls are idempotent under one name: a job that exists is ours (the name hashes the
    definition and the wait-condition handle); Step Functions returns the running execution
    of that name, or raises ExecutionAlreadyExists once it has ended.
    """
    request = coerce_request(props["Request"])
    request["OptimizationJobName"] = name
    stem = props["OutputLocationStem"]
    request["OutputConfig"] = {**request["OutputConfig"], "S3OutputLocation": f"{stem}{name}/"}
    try:
        created = call_with_retry(sagemaker.create_optimization_job, sleep, **request)
        arn = created["OptimizationJobArn"]
    except Exception as error:
        if error_code(error) != "ResourceInUse":
            raise
        existing = describe(sagemaker, name, sleep)
        if existing is None:
            raise
        arn = existing["OptimizationJobArn"]
    deadline = int(now) + int(props["WaitSeconds"])
    execution_input = {
        "JobName": name,
        "HandleUrl": props["WaitHandle"],
        "Deadline": deadline,
        "Done": False,
    }
    try:
        call_with_retry(
            sfn.start_execution,
            sleep,
            stateMachineArn=props["StateMachineArn"],
            name=name,
            input=json.dumps(execution_input, sort_keys=True),
        )
    except Exception as error:
        if error_code(error) != "ExecutionAlreadyExists":
            raise
    return {"JobName": name, "JobArn": arn}


def stop_job(name: str, sagemaker: Any, sleep: Sleep) -> str:
    """Stop the job if it is still running; returns what was done."""
    job = describe(sagemaker, name, sleep)
    if job is None:
        return "absent"
    if job["OptimizationJobStatus"] not in RUNNING:
        return "finished"
    try:
        call_with_retry(sagemaker.stop_optimization_job, sleep, OptimizationJobName=name)
    except Exception as error:
        # A job that finished or began stopping meanwhile needs nothing more.
        if error_code(error) not in ("ValidationException", "ResourceNotFound"):
            raise
    return "stopped"


def delete_artifacts(output_uri: str, s3: Any, sleep: Sleep) -> int:
    """Delete every object under ``output_uri``; returns how many."""
    bucket, _, prefix = output_uri.split("://", 1)[-1].partition("/")
    deleted = 0
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if token:
            kwargs["ContinuationToken"] = token
        page = call_with_retry(s3.list_objects_v2, sleep, **kwargs)
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            call_with_retry(
                s3.delete_objects, sleep, Bucket=bucket, Delete={"Objects": keys, "Quiet": True}
            )
            deleted += len(keys)
        if not page.get("IsTruncated"):
            return deleted
        token = page.get("NextContinuationToken")


def handle_job_event(
    event: Mapping[str, Any],
    *,
    sagemaker: Any,
    sfn: Any,
    s3: Any = None,
    sleep: Sleep = time.sleep,
    now: float | None = None,
) -> dict[str, Any]:
    """Handle one CloudFormation event of ``Custom::SageMakerOptimizationJob``.

    Returns ``{"PhysicalResourceId": ..., "Data": {...}}``; raises on failure.

    - Create: start the job and its poller; the physical id is the job name.
    - Update: a different job name (the definition or the wait handle changed) starts a new
      job; CloudFormation then deletes the old physical id. The same name starts nothing.
    - Delete: stop the job if it still runs; artifacts stay unless ``RemovalPolicy`` is
      ``destroy``.
    """
    props = event["ResourceProperties"]
    request_type = event["RequestType"]
    current = now if now is not None else time.time()
    if request_type == "Delete":
        name = event["PhysicalResourceId"]
        if not name.startswith(props["JobNamePrefix"]):
            # Never touch a job this resource did not name (e.g. a failed create's placeholder).
            return {"PhysicalResourceId": name, "Data": {}}
        stop_job(name, sagemaker, sleep)
        if props.get("RemovalPolicy") == "destroy" and s3 is not None:
            delete_artifacts(f"{props['OutputLocationStem']}{name}/", s3, sleep)
        return {"PhysicalResourceId": name, "Data": {}}
    name = job_name(props["JobNameStem"], props["WaitHandle"])
    if request_type == "Update" and event.get("PhysicalResourceId") == name:
        return {"PhysicalResourceId": name, "Data": {"JobName": name}}
    try:
        data = start_job(props, name, sagemaker, sfn, sleep, current)
    except Exception as error:
        raise HandlerError(f"{type(error).__name__}: {error}", physical_id=name) from error
    return {"PhysicalResourceId": name, "Data": data}


def handle_output_event(
    event: Mapping[str, Any], *, sagemaker: Any, sleep: Sleep = time.sleep
) -> dict[str, Any]:
    """Handle ``Custom::SageMakerOptimizationJobOutput``: describe the completed job.

    It is created after the wait condition, so the job has completed; anything else means the
    signal and the job disagree, which fails the deployment with the job's status.
    """
    props = event["ResourceProperties"]
    name = props["JobName"]
    physical = f"{name}-output"
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", physical), "Data": {}}
    job = describe(sagemaker, name, sleep)
    if job is None:
        raise HandlerError(f"Optimization job {name} does not exist")
    if job["OptimizationJobStatus"] != "COMPLETED":
        reason = job.get("FailureReason") or "no failure reason given"
        raise HandlerError(
            f"Optimization job {name} is {job['OptimizationJobStatus']}, not COMPLETED: {reason}"
        )
    data = output_of(job)
    if (
        str(props.get("RequireRecommendedImage", "false")).lower() == "true"
        and not data["RecommendedImageRepositoryArn"]
    ):
        image = data["RecommendedInferenceImage"] or "none"
        raise HandlerError(
            f"Optimization job {name} recommends no ECR inference image (got {image}); "
            "serve its output with an image of your choice instead of recommended_image()"
        )
    return {"PhysicalResourceId": physical, "Data": data}


# ----- the poll loop ---------------------------------------------------------------------------


def wait_condition_signal(
    status: str, reason: str, unique_id: str, data: str = ""
) -> dict[str, str]:
    """The JSON body CloudFormation expects on a wait-condition handle URL."""
    return {"Status": status, "Reason": truncate(reason), "UniqueId": unique_id, "Data": data}


def poll_step(
    state: Mapping[str, Any], *, sagemaker: Any, put: Put, now: float, sleep: Sleep = time.sleep
) -> dict[str, Any]:
    """One iteration of the poll loop; returns the next state (``Done`` ends the loop).

    The state machine runs ``poll_step`` -> Choice(``Done``) -> Wait(interval) -> ``poll_step``
    until the job has finished or the deadline (the wait condition's timeout, less a margin)
    has passed. Throttled describes just wait for the next iteration.
    """
    name = state["JobName"]
    handle = state["HandleUrl"]
    result = {**state, "Done": False}
    try:
        job = describe(sagemaker, name, sleep)
    except Exception as error:
        if error_code(error) in RETRYABLE_ERRORS:
            result["Throttled"] = int(state.get("Throttled", 0)) + 1
            return result
        raise
    if job is None:
        put(handle, wait_condition_signal("FAILURE", f"Optimization job {name} not found", name))
        return {**result, "Done": True, "Status": "MISSING"}
    status = job["OptimizationJobStatus"]
    result["Status"] = status
    if status == "COMPLETED":
        summary = output_of(job)
        put(
            handle,
            wait_condition_signal(
                "SUCCESS",
                f"Optimization job {name} completed",
                name,
                summary["OutputS3Uri"],
            ),
        )
        return {**result, "Done": True}
    if status in ("FAILED", "STOPPED"):
        reason = job.get("FailureReason") or (
            "stopped before completing (SageMaker stops a job at its max runtime)"
            if status == "STOPPED"
            else "no failure reason given"
        )
        put(
            handle,
            wait_condition_signal("FAILURE", f"Optimization job {name} {status}: {reason}", name),
        )
        return {**result, "Done": True}
    if now >= float(state["Deadline"]):
        stop_job(name, sagemaker, sleep)
        put(
            handle,
            wait_condition_signal(
                "FAILURE",
                f"Optimization job {name} still {status} at the deployment's deadline; "
                "it was stopped",
                name,
            ),
        )
        return {**result, "Done": True, "Status": "STOPPING"}
    return result


def error_signal(state: Mapping[str, Any]) -> dict[str, str]:
    """The FAILURE signal sent when the poll loop itself failed (its caught error)."""
    error = state.get("Error") or {}
    cause = str(error.get("Cause") or error.get("Error") or "unknown error")
    name = str(state.get("JobName", "optimization-job"))
    reason = f"Polling optimization job {name} failed: {cause}"
    return wait_condition_signal("FAILURE", reason, name)


# ----- Lambda entry points (real clients, real HTTP) ------------------------------------------


def http_put(url: str, body: Mapping[str, Any]) -> None:  # pragma: no cover - network
    """PUT ``body`` as JSON to a presigned S3 URL (custom resource response, wait handle)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(data))}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def _client(service: str) -> Any:  # pragma: no cover - needs AWS
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=10)
    factory: Callable[..., Any] = boto3.client
    return factory(service, config=config)


def respond(
    event: Mapping[str, Any], put: Put, handler: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Run ``handler`` and PUT a SUCCESS or FAILED custom resource response; never raises."""
    body: dict[str, Any] = {
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
    }
    try:
        outcome = handler()
        body.update(Status="SUCCESS", **outcome)
    except Exception as error:
        fallback = (
            getattr(error, "physical_id", None)
            or event.get("PhysicalResourceId")
            or f"failed-{event['RequestId']}"
        )
        reason = (
            str(error) if isinstance(error, HandlerError) else f"{type(error).__name__}: {error}"
        )
        body.update(
            Status="FAILED",
            Reason=truncate(reason),
            PhysicalResourceId=fallback,
        )
    put(event["ResponseURL"], body)
    return body


def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of both custom resource types."""
    if event["ResourceType"] == OUTPUT_RESOURCE_TYPE:
        return respond(
            event, http_put, lambda: handle_output_event(event, sagemaker=_client("sagemaker"))
        )
    return respond(
        event,
        http_put,
        lambda: handle_job_event(
            event,
            sagemaker=_client("sagemaker"),
            sfn=_client("stepfunctions"),
            s3=_client("s3")
            if event["ResourceProperties"].get("RemovalPolicy") == "destroy"
            else None,
        ),
    )


def poll(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of one poll iteration, or of the loop's catch (``Error`` set)."""
    if "Error" in event:
        return report_error(event, context)
    return poll_step(event, sagemaker=_client("sagemaker"), put=http_put, now=time.time())


def report_error(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of the poll loop's catch: signal FAILURE with the error."""
    http_put(event["HandleUrl"], error_signal(event))
    return {**event, "Done": True}
