"""SageMaker optimization jobs run at deploy time, waited for as long as they take.

CloudFormation has no optimization-job resource, and a custom resource must answer within one
hour, while quantizing or compiling a large model takes hours. ``OptimizationJob`` therefore
splits the work across three resources and a Step Functions Standard workflow:

1. ``Custom::SageMakerOptimizationJob`` (a Lambda-backed custom resource, answers in seconds)
   creates the job and starts the poll workflow, then returns. Its physical id is the job name.
2. ``AWS::CloudFormation::WaitCondition`` (created after it) holds the deployment until its
   handle is signalled, for up to 12 hours (``Timeout`` at most 43,200 s): the job's max
   runtime plus a 30-minute margin for the job to start.
3. The Step Functions workflow loops Poll (Lambda: ``DescribeOptimizationJob``) -> Choice ->
   Wait (``poll_interval``) and, when the job has finished, signals the handle: SUCCESS, or
   FAILURE with SageMaker's ``FailureReason``, which CloudFormation shows as the wait
   condition's failure reason in the stack events. A job still running at the deadline is
   stopped and reported. If polling itself breaks, a catch signals FAILURE with the error.
4. ``Custom::SageMakerOptimizationJobOutput`` (created after the wait condition) describes the
   completed job and exposes its output location and recommended inference image as
   attributes, so models built from them are created only once the artifacts exist.

Why this design: Step Functions Standard workflows run for up to a year and their Wait states
cost nothing while waiting, so no Lambda ever runs longer than one poll; the wait condition is
CloudFormation's own way to wait longer than a custom resource may. The CDK ``Provider``
framework's ``is_complete_handler`` is capped at one hour in total, too short for these jobs.

Lifecycle:

- A wait condition cannot be updated, so the handle and the wait condition carry a hash of the
  synthesized job definition in their logical ids: a changed definition replaces both (a new
  handle) and updates the job resource, whose handler computes a new job name and starts a new
  job; CloudFormation then deletes the old physical id, which only stops a job still running.
  An unchanged definition changes nothing in the template, so nothing starts.
- Job names are ``<prefix>-<8 hex of the definition>-<6 hex of the handle URL>`` (at most 63
  characters). Duplicates of one CloudFormation event carry the same handle, hence the same
  name: ``CreateOptimizationJob`` answers ``ResourceInUse`` and the job is adopted, and the
  workflow execution (named after the job) is not started twice. A retry after a failed
  deployment gets a new handle, hence a new job, instead of adopting the failed one.
- Delete stops a job still running. Its artifacts are kept unless ``removal_policy`` is
  ``RemovalPolicy.DESTROY``, which deletes the objects under the job's output location.

A native ``AWS::SageMaker::OptimizationJob`` could later replace the three resources behind the
same construct API: ``output_s3_uri``, ``recommended_image_uri``, ``as_model_source()``,
``recommended_image()``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import jsii
from aws_cdk import (
    ArnFormat,
    CustomResource,
    Duration,
    IStableStringProducer,
    Lazy,
    Names,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec
from ..planning.placement import head_divisibility_problem
from ..prop_types import typed_props
from .deploy_time import (
    CUSTOM_RESOURCE_TIMEOUT,
    HandlerAsset,
    HandlerPlacement,
    SignalledWork,
    depend_on_policy_only,
    handler_function,
    logged_workflow,
    signalled_work,
)
from .execution_role import depend_on_role_policy
from .images import ContainerFamily, ContainerImage
from .images import _grant_pull as grant_pull
from .model import Model, merge_environment
from .model_source import BoundModelSource, ModelSource, ModelSourceKind
from .nag import acknowledge_key_grant, acknowledge_wildcard_resources
from .networking import place_in_vpc
from .validation import SAGEMAKER_NAME, ValidationError, check_range

HANDLER_ASSET = HandlerAsset(
    sources=(
        "lambdas/runtime_support.py",
        "lambdas/optimization_job/__init__.py",
        "lambdas/optimization_job/handler.py",
    ),
    entry_module="handler",
    entry_source='"""Lambda entry points of OptimizationJob."""\n\n'
    "from cdk_sagemaker_llm.lambdas.optimization_job.handler import on_event, poll\n\n"
    '__all__ = ["on_event", "poll"]\n',
)
"""The handlers: plain Python + boto3 (the runtime's), bundled without Docker."""

DEPLOYMENT_INSTANCE_TYPES: tuple[str, ...] = (
    "ml.p4d.24xlarge",
    "ml.p4de.24xlarge",
    "ml.p5.48xlarge",
    "ml.p5e.48xlarge",
    "ml.p5en.48xlarge",
    "ml.g4dn.xlarge",
    "ml.g4dn.2xlarge",
    "ml.g4dn.4xlarge",
    "ml.g4dn.8xlarge",
    "ml.g4dn.12xlarge",
    "ml.g4dn.16xlarge",
    "ml.g5.xlarge",
    "ml.g5.2xlarge",
    "ml.g5.4xlarge",
    "ml.g5.8xlarge",
    "ml.g5.12xlarge",
    "ml.g5.16xlarge",
    "ml.g5.24xlarge",
    "ml.g5.48xlarge",
    "ml.g6.xlarge",
    "ml.g6.2xlarge",
    "ml.g6.4xlarge",
    "ml.g6.8xlarge",
    "ml.g6.12xlarge",
    "ml.g6.16xlarge",
    "ml.g6.24xlarge",
    "ml.g6.48xlarge",
    "ml.g6e.xlarge",
    "ml.g6e.2xlarge",
    "ml.g6e.4xlarge",
    "ml.g6e.8xlarge",
    "ml.g6e.12xlarge",
    "ml.g6e.16xlarge",
    "ml.g6e.24xlarge",
    "ml.g6e.48xlarge",
    "ml.inf2.xlarge",
    "ml.inf2.8xlarge",
    "ml.inf2.24xlarge",
    "ml.inf2.48xlarge",
    "ml.trn1.2xlarge",
    "ml.trn1.32xlarge",
    "ml.trn1n.32xlarge",
    "ml.p6-b200.48xlarge",
    "ml.g7e.2xlarge",
    "ml.g7e.4xlarge",
    "ml.g7e.8xlarge",
    "ml.g7e.12xlarge",
    "ml.g7e.24xlarge",
    "ml.g7e.48xlarge",
    "ml.g7.2xlarge",
    "ml.g7.4xlarge",
    "ml.g7.8xlarge",
    "ml.g7.12xlarge",
    "ml.g7.24xlarge",
    "ml.g7.48xlarge",
)
"""``CreateOptimizationJob``'s ``DeploymentInstanceType`` enum (botocore 1.44.5)."""
NEURON_FAMILIES = ("inf2", "trn1", "trn1n")
"""Deployment instance families with AWS Inferentia / Trainium; every other one has GPUs."""

MAX_WAIT_SECONDS = 43_200
"""A CloudFormation wait condition's longest timeout (12 hours)."""
START_MARGIN = Duration.minutes(30)
"""Added to the max runtime for the wait: a job may queue before its runtime starts."""
SIGNAL_MARGIN = Duration.minutes(20)
"""The poller gives up this long before the wait condition times out, to report why. It is
longer than the worst case of a failing poll and its retries (5 attempts of at most 1 minute
each plus 150 s of backoff, then the failure report), so a reason always reaches
CloudFormation before the wait condition's own timeout."""
MAX_RUNTIME_SECONDS = MAX_WAIT_SECONDS - int(START_MARGIN.to_seconds())
DEFAULT_MAX_RUNTIME = Duration.hours(10)
"""The SageMaker Python SDK's default max runtime (36,000 s)."""
MAX_ENVIRONMENT = 25
MAX_CONFIGS = 10
DEFINITION_HASH_LENGTH = 8
HANDLE_HASH_LENGTH = 6
MAX_PREFIX_LENGTH = 63 - DEFINITION_HASH_LENGTH - HANDLE_HASH_LENGTH - 2
TENSOR_PARALLEL_VARIABLE = "OPTION_TENSOR_PARALLEL_DEGREE"


class TechniqueKind(Enum):
    """The optimization a technique applies (one ``OptimizationConfig`` each)."""

    QUANTIZATION = "ModelQuantizationConfig"
    COMPILATION = "ModelCompilationConfig"
    SHARDING = "ModelShardingConfig"
    SPECULATIVE_DECODING = "ModelSpeculativeDecodingConfig"


class QuantizationMethod(Enum):
    """Weight quantization methods of the optimization container (``OPTION_QUANTIZE``)."""

    AWQ = "awq"
    """Activation-aware weight quantization to INT4 (~4x smaller weights), NVIDIA GPUs."""
    FP8 = "fp8"
    """FP8 weights, NVIDIA GPUs (native on Ada and Hopper: g6, g6e, p5)."""


class CompilationTarget(Enum):
    """What a compilation produces ahead of time."""

    NEURON = "neuron"
    """Neuron artifacts for AWS Inferentia2 / Trainium (ml.inf2, ml.trn1)."""
    TENSORRT_LLM = "tensorrt-llm"
    """TensorRT-LLM engines for NVIDIA GPUs."""


@typed_props
@dataclass(frozen=True)
class OptimizationTechnique:
    """One technique of an optimization job; build it with the static factories."""

    kind: TechniqueKind
    """Which ``OptimizationConfig`` this renders."""
    environment: dict[str, str] = field(default_factory=dict)
    """The ``OverrideEnvironment`` of the optimization container."""
    image: ContainerImage | None = None
    """The optimization container; default SageMaker's for the technique."""
    quantization: QuantizationMethod | None = None
    """The quantization method, for quantization."""
    compilation_target: CompilationTarget | None = None
    """The compiler, for compilation."""
    training_data_bucket: s3.IBucket | None = None
    """Speculative decoding: the bucket of the EAGLE training data, if given."""
    training_data_key: str | None = None
    """Speculative decoding: the prefix or manifest key of the training data, if given."""
    training_data_is_manifest: bool = False
    """Speculative decoding: True when the key is a manifest file, not a prefix."""

    @staticmethod
    def quantization_of(
        method: QuantizationMethod = QuantizationMethod.AWQ,
        *,
        environment: Mapping[str, str] | None = None,
        image: ContainerImage | None = None,
    ) -> OptimizationTechnique:
        """Quantize the weights (``OPTION_QUANTIZE=<method>``); ``environment`` overrides
        other optimization-container variables (e.g. ``OPTION_TENSOR_PARALLEL_DEGREE``)."""
        rendered = merge_environment(
            {"OPTION_QUANTIZE": method.value}, environment, "quantization environment"
        )
        return OptimizationTechnique(
            TechniqueKind.QUANTIZATION, rendered, image, quantization=method
        )

    @staticmethod
    def compilation(
        target: CompilationTarget,
        *,
        environment: Mapping[str, str] | None = None,
        image: ContainerImage | None = None,
    ) -> OptimizationTechnique:
        """Compile ahead of time for Neuron or TensorRT-LLM; the artifacts are specific to
        the shapes, precision, tensor-parallel degree and batch size in ``environment``."""
        return OptimizationTechnique(
            TechniqueKind.COMPILATION, dict(environment or {}), image, compilation_target=target
        )

    @staticmethod
    def sharding(
        *,
        tensor_parallel_degree: int | None = None,
        environment: Mapping[str, str] | None = None,
        image: ContainerImage | None = None,
    ) -> OptimizationTechnique:
        """Pre-shard the weights for a tensor-parallel degree (``OPTION_TENSOR_PARALLEL_DEGREE``,
        from ``tensor_parallel_degree`` or ``environment``); not combinable with others."""
        rendered = (
            {TENSOR_PARALLEL_VARIABLE: str(tensor_parallel_degree)}
            if tensor_parallel_degree is not None
            else {}
        )
        return OptimizationTechnique(
            TechniqueKind.SHARDING,
            merge_environment(rendered, environment, "sharding environment"),
            image,
        )

    @staticmethod
    def speculative_decoding(
        *,
        training_data_bucket: s3.IBucket | None = None,
        training_data_key: str | None = None,
        manifest: bool = False,
    ) -> OptimizationTechnique:
        """Train an EAGLE draft head for the model; optionally on your own data (an S3 prefix
        ending in ``/``, or a manifest file with ``manifest=True``)."""
        if (training_data_bucket is None) != (training_data_key is None):
            raise ValidationError(
                "speculative_decoding(training_data_bucket/training_data_key)",
                (training_data_bucket, training_data_key),
                "training data needs both a bucket and a key",
                "pass both, or neither to use SageMaker's default data",
            )
        key = training_data_key
        if (
            key is not None
            and not Token.is_unresolved(key)
            and not manifest
            and not key.endswith("/")
        ):
            raise ValidationError(
                "speculative_decoding(training_data_key)",
                key,
                "an S3 prefix of training data must end with '/'",
                f"pass {key + '/'!r}, or manifest=True for a manifest file",
            )
        return OptimizationTechnique(
            TechniqueKind.SPECULATIVE_DECODING,
            training_data_bucket=training_data_bucket,
            training_data_key=key,
            training_data_is_manifest=manifest,
        )

    def render(self, scope: Construct, role: iam.IRole) -> dict[str, Any]:
        """The ``OptimizationConfig`` (API shape); grants ``role`` what the technique reads."""
        if self.kind is TechniqueKind.SPECULATIVE_DECODING:
            config: dict[str, Any] = {"Technique": "EAGLE"}
            if self.training_data_bucket is not None and self.training_data_key is not None:
                _grant_read(
                    role,
                    self.training_data_bucket,
                    self.training_data_key,
                    not self.training_data_is_manifest,
                )
                config["TrainingDataSource"] = {
                    "S3Uri": f"s3://{self.training_data_bucket.bucket_name}/{self.training_data_key}",
                    "S3DataType": "ManifestFile" if self.training_data_is_manifest else "S3Prefix",
                }
            return {self.kind.value: config}
        config = {}
        if self.image is not None:
            config["Image"] = self.image.bind(scope, role)
        if self.environment:
            config["OverrideEnvironment"] = dict(sorted(self.environment.items()))
        return {self.kind.value: config}


@typed_props
class OptimizationJob(Construct):
    """A SageMaker optimization job, run while the stack deploys and waited for up to 12 hours.

    The job reads the model from an S3 prefix (or a SageMaker model), applies ``techniques``
    for ``instance_type`` and writes the optimized model under ``output_prefix`` of
    ``output_bucket``, in a folder named after the job. Serve the result with
    ``job.as_model_source()`` and ``job.recommended_image()``::

        job = OptimizationJob(self, "Awq", source=ModelSource.from_s3(bucket, "llama-3-8b/"),
            instance_type=InstanceType.G5_12XLARGE,
            techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
            output_bucket=bucket)
        Model(self, "Optimized", image=job.recommended_image(), source=job.as_model_source())

    See the module documentation for how the wait works and what updates and deletes do.
    """

    def __init__(  # noqa: PLR0913 - known offender (issue 18 item 5): group the props
        self,
        scope: Construct,
        id: str,
        *,
        source: ModelSource | Model | str,
        instance_type: InstanceType,
        techniques: Sequence[OptimizationTechnique],
        output_bucket: s3.IBucket,
        output_prefix: str = "optimized/",
        output_kms_key: kms.IKey | None = None,
        role: iam.IRole | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        max_runtime: Duration = DEFAULT_MAX_RUNTIME,
        accept_eula: bool = False,
        environment: Mapping[str, str] | None = None,
        job_name_prefix: str | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        poll_interval: Duration = Duration.minutes(1),
        handler_placement: HandlerPlacement | None = None,
    ) -> None:
        """
        :param source: the model to optimize: ``ModelSource.from_s3`` (a prefix of
            uncompressed weights), a ``Model``, or the name of an existing SageMaker model.
        :param instance_type: the instance type the optimized model will be served on; one of
            the API's deployment instance types.
        :param techniques: 1-10 techniques, at most one of each kind; sharding stands alone.
        :param output_bucket: where the optimized model is written.
        :param output_prefix: the key prefix (ending in ``/``) under which each job writes to
            its own folder; default ``optimized/``.
        :param output_kms_key: encrypt the artifacts with this key; default the bucket's.
        :param role: the role the job runs as; default a new least-privilege role (reads
            exactly the source, writes exactly this job's output folders).
        :param vpc: run the job in this VPC; default none (SageMaker-managed network).
        :param vpc_subnets: subnets within ``vpc``; default the private subnets (1-16).
        :param security_groups: 1-5 security groups; default one new group, no inbound rules.
        :param max_runtime: stop the job after this long; 1 s to 11.5 h (the deployment waits
            30 minutes longer, within CloudFormation's 12 hours); default 10 hours.
        :param accept_eula: accept the model's end-user license (gated JumpStart models in
            S3); default False.
        :param environment: variables of the optimization container for every technique
            (at most 25); default none.
        :param job_name_prefix: job names start with this (1-47 of [a-z0-9-]); default derived
            from the construct path. The handlers may act only on jobs with this prefix.
        :param removal_policy: what deleting the resource does to the artifacts: RETAIN
            (default) keeps them, DESTROY deletes this job's output folder. A running job is
            always stopped.
        :param handler_placement: VPC and log encryption of the handler Lambdas and the
            workflow; default Lambda's own network and CloudWatch Logs' encryption.
        :param poll_interval: how often the workflow checks the job (10 s to 10 min); default
            1 minute.
        """
        super().__init__(scope, id)
        self._placement = handler_placement or HandlerPlacement()
        self.instance_type = instance_type
        """The instance type the optimized model is for."""
        self.techniques = list(techniques)
        """The techniques applied, in order."""
        max_runtime_seconds = _check_job(
            instance_type, self.techniques, max_runtime, poll_interval, environment, output_prefix
        )
        _check_sharding_heads(self.techniques, _source_spec(source))
        self.job_name_prefix = self._job_name_prefix(job_name_prefix)
        """Every job of this construct is named ``<prefix>-<definition hash>-<handle hash>``."""
        self.output_bucket = output_bucket
        """The bucket the artifacts are written to."""
        self.output_kms_key = output_kms_key
        """The key encrypting the artifacts, if given."""
        self.role: iam.IRole = role or _create_job_role(self)
        """The role the job runs as."""

        request = self._request(
            source, accept_eula, environment, max_runtime_seconds, vpc, vpc_subnets, security_groups
        )
        location_stem = f"s3://{output_bucket.bucket_name}/{output_prefix}"
        self.definition_hash = self._definition_hash(request, location_stem)
        """A hash of the synthesized job definition: a new one starts a new job."""
        name_stem = f"{self.job_name_prefix}-{self.definition_hash}"
        self._grant_job_output(output_prefix + name_stem)

        wait_seconds = min(MAX_WAIT_SECONDS, max_runtime_seconds + int(START_MARGIN.to_seconds()))
        self.wait_timeout = Duration.seconds(wait_seconds)
        """How long the deployment waits for the job."""
        job_arns = Stack.of(self).format_arn(
            service="sagemaker",
            resource="optimization-job",
            resource_name=f"{self.job_name_prefix}*",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        code = HANDLER_ASSET.code()
        poller = self._poller(code, job_arns)
        self.state_machine = self._state_machine(poller, poll_interval, self.wait_timeout)
        """The Step Functions workflow that polls the job and signals the wait condition."""
        handler = self._handler(code, job_arns)
        if removal_policy is RemovalPolicy.DESTROY:
            _grant_delete(handler, output_bucket, output_prefix + name_stem)

        work = self._job_resource(
            handler, request, name_stem, location_stem, wait_seconds, removal_policy
        )
        self._job = work.resource
        depend_on_role_policy(self._job, self.role)
        self.wait_condition = work.wait_condition
        """Holds the deployment until the job has completed (or fails it)."""

        self._requires_image = False
        self._output = self._output_resource(handler)
        for construct, function_role in (
            (poller, poller.role),
            (handler, handler.role),
            (self.state_machine, self.state_machine.role),
        ):
            depend_on_policy_only(construct, function_role)
        self._acknowledge_findings(job_arns)
        self._expose_attributes()

    def _expose_attributes(self) -> None:
        """The job's and its output's attributes (tokens resolved at deploy time)."""
        self.job_name: str = self._job.ref
        """The job name (known at deploy time)."""
        self.job_arn: str = self._job.get_att_string("JobArn")
        """The job ARN."""
        self.output_s3_uri: str = self._output.get_att_string("OutputS3Uri")
        """``s3://bucket/<output_prefix><job name>/``, available once the job has completed."""
        self.output_key_prefix: str = self._output.get_att_string("OutputPrefix")
        """The artifacts' key prefix in ``output_bucket`` (ends in ``/``)."""
        self.recommended_image_uri: str = self._output.get_att_string("RecommendedInferenceImage")
        """The inference image SageMaker recommends for the optimized model."""

    # ----- consuming the output --------------------------------------------------------------

    def as_model_source(self) -> ModelSource:
        """The optimized model as ``ModelSource.from_s3`` of the job's output folder.

        Its prefix is a deploy-time attribute of the completed job, so a model built from it
        is created after the job has completed; the model's role is granted read on exactly
        that folder (and decrypt on ``output_kms_key``).
        """
        return _OptimizedModelSource(
            self.output_bucket, self.output_key_prefix, self.output_kms_key
        )

    def recommended_image(self, family: ContainerFamily | None = None) -> ContainerImage:
        """The inference image SageMaker recommends for the optimized model.

        :param family: the serving stack in that image, for the typed serving options and the
            instance checks; default LMI (LMI with TensorRT-LLM or Transformers-NeuronX after a
            TensorRT-LLM or Neuron compilation).
        """
        self._requires_image = True
        return _RecommendedImage(
            family or self._default_family(),
            self.recommended_image_uri,
            self._output.get_att_string("RecommendedImageRepositoryArn"),
        )

    def grant_read_output(self, grantee: iam.IGrantable) -> None:
        """Allow ``grantee`` to read every artifact of this job."""
        _grant_read(grantee, self.output_bucket, self.output_key_prefix, True)
        if self.output_kms_key is not None:
            self.output_kms_key.grant_decrypt(grantee)

    # ----- building the job --------------------------------------------------------------------

    def _job_name_prefix(self, given: str | None) -> str:
        """The given prefix, or one derived from the construct path; checked."""
        prefix = given or Names.unique_resource_name(
            self, max_length=MAX_PREFIX_LENGTH, separator="-"
        ).lower().strip("-")
        _check_job_name_prefix(prefix)
        return prefix

    def _request(
        self,
        source: ModelSource | Model | str,
        accept_eula: bool,
        environment: Mapping[str, str] | None,
        max_runtime_seconds: int,
        vpc: ec2.IVpc | None,
        vpc_subnets: ec2.SubnetSelection | None,
        security_groups: Sequence[ec2.ISecurityGroup] | None,
    ) -> dict[str, Any]:
        """The ``CreateOptimizationJob`` request (all but the job name), granting the role
        what it reads and placing the job in the VPC if one is given."""
        request: dict[str, Any] = {
            "RoleArn": self.role.role_arn,
            "ModelSource": self._render_source(source, accept_eula),
            "DeploymentInstanceType": self.instance_type.name,
            "OptimizationConfigs": [t.render(self, self.role) for t in self.techniques],
            "OutputConfig": {"KmsKeyId": self.output_kms_key.key_arn}
            if self.output_kms_key
            else {},
            "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime_seconds},
        }
        if environment:
            request["OptimizationEnvironment"] = dict(sorted(environment.items()))
        network = place_in_vpc(
            self, vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups, role=self.role
        )
        if network is not None:
            _check_count("security_groups", network.security_group_ids, 5)
            _check_count("vpc_subnets", network.subnet_ids, 16)
            request["VpcConfig"] = {
                "SecurityGroupIds": network.security_group_ids,
                "Subnets": network.subnet_ids,
            }
        return request

    def _definition_hash(self, request: Mapping[str, Any], location_stem: str) -> str:
        """A hash of everything that defines the job: a change starts a new job."""
        definition = Stack.of(self).resolve(
            {"Request": request, "Output": location_stem, "Prefix": self.job_name_prefix}
        )
        return hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()[
            :DEFINITION_HASH_LENGTH
        ]

    def _poller(self, code: lambda_.Code, job_arns: str) -> lambda_.Function:
        """The Lambda function the workflow runs: describes the job, stops it on timeout."""
        poller = handler_function(
            self,
            "Poller",
            placement=self._placement,
            code=code,
            handler="handler.poll",
            timeout=Duration.minutes(1),
            description="Polls the optimization job and signals the CloudFormation wait condition",
        )
        poller.add_to_role_policy(
            iam.PolicyStatement(
                actions=["sagemaker:DescribeOptimizationJob", "sagemaker:StopOptimizationJob"],
                resources=[job_arns],
            )
        )
        return poller

    def _handler(self, code: lambda_.Code, job_arns: str) -> lambda_.Function:
        """The custom-resource handler: starts, adopts and stops jobs, passing the job role
        and starting the polling workflow."""
        handler = handler_function(
            self,
            "Handler",
            placement=self._placement,
            code=code,
            handler="handler.on_event",
            timeout=Duration.minutes(2),
            description="Starts, adopts and stops the optimization job (CloudFormation custom "
            "resource)",
        )
        handler.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "sagemaker:CreateOptimizationJob",
                    "sagemaker:DescribeOptimizationJob",
                    "sagemaker:StopOptimizationJob",
                ],
                resources=[job_arns],
            )
        )
        handler.add_to_role_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[self.role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
            )
        )
        self.state_machine.grant_start_execution(handler)
        return handler

    def _job_resource(
        self,
        handler: lambda_.IFunction,
        request: Mapping[str, Any],
        name_stem: str,
        location_stem: str,
        wait_seconds: int,
        removal_policy: RemovalPolicy,
    ) -> SignalledWork:
        """The custom resource that starts the job, and the wait condition the workflow
        signals when it has completed."""
        return signalled_work(
            self,
            definition_hash=self.definition_hash,
            handler=handler,
            resource_type="Custom::SageMakerOptimizationJob",
            properties={
                "JobNamePrefix": self.job_name_prefix,
                "JobNameStem": name_stem,
                "Request": request,
                "OutputLocationStem": location_stem,
                "WaitSeconds": str(wait_seconds - int(SIGNAL_MARGIN.to_seconds())),
                "StateMachineArn": self.state_machine.state_machine_arn,
                "RemovalPolicy": "destroy" if removal_policy is RemovalPolicy.DESTROY else "retain",
            },
            wait_seconds=wait_seconds,
        )

    def _output_resource(self, handler: lambda_.IFunction) -> CustomResource:
        """The completed job's output (location, recommended image), read after the wait."""
        output = CustomResource(
            self,
            "Output",
            service_token=handler.function_arn,
            resource_type="Custom::SageMakerOptimizationJobOutput",
            service_timeout=CUSTOM_RESOURCE_TIMEOUT,
            properties={
                "JobName": self._job.ref,
                "RequireRecommendedImage": Lazy.string(_ImageRequired(self)),
            },
        )
        output.node.add_dependency(self.wait_condition)
        return output

    # ----- internals -------------------------------------------------------------------------

    def _acknowledge_findings(self, job_arns: str) -> None:
        """The cdk-nag (AwsSolutions) findings this construct cannot avoid, with reasons."""
        for function in self.node.children:
            if isinstance(function, lambda_.Function):
                assert function.role is not None
                acknowledge_wildcard_resources(
                    function.role,
                    [job_arns],
                    "Job names are <prefix>-<definition hash>-<handle hash>, known only at "
                    "deploy time; the handlers act only on jobs with this construct's prefix.",
                )

    def _default_family(self) -> ContainerFamily:
        for technique in self.techniques:
            if technique.compilation_target is CompilationTarget.NEURON:
                return ContainerFamily.LMI_NEURONX
            if technique.compilation_target is CompilationTarget.TENSORRT_LLM:
                return ContainerFamily.LMI_TENSORRT_LLM
        return ContainerFamily.LMI

    def _render_source(
        self, source: ModelSource | Model | str, accept_eula: bool
    ) -> dict[str, Any]:
        if isinstance(source, ModelSource):
            if source.kind is not ModelSourceKind.S3_PREFIX:
                raise ValidationError(
                    "source",
                    source.model_id or source.s3_uri,
                    "an optimization job reads uncompressed weights under an S3 prefix (or a "
                    "SageMaker model), not a Hugging Face id or a .tar.gz archive",
                    "copy the weights to S3 and pass ModelSource.from_s3(bucket, 'prefix/')",
                )
            source.bind(self.role)
            assert source.bucket is not None and source.key is not None
            _acknowledge_prefix(self.role, source.bucket, source.key)
            s3_source: dict[str, Any] = {"S3Uri": source.s3_uri}
            if accept_eula:
                s3_source["ModelAccessConfig"] = {"AcceptEula": True}
            return {"S3": s3_source}
        if accept_eula:
            raise ValidationError(
                "accept_eula",
                True,
                "the EULA acceptance applies to a model read from S3, not to a SageMaker model",
                "drop accept_eula, or optimize the model's S3 weights (ModelSource.from_s3)",
            )
        if isinstance(source, Model):
            inner = source.source
            if inner is not None and inner.kind is not ModelSourceKind.HUGGING_FACE:
                inner.bind(self.role)
                if inner.kind is ModelSourceKind.S3_PREFIX:
                    assert inner.bucket is not None and inner.key is not None
                    _acknowledge_prefix(self.role, inner.bucket, inner.key)
            return {"SageMakerModel": {"ModelName": source.model_name}}
        if not Token.is_unresolved(source) and not SAGEMAKER_NAME.match(source or ""):
            raise ValidationError(
                "source",
                source,
                "not a SageMaker model name",
                "pass ModelSource.from_s3(...), a Model, or an existing model's name",
            )
        return {"SageMakerModel": {"ModelName": source}}

    def _grant_job_output(self, key_stem: str) -> None:
        """Write (and read back) exactly this construct's job folders in the output bucket."""
        iam.Grant.add_to_principal(
            grantee=self.role,
            actions=[
                "s3:PutObject",
                "s3:GetObject",
                "s3:AbortMultipartUpload",
                "s3:ListMultipartUploadParts",
            ],
            resource_arns=[self.output_bucket.arn_for_objects(key_stem + "*")],
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.output_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [key_stem + "*"]}},
            )
        )
        _acknowledge_prefix(self.role, self.output_bucket, key_stem)
        key = self.output_kms_key or self.output_bucket.encryption_key
        if key is not None:
            key.grant_encrypt_decrypt(self.role)
            acknowledge_key_grant(
                self.role,
                "Key.grant_encrypt_decrypt's action families on exactly the output key: the "
                "job writes (and reads back) its SSE-KMS artifacts",
            )

    def _state_machine(
        self, poller: lambda_.IFunction, interval: Duration, timeout: Duration
    ) -> sfn.StateMachine:
        poll = tasks.LambdaInvoke(
            self,
            "Poll",
            lambda_function=poller,
            payload_response_only=True,
            retry_on_service_exceptions=True,
        )
        poll.add_retry(
            errors=["States.TaskFailed", "States.Timeout"],
            interval=Duration.seconds(10),
            max_attempts=4,
            backoff_rate=2,
            jitter_strategy=sfn.JitterType.FULL,
        )
        report = tasks.LambdaInvoke(
            self,
            "ReportFailure",
            lambda_function=poller,
            payload_response_only=True,
            retry_on_service_exceptions=True,
        ).next(sfn.Fail(self, "PollingFailed", error="PollingFailed"))
        poll.add_catch(report, errors=["States.ALL"], result_path="$.Error")
        wait = sfn.Wait(self, "WaitForJob", time=sfn.WaitTime.duration(interval))
        finished = (
            sfn.Choice(self, "Finished")
            .when(sfn.Condition.boolean_equals("$.Done", True), sfn.Succeed(self, "Signalled"))
            .otherwise(wait.next(poll))
        )
        return logged_workflow(
            self,
            definition=poll.next(finished),
            timeout=timeout,
            log_encryption_key=self._placement.log_encryption_key,
            invoked=[poller],
            summary="The workflow is a poll loop of one Lambda task",
        )


# ----- outputs as serving inputs -----------------------------------------------------------------


@jsii.implements(IStableStringProducer)
class _ImageRequired:
    """``"true"`` once ``recommended_image()`` has been called, resolved at synth."""

    def __init__(self, job: OptimizationJob) -> None:
        self._job = job

    def produce(self) -> str:
        return "true" if self._job._requires_image else "false"


class _OptimizedModelSource(ModelSource):
    """The job's output folder; also grants decrypt on the output key."""

    def __init__(self, bucket: s3.IBucket, prefix: str, key: kms.IKey | None) -> None:
        super().__init__(ModelSourceKind.S3_PREFIX, bucket=bucket, key=prefix)
        self._kms_key = key

    def bind(self, role: iam.IRole | None) -> BoundModelSource:
        bound = super().bind(role)
        if role is not None:
            assert self.bucket is not None
            acknowledge_wildcard_resources(
                role,
                [self.bucket.arn_for_objects(f"{self.key}*")],
                "Reads the objects under exactly one optimization job's output folder.",
            )
            if self._kms_key is not None:
                self._kms_key.grant_decrypt(role)
        return bound


class _RecommendedImage(ContainerImage):
    """An image known at deploy time; pulls are granted on exactly its repository."""

    def __init__(self, family: ContainerFamily, uri: str, repository_arn: str) -> None:
        super().__init__(family=family, repository_name="", tag="", uri=uri)
        self._repository_arn = repository_arn

    def bind(self, scope: Construct, role: iam.IRole | None) -> str:
        uri = super().bind(scope, role)
        if role is not None:
            grant_pull(role, self._repository_arn)
        return uri


# ----- roles and grants --------------------------------------------------------------------------


def _create_job_role(scope: Construct) -> iam.Role:
    role = iam.Role(
        scope,
        "JobRole",
        assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
        description=f"SageMaker optimization job role of {scope.node.path}",
    )
    log_groups = Stack.of(scope).format_arn(
        service="logs",
        resource="log-group",
        resource_name="/aws/sagemaker/OptimizationJobs*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[log_groups],
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}},
        )
    )
    acknowledge_wildcard_resources(
        role,
        [log_groups, "*"],
        "SageMaker names the job's log streams after the job, known only at deploy time; "
        "PutMetricData supports no resource scoping and is limited to SageMaker namespaces.",
    )
    return role


def _grant_read(grantee: iam.IGrantable, bucket: s3.IBucket, key: str, is_prefix: bool) -> None:
    pattern = key + "*" if is_prefix else key
    iam.Grant.add_to_principal(
        grantee=grantee, actions=["s3:GetObject"], resource_arns=[bucket.arn_for_objects(pattern)]
    )
    if is_prefix:
        _acknowledge_prefix(grantee, bucket, key)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [pattern]}},
            )
        )
    if bucket.encryption_key is not None:
        bucket.encryption_key.grant_decrypt(grantee)


def _acknowledge_prefix(grantee: iam.IGrantable, bucket: s3.IBucket, key: str) -> None:
    """Acknowledge the wildcard of an exact-prefix S3 grant on the grantee's role."""
    principal = grantee.grant_principal
    if isinstance(principal, Construct):
        acknowledge_wildcard_resources(
            principal,
            [bucket.arn_for_objects(f"{key}*")],
            "Objects under exactly one S3 prefix (a model's weights, a job's output folders).",
        )


def _grant_delete(grantee: iam.IGrantable, bucket: s3.IBucket, key_stem: str) -> None:
    iam.Grant.add_to_principal(
        grantee=grantee,
        actions=["s3:DeleteObject"],
        resource_arns=[bucket.arn_for_objects(key_stem + "*")],
    )
    _acknowledge_prefix(grantee, bucket, key_stem)
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [key_stem + "*"]}},
        )
    )


# ----- synth-time checks -------------------------------------------------------------------------


def is_neuron_deployment(instance_type: InstanceType) -> bool:
    """True for Inferentia / Trainium deployment types; the API's others all have GPUs."""
    return instance_type.family in NEURON_FAMILIES


def _check_job(
    instance_type: InstanceType,
    techniques: list[OptimizationTechnique],
    max_runtime: Duration,
    poll_interval: Duration,
    environment: Mapping[str, str] | None,
    output_prefix: str,
) -> int:
    """Check the job's props; the maximum runtime in seconds."""
    _check_instance_type(instance_type)
    _check_techniques(techniques, instance_type)
    max_runtime_seconds = int(max_runtime.to_seconds())
    check_range(
        "max_runtime (seconds)",
        max_runtime_seconds,
        minimum=1,
        maximum=MAX_RUNTIME_SECONDS,
        fix=f"set max_runtime between 1 second and {MAX_RUNTIME_SECONDS // 60} minutes (the "
        "deployment waits 30 minutes longer, and CloudFormation waits at most 12 hours)",
    )
    check_range("poll_interval (seconds)", int(poll_interval.to_seconds()), minimum=10, maximum=600)
    _check_environment("environment", environment)
    _check_prefix("output_prefix", output_prefix)
    return max_runtime_seconds


def _check_instance_type(instance_type: InstanceType) -> None:
    if instance_type.name not in DEPLOYMENT_INSTANCE_TYPES:
        raise ValidationError(
            "instance_type",
            instance_type.name,
            "optimization jobs support only the API's deployment instance types (GPU: p4d, "
            "p4de, p5, p5e, p5en, p6-b200, g4dn, g5, g6, g6e, g7, g7e; Neuron: inf2, trn1, trn1n)",
            "pick the instance type you will serve on from that list, e.g. ml.g5.12xlarge",
        )


def _check_techniques(techniques: list[OptimizationTechnique], instance_type: InstanceType) -> None:
    if not 1 <= len(techniques) <= MAX_CONFIGS:
        raise ValidationError(
            "techniques",
            len(techniques),
            f"an optimization job applies 1 to {MAX_CONFIGS} techniques",
            "pass at least one OptimizationTechnique",
        )
    kinds = [t.kind for t in techniques]
    for kind in set(kinds):
        if kinds.count(kind) > 1:
            raise ValidationError(
                "techniques",
                [k.name for k in kinds],
                f"{kind.name} is given {kinds.count(kind)} times",
                "give each kind of technique once",
            )
    if TechniqueKind.SHARDING in kinds and len(kinds) > 1:
        raise ValidationError(
            "techniques",
            [k.name for k in kinds],
            "sharding cannot be combined with other techniques",
            "run sharding in a job of its own",
        )
    neuron = is_neuron_deployment(instance_type)
    for index, technique in enumerate(techniques):
        prop = f"techniques[{index}]"
        _check_environment(f"{prop}.environment", technique.environment)
        target = technique.compilation_target
        if target is CompilationTarget.NEURON and not neuron:
            raise ValidationError(
                "instance_type",
                instance_type.name,
                "Neuron compilation targets AWS Inferentia2 / Trainium",
                "use an ml.inf2.* or ml.trn1.* instance type, or compile with "
                "CompilationTarget.TENSORRT_LLM for GPUs",
            )
        if target is CompilationTarget.TENSORRT_LLM and neuron:
            raise ValidationError(
                "instance_type",
                instance_type.name,
                "TensorRT-LLM compilation targets NVIDIA GPUs",
                "use a GPU instance type, or compile with CompilationTarget.NEURON",
            )
        if technique.kind is TechniqueKind.QUANTIZATION and neuron:
            method = technique.quantization.name if technique.quantization else "quantization"
            raise ValidationError(
                "instance_type",
                instance_type.name,
                f"{method} quantization produces GPU weights, which Inferentia/Trainium "
                "cannot serve",
                "use a GPU instance type (ml.g5, ml.g6, ml.g6e, ml.p4d, ml.p5), or Neuron "
                "compilation for Inferentia/Trainium",
            )
        if technique.kind is TechniqueKind.SPECULATIVE_DECODING and neuron:
            raise ValidationError(
                "instance_type",
                instance_type.name,
                "EAGLE speculative decoding runs on NVIDIA GPUs",
                "use a GPU instance type",
            )
        if technique.kind is TechniqueKind.SHARDING:
            _check_tensor_parallel(prop, technique, instance_type)


def _check_tensor_parallel(
    prop: str, technique: OptimizationTechnique, instance_type: InstanceType
) -> None:
    degree = technique.environment.get(TENSOR_PARALLEL_VARIABLE)
    if degree is None:
        raise ValidationError(
            f"{prop}.environment",
            technique.environment,
            f"sharding needs a tensor-parallel degree ({TENSOR_PARALLEL_VARIABLE})",
            "pass OptimizationTechnique.sharding(tensor_parallel_degree=N)",
        )
    if Token.is_unresolved(degree):
        return
    if not degree.isdigit() or int(degree) < 1:
        raise ValidationError(
            f"{prop}.{TENSOR_PARALLEL_VARIABLE}",
            degree,
            "the tensor-parallel degree is a positive whole number",
            "pass e.g. tensor_parallel_degree=4",
        )
    gpus = instance_type.accelerator_count
    if instance_type.is_gpu and gpus is not None and int(degree) > gpus:
        raise ValidationError(
            f"{prop}.{TENSOR_PARALLEL_VARIABLE}",
            int(degree),
            f"{instance_type.name} has {gpus} GPUs to shard over",
            f"shard over at most {gpus} GPUs, or use a larger instance type",
        )
    if instance_type.is_gpu and gpus is not None and gpus % int(degree):
        # A copy sharded over a degree that does not divide the GPUs leaves GPUs no copy can
        # use; the serving containers take degrees that divide the instance's GPUs.
        divisors = [d for d in range(1, gpus + 1) if gpus % d == 0]
        raise ValidationError(
            f"{prop}.{TENSOR_PARALLEL_VARIABLE}",
            int(degree),
            f"{degree} does not divide the {gpus} GPUs of {instance_type.name}",
            f"shard over one of {divisors}",
        )


def _source_spec(source: ModelSource | Model | str) -> ModelSpec | None:
    """The architecture of the model to optimize, when the library knows it."""
    if isinstance(source, Model):
        return source.spec or ModelSpec.from_hugging_face_id(_model_id(source.source))
    if isinstance(source, ModelSource):
        return ModelSpec.from_hugging_face_id(_model_id(source))
    return None if Token.is_unresolved(source) else ModelSpec.from_hugging_face_id(source)


def _model_id(source: ModelSource | None) -> str | None:
    return source.model_id if source is not None and source.model_id else None


def _check_sharding_heads(techniques: list[OptimizationTechnique], spec: ModelSpec | None) -> None:
    """A sharding degree must split the model's attention heads (and its KV heads, or
    replicate them) evenly over the GPUs (``planning.placement.head_divisibility_problem``,
    vLLM's rule); unknown architectures pass."""
    for index, technique in enumerate(techniques):
        degree = technique.environment.get(TENSOR_PARALLEL_VARIABLE)
        if technique.kind is not TechniqueKind.SHARDING or spec is None or degree is None:
            continue
        if Token.is_unresolved(degree) or not degree.isdigit() or int(degree) < 1:
            continue
        problem = head_divisibility_problem(spec, int(degree))
        if problem is not None:
            fitting = [d for d in (1, 2, 4, 8, 16) if head_divisibility_problem(spec, d) is None]
            raise ValidationError(
                f"techniques[{index}].{TENSOR_PARALLEL_VARIABLE}",
                int(degree),
                f"{spec.name}: {problem}",
                f"shard over a degree that divides the heads, e.g. one of {fitting}",
            )


def _check_environment(prop: str, environment: Mapping[str, str] | None) -> None:
    if environment and len(environment) > MAX_ENVIRONMENT:
        raise ValidationError(
            prop,
            len(environment),
            f"the API takes at most {MAX_ENVIRONMENT} variables",
            "drop variables the optimization container does not need",
        )


def _check_prefix(prop: str, prefix: str) -> None:
    if Token.is_unresolved(prefix):
        return
    if prefix.startswith("/") or (prefix and not prefix.endswith("/")):
        raise ValidationError(
            prop,
            prefix,
            "an S3 key prefix must end with '/' and not start with '/'",
            f"pass {prefix.strip('/') + '/'!r}",
        )


def _check_job_name_prefix(prefix: str) -> None:
    if Token.is_unresolved(prefix) or (
        0 < len(prefix) <= MAX_PREFIX_LENGTH
        and SAGEMAKER_NAME.match(prefix)
        and prefix == prefix.lower()
    ):
        return
    raise ValidationError(
        "job_name_prefix",
        prefix,
        f"job names are <prefix>-<definition hash>-<handle hash> within SageMaker's 63 "
        f"characters, so the prefix is 1-{MAX_PREFIX_LENGTH} lowercase letters, digits or "
        "hyphens, starting and ending with a letter or digit",
        "shorten the prefix or replace other characters with hyphens",
    )


def _check_count(prop: str, values: Sequence[str], maximum: int) -> None:
    if not Token.is_unresolved(values) and not 1 <= len(values) <= maximum:
        raise ValidationError(
            prop,
            len(values),
            f"an optimization job takes 1 to {maximum}",
            f"select between 1 and {maximum}",
        )
