"""Deploy-time handlers of ``OptimizationJob``: plain Python + boto3, no dependencies.

Three entry points share this module (one Lambda asset, two functions):

- ``on_event``: the CloudFormation custom resource handler for two resource types,
  ``Custom::SageMakerOptimizationJob`` (starts the job and the Step Functions poller) and
  ``Custom::SageMakerOptimizationJobOutput`` (describes a completed job: output location and
  recommended inference image, as resource attributes). It sends its own response to
  CloudFormation's ``ResponseURL`` (it is not a ``Provider`` framework ``onEvent``), so it must
  answer every event, always, before its Lambda times out;
- ``poll``: one iteration of the Step Functions poll loop: describe the job and, when it has
  finished, signal the CloudFormation wait condition with SUCCESS or FAILURE + SageMaker's
  ``FailureReason``;
- ``report_error``: the poll loop's catch-all: signal FAILURE when polling itself broke.

The logic lives in pure functions over clients passed in (``handle_job_event``,
``handle_output_event``, ``poll_step``) with the clock, the sleep and the HTTP PUT injected,
so tests drive them with botocore's Stubber and a fake clock. The entry points only build
the real clients and do the HTTP PUTs.

Reliability rules every path follows:

- Throttling, 5xx and connection errors are retried here (exponential backoff with full jitter),
  and only while the Lambda's remaining time allows one more call plus the answer
  (``Budget``); botocore itself does not retry (one retry layer, which knows the time left), and
  its connect/read timeouts bound every call. Out of time, the handler answers FAILED with the
  last error instead of timing out silently.
- Event properties are untrusted: every field is checked (type, range, pattern, required and
  unknown keys) and a bad one fails with a reason naming it, never an unhandled exception.
- Create and Update are idempotent (the job name derives from the definition and the wait
  handle); Delete succeeds for an id that never became a job and for a job already gone, and
  stops a job still running.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...template_metadata import OPTIMIZATION_JOB_OUTPUT_RESOURCE, OPTIMIZATION_JOB_RESOURCE
from ..runtime_support import (
    HTTPS_URL,
    Budget,
    HandlerError,
    OutOfTime,
    Put,
    Sleep,
    call_with_retry,
    error_code,
    explain,
    http_put,
    is_transient,
    respond,
    send,
    shown,
    wait_condition_signal,
)
from ..runtime_support import client as _client

JOB_RESOURCE_TYPE = OPTIMIZATION_JOB_RESOURCE
OUTPUT_RESOURCE_TYPE = OPTIMIZATION_JOB_OUTPUT_RESOURCE
REQUEST_TYPES = ("Create", "Update", "Delete")

RUNNING = frozenset({"STARTING", "INPROGRESS"})
"""Statuses of a job that can still be stopped."""
TERMINAL = frozenset({"COMPLETED", "FAILED", "STOPPED"})


MAX_WAIT_SECONDS = 43_200
"""A CloudFormation wait condition's longest timeout (12 hours)."""
INT32_MAX = 2**31 - 1


class InvalidEvent(HandlerError):
    """An event or property that fails validation; its message names the field."""


# ----- errors SageMaker reports ----------------------------------------------------------------


def error_message(error: BaseException) -> str:
    """The service's message of a ``ClientError`` (empty for anything else)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return ""
    return str(response.get("Error", {}).get("Message", ""))


def is_absent(error: BaseException) -> bool:
    """SageMaker's answer about a job that does not exist."""
    code = error_code(error)
    message = error_message(error).lower()
    return code == "ResourceNotFound" or (
        code == "ValidationException" and ("not exist" in message or "not found" in message)
    )


# ----- untrusted input -------------------------------------------------------------------------

SAGEMAKER_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
MAX_PREFIX_LENGTH = 47
"""63 characters less ``-<8 hex>-<6 hex>``."""
ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{1,12}:role/?[a-zA-Z_0-9+=,.@\-/]+")
STATE_MACHINE_ARN = re.compile(
    r"arn:aws[a-z-]*:states:[a-z0-9-]+:\d{1,12}:stateMachine:[a-zA-Z0-9_-]{1,80}"
)
S3_URI = re.compile(r"(https|s3)://[^/\s]+/?\S*")
OUTPUT_STEM = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/\S*")
INSTANCE_TYPE = re.compile(r"ml\.[a-z0-9-]+\.[a-z0-9]+")
KMS_KEY = re.compile(r"[a-zA-Z0-9:/_-]*")
SECURITY_GROUP = re.compile(r"sg-[0-9a-z]{1,32}")
SUBNET = re.compile(r"subnet-[0-9a-z]{1,32}")
IGNORED_PROPERTIES = frozenset({"ServiceToken", "ServiceTimeout"})
"""Properties CloudFormation itself adds to ``ResourceProperties``."""
TECHNIQUES = frozenset(
    {
        "ModelQuantizationConfig",
        "ModelCompilationConfig",
        "ModelShardingConfig",
        "ModelSpeculativeDecodingConfig",
    }
)


def check_mapping(
    value: Any, where: str, required: frozenset[str] | set[str], optional: Any = None
) -> dict[str, Any]:
    """``value`` as a dict with the ``required`` keys and some ``optional`` ones (any when
    ``optional`` is None)."""
    if not isinstance(value, Mapping):
        raise InvalidEvent(f"{where} must be an object, not {type(value).__name__}")
    keys = set(value)
    missing = sorted(str(k) for k in set(required) - keys)
    if missing:
        raise InvalidEvent(f"{where} is missing {', '.join(missing)}")
    unknown = sorted(shown(k) for k in keys - set(required) - set(optional or ()))
    if optional is not None and unknown:
        raise InvalidEvent(f"{where} has unknown keys: {', '.join(unknown)}")
    return dict(value)


def check_string(
    value: Any,
    where: str,
    pattern: re.Pattern[str] | None = None,
    max_length: int = 2048,
    min_length: int = 1,
) -> str:
    """``value`` as a string of ``min_length``..``max_length`` characters matching ``pattern``."""
    if not isinstance(value, str):
        raise InvalidEvent(f"{where} must be a string, not {type(value).__name__}")
    if not min_length <= len(value) <= max_length:
        raise InvalidEvent(
            f"{where} must have {min_length} to {max_length} characters, not {len(value)}"
        )
    if pattern is not None and not pattern.fullmatch(value):
        raise InvalidEvent(f"{where} is malformed: {shown(value)}")
    return value


def check_integer(value: Any, where: str, low: int, high: int) -> int:
    """``value`` (an int, or the decimal string CloudFormation makes of it) in low..high."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidEvent(f"{where} must be an integer, not {type(value).__name__}")
    if isinstance(value, str):
        if not re.fullmatch(r"-?\d{1,19}", value):
            raise InvalidEvent(f"{where} must be an integer, not {shown(value)}")
        value = int(value)
    if not low <= value <= high:
        raise InvalidEvent(f"{where} must be between {low} and {high}, not {value}")
    return value


def check_boolean(value: Any, where: str) -> bool:
    """``value`` (a bool, or ``"true"``/``"false"`` as CloudFormation sends it)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidEvent(f"{where} must be true or false, not {shown(value)}")


def check_list(value: Any, where: str, low: int, high: int) -> list[Any]:
    """``value`` as a list of ``low``..``high`` items."""
    if not isinstance(value, list):
        raise InvalidEvent(f"{where} must be a list, not {type(value).__name__}")
    if not low <= len(value) <= high:
        raise InvalidEvent(f"{where} must have {low} to {high} items, not {len(value)}")
    return value


def check_request(request: Any) -> dict[str, Any]:
    """``Request`` checked against ``CreateOptimizationJob``'s shapes, then coerced.

    The technique configurations are checked for their kind only: botocore's own parameter
    validation rejects a malformed one before any request is sent.
    """
    where = "Request"
    body = check_mapping(
        request,
        where,
        {
            "RoleArn",
            "ModelSource",
            "DeploymentInstanceType",
            "OptimizationConfigs",
            "OutputConfig",
            "StoppingCondition",
        },
        {"MaxInstanceCount", "OptimizationEnvironment", "VpcConfig", "Tags"},
    )
    check_string(body["RoleArn"], f"{where}.RoleArn", ROLE_ARN, 2048, 20)
    _check_model_source(body, where)
    check_string(
        body["DeploymentInstanceType"], f"{where}.DeploymentInstanceType", INSTANCE_TYPE, 64
    )
    _check_optimization_configs(body, where)
    _check_output(body, where)
    _check_stopping(body, where)
    if "MaxInstanceCount" in body:
        check_integer(body["MaxInstanceCount"], f"{where}.MaxInstanceCount", 1, INT32_MAX)
    _check_environment(body, where)
    _check_vpc(body, where)
    _check_tags(body, where)
    return coerce_request(body)


def _check_model_source(body: dict[str, Any], where: str) -> None:
    """``ModelSource``: exactly one of S3 (with its access config) or a SageMaker model."""
    source = check_mapping(
        body["ModelSource"], f"{where}.ModelSource", set(), {"S3", "SageMakerModel"}
    )
    if len(source) != 1:
        raise InvalidEvent(f"{where}.ModelSource must have exactly one of S3, SageMakerModel")
    if "S3" in source:
        s3 = check_mapping(
            source["S3"], f"{where}.ModelSource.S3", {"S3Uri"}, {"ModelAccessConfig"}
        )
        check_string(s3["S3Uri"], f"{where}.ModelSource.S3.S3Uri", S3_URI, 1024)
        if "ModelAccessConfig" in s3:
            access = check_mapping(
                s3["ModelAccessConfig"],
                f"{where}.ModelSource.S3.ModelAccessConfig",
                {"AcceptEula"},
                set(),
            )
            check_boolean(
                access["AcceptEula"], f"{where}.ModelSource.S3.ModelAccessConfig.AcceptEula"
            )
    else:
        model = check_mapping(
            source["SageMakerModel"], f"{where}.ModelSource.SageMakerModel", {"ModelName"}, set()
        )
        check_string(
            model["ModelName"], f"{where}.ModelSource.SageMakerModel.ModelName", SAGEMAKER_NAME, 63
        )


def _check_optimization_configs(body: dict[str, Any], where: str) -> None:
    """``OptimizationConfigs``: each names exactly one technique."""
    configs = check_list(body["OptimizationConfigs"], f"{where}.OptimizationConfigs", 0, 10)
    for index, config in enumerate(configs):
        item = check_mapping(config, f"{where}.OptimizationConfigs[{index}]", set(), TECHNIQUES)
        if len(item) != 1:
            raise InvalidEvent(
                f"{where}.OptimizationConfigs[{index}] must have exactly one of "
                + ", ".join(sorted(TECHNIQUES))
            )
        ((kind, settings),) = item.items()
        check_mapping(settings, f"{where}.OptimizationConfigs[{index}].{kind}", set())


def _check_output(body: dict[str, Any], where: str) -> None:
    """``OutputConfig``: its key and the model it creates, when given."""
    output = check_mapping(
        body["OutputConfig"], f"{where}.OutputConfig", set(), {"KmsKeyId", "SageMakerModel"}
    )
    if "KmsKeyId" in output:
        check_string(output["KmsKeyId"], f"{where}.OutputConfig.KmsKeyId", KMS_KEY, 2048, 0)
    if "SageMakerModel" in output:
        model = check_mapping(
            output["SageMakerModel"], f"{where}.OutputConfig.SageMakerModel", {"ModelName"}, set()
        )
        check_string(
            model["ModelName"], f"{where}.OutputConfig.SageMakerModel.ModelName", SAGEMAKER_NAME, 63
        )


def _check_stopping(body: dict[str, Any], where: str) -> None:
    """``StoppingCondition``: the run, wait and pending time limits."""
    stopping = check_mapping(
        body["StoppingCondition"],
        f"{where}.StoppingCondition",
        {"MaxRuntimeInSeconds"},
        {"MaxWaitTimeInSeconds", "MaxPendingTimeInSeconds"},
    )
    check_integer(
        stopping["MaxRuntimeInSeconds"],
        f"{where}.StoppingCondition.MaxRuntimeInSeconds",
        1,
        MAX_WAIT_SECONDS,
    )
    if "MaxWaitTimeInSeconds" in stopping:
        check_integer(
            stopping["MaxWaitTimeInSeconds"],
            f"{where}.StoppingCondition.MaxWaitTimeInSeconds",
            1,
            MAX_WAIT_SECONDS,
        )
    if "MaxPendingTimeInSeconds" in stopping:
        check_integer(
            stopping["MaxPendingTimeInSeconds"],
            f"{where}.StoppingCondition.MaxPendingTimeInSeconds",
            1800,
            2_419_200,
        )


def _check_environment(body: dict[str, Any], where: str) -> None:
    """``OptimizationEnvironment``: at most 25 string variables."""
    if "OptimizationEnvironment" not in body:
        return
    environment = check_mapping(
        body["OptimizationEnvironment"], f"{where}.OptimizationEnvironment", set()
    )
    if len(environment) > 25:
        raise InvalidEvent(
            f"{where}.OptimizationEnvironment must have at most 25 variables, "
            f"not {len(environment)}"
        )
    for key, value in environment.items():
        check_string(key, f"{where}.OptimizationEnvironment key", None, 1024)
        check_string(value, f"{where}.OptimizationEnvironment[{shown(key)}]", None, 1024, 0)


def _check_vpc(body: dict[str, Any], where: str) -> None:
    """``VpcConfig``: 1-5 security groups and 1-16 subnets."""
    if "VpcConfig" not in body:
        return
    vpc = check_mapping(
        body["VpcConfig"], f"{where}.VpcConfig", {"SecurityGroupIds", "Subnets"}, set()
    )
    for group in check_list(vpc["SecurityGroupIds"], f"{where}.VpcConfig.SecurityGroupIds", 1, 5):
        check_string(group, f"{where}.VpcConfig.SecurityGroupIds[]", SECURITY_GROUP, 32)
    for subnet in check_list(vpc["Subnets"], f"{where}.VpcConfig.Subnets", 1, 16):
        check_string(subnet, f"{where}.VpcConfig.Subnets[]", SUBNET, 32)


def _check_tags(body: dict[str, Any], where: str) -> None:
    """``Tags``: at most 50 key/value pairs."""
    if "Tags" not in body:
        return
    for index, tag in enumerate(check_list(body["Tags"], f"{where}.Tags", 0, 50)):
        item = check_mapping(tag, f"{where}.Tags[{index}]", {"Key", "Value"}, set())
        check_string(item["Key"], f"{where}.Tags[{index}].Key", None, 128)
        check_string(item["Value"], f"{where}.Tags[{index}].Value", None, 256, 0)


@dataclass(frozen=True)
class JobProperties:
    """``Custom::SageMakerOptimizationJob``'s properties, checked."""

    prefix: str
    stem: str
    request: dict[str, Any]
    output_stem: str
    handle: str
    wait_seconds: int
    state_machine_arn: str
    destroy: bool


def check_job_properties(props: Any) -> JobProperties:
    """The job resource's properties, every field checked (``InvalidEvent`` names the bad one)."""
    where = "ResourceProperties"
    body = check_mapping(
        props,
        where,
        {
            "JobNamePrefix",
            "JobNameStem",
            "Request",
            "OutputLocationStem",
            "WaitHandle",
            "WaitSeconds",
            "StateMachineArn",
            "RemovalPolicy",
        },
        IGNORED_PROPERTIES,
    )
    prefix = check_string(
        body["JobNamePrefix"], f"{where}.JobNamePrefix", SAGEMAKER_NAME, MAX_PREFIX_LENGTH
    )
    stem = check_string(body["JobNameStem"], f"{where}.JobNameStem", SAGEMAKER_NAME, 56)
    if not re.fullmatch(re.escape(prefix) + r"-[0-9a-f]{1,16}", stem):
        raise InvalidEvent(f"{where}.JobNameStem must be JobNamePrefix-<hex>, not {shown(stem)}")
    removal = check_string(body["RemovalPolicy"], f"{where}.RemovalPolicy", None, 16)
    if removal not in ("retain", "destroy"):
        raise InvalidEvent(f"{where}.RemovalPolicy must be retain or destroy, not {shown(removal)}")
    return JobProperties(
        prefix=prefix,
        stem=stem,
        request=check_request(body["Request"]),
        output_stem=check_string(
            body["OutputLocationStem"], f"{where}.OutputLocationStem", OUTPUT_STEM, 900
        ),
        handle=check_string(body["WaitHandle"], f"{where}.WaitHandle", HTTPS_URL, 4096),
        wait_seconds=check_integer(
            body["WaitSeconds"], f"{where}.WaitSeconds", 1, MAX_WAIT_SECONDS
        ),
        state_machine_arn=check_string(
            body["StateMachineArn"], f"{where}.StateMachineArn", STATE_MACHINE_ARN, 256
        ),
        destroy=removal == "destroy",
    )


def check_request_type(event: Any) -> str:
    """The event's ``RequestType``, which must be Create, Update or Delete."""
    if not isinstance(event, Mapping):
        raise InvalidEvent(f"the event must be an object, not {type(event).__name__}")
    request_type = event.get("RequestType")
    if request_type not in REQUEST_TYPES:
        raise InvalidEvent(
            f"RequestType must be Create, Update or Delete, not {shown(request_type)}"
        )
    return str(request_type)


def is_job_name(value: Any) -> bool:
    """Whether ``value`` can name a SageMaker job (a failed create's placeholder cannot)."""
    return isinstance(value, str) and len(value) <= 63 and bool(SAGEMAKER_NAME.fullmatch(value))


# ----- helpers ---------------------------------------------------------------------------------


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


def describe(sagemaker: Any, name: str, budget: Budget) -> dict[str, Any] | None:
    """``DescribeOptimizationJob``, or None when the job does not exist."""
    try:
        return dict(
            call_with_retry(sagemaker.describe_optimization_job, budget, OptimizationJobName=name)
        )
    except Exception as error:
        if is_absent(error):
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
    """Stop the job if it is still running; returns what was done."""
    job = describe(sagemaker, name, budget)
    if job is None:
        return "absent"
    if job.get("OptimizationJobStatus") not in RUNNING:
        return "finished"
    try:
        call_with_retry(sagemaker.stop_optimization_job, budget, OptimizationJobName=name)
    except Exception as error:
        # A job that finished, began stopping or vanished meanwhile needs nothing more.
        if error_code(error) not in ("ValidationException", "ResourceNotFound"):
            raise
    return "stopped"


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
    stop_job(name, sagemaker, budget)
    if props.get("RemovalPolicy") == "destroy" and s3 is not None:
        stem = check_string(
            props.get("OutputLocationStem"),
            "ResourceProperties.OutputLocationStem",
            OUTPUT_STEM,
            900,
        )
        delete_artifacts(f"{stem}{name}/", s3, budget)
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
        check_string(event.get("PhysicalResourceId"), "PhysicalResourceId", None, 1024)
        if event["PhysicalResourceId"] == name:
            return {"PhysicalResourceId": name, "Data": {"JobName": name}}
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
    props = check_mapping(
        event.get("ResourceProperties"),
        "ResourceProperties",
        {"JobName", "RequireRecommendedImage"},
        IGNORED_PROPERTIES,
    )
    name = check_string(props["JobName"], "ResourceProperties.JobName", SAGEMAKER_NAME, 63)
    require_image = check_boolean(
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


# ----- the poll loop ---------------------------------------------------------------------------

POLL_STATE_KEYS = frozenset({"Status", "Throttled", "Error"})
"""Keys the loop itself adds to the state the job handler starts it with."""


def check_state(state: Any, now: float) -> tuple[str, str, float]:
    """The poll state's job name, handle URL and deadline, checked (``InvalidEvent``).

    The deadline must lie within a wait condition's longest timeout from now: a huge one would
    keep polling past the point where CloudFormation stops listening.
    """
    body = check_mapping(
        state, "state", {"JobName", "HandleUrl", "Deadline", "Done"}, POLL_STATE_KEYS
    )
    name = check_string(body["JobName"], "state.JobName", SAGEMAKER_NAME, 63)
    handle = check_string(body["HandleUrl"], "state.HandleUrl", HTTPS_URL, 4096)
    deadline = check_integer(body["Deadline"], "state.Deadline", 0, int(now) + MAX_WAIT_SECONDS)
    check_boolean(body["Done"], "state.Done")
    if "Throttled" in body:
        check_integer(body["Throttled"], "state.Throttled", 0, INT32_MAX)
    return name, handle, float(deadline)


def poll_step(
    state: Mapping[str, Any],
    *,
    sagemaker: Any,
    put: Put,
    now: float,
    sleep: Sleep = time.sleep,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """One iteration of the poll loop; returns the next state (``Done`` ends the loop).

    The state machine runs ``poll_step`` -> Choice(``Done``) -> Wait(interval) -> ``poll_step``
    until the job has finished or the deadline (the wait condition's timeout, less a margin)
    has passed. A describe that fails transiently (throttled, 5xx, out of time) just waits for
    the next iteration, unless the deadline has passed: then the FAILURE is signalled now, with
    the error, since CloudFormation would otherwise time out without a reason. A state that
    fails its checks is signalled as a FAILURE when its handle URL can be trusted.
    """
    budget = budget or Budget(sleep=sleep)
    try:
        name, handle, deadline = check_state(state, now)
    except InvalidEvent as error:
        url = state.get("HandleUrl") if isinstance(state, Mapping) else None
        if not (isinstance(url, str) and len(url) <= 4096 and HTTPS_URL.fullmatch(url)):
            raise
        put(url, wait_condition_signal("FAILURE", f"Invalid poll state: {error}", "invalid"))
        return {**state, "Done": True, "Status": "INVALID"}
    result = {**state, "Done": False}
    try:
        job = describe(sagemaker, name, budget)
    except Exception as error:
        if now >= deadline:
            reason = (
                f"Optimization job {name} could not be described at the deployment's deadline: "
                f"{explain(error)}"
            )
            put(handle, wait_condition_signal("FAILURE", reason, name))
            return {**result, "Done": True, "Status": "UNKNOWN"}
        if is_transient(error) or isinstance(error, OutOfTime):
            result["Throttled"] = int(state.get("Throttled", 0)) + 1
            return result
        raise
    if job is None:
        put(handle, wait_condition_signal("FAILURE", f"Optimization job {name} not found", name))
        return {**result, "Done": True, "Status": "MISSING"}
    status = str(job.get("OptimizationJobStatus", ""))
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
    if now >= deadline:
        try:
            stop_job(name, sagemaker, budget)
            outcome = "it was stopped"
        except Exception as error:
            outcome = f"stopping it failed ({explain(error)}); the stack's rollback stops it"
        put(
            handle,
            wait_condition_signal(
                "FAILURE",
                f"Optimization job {name} still {status} at the deployment's deadline; {outcome}",
                name,
            ),
        )
        return {**result, "Done": True, "Status": "STOPPING"}
    return result


def error_signal(state: Mapping[str, Any]) -> dict[str, str]:
    """The FAILURE signal sent when the poll loop itself failed (its caught error)."""
    error = state.get("Error") or {}
    if not isinstance(error, Mapping):
        error = {"Cause": error}
    cause = str(error.get("Cause") or error.get("Error") or "unknown error")
    name = state.get("JobName")
    name = name if is_job_name(name) else "optimization-job"
    reason = f"Polling optimization job {name} failed: {cause}"
    return wait_condition_signal("FAILURE", reason, str(name))


# ----- Lambda entry points (real clients, real HTTP) ------------------------------------------


def on_event(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of both custom resource types."""
    budget = Budget.of(context)

    def handle() -> dict[str, Any]:
        kind = event.get("ResourceType") if isinstance(event, Mapping) else None
        if kind == OUTPUT_RESOURCE_TYPE:
            return handle_output_event(event, sagemaker=_client("sagemaker"), budget=budget)
        if kind != JOB_RESOURCE_TYPE:
            raise InvalidEvent(f"unsupported ResourceType {shown(kind)}")
        props = event.get("ResourceProperties")
        destroy = isinstance(props, Mapping) and props.get("RemovalPolicy") == "destroy"
        return handle_job_event(
            event,
            sagemaker=_client("sagemaker"),
            sfn=_client("stepfunctions"),
            s3=_client("s3") if destroy else None,
            budget=budget,
        )

    return respond(event, http_put, handle, budget)


def poll(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of one poll iteration, or of the loop's catch (``Error`` set)."""
    if isinstance(event, Mapping) and "Error" in event:
        return report_error(event, context)
    budget = Budget.of(context)
    return poll_step(
        event, sagemaker=_client("sagemaker"), put=http_put, now=time.time(), budget=budget
    )


def report_error(event: dict[str, Any], context: Any) -> dict[str, Any]:  # pragma: no cover
    """Lambda entry point of the poll loop's catch: signal FAILURE with the error."""
    url = event.get("HandleUrl")
    check_string(url, "state.HandleUrl", HTTPS_URL, 4096)
    send(str(url), error_signal(event), http_put, Budget.of(context))
    return {**event, "Done": True}
