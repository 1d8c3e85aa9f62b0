"""Handlers of OptimizationJob, against botocore's Stubber (moto does not model these jobs)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cdk_sagemaker_llm.lambdas import runtime_support as runtime
from cdk_sagemaker_llm.lambdas.optimization_job import handler as h

HANDLE = "https://cloudformation-waitcondition-us-west-2.s3.amazonaws.com/arn%3Aaws/handle?sig=1"
OTHER_HANDLE = HANDLE + "&new=2"
STEM = "teststack-awq-461ba4fe-e443fd55"
ROLE = "arn:aws:iam::123456789012:role/job-role"
STATE_MACHINE = "arn:aws:states:us-west-2:123456789012:stateMachine:Workflow"
JOB_ARN = "arn:aws:sagemaker:us-west-2:123456789012:optimization-job/{}"
NOW = 1_700_000_000.0
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.31.0-lmi13.0.0-cu124"


def client(service: str) -> Any:
    return boto3.client(
        service,
        region_name="us-west-2",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def sagemaker() -> Iterator[tuple[Any, Stubber]]:
    sm = client("sagemaker")
    with Stubber(sm) as stubber:
        yield sm, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def sfn() -> Iterator[tuple[Any, Stubber]]:
    sf = client("stepfunctions")
    with Stubber(sf) as stubber:
        yield sf, stubber
        stubber.assert_no_pending_responses()


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def properties(**overrides: Any) -> dict[str, Any]:
    """Resource properties as CloudFormation delivers them: numbers and booleans as strings."""
    props = {
        "ServiceToken": "arn:aws:lambda:us-west-2:123456789012:function:handler",
        "JobNamePrefix": "teststack-awq-461ba4fe",
        "JobNameStem": STEM,
        "Request": {
            "RoleArn": ROLE,
            "ModelSource": {
                "S3": {"S3Uri": "s3://models/llama/", "ModelAccessConfig": {"AcceptEula": "true"}}
            },
            "DeploymentInstanceType": "ml.g5.12xlarge",
            "OptimizationConfigs": [
                {"ModelQuantizationConfig": {"OverrideEnvironment": {"OPTION_QUANTIZE": "awq"}}}
            ],
            "OutputConfig": {},
            "StoppingCondition": {"MaxRuntimeInSeconds": "36000"},
        },
        "OutputLocationStem": "s3://models/optimized/",
        "WaitHandle": HANDLE,
        "WaitSeconds": "37500",
        "StateMachineArn": STATE_MACHINE,
        "RemovalPolicy": "retain",
    }
    props.update(overrides)
    return props


def event(request_type: str, physical: str | None = None, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-custom-resource-response.s3.amazonaws.com/x",
        "StackId": "arn:aws:cloudformation:us-west-2:123456789012:stack/TestStack/guid",
        "RequestId": "request-1",
        "ResourceType": h.JOB_RESOURCE_TYPE,
        "LogicalResourceId": "Awq99DE947C",
        "ResourceProperties": properties(**overrides),
    }
    if physical is not None:
        body["PhysicalResourceId"] = physical
    return body


def expected_name(handle: str = HANDLE, stem: str = STEM) -> str:
    return h.job_name(stem, handle)


def create_params(name: str) -> dict[str, Any]:
    return {
        "OptimizationJobName": name,
        "RoleArn": ROLE,
        "ModelSource": {
            "S3": {"S3Uri": "s3://models/llama/", "ModelAccessConfig": {"AcceptEula": True}}
        },
        "DeploymentInstanceType": "ml.g5.12xlarge",
        "OptimizationConfigs": [
            {"ModelQuantizationConfig": {"OverrideEnvironment": {"OPTION_QUANTIZE": "awq"}}}
        ],
        "OutputConfig": {"S3OutputLocation": f"s3://models/optimized/{name}/"},
        "StoppingCondition": {"MaxRuntimeInSeconds": 36000},
    }


def description(name: str, status: str, **extra: Any) -> dict[str, Any]:
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    body = {
        "OptimizationJobArn": JOB_ARN.format(name),
        "OptimizationJobStatus": status,
        "CreationTime": now,
        "LastModifiedTime": now,
        "OptimizationJobName": name,
        "ModelSource": {"S3": {"S3Uri": "s3://models/llama/"}},
        "DeploymentInstanceType": "ml.g5.12xlarge",
        "OptimizationConfigs": [],
        "OutputConfig": {"S3OutputLocation": f"s3://models/optimized/{name}/"},
        "RoleArn": ROLE,
        "StoppingCondition": {"MaxRuntimeInSeconds": 36000},
    }
    body.update(extra)
    return body


def execution_params(name: str, handle: str = HANDLE) -> dict[str, Any]:
    return {
        "stateMachineArn": STATE_MACHINE,
        "name": name,
        "input": json.dumps(
            {"Deadline": int(NOW) + 37500, "Done": False, "HandleUrl": handle, "JobName": name},
            sort_keys=True,
        ),
    }


def started(sf_stub: Stubber, name: str, handle: str = HANDLE) -> None:
    sf_stub.add_response(
        "start_execution",
        {"executionArn": f"{STATE_MACHINE}:{name}", "startDate": datetime.datetime(2024, 1, 1)},
        execution_params(name, handle),
    )


# ----- names -------------------------------------------------------------------------------------


def test_job_name_is_deterministic_and_within_sagemaker_limits() -> None:
    name = h.job_name(STEM, HANDLE)
    assert name == h.job_name(STEM, HANDLE)
    assert name.startswith(STEM + "-") and len(name) == len(STEM) + 7
    assert h.job_name(STEM, OTHER_HANDLE) != name
    assert len(h.job_name("a" * 47 + "-12345678", HANDLE)) == 63
    with pytest.raises(h.HandlerError, match="63"):
        h.job_name("a" * 48 + "-12345678", HANDLE)


def test_request_values_are_coerced_back_from_strings() -> None:
    request = h.coerce_request(properties()["Request"])
    assert request["StoppingCondition"]["MaxRuntimeInSeconds"] == 36000
    assert request["ModelSource"]["S3"]["ModelAccessConfig"]["AcceptEula"] is True
    false = h.coerce_request(
        {"ModelSource": {"S3": {"ModelAccessConfig": {"AcceptEula": "false"}}}, "OutputConfig": {}}
    )
    assert false["ModelSource"]["S3"]["ModelAccessConfig"]["AcceptEula"] is False


# ----- create / update / delete -----------------------------------------------------------------


def test_create_starts_the_job_and_its_poller(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, sf_stub) = sagemaker, sfn
    name = expected_name()
    sm_stub.add_response(
        "create_optimization_job", {"OptimizationJobArn": JOB_ARN.format(name)}, create_params(name)
    )
    started(sf_stub, name)
    result = h.handle_job_event(event("Create"), sagemaker=sm, sfn=sf, now=NOW, sleep=Sleeps())
    assert result == {
        "PhysicalResourceId": name,
        "Data": {"JobName": name, "JobArn": JOB_ARN.format(name)},
    }


def test_duplicate_create_adopts_the_job_and_starts_nothing_twice(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, sf_stub) = sagemaker, sfn
    name = expected_name()
    # First delivery.
    sm_stub.add_response(
        "create_optimization_job", {"OptimizationJobArn": JOB_ARN.format(name)}, create_params(name)
    )
    started(sf_stub, name)
    first = h.handle_job_event(event("Create"), sagemaker=sm, sfn=sf, now=NOW, sleep=Sleeps())
    # The same event delivered again (Lambda retry or duplicate): the name is taken.
    sm_stub.add_client_error(
        "create_optimization_job", service_error_code="ResourceInUse", http_status_code=400
    )
    sm_stub.add_response(
        "describe_optimization_job",
        description(name, "INPROGRESS"),
        {"OptimizationJobName": name},
    )
    sf_stub.add_client_error(
        "start_execution", service_error_code="ExecutionAlreadyExists", http_status_code=400
    )
    second = h.handle_job_event(event("Create"), sagemaker=sm, sfn=sf, now=NOW, sleep=Sleeps())
    assert second == first


def test_update_with_an_unchanged_definition_starts_nothing(sagemaker: Any, sfn: Any) -> None:
    (sm, _), (sf, _) = sagemaker, sfn
    name = expected_name()
    result = h.handle_job_event(
        event("Update", physical=name), sagemaker=sm, sfn=sf, now=NOW, sleep=Sleeps()
    )
    assert result["PhysicalResourceId"] == name  # no stubbed call was consumed


def test_update_with_an_unchanged_definition_keeps_every_attribute(
    sagemaker: Any, sfn: Any
) -> None:
    # A property outside the definition (RemovalPolicy) changes: CloudFormation replaces the
    # resource's attributes with the Update's Data, so a GetAtt JobArn must still resolve.
    (sm, _), (sf, _) = sagemaker, sfn
    name = expected_name()
    result = h.handle_job_event(
        event("Update", physical=name, RemovalPolicy="destroy"),
        sagemaker=sm,
        sfn=sf,
        now=NOW,
        sleep=Sleeps(),
    )
    assert result == {
        "PhysicalResourceId": name,
        "Data": {"JobName": name, "JobArn": JOB_ARN.format(name)},
    }


def test_update_with_a_changed_definition_starts_a_new_job(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, sf_stub) = sagemaker, sfn
    old = expected_name()
    new_stem = "teststack-awq-461ba4fe-0badc0de"
    new = expected_name(OTHER_HANDLE, new_stem)
    sm_stub.add_response(
        "create_optimization_job", {"OptimizationJobArn": JOB_ARN.format(new)}, create_params(new)
    )
    started(sf_stub, new, OTHER_HANDLE)
    result = h.handle_job_event(
        event("Update", physical=old, JobNameStem=new_stem, WaitHandle=OTHER_HANDLE),
        sagemaker=sm,
        sfn=sf,
        now=NOW,
        sleep=Sleeps(),
    )
    assert result["PhysicalResourceId"] == new != old


def test_delete_stops_a_running_job_and_keeps_artifacts(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, _) = sagemaker, sfn
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job", description(name, "INPROGRESS"), {"OptimizationJobName": name}
    )
    sm_stub.add_response("stop_optimization_job", {}, {"OptimizationJobName": name})
    result = h.handle_job_event(event("Delete", physical=name), sagemaker=sm, sfn=sf, s3=None)
    assert result["PhysicalResourceId"] == name


@pytest.mark.parametrize("status", ["COMPLETED", "FAILED", "STOPPED"])
def test_delete_leaves_a_finished_job_alone(sagemaker: Any, sfn: Any, status: str) -> None:
    (sm, sm_stub), (sf, _) = sagemaker, sfn
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job", description(name, status), {"OptimizationJobName": name}
    )
    h.handle_job_event(event("Delete", physical=name), sagemaker=sm, sfn=sf)


def test_delete_of_a_missing_job_or_a_foreign_id_succeeds(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, _) = sagemaker, sfn
    name = expected_name()
    sm_stub.add_client_error(
        "describe_optimization_job", service_error_code="ResourceNotFound", http_status_code=400
    )
    h.handle_job_event(event("Delete", physical=name), sagemaker=sm, sfn=sf)
    # A failed create's placeholder id is never treated as a job.
    h.handle_job_event(event("Delete", physical="failed-request-1"), sagemaker=sm, sfn=sf)


def test_delete_tolerates_a_job_that_finished_while_stopping(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, _) = sagemaker, sfn
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job", description(name, "STARTING"), {"OptimizationJobName": name}
    )
    sm_stub.add_client_error(
        "stop_optimization_job", service_error_code="ValidationException", http_status_code=400
    )
    h.handle_job_event(event("Delete", physical=name), sagemaker=sm, sfn=sf)


def test_delete_with_destroy_removes_the_job_artifacts(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, _) = sagemaker, sfn
    s3 = client("s3")
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job", description(name, "COMPLETED"), {"OptimizationJobName": name}
    )
    with Stubber(s3) as s3_stub:
        prefix = f"optimized/{name}/"
        s3_stub.add_response(
            "list_objects_v2",
            {
                "Contents": [{"Key": prefix + "a"}],
                "IsTruncated": True,
                "NextContinuationToken": "t",
            },
            {"Bucket": "models", "Prefix": prefix},
        )
        s3_stub.add_response(
            "delete_objects",
            {},
            {"Bucket": "models", "Delete": {"Objects": [{"Key": prefix + "a"}], "Quiet": True}},
        )
        s3_stub.add_response(
            "list_objects_v2",
            {"Contents": [{"Key": prefix + "b"}], "IsTruncated": False},
            {"Bucket": "models", "Prefix": prefix, "ContinuationToken": "t"},
        )
        s3_stub.add_response(
            "delete_objects",
            {},
            {"Bucket": "models", "Delete": {"Objects": [{"Key": prefix + "b"}], "Quiet": True}},
        )
        h.handle_job_event(
            event("Delete", physical=name, RemovalPolicy="destroy"), sagemaker=sm, sfn=sf, s3=s3
        )
        s3_stub.assert_no_pending_responses()


# ----- throttling and failures -------------------------------------------------------------------


def test_throttling_is_retried_with_backoff(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, sf_stub) = sagemaker, sfn
    name = expected_name()
    for _ in range(2):
        sm_stub.add_client_error(
            "create_optimization_job",
            service_error_code="ThrottlingException",
            http_status_code=400,
        )
    sm_stub.add_response(
        "create_optimization_job", {"OptimizationJobArn": JOB_ARN.format(name)}, create_params(name)
    )
    sf_stub.add_client_error(
        "start_execution", service_error_code="ThrottlingException", http_status_code=400
    )
    started(sf_stub, name)
    sleeps = Sleeps()
    result = h.handle_job_event(event("Create"), sagemaker=sm, sfn=sf, now=NOW, sleep=sleeps)
    assert result["PhysicalResourceId"] == name
    # Full jitter: each wait is drawn below its exponential cap (1 s, 2 s; then 1 s anew).
    assert len(sleeps) == 3
    assert all(0.0 <= s <= cap for s, cap in zip(sleeps, [1.0, 2.0, 1.0], strict=True))


def test_throttling_that_never_ends_fails_with_the_job_name_as_physical_id(
    sagemaker: Any, sfn: Any
) -> None:
    (sm, sm_stub), (sf, _) = sagemaker, sfn
    for _ in range(runtime.MAX_ATTEMPTS):
        sm_stub.add_client_error(
            "create_optimization_job",
            service_error_code="ThrottlingException",
            http_status_code=400,
        )
    puts: list[tuple[str, dict[str, Any]]] = []
    ev = event("Create")
    body = h.respond(
        ev,
        lambda url, body: puts.append((url, dict(body))),
        lambda: h.handle_job_event(ev, sagemaker=sm, sfn=sf, now=NOW, sleep=Sleeps()),
    )
    assert body["Status"] == "FAILED"
    assert "ThrottlingException" in body["Reason"]
    # The rollback's Delete then reaches the (possibly created) job by name.
    assert body["PhysicalResourceId"] == expected_name()
    assert puts == [(ev["ResponseURL"], body)]


def test_a_rejected_request_fails_without_retrying(sagemaker: Any, sfn: Any) -> None:
    (sm, sm_stub), (sf, _) = sagemaker, sfn
    sm_stub.add_client_error(
        "create_optimization_job",
        service_error_code="ValidationException",
        service_message="Role cannot be assumed",
        http_status_code=400,
    )
    sleeps = Sleeps()
    with pytest.raises(h.HandlerError, match="Role cannot be assumed"):
        h.handle_job_event(event("Create"), sagemaker=sm, sfn=sf, now=NOW, sleep=sleeps)
    assert sleeps == []


def test_respond_reports_success_with_data() -> None:
    puts: list[Any] = []
    ev = event("Create")
    body = h.respond(
        ev,
        lambda url, body: puts.append(body),
        lambda: {"PhysicalResourceId": "x", "Data": {"JobName": "x"}},
    )
    assert body == {
        "StackId": ev["StackId"],
        "RequestId": "request-1",
        "LogicalResourceId": "Awq99DE947C",
        "Status": "SUCCESS",
        "PhysicalResourceId": "x",
        "Data": {"JobName": "x"},
    }


# ----- the output resource -----------------------------------------------------------------------


def output_event(request_type: str = "Create", require_image: str = "true") -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResourceType": h.OUTPUT_RESOURCE_TYPE,
        "ResourceProperties": {
            "JobName": expected_name(),
            "RequireRecommendedImage": require_image,
        },
    }


def test_output_exposes_location_and_recommended_image(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job",
        description(name, "COMPLETED", OptimizationOutput={"RecommendedInferenceImage": IMAGE}),
        {"OptimizationJobName": name},
    )
    result = h.handle_output_event(output_event(), sagemaker=sm)
    assert result["Data"] == {
        "JobName": name,
        "JobArn": JOB_ARN.format(name),
        "OutputS3Uri": f"s3://models/optimized/{name}/",
        "OutputPrefix": f"optimized/{name}/",
        "RecommendedInferenceImage": IMAGE,
        "RecommendedImageRepositoryArn": "arn:aws:ecr:us-west-2:763104351884:repository/djl-inference",
    }


def test_output_of_an_unfinished_job_fails_with_its_reason(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job",
        description(name, "FAILED", FailureReason="AWQ calibration ran out of memory"),
        {"OptimizationJobName": name},
    )
    with pytest.raises(h.HandlerError, match="FAILED, not COMPLETED: AWQ calibration"):
        h.handle_output_event(output_event(), sagemaker=sm)


def test_output_without_a_recommended_image_fails_only_when_one_is_used(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    for _ in range(2):
        sm_stub.add_response(
            "describe_optimization_job",
            description(name, "COMPLETED"),
            {"OptimizationJobName": name},
        )
    assert (
        h.handle_output_event(output_event(require_image="false"), sagemaker=sm)["Data"][
            "RecommendedInferenceImage"
        ]
        == ""
    )
    with pytest.raises(h.HandlerError, match="recommends no ECR inference image"):
        h.handle_output_event(output_event(require_image="true"), sagemaker=sm)


def test_output_delete_does_nothing(sagemaker: Any) -> None:
    sm, _ = sagemaker
    ev = {**output_event("Delete"), "PhysicalResourceId": "x-output"}
    assert h.handle_output_event(ev, sagemaker=sm) == {"PhysicalResourceId": "x-output", "Data": {}}


# ----- one poll iteration ------------------------------------------------------------------------


class Signals(list[tuple[str, dict[str, Any]]]):
    def __call__(self, url: str, body: Any) -> None:
        self.append((url, dict(body)))


def state(name: str, deadline: float = NOW + 3600) -> dict[str, Any]:
    return {"JobName": name, "HandleUrl": HANDLE, "Deadline": int(deadline), "Done": False}


def test_poll_signals_success_when_the_job_completes(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job",
        description(name, "COMPLETED", OptimizationOutput={"RecommendedInferenceImage": IMAGE}),
        {"OptimizationJobName": name},
    )
    signals = Signals()
    result = h.poll_step(state(name), sagemaker=sm, put=signals, now=NOW)
    assert result["Done"] is True and result["Status"] == "COMPLETED"
    assert signals == [
        (
            HANDLE,
            {
                "Status": "SUCCESS",
                "Reason": f"Optimization job {name} completed",
                "UniqueId": name,
                "Data": f"s3://models/optimized/{name}/",
            },
        )
    ]


def test_poll_signals_failure_with_sagemakers_reason(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job",
        description(name, "FAILED", FailureReason="ClientError: source model not found in S3"),
        {"OptimizationJobName": name},
    )
    signals = Signals()
    result = h.poll_step(state(name), sagemaker=sm, put=signals, now=NOW)
    assert result["Done"] is True
    ((_, body),) = signals
    assert body["Status"] == "FAILURE"
    assert body["Reason"] == (
        f"Optimization job {name} FAILED: ClientError: source model not found in S3"
    )


def test_poll_reports_a_stopped_job_as_a_failure(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    sm_stub.add_response(
        "describe_optimization_job", description(name, "STOPPED"), {"OptimizationJobName": name}
    )
    signals = Signals()
    h.poll_step(state(name), sagemaker=sm, put=signals, now=NOW)
    assert signals[0][1]["Status"] == "FAILURE"
    assert "STOPPED" in signals[0][1]["Reason"] and "max runtime" in signals[0][1]["Reason"]


def test_poll_of_a_running_job_continues_without_signalling(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    for status in ("STARTING", "INPROGRESS"):
        sm_stub.add_response(
            "describe_optimization_job", description(name, status), {"OptimizationJobName": name}
        )
        signals = Signals()
        result = h.poll_step(state(name), sagemaker=sm, put=signals, now=NOW)
        assert result["Done"] is False and result["Status"] == status and signals == []


def test_poll_throttled_waits_for_the_next_iteration(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    for _ in range(runtime.MAX_ATTEMPTS):
        sm_stub.add_client_error(
            "describe_optimization_job",
            service_error_code="ThrottlingException",
            http_status_code=400,
        )
    signals = Signals()
    result = h.poll_step(state(name), sagemaker=sm, put=signals, now=NOW, sleep=Sleeps())
    assert result["Done"] is False and result["Throttled"] == 1 and signals == []


def test_poll_past_the_deadline_stops_the_job_and_reports_it(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    name = expected_name()
    for _ in range(2):
        sm_stub.add_response(
            "describe_optimization_job",
            description(name, "INPROGRESS"),
            {"OptimizationJobName": name},
        )
    sm_stub.add_response("stop_optimization_job", {}, {"OptimizationJobName": name})
    signals = Signals()
    result = h.poll_step(state(name, deadline=NOW - 1), sagemaker=sm, put=signals, now=NOW)
    assert result["Done"] is True
    assert signals[0][1]["Status"] == "FAILURE" and "deadline" in signals[0][1]["Reason"]


def test_poll_of_a_vanished_job_fails(sagemaker: Any) -> None:
    sm, sm_stub = sagemaker
    sm_stub.add_client_error(
        "describe_optimization_job", service_error_code="ResourceNotFound", http_status_code=400
    )
    signals = Signals()
    assert h.poll_step(state("gone"), sagemaker=sm, put=signals, now=NOW)["Done"] is True
    assert signals[0][1]["Status"] == "FAILURE"


def test_error_signal_carries_the_caught_cause() -> None:
    body = h.error_signal(
        {"JobName": "j", "Error": {"Error": "Lambda.Unknown", "Cause": "AccessDenied"}}
    )
    assert body == {
        "Status": "FAILURE",
        "Reason": "Polling optimization job j failed: AccessDenied",
        "UniqueId": "j",
        "Data": "",
    }
    assert len(h.wait_condition_signal("FAILURE", "x" * 5000, "j")["Reason"]) == runtime.MAX_REASON


def test_repository_arn_parsing() -> None:
    assert h.repository_arn(IMAGE, "aws") == (
        "arn:aws:ecr:us-west-2:763104351884:repository/djl-inference"
    )
    assert h.repository_arn("docker.io/library/nginx:1", "aws") == ""
    assert (
        h.repository_arn(
            "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/djl-inference:x", "aws-cn"
        )
        == "arn:aws-cn:ecr:cn-north-1:727897471807:repository/djl-inference"
    )


def test_create_params_match_the_api_shapes(sagemaker: Any) -> None:
    """The request the handler builds passes botocore's own parameter validation."""
    sm, sm_stub = sagemaker
    name = expected_name()
    sm_stub.add_response("create_optimization_job", {"OptimizationJobArn": "x"})
    request = h.coerce_request(properties()["Request"])
    sm.create_optimization_job(
        OptimizationJobName=name,
        **{**request, "OutputConfig": {"S3OutputLocation": f"s3://m/{name}/"}},
    )


# ----- Lambda entry points (clients and HTTP replaced) -------------------------------------------


def test_entry_points_dispatch_and_always_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    sm = client("sagemaker")
    puts = Signals()
    monkeypatch.setattr(h, "http_put", puts)
    monkeypatch.setattr(h, "_client", lambda service: sm)
    with Stubber(sm) as stubber:
        name = expected_name()
        stubber.add_response(
            "describe_optimization_job",
            description(name, "COMPLETED", OptimizationOutput={"RecommendedInferenceImage": IMAGE}),
            {"OptimizationJobName": name},
        )
        ev = {
            **output_event(),
            "ResponseURL": "https://response",
            "StackId": "stack",
            "RequestId": "r",
            "LogicalResourceId": "Output",
        }
        body = h.on_event(ev, None)
        assert body["Status"] == "SUCCESS" and body["Data"]["RecommendedInferenceImage"] == IMAGE
        # A handler crash still answers CloudFormation (FAILED), so it never waits an hour.
        stubber.add_client_error(
            "describe_optimization_job", service_error_code="AccessDeniedException"
        )
        body = h.on_event(ev, None)
        assert body["Status"] == "FAILED" and "AccessDeniedException" in body["Reason"]
    assert [url for url, _ in puts] == ["https://response", "https://response"]
    # The workflow's catch: the poll entry point reports the error on the wait handle.
    result = h.poll(
        {"JobName": name, "HandleUrl": HANDLE, "Error": {"Error": "X", "Cause": "boom"}}, None
    )
    assert result["Done"] is True
    assert puts[-1] == (HANDLE, h.error_signal({"JobName": name, "Error": {"Cause": "boom"}}))
