"""OptimizationJob: the template it emits, its least-privilege grants, and its validation."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import aws_cdk as cdk
import botocore.loaders
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from conftest import assert_cfn_lint_clean, new_stack, resources_of_type, role_statements
from hub import hub_token

from cdk_sagemaker_llm import ComponentModel, CopyResources, LmiOptions
from cdk_sagemaker_llm.catalog.containers import ContainerFamily
from cdk_sagemaker_llm.catalog.instance_types import InstanceType
from cdk_sagemaker_llm.constructs.endpoint import InferenceComponentEndpoint
from cdk_sagemaker_llm.constructs.images import ContainerImage
from cdk_sagemaker_llm.constructs.inference_component import InferenceComponent
from cdk_sagemaker_llm.constructs.model import Model
from cdk_sagemaker_llm.constructs.model_source import ModelSource
from cdk_sagemaker_llm.constructs.optimization_job import OptimizationJob
from cdk_sagemaker_llm.constructs.optimization_options import (
    OptimizationOutput,
    OptimizationRun,
    OptimizationSecurity,
)
from cdk_sagemaker_llm.constructs.optimization_techniques import (
    DEPLOYMENT_INSTANCE_TYPES,
    CompilationTarget,
    OptimizationTechnique,
    QuantizationMethod,
)
from cdk_sagemaker_llm.errors import ValidationError

AWQ = OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)


def job(
    stack: cdk.Stack, output_options: dict[str, Any] | None = None, **overrides: Any
) -> OptimizationJob:
    """The job under test; ``output_options`` go to ``OptimizationOutput.in_bucket``."""
    bucket = s3.Bucket.from_bucket_name(stack, "Models", "models")
    props: dict[str, Any] = {
        "source": ModelSource.from_s3(bucket, "llama-3-8b/"),
        "instance_type": InstanceType.G5_12XLARGE,
        "techniques": [AWQ],
        "output": OptimizationOutput.in_bucket(bucket, **(output_options or {})),
    }
    props.update(overrides)
    return OptimizationJob(stack, "Awq", **props)


def one(template: dict[str, Any], kind: str) -> dict[str, Any]:
    (match,) = resources_of_type(template, kind)
    return match


def logical_ids(template: dict[str, Any], kind: str) -> list[str]:
    return sorted(k for k, v in template["Resources"].items() if v["Type"] == kind)


def job_role_id(template: dict[str, Any]) -> str:
    (role,) = [k for k in logical_ids(template, "AWS::IAM::Role") if k.startswith("AwqJobRole")]
    return role


def policy_of(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    """The statements on the role(s) whose logical id starts with ``role_prefix``, whether
    aws-cdk-lib's separate default policy or the library's inline execution-role policy."""
    statements = role_statements(template, role_prefix)
    if not statements:
        raise AssertionError(f"no policy for {role_prefix}")
    return statements


# ----- what is emitted ---------------------------------------------------------------------------


def test_emits_the_custom_resource_the_wait_and_the_output_lint_clean() -> None:
    stack = new_stack()
    job(stack)
    template = assert_cfn_lint_clean(stack)
    props = one(template, "Custom::SageMakerOptimizationJob")
    assert props["Request"] == {
        "RoleArn": {"Fn::GetAtt": [job_role_id(template), "Arn"]},
        "ModelSource": {"S3": {"S3Uri": "s3://models/llama-3-8b/"}},
        "DeploymentInstanceType": "ml.g5.12xlarge",
        "OptimizationConfigs": [
            {"ModelQuantizationConfig": {"OverrideEnvironment": {"OPTION_QUANTIZE": "awq"}}}
        ],
        "OutputConfig": {},
        "StoppingCondition": {"MaxRuntimeInSeconds": 36000},
    }
    assert props["OutputLocationStem"] == "s3://models/optimized/"
    assert props["JobNameStem"].startswith(props["JobNamePrefix"] + "-")
    assert props["ServiceTimeout"] == "300"
    wait = template["Resources"][logical_ids(template, "AWS::CloudFormation::WaitCondition")[0]]
    assert wait["Properties"]["Timeout"] == str(36000 + 3000)
    assert wait["Properties"]["Count"] == 1
    assert wait["DependsOn"] == logical_ids(template, "Custom::SageMakerOptimizationJob")
    output = template["Resources"][
        logical_ids(template, "Custom::SageMakerOptimizationJobOutput")[0]
    ]
    assert output["DependsOn"] == logical_ids(template, "AWS::CloudFormation::WaitCondition")
    assert output["Properties"]["RequireRecommendedImage"] == "false"


def test_handlers_are_plain_python_assets_with_sane_limits() -> None:
    stack = new_stack()
    job(stack)
    template = assert_cfn_lint_clean(stack)
    functions = resources_of_type(template, "AWS::Lambda::Function")
    assert sorted(f["Handler"] for f in functions) == ["handler.on_event", "handler.poll"]
    service_timeout = int(one(template, "Custom::SageMakerOptimizationJob")["ServiceTimeout"])
    for function in functions:
        assert function["Runtime"] == "python3.13"
        assert "S3Key" in function["Code"] and "ImageUri" not in function["Code"]
        # The handler answers CloudFormation itself, so it must time out before CloudFormation
        # stops waiting for its answer (the custom resources' ServiceTimeout).
        assert function["Timeout"] < service_timeout
        assert "Ref" in function["LoggingConfig"]["LogGroup"]  # an explicit log group
    for group in resources_of_type(template, "AWS::Logs::LogGroup"):
        assert group["RetentionInDays"] == 90
    machine = one(template, "AWS::StepFunctions::StateMachine")
    assert machine["StateMachineType"] == "STANDARD"
    assert machine["LoggingConfiguration"]["IncludeExecutionData"] is False


def test_the_synthesized_template_is_deterministic() -> None:
    first, second = new_stack(), new_stack()
    job(first)
    job(second)
    assert Template.from_stack(first).to_json() == Template.from_stack(second).to_json()


def test_a_changed_definition_replaces_the_handle_and_the_wait_condition() -> None:
    base, changed, same = new_stack(), new_stack(), new_stack()
    job(base)
    job(changed, run=OptimizationRun(max_runtime=cdk.Duration.hours(4)))
    job(same)
    kinds = ("AWS::CloudFormation::WaitConditionHandle", "AWS::CloudFormation::WaitCondition")
    ids = {
        name: [logical_ids(Template.from_stack(s).to_json(), kind) for kind in kinds]
        for name, s in (("base", base), ("changed", changed), ("same", same))
    }
    assert ids["base"] == ids["same"]
    assert all(a != b for a, b in zip(ids["base"], ids["changed"], strict=True))
    stems = [
        one(Template.from_stack(s).to_json(), "Custom::SageMakerOptimizationJob")["JobNameStem"]
        for s in (base, changed)
    ]
    assert stems[0] != stems[1]
    # The job resource keeps its logical id: CloudFormation updates it (new physical id).
    assert logical_ids(Template.from_stack(base).to_json(), "Custom::SageMakerOptimizationJob") == (
        logical_ids(Template.from_stack(changed).to_json(), "Custom::SageMakerOptimizationJob")
    )


# ----- least privilege ---------------------------------------------------------------------------


def test_job_role_reads_exactly_the_source_and_writes_exactly_its_output() -> None:
    stack = new_stack()
    optimization = job(stack)
    template = assert_cfn_lint_clean(stack)
    stem = one(template, "Custom::SageMakerOptimizationJob")["JobNameStem"]
    statements = policy_of(template, "AwqJobRole")
    by_action = {json.dumps(s["Action"]): s for s in statements}
    assert by_action['"s3:GetObject"']["Resource"] == "arn:aws:s3:::models/llama-3-8b/*"
    writes = by_action[
        '["s3:AbortMultipartUpload", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:PutObject"]'
    ]
    assert writes["Resource"] == f"arn:aws:s3:::models/optimized/{stem}*"
    listings = [s for s in statements if s["Action"] == "s3:ListBucket"]
    assert sorted(s["Condition"]["StringLike"]["s3:prefix"][0] for s in listings) == [
        "llama-3-8b/*",
        f"optimized/{stem}*",
    ]
    assert (
        optimization.job_name_prefix
        == one(template, "Custom::SageMakerOptimizationJob")["JobNamePrefix"]
    )


def test_handlers_may_act_only_on_their_jobs_and_pass_only_the_job_role() -> None:
    stack = new_stack()
    job(stack, run=OptimizationRun(job_name_prefix="llama-awq"))
    template = assert_cfn_lint_clean(stack)
    job_arns = "arn:aws:sagemaker:us-west-2:123456789012:optimization-job/llama-awq-????????-??????"
    # Its own jobs, and not those of a construct whose prefix begins with its own.
    jobs_of = "arn:aws:sagemaker:us-west-2:123456789012:optimization-job/{}"
    assert fnmatch.fnmatchcase(jobs_of.format("llama-awq-0123abcd-0a1b2c"), job_arns)
    assert not fnmatch.fnmatchcase(jobs_of.format("llama-awq-int4-0123abcd-0a1b2c"), job_arns)
    handler = policy_of(template, "AwqHandlerRole")
    actions = {json.dumps(s["Action"]): s for s in handler}
    jobs = actions[
        '["sagemaker:CreateOptimizationJob", "sagemaker:DescribeOptimizationJob", '
        '"sagemaker:StopOptimizationJob"]'
    ]
    assert jobs["Resource"] == job_arns
    pass_role = actions['"iam:PassRole"']
    assert pass_role["Resource"] == {"Fn::GetAtt": [job_role_id(template), "Arn"]}
    assert pass_role["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }
    assert actions['"states:StartExecution"']["Resource"] == {
        "Ref": logical_ids(template, "AWS::StepFunctions::StateMachine")[0]
    }
    assert set(actions) == {
        '["logs:CreateLogStream", "logs:PutLogEvents"]',
        '"iam:PassRole"',
        '"states:StartExecution"',
        '["sagemaker:CreateOptimizationJob", "sagemaker:DescribeOptimizationJob", '
        '"sagemaker:StopOptimizationJob"]',
    }
    poller = policy_of(template, "AwqPollerRole")
    assert [s["Action"] for s in poller] == [
        ["logs:CreateLogStream", "logs:PutLogEvents"],
        ["sagemaker:DescribeOptimizationJob", "sagemaker:StopOptimizationJob"],
    ]
    assert poller[1]["Resource"] == job_arns


def test_destroy_lets_the_handler_delete_only_its_jobs_artifacts() -> None:
    stack = new_stack()
    job(stack, output_options={"removal_policy": cdk.RemovalPolicy.DESTROY})
    template = assert_cfn_lint_clean(stack)
    prefix = one(template, "Custom::SageMakerOptimizationJob")["JobNamePrefix"]
    assert one(template, "Custom::SageMakerOptimizationJob")["RemovalPolicy"] == "destroy"
    statements = policy_of(template, "AwqHandlerRole")
    deletes = [s for s in statements if s["Action"] == "s3:DeleteObject"]
    folders = f"optimized/{prefix}-????????-??????/*"  # <prefix>-<definition>-<handle>/
    assert deletes[0]["Resource"] == f"arn:aws:s3:::models/{folders}"
    listings = [s for s in statements if s["Action"] == "s3:ListBucket"]
    assert listings[0]["Condition"] == {"StringLike": {"s3:prefix": [folders]}}


def _deletable(template: dict[str, Any], folder: str) -> bool:
    """Whether the handler's policy lets it list and delete the objects of ``folder``
    (``models/<key>``), with IAM's wildcards (``*``, ``?``)."""
    statements = policy_of(template, "AwqHandlerRole")
    deletes = [s["Resource"] for s in statements if s["Action"] == "s3:DeleteObject"]
    lists = [
        pattern
        for s in statements
        if s["Action"] == "s3:ListBucket"
        for pattern in s["Condition"]["StringLike"]["s3:prefix"]
    ]
    return any(fnmatch.fnmatchcase(f"arn:aws:s3:::models/{folder}x", p) for p in deletes) and any(
        fnmatch.fnmatchcase(folder, p) for p in lists
    )


def test_destroy_deletes_the_artifacts_of_a_job_replaced_by_an_update() -> None:
    """A changed definition replaces the job; CloudFormation deletes the old physical id after
    the update, under the new policy (and a rollback deletes the new one under the old)."""
    destroy = {"removal_policy": cdk.RemovalPolicy.DESTROY}
    before, after = new_stack(), new_stack()
    job(before, output_options=destroy)
    job(after, output_options=destroy, run=OptimizationRun(max_runtime=cdk.Duration.hours(4)))
    old, new = (Template.from_stack(s).to_json() for s in (before, after))
    stems = [one(t, "Custom::SageMakerOptimizationJob")["JobNameStem"] for t in (old, new)]
    assert stems[0] != stems[1]
    old_folder, new_folder = (f"optimized/{stem}-0a1b2c/" for stem in stems)
    assert _deletable(new, old_folder)  # the cleanup after the update
    assert _deletable(old, new_folder)  # the cleanup after a rollback
    assert not _deletable(new, "optimized/other-job-0a1b2c/")


def test_a_supplied_role_gets_the_same_grants_and_no_role_is_created() -> None:
    stack = new_stack()
    role = iam.Role.from_role_arn(stack, "Mine", "arn:aws:iam::123456789012:role/optimizer")
    job(stack, security=OptimizationSecurity.managed_network(role=role))
    template = assert_cfn_lint_clean(stack)
    request = one(template, "Custom::SageMakerOptimizationJob")["Request"]
    assert request["RoleArn"] == "arn:aws:iam::123456789012:role/optimizer"
    assert not [k for k in logical_ids(template, "AWS::IAM::Role") if k.startswith("AwqJobRole")]
    (policy,) = [
        p for p in resources_of_type(template, "AWS::IAM::Policy") if p["Roles"] == ["optimizer"]
    ]
    statements = policy["PolicyDocument"]["Statement"]
    assert {
        "Action": "s3:GetObject",
        "Effect": "Allow",
        "Resource": "arn:aws:s3:::models/llama-3-8b/*",
    } in statements


# ----- every prop --------------------------------------------------------------------------------


def test_kms_vpc_eula_environment_and_speculative_training_data() -> None:
    stack = new_stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0a1b2c3d4e5f60718",
        availability_zones=["us-west-2a", "us-west-2b"],
        private_subnet_ids=["subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"],
    )
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    data = s3.Bucket.from_bucket_name(stack, "Data", "prompts")
    job(
        stack,
        output_options={"encryption_key": key},
        security=OptimizationSecurity.in_vpc(vpc),
        accept_eula=True,
        environment={"OPTION_DTYPE": "fp16"},
        run=OptimizationRun(max_runtime=cdk.Duration.hours(3)),
        techniques=[
            OptimizationTechnique.speculative_decoding(
                training_data_bucket=data, training_data_key="sharegpt/"
            )
        ],
    )
    template = assert_cfn_lint_clean(stack)
    request = one(template, "Custom::SageMakerOptimizationJob")["Request"]
    assert request["ModelSource"]["S3"]["ModelAccessConfig"] == {"AcceptEula": True}
    assert request["OutputConfig"]["KmsKeyId"] == {
        "Fn::GetAtt": [logical_ids(template, "AWS::KMS::Key")[0], "Arn"]
    }
    assert request["OptimizationEnvironment"] == {"OPTION_DTYPE": "fp16"}
    assert request["OptimizationConfigs"] == [
        {
            "ModelSpeculativeDecodingConfig": {
                "Technique": "EAGLE",
                "TrainingDataSource": {"S3Uri": "s3://prompts/sharegpt/", "S3DataType": "S3Prefix"},
            }
        }
    ]
    assert len(request["VpcConfig"]["Subnets"]) == 2
    assert len(request["VpcConfig"]["SecurityGroupIds"]) == 1
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 10800}
    statements = policy_of(template, "AwqJobRole")
    assert any("arn:aws:s3:::prompts/sharegpt/*" in json.dumps(s["Resource"]) for s in statements)
    assert any("ec2:CreateNetworkInterface" in s["Action"] for s in statements)
    assert any("kms:GenerateDataKey*" in s["Action"] for s in statements)


def test_a_sagemaker_model_source_and_neuron_compilation() -> None:
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Weights", "weights")
    model = Model(
        stack,
        "Base",
        image=ContainerImage.lmi_neuronx("0.29.0"),
        source=ModelSource.from_s3(bucket, "llama/"),
    )
    optimization = job(
        stack,
        source=model,
        instance_type=InstanceType.INF2_48XLARGE,
        techniques=[
            OptimizationTechnique.compilation(
                CompilationTarget.NEURON,
                environment={"OPTION_TENSOR_PARALLEL_DEGREE": "24", "OPTION_N_POSITIONS": "8192"},
            )
        ],
    )
    template = assert_cfn_lint_clean(stack)
    request = one(template, "Custom::SageMakerOptimizationJob")["Request"]
    assert request["ModelSource"] == {
        "SageMakerModel": {
            "ModelName": {
                "Fn::GetAtt": [logical_ids(template, "AWS::SageMaker::Model")[0], "ModelName"]
            }
        }
    }
    assert request["OptimizationConfigs"][0]["ModelCompilationConfig"]["OverrideEnvironment"] == {
        "OPTION_N_POSITIONS": "8192",
        "OPTION_TENSOR_PARALLEL_DEGREE": "24",
    }
    assert optimization.recommended_image().family is ContainerFamily.LMI_NEURONX
    assert any(
        s["Resource"] == "arn:aws:s3:::weights/llama/*" for s in policy_of(template, "AwqJobRole")
    )


def test_sharding_and_a_custom_quantization_image() -> None:
    stack = new_stack()
    image = ContainerImage.lmi("0.31.0")
    job(
        stack,
        instance_type=InstanceType.P4D_24XLARGE,
        techniques=[OptimizationTechnique.sharding(tensor_parallel_degree=8, image=image)],
    )
    template = assert_cfn_lint_clean(stack)
    config = one(template, "Custom::SageMakerOptimizationJob")["Request"]["OptimizationConfigs"][0]
    assert config["ModelShardingConfig"]["OverrideEnvironment"] == {
        "OPTION_TENSOR_PARALLEL_DEGREE": "8"
    }
    assert config["ModelShardingConfig"]["Image"].endswith("/djl-inference:0.31.0-lmi13.0.0-cu124")


# ----- outputs feed serving ----------------------------------------------------------------------


def test_the_output_feeds_an_inference_component_after_the_job_completes() -> None:
    stack = new_stack()
    key = kms.Key(stack, "OutKey", enable_key_rotation=True)
    optimization = job(stack, output_options={"encryption_key": key})
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=InstanceType.G5_12XLARGE)
    model = Model(
        stack,
        "Optimized",
        image=optimization.recommended_image(),
        source=optimization.as_model_source(),
    )
    InferenceComponent(
        stack,
        "Component",
        endpoint=endpoint,
        serves=ComponentModel.of(model),
        resources=CopyResources(accelerators=1, min_memory=cdk.Size.gibibytes(16)),
    )
    template = assert_cfn_lint_clean(stack)
    output_id = logical_ids(template, "Custom::SageMakerOptimizationJobOutput")[0]
    assert template["Resources"][output_id]["Properties"]["RequireRecommendedImage"] == "true"
    container = one(template, "AWS::SageMaker::Model")["PrimaryContainer"]
    assert container["Image"] == {"Fn::GetAtt": [output_id, "RecommendedInferenceImage"]}
    s3_uri = container["ModelDataSource"]["S3DataSource"]["S3Uri"]
    assert {"Fn::GetAtt": [output_id, "OutputPrefix"]} in s3_uri["Fn::Join"][1]
    statements = policy_of(template, "OptimizedExecutionRole")
    actions = [s["Action"] for s in statements]
    assert any("ecr:BatchGetImage" in a for a in actions)
    pull = next(s for s in statements if "ecr:BatchGetImage" in s["Action"])
    assert pull["Resource"] == {"Fn::GetAtt": [output_id, "RecommendedImageRepositoryArn"]}
    assert any("kms:Decrypt" in a for a in actions)
    assert optimization.output_s3_uri.startswith("${Token")


def _serve(stack: cdk.Stack, optimization: OptimizationJob, on: InstanceType, **model: Any) -> None:
    """A component serving the job's output on ``on``, one accelerator per copy."""
    endpoint = InferenceComponentEndpoint(stack, "Endpoint", instance_type=on)
    served = Model(
        stack,
        "Optimized",
        image=ContainerImage.lmi("0.31.0"),
        source=optimization.as_model_source(),
        **model,
    )
    InferenceComponent(
        stack,
        "Component",
        endpoint=endpoint,
        serves=ComponentModel.of(served),
        resources=CopyResources(accelerators=1, min_memory=cdk.Size.gibibytes(16)),
    )


def test_compiled_artifacts_are_served_only_on_their_accelerator() -> None:
    """TensorRT-LLM engines built on ml.g5 (A10G) do not load on ml.p4d (A100): refused at
    synth, naming the job and both ways out. Another size of the same accelerator is fine."""
    trtllm = OptimizationTechnique.compilation(CompilationTarget.TENSORRT_LLM)
    stack = new_stack()
    optimization = job(stack, techniques=[trtllm])
    with pytest.raises(ValidationError) as raised:
        _serve(stack, optimization, InstanceType.P4D_24XLARGE)
    assert "compiled its tensorrt-llm artifacts for ml.g5.12xlarge" in str(raised.value)
    assert "instance_type to ml.p4d.24xlarge" in raised.value.fix
    same_gpu = new_stack()
    _serve(same_gpu, job(same_gpu, techniques=[trtllm]), InstanceType.G5_48XLARGE)


def test_sharded_weights_load_only_at_their_degree() -> None:
    stack = new_stack()
    sharded = job(stack, techniques=[OptimizationTechnique.sharding(tensor_parallel_degree=4)])
    with pytest.raises(ValidationError) as raised:
        _serve(
            stack, sharded, InstanceType.G5_12XLARGE, serving=LmiOptions(tensor_parallel_degree=2)
        )
    assert "tensor-parallel degree 4" in str(raised.value)
    assert "tensor_parallel_degree=4" in raised.value.fix
    small = new_stack()
    with pytest.raises(ValidationError, match=r"more than the 1 accelerators of ml\.g5\.2xlarge"):
        _serve(
            small,
            job(small, techniques=[OptimizationTechnique.sharding(tensor_parallel_degree=4)]),
            InstanceType.G5_2XLARGE,
        )


def test_grant_read_output() -> None:
    stack = new_stack()
    optimization = job(stack)
    reader = iam.Role(stack, "Reader", assumed_by=iam.AccountRootPrincipal())
    optimization.grant_read_output(reader)
    template = assert_cfn_lint_clean(stack)
    statements = policy_of(template, "Reader")
    assert statements[0]["Action"] == "s3:GetObject"


# ----- validation --------------------------------------------------------------------------------


def test_deployment_instance_types_match_botocore() -> None:
    model = botocore.loaders.Loader().load_service_model("sagemaker", "service-2")
    enum = model["shapes"]["OptimizationJobDeploymentInstanceType"]["enum"]
    assert tuple(enum) == DEPLOYMENT_INSTANCE_TYPES


NEURON_COMPILE = OptimizationTechnique.compilation(CompilationTarget.NEURON)
TRT_COMPILE = OptimizationTechnique.compilation(CompilationTarget.TENSORRT_LLM)
EAGLE = OptimizationTechnique.speculative_decoding()


@pytest.mark.parametrize(
    ("overrides", "prop", "message"),
    [
        ({"instance_type": InstanceType.of("ml.c5.xlarge")}, "instance_type", "deployment"),
        ({"instance_type": InstanceType.of("ml.g5.12xlarge ")}, "instance_type", "deployment"),
        ({"techniques": [NEURON_COMPILE]}, "instance_type", "Neuron compilation"),
        (
            {"techniques": [TRT_COMPILE], "instance_type": InstanceType.INF2_24XLARGE},
            "instance_type",
            "TensorRT-LLM",
        ),
        ({"instance_type": InstanceType.TRN1_32XLARGE}, "instance_type", "AWQ quantization"),
        (
            {"techniques": [EAGLE], "instance_type": InstanceType.INF2_XLARGE},
            "instance_type",
            "EAGLE",
        ),
        (
            {"techniques": [OptimizationTechnique.sharding(tensor_parallel_degree=4), AWQ]},
            "techniques",
            "sharding cannot be combined",
        ),
        ({"techniques": [OptimizationTechnique.sharding()]}, "techniques[0].environment", "degree"),
        (
            {"techniques": [OptimizationTechnique.sharding(tensor_parallel_degree=8)]},
            "techniques[0].OPTION_TENSOR_PARALLEL_DEGREE",
            "4 GPUs",
        ),
        (
            {
                "techniques": [
                    OptimizationTechnique.sharding(
                        environment={"OPTION_TENSOR_PARALLEL_DEGREE": "two"}
                    )
                ]
            },
            "techniques[0].OPTION_TENSOR_PARALLEL_DEGREE",
            "positive whole number",
        ),
        (
            {
                "techniques": [
                    OptimizationTechnique.compilation(
                        CompilationTarget.TENSORRT_LLM,
                        environment={"OPTION_TENSOR_PARALLEL_DEGREE": "8"},
                    )
                ]
            },
            "techniques[0].OPTION_TENSOR_PARALLEL_DEGREE",
            "ml.g5.12xlarge has 4 GPUs",
        ),
        (
            {
                "techniques": [
                    OptimizationTechnique.quantization_of(
                        environment={"OPTION_TENSOR_PARALLEL_DEGREE": "two"}
                    )
                ]
            },
            "techniques[0].OPTION_TENSOR_PARALLEL_DEGREE",
            "positive whole number",
        ),
        (
            {
                "techniques": [
                    OptimizationTechnique.compilation(
                        CompilationTarget.NEURON,
                        environment={"OPTION_TENSOR_PARALLEL_DEGREE": "24"},
                    )
                ],
                "instance_type": InstanceType.INF2_XLARGE,
            },
            "techniques[0].OPTION_TENSOR_PARALLEL_DEGREE",
            "ml.inf2.xlarge has 2 NeuronCores",
        ),
        (
            {"environment": {"OPTION_TENSOR_PARALLEL_DEGREE": "8"}},
            "environment['OPTION_TENSOR_PARALLEL_DEGREE']",
            "ml.g5.12xlarge has 4 GPUs",
        ),
        ({"techniques": []}, "techniques", "1 to 10"),
        ({"techniques": [AWQ, AWQ]}, "techniques", "QUANTIZATION is given 2 times"),
        (
            {"environment": {f"V{i}": "1" for i in range(26)}},
            "environment",
            "at most 25",
        ),
        (
            {"techniques": [TRT_COMPILE, EAGLE]},
            "techniques",
            "compilation and speculative decoding in one job",
        ),
        (
            {
                "techniques": [OptimizationTechnique.sharding(tensor_parallel_degree=4)],
                "instance_type": InstanceType.INF2_48XLARGE,
            },
            "instance_type",
            "compiles only",
        ),
        (
            {
                "techniques": [OptimizationTechnique.quantization_of(QuantizationMethod.FP8)],
                "instance_type": InstanceType.G4DN_12XLARGE,
            },
            "instance_type",
            "compute capability 8.0",
        ),
        ({"environment": {"K": "v" * 257}}, "environment['K'] (length)", "at most 256"),
        ({"environment": {" ": "v"}}, "environment (name)", "not blank"),
        ({"source": "not a model name!"}, "source", "not a SageMaker model name"),
        ({"source": "m" * 64}, "source", "not a SageMaker model name"),
        (
            {
                "source": ModelSource.from_s3(
                    s3.Bucket.from_bucket_name(new_stack(), "M", "m-1"), "my model/"
                )
            },
            "source",
            "no whitespace",
        ),
        ({"source": "base-model", "accept_eula": True}, "accept_eula", "S3"),
    ],
)
def test_validation_errors(overrides: dict[str, Any], prop: str, message: str) -> None:
    stack = new_stack()
    with pytest.raises(ValidationError) as raised:
        job(stack, **overrides)
    assert raised.value.prop == prop
    assert message in str(raised.value)
    assert raised.value.fix


def six_security_groups() -> OptimizationSecurity:
    stack = new_stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id="vpc-1", availability_zones=["us-west-2a"],
        private_subnet_ids=["subnet-1"],
    )  # fmt: skip
    groups = [ec2.SecurityGroup.from_security_group_id(stack, f"G{i}", f"sg-{i}") for i in range(6)]
    return OptimizationSecurity.in_vpc(vpc, security_groups=groups)


@pytest.mark.parametrize(
    ("build", "prop", "message"),
    [
        (
            lambda: OptimizationRun(max_runtime=cdk.Duration.hours(12)),
            "OptimizationRun(max_runtime) (seconds)",
            "between 1 and 40200",
        ),
        (
            lambda: OptimizationRun(max_runtime=cdk.Duration.seconds(0)),
            "OptimizationRun(max_runtime) (seconds)",
            "between",
        ),
        (
            lambda: OptimizationRun(poll_interval=cdk.Duration.seconds(5)),
            "OptimizationRun(poll_interval) (seconds)",
            "between",
        ),
        (
            lambda: OptimizationRun(
                max_runtime=cdk.Duration.hours(11), poll_interval=cdk.Duration.seconds(10)
            ),
            "OptimizationRun(poll_interval) (seconds)",
            "past a Standard workflow's 25,000-event execution history",
        ),
        (
            lambda: OptimizationRun(max_runtime=cdk.Duration.millis(90_500)),
            "OptimizationRun(max_runtime)",
            "whole seconds",
        ),
        (
            lambda: OptimizationRun(poll_interval=cdk.Duration.millis(10_500)),
            "OptimizationRun(poll_interval)",
            "whole seconds",
        ),
        (
            lambda: OptimizationRun(job_name_prefix="Llama_AWQ"),
            "OptimizationRun(job_name_prefix)",
            "lowercase",
        ),
        (
            lambda: OptimizationRun(job_name_prefix="x" * 48),
            "OptimizationRun(job_name_prefix)",
            "1-47",
        ),
        (
            lambda: OptimizationOutput.in_bucket(
                s3.Bucket.from_bucket_name(new_stack(), "B", "models"), prefix="optimized"
            ),
            "OptimizationOutput.in_bucket(prefix)",
            "end with '/'",
        ),
        (
            lambda: OptimizationOutput.in_bucket(
                s3.Bucket.from_bucket_name(new_stack(), "B", "models"), prefix="s3://other/opt/"
            ),
            "OptimizationOutput.in_bucket(prefix)",
            "not an S3 URI",
        ),
        (
            lambda: OptimizationOutput.in_bucket(
                s3.Bucket.from_bucket_name(new_stack(), "B", "models"), prefix="my models/"
            ),
            "OptimizationOutput.in_bucket(prefix)",
            "no whitespace",
        ),
        (
            lambda: OptimizationOutput.in_bucket(
                s3.Bucket.from_bucket_name(new_stack(), "B", "models"), prefix="a//b/"
            ),
            "OptimizationOutput.in_bucket(prefix)",
            "no empty folder",
        ),
        (
            lambda: OptimizationOutput.in_bucket(
                s3.Bucket.from_bucket_name(new_stack(), "B", "models"), prefix="a" * 990 + "/"
            ),
            "OptimizationOutput.in_bucket(prefix)",
            "at most 831 characters",
        ),
        (
            lambda: OptimizationSecurity(
                security_groups=[ec2.SecurityGroup.from_security_group_id(new_stack(), "G", "sg-1")]
            ),
            "OptimizationSecurity(vpc)",
            "need a vpc",
        ),
        (lambda: six_security_groups(), "OptimizationSecurity.in_vpc(security_groups)", "1 to 5"),
    ],
)
def test_option_validation_errors(build: Any, prop: str, message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        build()
    assert raised.value.prop == prop
    assert message in str(raised.value)
    assert raised.value.fix


def test_sources_an_optimization_job_cannot_read() -> None:
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Other", "other")
    for source in (
        ModelSource.from_hugging_face(
            "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hub_token()
        ),
        ModelSource.from_s3_tarball(bucket, "model.tar.gz"),
    ):
        with pytest.raises(ValidationError, match="uncompressed weights under an S3 prefix"):
            job(new_stack(), source=source)


def test_technique_factories_validate_their_arguments() -> None:
    stack = new_stack()
    bucket = s3.Bucket.from_bucket_name(stack, "Data", "data")
    with pytest.raises(ValidationError, match="both a bucket and a key"):
        OptimizationTechnique.speculative_decoding(training_data_bucket=bucket)
    with pytest.raises(ValidationError, match="must end with '/'"):
        OptimizationTechnique.speculative_decoding(
            training_data_bucket=bucket, training_data_key="data"
        )
    manifest = OptimizationTechnique.speculative_decoding(
        training_data_bucket=bucket, training_data_key="data.jsonl", manifest=True
    )
    assert manifest.training_data_is_manifest
    with pytest.raises(ValidationError, match="OPTION_QUANTIZE"):
        OptimizationTechnique.quantization_of(
            QuantizationMethod.FP8, environment={"OPTION_QUANTIZE": "awq"}
        )
    fp8 = OptimizationTechnique.quantization_of(
        QuantizationMethod.FP8, environment={"OPTION_TENSOR_PARALLEL_DEGREE": "4"}
    )
    assert fp8.environment == {"OPTION_QUANTIZE": "fp8", "OPTION_TENSOR_PARALLEL_DEGREE": "4"}


def test_gpu_types_outside_the_catalog_are_accepted() -> None:
    stack = new_stack()
    job(stack, instance_type=InstanceType.of("ml.p5e.48xlarge"))
    assert_cfn_lint_clean(stack)


def test_an_output_is_served_only_as_what_the_job_wrote() -> None:
    """An AWQ job's output was accepted as an EAGLE draft, and an EAGLE job's head as the
    model: both failed only when the container loaded them."""
    stack = new_stack()
    quantized = job(stack)
    with pytest.raises(ValidationError, match="trains no EAGLE head") as raised:
        quantized.as_speculative_draft()
    assert "as_model_source()" in raised.value.fix
    eagle = job(new_stack(), techniques=[EAGLE])
    with pytest.raises(ValidationError, match="only the trained EAGLE head") as raised:
        eagle.as_model_source()
    assert "as_speculative_draft()" in raised.value.fix
    assert eagle.as_speculative_draft() is not None
