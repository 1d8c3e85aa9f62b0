"""Untrusted input of ``OptimizationJob``'s handlers: every event, property and poll state is
checked here before use, and a malformed one fails with the field named (``EventError``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..event_checks import (
    IGNORED_PROPERTIES,
    MAX_WAIT_SECONDS,
    SAGEMAKER_NAME,
    STATE_MACHINE_ARN,
    EventError,
    boolean,
    integer,
    items,
    mapping,
    matching,
    string,
)
from ..runtime_support import (
    HTTPS_URL,
    shown,
)

INT32_MAX = 2**31 - 1


MAX_PREFIX_LENGTH = 47
"""63 characters less ``-<8 hex>-<6 hex>``."""
ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{1,12}:role/?[a-zA-Z_0-9+=,.@\-/]+")
S3_URI = re.compile(r"(https|s3)://[^/\s]+/?\S*")
OUTPUT_STEM = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/\S*")
INSTANCE_TYPE = re.compile(r"ml\.[a-z0-9-]+\.[a-z0-9]+")
KMS_KEY = re.compile(r"[a-zA-Z0-9:/_-]*")
SECURITY_GROUP = re.compile(r"sg-[0-9a-z]{1,32}")
SUBNET = re.compile(r"subnet-[0-9a-z]{1,32}")
TECHNIQUES = frozenset(
    {
        "ModelQuantizationConfig",
        "ModelCompilationConfig",
        "ModelShardingConfig",
        "ModelSpeculativeDecodingConfig",
    }
)


def check_request(request: Any) -> dict[str, Any]:
    """``Request`` checked against ``CreateOptimizationJob``'s shapes, then coerced.

    The technique configurations are checked for their kind only: botocore's own parameter
    validation rejects a malformed one before any request is sent.
    """
    where = "Request"
    body = mapping(
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
    matching(body["RoleArn"], f"{where}.RoleArn", ROLE_ARN, 2048)
    _check_model_source(body, where)
    matching(body["DeploymentInstanceType"], f"{where}.DeploymentInstanceType", INSTANCE_TYPE, 64)
    _check_optimization_configs(body, where)
    _check_output(body, where)
    _check_stopping(body, where)
    if "MaxInstanceCount" in body:
        integer(body["MaxInstanceCount"], f"{where}.MaxInstanceCount", 1, INT32_MAX)
    _check_environment(body, where)
    _check_vpc(body, where)
    _check_tags(body, where)
    return coerce_request(body)


def _check_model_source(body: dict[str, Any], where: str) -> None:
    """``ModelSource``: exactly one of S3 (with its access config) or a SageMaker model."""
    source = mapping(body["ModelSource"], f"{where}.ModelSource", set(), {"S3", "SageMakerModel"})
    if len(source) != 1:
        raise EventError(f"{where}.ModelSource must have exactly one of S3, SageMakerModel")
    if "S3" in source:
        s3 = mapping(source["S3"], f"{where}.ModelSource.S3", {"S3Uri"}, {"ModelAccessConfig"})
        matching(s3["S3Uri"], f"{where}.ModelSource.S3.S3Uri", S3_URI, 1024)
        if "ModelAccessConfig" in s3:
            access = mapping(
                s3["ModelAccessConfig"],
                f"{where}.ModelSource.S3.ModelAccessConfig",
                {"AcceptEula"},
                set(),
            )
            boolean(access["AcceptEula"], f"{where}.ModelSource.S3.ModelAccessConfig.AcceptEula")
    else:
        model = mapping(
            source["SageMakerModel"], f"{where}.ModelSource.SageMakerModel", {"ModelName"}, set()
        )
        matching(
            model["ModelName"], f"{where}.ModelSource.SageMakerModel.ModelName", SAGEMAKER_NAME, 63
        )


def _check_optimization_configs(body: dict[str, Any], where: str) -> None:
    """``OptimizationConfigs``: each names exactly one technique."""
    configs = items(body["OptimizationConfigs"], f"{where}.OptimizationConfigs", 0, 10)
    for index, config in enumerate(configs):
        item = mapping(config, f"{where}.OptimizationConfigs[{index}]", set(), TECHNIQUES)
        if len(item) != 1:
            raise EventError(
                f"{where}.OptimizationConfigs[{index}] must have exactly one of "
                + ", ".join(sorted(TECHNIQUES))
            )
        ((kind, settings),) = item.items()
        mapping(settings, f"{where}.OptimizationConfigs[{index}].{kind}", set())


def _check_output(body: dict[str, Any], where: str) -> None:
    """``OutputConfig``: its key and the model it creates, when given."""
    output = mapping(
        body["OutputConfig"], f"{where}.OutputConfig", set(), {"KmsKeyId", "SageMakerModel"}
    )
    if "KmsKeyId" in output:
        matching(
            output["KmsKeyId"], f"{where}.OutputConfig.KmsKeyId", KMS_KEY, 2048, allow_empty=True
        )
    if "SageMakerModel" in output:
        model = mapping(
            output["SageMakerModel"], f"{where}.OutputConfig.SageMakerModel", {"ModelName"}, set()
        )
        matching(
            model["ModelName"], f"{where}.OutputConfig.SageMakerModel.ModelName", SAGEMAKER_NAME, 63
        )


def _check_stopping(body: dict[str, Any], where: str) -> None:
    """``StoppingCondition``: the run, wait and pending time limits."""
    stopping = mapping(
        body["StoppingCondition"],
        f"{where}.StoppingCondition",
        {"MaxRuntimeInSeconds"},
        {"MaxWaitTimeInSeconds", "MaxPendingTimeInSeconds"},
    )
    integer(
        stopping["MaxRuntimeInSeconds"],
        f"{where}.StoppingCondition.MaxRuntimeInSeconds",
        1,
        MAX_WAIT_SECONDS,
    )
    if "MaxWaitTimeInSeconds" in stopping:
        integer(
            stopping["MaxWaitTimeInSeconds"],
            f"{where}.StoppingCondition.MaxWaitTimeInSeconds",
            1,
            MAX_WAIT_SECONDS,
        )
    if "MaxPendingTimeInSeconds" in stopping:
        integer(
            stopping["MaxPendingTimeInSeconds"],
            f"{where}.StoppingCondition.MaxPendingTimeInSeconds",
            1800,
            2_419_200,
        )


def _check_environment(body: dict[str, Any], where: str) -> None:
    """``OptimizationEnvironment``: at most 25 string variables."""
    if "OptimizationEnvironment" not in body:
        return
    environment = mapping(
        body["OptimizationEnvironment"], f"{where}.OptimizationEnvironment", set()
    )
    if len(environment) > 25:
        raise EventError(
            f"{where}.OptimizationEnvironment must have at most 25 variables, "
            f"not {len(environment)}"
        )
    for key, value in environment.items():  # OptimizationJobEnvironmentVariables: 256 each
        string(key, f"{where}.OptimizationEnvironment key", max_length=256)
        string(
            value,
            f"{where}.OptimizationEnvironment[{shown(key)}]",
            max_length=256,
            allow_empty=True,
        )


def _check_vpc(body: dict[str, Any], where: str) -> None:
    """``VpcConfig``: 1-5 security groups and 1-16 subnets."""
    if "VpcConfig" not in body:
        return
    vpc = mapping(body["VpcConfig"], f"{where}.VpcConfig", {"SecurityGroupIds", "Subnets"}, set())
    for group in items(vpc["SecurityGroupIds"], f"{where}.VpcConfig.SecurityGroupIds", 1, 5):
        matching(group, f"{where}.VpcConfig.SecurityGroupIds[]", SECURITY_GROUP, 32)
    for subnet in items(vpc["Subnets"], f"{where}.VpcConfig.Subnets", 1, 16):
        matching(subnet, f"{where}.VpcConfig.Subnets[]", SUBNET, 32)


def _check_tags(body: dict[str, Any], where: str) -> None:
    """``Tags``: at most 50 key/value pairs."""
    if "Tags" not in body:
        return
    for index, tag in enumerate(items(body["Tags"], f"{where}.Tags", 0, 50)):
        item = mapping(tag, f"{where}.Tags[{index}]", {"Key", "Value"}, set())
        string(item["Key"], f"{where}.Tags[{index}].Key", max_length=128)
        string(item["Value"], f"{where}.Tags[{index}].Value", max_length=256, allow_empty=True)


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
    """The job resource's properties, every field checked (``EventError`` names the bad one)."""
    where = "ResourceProperties"
    body = mapping(
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
    prefix = matching(
        body["JobNamePrefix"], f"{where}.JobNamePrefix", SAGEMAKER_NAME, MAX_PREFIX_LENGTH
    )
    stem = matching(body["JobNameStem"], f"{where}.JobNameStem", SAGEMAKER_NAME, 56)
    if not re.fullmatch(re.escape(prefix) + r"-[0-9a-f]{1,16}", stem):
        raise EventError(f"{where}.JobNameStem must be JobNamePrefix-<hex>, not {shown(stem)}")
    removal = string(body["RemovalPolicy"], f"{where}.RemovalPolicy", max_length=16)
    if removal not in ("retain", "destroy"):
        raise EventError(f"{where}.RemovalPolicy must be retain or destroy, not {shown(removal)}")
    return JobProperties(
        prefix=prefix,
        stem=stem,
        request=check_request(body["Request"]),
        output_stem=matching(
            body["OutputLocationStem"], f"{where}.OutputLocationStem", OUTPUT_STEM, 900
        ),
        handle=matching(body["WaitHandle"], f"{where}.WaitHandle", HTTPS_URL, 4096),
        wait_seconds=integer(body["WaitSeconds"], f"{where}.WaitSeconds", 1, MAX_WAIT_SECONDS),
        state_machine_arn=matching(
            body["StateMachineArn"], f"{where}.StateMachineArn", STATE_MACHINE_ARN, 256
        ),
        destroy=removal == "destroy",
    )


def is_job_name(value: Any) -> bool:
    """Whether ``value`` can name a SageMaker job (a failed create's placeholder cannot)."""
    return isinstance(value, str) and len(value) <= 63 and bool(SAGEMAKER_NAME.fullmatch(value))


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
