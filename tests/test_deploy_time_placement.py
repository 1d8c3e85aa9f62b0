"""Security defaults of the deploy-time constructs: customer keys and VPC placement reach
every handler Lambda, log group and results bucket the library creates."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from conftest import assert_cfn_lint_clean, resources_of_type
from test_endpoint_benchmark import component_stack

from cdk_sagemaker_llm import BenchmarkResults, ModelSource, ValidationError
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.constructs.benchmark import EndpointBenchmark
from cdk_sagemaker_llm.constructs.deploy_time import HandlerPlacement
from cdk_sagemaker_llm.constructs.optimization_job import OptimizationJob
from cdk_sagemaker_llm.constructs.optimization_options import OptimizationOutput, OptimizationRun
from cdk_sagemaker_llm.constructs.optimization_techniques import (
    OptimizationTechnique,
    QuantizationMethod,
)


def private_vpc(stack: cdk.Stack) -> ec2.IVpc:
    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0a1b2c3d4e5f60718",
        availability_zones=["us-west-2a", "us-west-2b"],
        private_subnet_ids=["subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"],
    )


def placed(stack: cdk.Stack) -> tuple[HandlerPlacement, kms.Key]:
    key = kms.Key(stack, "LogKey", enable_key_rotation=True)
    return HandlerPlacement(vpc=private_vpc(stack), log_encryption_key=key), key


def assert_every_handler_is_placed(
    template: dict[str, Any], stack: cdk.Stack, key: kms.Key
) -> None:
    functions = resources_of_type(template, "AWS::Lambda::Function")
    assert functions
    for function in functions:
        assert function["VpcConfig"]["SubnetIds"] == [
            "subnet-0a1b2c3d4e5f60718",
            "subnet-0a1b2c3d4e5f60719",
        ]
        # Lambda attaches the network-interface rights only to a role it creates: without
        # them creating the function fails (CreateNetworkInterface denied).
        role = template["Resources"][function["Role"]["Fn::GetAtt"][0]]["Properties"]
        assert "AWSLambdaVPCAccessExecutionRole" in json.dumps(role["ManagedPolicyArns"])
    key_arn = {"Fn::GetAtt": [stack.get_logical_id(key.node.default_child), "Arn"]}  # type: ignore[arg-type]
    log_groups = resources_of_type(template, "AWS::Logs::LogGroup")
    assert len(log_groups) == len(functions) + 1  # one per handler and the workflow's
    assert all(group["KmsKeyId"] == key_arn for group in log_groups)
    key_resource = template["Resources"][stack.get_logical_id(key.node.default_child)]  # type: ignore[arg-type]
    (logs_statement,) = [
        statement
        for statement in key_resource["Properties"]["KeyPolicy"]["Statement"]
        if statement["Principal"] == {"Service": "logs.us-west-2.amazonaws.com"}
    ]
    # Only this account's log groups may use the key (a confused-deputy guard).
    assert "kms:EncryptionContext:aws:logs:arn" in json.dumps(logs_statement["Condition"])


def test_benchmark_handlers_in_vpc_with_encrypted_logs_and_bucket_key() -> None:
    stack, component = component_stack()
    placement, log_key = placed(stack)
    results_key = kms.Key(stack, "ResultsKey", enable_key_rotation=True)
    EndpointBenchmark(
        stack,
        "Benchmark",
        inference_component=component,
        handler_placement=placement,
        results=BenchmarkResults.in_new_bucket(encryption_key=results_key),
    )
    template = assert_cfn_lint_clean(stack)
    assert_every_handler_is_placed(template, stack, log_key)
    (bucket,) = resources_of_type(template, "AWS::S3::Bucket")
    default = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ]
    assert default["SSEAlgorithm"] == "aws:kms"
    assert default["KMSMasterKeyID"] == {
        "Fn::GetAtt": [stack.get_logical_id(results_key.node.default_child), "Arn"]
    }  # type: ignore[arg-type]


def test_optimization_job_handlers_in_vpc_with_encrypted_logs() -> None:
    stack = cdk.Stack(
        cdk.App(), "Stack", env=cdk.Environment(region="us-west-2", account="123456789012")
    )
    placement, key = placed(stack)
    bucket = s3.Bucket.from_bucket_name(stack, "Models", "models")
    OptimizationJob(
        stack,
        "Job",
        source=ModelSource.from_s3(bucket, "llama/"),
        instance_type=InstanceType.G5_12XLARGE,
        techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
        output=OptimizationOutput.in_bucket(bucket),
        run=OptimizationRun(max_runtime=Duration.hours(2)),
        handler_placement=placement,
    )
    template = assert_cfn_lint_clean(stack)
    assert_every_handler_is_placed(template, stack, key)


def test_a_given_bucket_keeps_its_own_key() -> None:
    """A key applies only to the bucket the benchmark creates: the factory of a given bucket
    takes none, so the combination cannot be written."""
    stack, _ = component_stack()
    with pytest.raises(ValidationError, match=r"unexpected keyword argument 'encryption_key'"):
        BenchmarkResults.in_bucket(  # type: ignore[call-arg]
            s3.Bucket(stack, "Mine", enforce_ssl=True), encryption_key=kms.Key(stack, "Key")
        )


def test_a_vpc_without_private_subnets_names_the_subnets_to_pass() -> None:
    """The CDK's own error named no property ("There are no 'Private' subnet groups")."""
    stack, component = component_stack()
    isolated = ec2.Vpc.from_vpc_attributes(
        stack, "Isolated", vpc_id="vpc-1", availability_zones=["us-west-2a"],
        isolated_subnet_ids=["subnet-1"],
    )  # fmt: skip
    with pytest.raises(ValidationError, match=r"handler_placement\.vpc_subnets") as raised:
        EndpointBenchmark(
            stack,
            "Benchmark",
            inference_component=component,
            handler_placement=HandlerPlacement(vpc=isolated),
        )
    assert "PRIVATE_ISOLATED" in raised.value.fix


def test_an_imported_log_key_is_warned_its_policy_must_allow_cloudwatch_logs() -> None:
    """The grant to CloudWatch Logs was silently dropped on an imported key, and every log
    group would fail to create."""
    from aws_cdk.assertions import Annotations, Match

    stack, component = component_stack()
    key = kms.Key.from_key_arn(
        stack,
        "Imported",
        "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    )
    EndpointBenchmark(
        stack,
        "Benchmark",
        inference_component=component,
        handler_placement=HandlerPlacement(log_encryption_key=key),
    )
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    assert any("logs.us-west-2.amazonaws.com" in str(w.entry.data) for w in warnings)


def test_subnets_without_vpc_are_an_error() -> None:
    stack, component = component_stack()
    with pytest.raises(ValidationError, match=r"handler_placement\.vpc=None"):
        EndpointBenchmark(
            stack,
            "Benchmark",
            inference_component=component,
            handler_placement=HandlerPlacement(
                vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
            ),
        )


def test_placed_handlers_have_no_nag_findings(tmp_path: Any) -> None:
    from cdk_nag import AwsSolutionsChecks
    from conftest import CDK_CONTEXT

    app = cdk.App(outdir=str(tmp_path), context=CDK_CONTEXT)
    stack = cdk.Stack(
        app, "Placed", env=cdk.Environment(region="us-west-2", account="123456789012")
    )
    placement, _ = placed(stack)
    bucket = s3.Bucket.from_bucket_name(stack, "Models", "models")
    OptimizationJob(
        stack,
        "Job",
        source=ModelSource.from_s3(bucket, "llama/"),
        instance_type=InstanceType.G5_12XLARGE,
        techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
        output=OptimizationOutput.in_bucket(bucket),
        handler_placement=placement,
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
