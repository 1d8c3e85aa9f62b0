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
- Delete stops a job still running. Its artifacts are kept unless the output's
  ``removal_policy`` is ``RemovalPolicy.DESTROY``, which deletes the objects under the job's
  output location once the job has ended: ``StopOptimizationJob`` leaves it ``STOPPING``, and
  a stopping job may still write there, so the handler first waits (up to its
  ``HANDLER_TIMEOUT``) until ``DescribeOptimizationJob`` reports it ``STOPPED``. A job still
  stopping when that time runs out fails the Delete, artifacts kept, with a reason that says
  so; retrying the delete (or the rollback) once it has stopped deletes them.

A native ``AWS::SageMaker::OptimizationJob`` could later replace the three resources behind the
same construct API: ``output_s3_uri``, ``recommended_image_uri``, ``as_model_source()``,
``recommended_image()``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import (
    ArnFormat,
    CustomResource,
    Duration,
    IStableStringProducer,
    Lazy,
    Names,
    Stack,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..catalog.containers import HUB_TOKEN_VARIABLE
from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import ModelSpec
from ..prop_types import typed_props
from ..template_metadata import OPTIMIZATION_JOB_OUTPUT_RESOURCE, OPTIMIZATION_JOB_RESOURCE
from .deploy_time import (
    CUSTOM_RESOURCE_TIMEOUT,
    HandlerAsset,
    HandlerPlacement,
    SignalledWork,
    depend_on_policy_only,
    handler_function,
    signalled_work,
)
from .execution_role import check_grants_land, depend_on_role_policy
from .images import ContainerFamily, ContainerImage
from .images import _grant_pull as grant_pull
from .model import Model
from .model_source import BoundModelSource, ModelSource, ModelSourceKind
from .nag import acknowledge_wildcard_resources, own_role
from .optimization_options import (
    DEFINITION_HASH_LENGTH,
    HANDLE_HASH_LENGTH,
    MAX_PREFIX_LENGTH,
    SIGNAL_MARGIN,
    OptimizationOutput,
    OptimizationRun,
    OptimizationSecurity,
    check_job_name_prefix,
)
from .optimization_techniques import (
    TENSOR_PARALLEL_VARIABLE,
    CompilationTarget,
    OptimizationTechnique,
    TechniqueKind,
    check_degree_fits,
    check_environment,
    check_instance_type,
    check_sharding_heads,
    check_techniques,
)
from .s3_prefix_grants import acknowledge_prefix
from .speculative_decoding import DraftModelKind, SpeculativeDecoding
from .validation import SAGEMAKER_NAME, SAGEMAKER_NAME_MAX_LENGTH, ValidationError, is_unresolved
from .workflow_loop import cdk_retried_task, signalling_loop

HANDLER_TIMEOUT = Duration.minutes(4)
"""The custom-resource handler's Lambda timeout. Less than ``CUSTOM_RESOURCE_TIMEOUT`` (how long
CloudFormation waits for the answer), so the handler always answers itself, FAILED with its
reason if need be; most of it is for a Delete under ``RemovalPolicy.DESTROY`` that waits for a
stopping job to end before deleting its artifacts (Create and Update take seconds)."""

HANDLER_ASSET = HandlerAsset(
    sources=(
        "template_metadata.py",
        "lambdas/runtime_support.py",
        "lambdas/event_checks.py",
        "lambdas/job_poll.py",
        "lambdas/optimization_job",
    ),
    entry_module="handler",
    entry_source='"""Lambda entry points of OptimizationJob."""\n\n'
    "from cdk_sagemaker_llm.lambdas.optimization_job.handler import on_event, poll\n\n"
    '__all__ = ["on_event", "poll"]\n',
)

POLL_RETRY = sfn.RetryProps(
    errors=["States.TaskFailed", "States.Timeout"],
    interval=Duration.seconds(10),
    max_attempts=4,
    backoff_rate=2,
    jitter_strategy=sfn.JitterType.FULL,
)
"""A failing poll is retried 4 times from 10 s, doubling, with full jitter (Step Functions
developer guide, "Handling errors in Step Functions workflows"), before it reports failure."""


@typed_props
class OptimizationJob(Construct):
    """A SageMaker optimization job, run while the stack deploys and waited for up to 12 hours.

    The job reads the model from an S3 prefix (or a SageMaker model), applies ``techniques``
    for ``instance_type`` and writes the optimized model to ``output``, in a folder named after
    the job. Serve the result with ``job.as_model_source()`` and ``job.recommended_image()``::

        job = OptimizationJob(self, "Awq", source=ModelSource.from_s3(bucket, "llama-3-8b/"),
            instance_type=InstanceType.G5_12XLARGE,
            techniques=[OptimizationTechnique.quantization_of(QuantizationMethod.AWQ)],
            output=OptimizationOutput.in_bucket(bucket))
        Model(self, "Optimized", image=job.recommended_image(), source=job.as_model_source())

    See the module documentation for how the wait works and what updates and deletes do.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        source: ModelSource | Model | str,
        instance_type: InstanceType,
        techniques: Sequence[OptimizationTechnique],
        output: OptimizationOutput,
        environment: Mapping[str, str] | None = None,
        accept_eula: bool = False,
        run: OptimizationRun | None = None,
        security: OptimizationSecurity | None = None,
        handler_placement: HandlerPlacement | None = None,
    ) -> None:
        """
        :param source: the model to optimize: ``ModelSource.from_s3`` (a prefix of
            uncompressed weights), a ``Model``, or the name of an existing SageMaker model.
        :param instance_type: the instance type the optimized model will be served on; one of
            the API's deployment instance types.
        :param techniques: 1-10 techniques, at most one of each kind; sharding stands alone.
        :param output: where the optimized model is written, its encryption, and whether
            deleting the job deletes it: ``OptimizationOutput.in_bucket(bucket, ...)``.
        :param environment: variables of the optimization container for every technique
            (at most 25); default none.
        :param accept_eula: accept the model's end-user license (gated JumpStart models in
            S3); default False.
        :param run: the max runtime, the poll interval and the job name prefix
            (``OptimizationRun``); default 10 hours, 1 minute, derived from the construct path.
        :param security: the job's role and network: ``OptimizationSecurity.in_vpc(...)`` or
            ``.managed_network(...)``; default a new least-privilege role in SageMaker's
            managed network.
        :param handler_placement: VPC and log encryption of the handler Lambdas and the
            workflow; default Lambda's own network and CloudWatch Logs' encryption.
        """
        super().__init__(scope, id)
        self._placement = handler_placement or HandlerPlacement()
        run = run or OptimizationRun()
        security = security or OptimizationSecurity.managed_network()
        self.instance_type = instance_type
        """The instance type the optimized model is for."""
        self.techniques = list(techniques)
        """The techniques applied, in order."""
        self.output = output
        """Where the artifacts are written, and what deleting the job does to them."""
        self.output_bucket = output.bucket
        """The bucket the artifacts are written to."""
        self.output_kms_key = output.encryption_key
        """The key encrypting the artifacts, if given."""
        self._check_job(source, environment)
        self.job_name_prefix = self._job_name_prefix(run.job_name_prefix)
        """Every job of this construct is named ``<prefix>-<definition hash>-<handle hash>``."""
        self.role: iam.IRole = security.role or _create_job_role(self)
        """The role the job runs as."""
        if security.role is not None:
            check_grants_land(self, security.role, "security.role")

        request = self._request(source, accept_eula, environment, run, security)
        self.definition_hash = self._definition_hash(request, output.location_stem)
        """A hash of the synthesized job definition: a new one starts a new job."""
        name_stem = f"{self.job_name_prefix}-{self.definition_hash}"
        output.grant_write(self.role, output.prefix + name_stem)
        self.wait_timeout = Duration.seconds(run.wait_seconds)
        """How long the deployment waits for the job."""
        self._deploy_time_workflow(request, name_stem, run)
        self._expose_attributes()

    def _check_job(
        self, source: ModelSource | Model | str, environment: Mapping[str, str] | None
    ) -> None:
        """The synth-time checks of the techniques against the instance type and the model."""
        check_instance_type(self.instance_type)
        check_techniques(self.techniques, self.instance_type)
        check_environment("environment", environment)
        check_degree_fits(
            f"environment[{TENSOR_PARALLEL_VARIABLE!r}]",
            (environment or {}).get(TENSOR_PARALLEL_VARIABLE),
            self.instance_type,
        )
        check_sharding_heads(self.techniques, _source_spec(source))

    def _deploy_time_workflow(
        self, request: Mapping[str, Any], name_stem: str, run: OptimizationRun
    ) -> None:
        """The handlers, the poll workflow, the job resource with its wait condition, and
        the resource that reads the completed job's output."""
        job_arns = Stack.of(self).format_arn(
            service="sagemaker",
            resource="optimization-job",
            # Exactly this construct's job names, <prefix>-<8 hex>-<6 hex> (IAM's "?" is one
            # character): "<prefix>-*" let prefix "llama" reach "llama-awq-..."'s jobs.
            resource_name=_job_names(self.job_name_prefix),
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        code = HANDLER_ASSET.code()
        poller = self._poller(code, job_arns)
        self.state_machine = self._state_machine(poller, run.poll_interval, self.wait_timeout)
        """The Step Functions workflow that polls the job and signals the wait condition."""
        handler = self._handler(code, job_arns)
        if self.output.destroys_artifacts:
            # A changed definition replaces the job: CloudFormation deletes the old one (its
            # old physical id) after the update, when the handler's policy already has the new
            # definition hash, and a rollback deletes the new one under the old policy. So the
            # grant reaches the folder of every job of this construct,
            # <prefix>-<definition hash>-<handle hash>/, not only the current definition's.
            folders = _job_names(self.job_name_prefix)
            self.output.grant_delete(handler, f"{self.output.prefix}{folders}/")

        work = self._job_resource(handler, request, name_stem, run.wait_seconds)
        self._job = work.resource
        depend_on_role_policy(self._job, self.role)
        self.wait_condition = work.wait_condition
        """Holds the deployment until the job has completed (or fails it)."""

        self._requires_image = False
        self._result = self._output_resource(handler)
        for construct, function_role in (
            (poller, poller.role),
            (handler, handler.role),
            (self.state_machine, self.state_machine.role),
        ):
            depend_on_policy_only(construct, function_role)
        self._acknowledge_findings(job_arns)

    def _expose_attributes(self) -> None:
        """The job's and its output's attributes (tokens resolved at deploy time)."""
        self.job_name: str = self._job.ref
        """The job name (known at deploy time)."""
        self.job_arn: str = self._job.get_att_string("JobArn")
        """The job ARN."""
        self.output_s3_uri: str = self._result.get_att_string("OutputS3Uri")
        """``s3://bucket/<output_prefix><job name>/``, available once the job has completed."""
        self.output_key_prefix: str = self._result.get_att_string("OutputPrefix")
        """The artifacts' key prefix in ``output_bucket`` (ends in ``/``)."""
        self.recommended_image_uri: str = self._result.get_att_string("RecommendedInferenceImage")
        """The inference image SageMaker recommends for the optimized model."""

    # ----- consuming the output --------------------------------------------------------------

    def as_model_source(self) -> ModelSource:
        """The optimized model as ``ModelSource.from_s3`` of the job's output folder.

        Its prefix is a deploy-time attribute of the completed job, so a model built from it
        is created after the job has completed; the model's role is granted read on exactly
        that folder (and decrypt on ``output_kms_key``).
        """
        kinds = [technique.kind for technique in self.techniques]
        if kinds == [TechniqueKind.SPECULATIVE_DECODING]:
            raise ValidationError(
                f"{self.node.path}.as_model_source()",
                [kind.name for kind in kinds],
                "a speculative-decoding job's output holds only the trained EAGLE head, not a "
                "model to serve",
                "serve the original weights with speculative_decoding=job.as_speculative_draft()",
            )
        return _OptimizedModelSource(
            self.output.bucket,
            self.output_key_prefix,
            self.output.encryption_key,
            _BuiltFor(self.node.path, self.instance_type, self.techniques),
        )

    def as_speculative_draft(self, *, speculative_length: int | None = None) -> SpeculativeDecoding:
        """The EAGLE head a speculative-decoding job trained, as the draft of a ``Model``
        that serves the original (unchanged) weights: ``OPTION_SPECULATIVE_DRAFT_MODEL`` is
        the job's output folder (``s3://`` URI, a deploy-time attribute), which the model's
        role may read (and decrypt with ``output_kms_key``).

        EAGLE leaves the target model's weights as they are (Li et al., "EAGLE", ICML 2024:
        the head is trained on the frozen target's features), and SageMaker's own deployment
        of a speculative-decoding recommendation mounts the base weights as the primary model
        data and the draft beside them with ``OPTION_SPECULATIVE_DRAFT_MODEL`` pointing at it
        (SageMaker Python SDK ``ModelBuilder``). CloudFormation cannot mount an additional
        model data source (and inference components refuse one), so the draft is given as its
        ``s3://`` URI, which LMI downloads at start (``SpeculativeDecoding.from_s3``).

        :param speculative_length: draft tokens per step (``OPTION_SPECULATIVE_LENGTH``);
            default LMI's 5.
        """
        kinds = [technique.kind for technique in self.techniques]
        if TechniqueKind.SPECULATIVE_DECODING not in kinds:
            raise ValidationError(
                f"{self.node.path}.as_speculative_draft()",
                [kind.name for kind in kinds],
                "the job trains no EAGLE head (no speculative-decoding technique): its output "
                "is a whole model, not a draft",
                "serve it with source=job.as_model_source(), or add "
                "OptimizationTechnique.speculative_decoding() to the job",
            )
        return _OptimizedDraft(
            self.output.bucket,
            self.output_key_prefix,
            self.output.encryption_key,
            speculative_length,
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
            self._result.get_att_string("RecommendedImageRepositoryArn"),
        )

    def grant_read_output(self, grantee: iam.IGrantable) -> None:
        """Allow ``grantee`` to read every artifact of this job."""
        self.output.grant_read(grantee, self.output_key_prefix)

    # ----- building the job --------------------------------------------------------------------

    def _job_name_prefix(self, given: str | None) -> str:
        """The given prefix, or one derived from the construct path; checked."""
        prefix = given or Names.unique_resource_name(
            self, max_length=MAX_PREFIX_LENGTH, separator="-"
        ).lower().strip("-")
        check_job_name_prefix(prefix)
        return prefix

    def _request(
        self,
        source: ModelSource | Model | str,
        accept_eula: bool,
        environment: Mapping[str, str] | None,
        run: OptimizationRun,
        security: OptimizationSecurity,
    ) -> dict[str, Any]:
        """The ``CreateOptimizationJob`` request (all but the job name), granting the role
        what it reads and placing the job in the VPC if one is given."""
        request: dict[str, Any] = {
            "RoleArn": self.role.role_arn,
            "ModelSource": self._render_source(source, accept_eula),
            "DeploymentInstanceType": self.instance_type.name,
            "OptimizationConfigs": [t.render(self, self.role) for t in self.techniques],
            "OutputConfig": self.output.render(),
            "StoppingCondition": {"MaxRuntimeInSeconds": run.max_runtime_seconds},
        }
        if environment:
            request["OptimizationEnvironment"] = dict(sorted(environment.items()))
        vpc_config = security.render_vpc_config(self, self.role)
        if vpc_config is not None:
            request["VpcConfig"] = vpc_config
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
            timeout=HANDLER_TIMEOUT,
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
        wait_seconds: int,
    ) -> SignalledWork:
        """The custom resource that starts the job, and the wait condition the workflow
        signals when it has completed."""
        return signalled_work(
            self,
            definition_hash=self.definition_hash,
            handler=handler,
            resource_type=OPTIMIZATION_JOB_RESOURCE,
            properties={
                "JobNamePrefix": self.job_name_prefix,
                "JobNameStem": name_stem,
                "Request": request,
                "OutputLocationStem": self.output.location_stem,
                "WaitSeconds": str(wait_seconds - int(SIGNAL_MARGIN.to_seconds())),
                "StateMachineArn": self.state_machine.state_machine_arn,
                "RemovalPolicy": "destroy" if self.output.destroys_artifacts else "retain",
            },
            wait_seconds=wait_seconds,
        )

    def _output_resource(self, handler: lambda_.IFunction) -> CustomResource:
        """The completed job's output (location, recommended image), read after the wait."""
        output = CustomResource(
            self,
            "Output",
            service_token=handler.function_arn,
            resource_type=OPTIMIZATION_JOB_OUTPUT_RESOURCE,
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
            key = source.key or ""
            if not is_unresolved(key) and any(c.isspace() or not c.isprintable() for c in key):
                # The job handler takes ModelSource.S3.S3Uri without whitespace
                # (job_properties.S3_URI): such a key synthesized and failed at deploy.
                raise ValidationError(
                    "source",
                    source.s3_uri,
                    "an optimization job reads a prefix whose key has no whitespace or control "
                    "characters",
                    "copy the weights under a prefix without spaces and pass that one",
                )
            source.bind(self.role)
            assert source.bucket is not None and source.key is not None
            acknowledge_prefix(self.role, source.bucket, source.key)
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
                    acknowledge_prefix(self.role, inner.bucket, inner.key)
            return {"SageMakerModel": {"ModelName": source.model_name}}
        if not is_unresolved(source) and not (
            SAGEMAKER_NAME.match(source or "") and len(source) <= SAGEMAKER_NAME_MAX_LENGTH
        ):
            # OptimizationSageMakerModel.ModelName: at most 63 characters (botocore's model).
            raise ValidationError(
                "source",
                source,
                "not a SageMaker model name (1-63 letters, digits or hyphens, starting and "
                "ending with a letter or digit)",
                "pass ModelSource.from_s3(...), a Model, or an existing model's name",
            )
        return {"SageMakerModel": {"ModelName": source}}

    def _state_machine(
        self, poller: lambda_.IFunction, interval: Duration, timeout: Duration
    ) -> sfn.StateMachine:
        """``Poll`` -> ``Finished``? -> ``WaitForJob`` -> ``Poll``; a broken poll signals
        FAILURE (``workflow_loop.signalling_loop``)."""
        return signalling_loop(
            self,
            poller,
            step_id="Poll",
            failed_id="PollingFailed",
            error="PollingFailed",
            done_id="Finished",
            between=lambda _report: sfn.Wait(
                self, "WaitForJob", time=sfn.WaitTime.duration(interval)
            ),
            timeout=timeout,
            placement=self._placement,
            invoked=[poller],
            summary="The workflow is a poll loop of one Lambda task",
            task=cdk_retried_task,
            step_retry=POLL_RETRY,
        )


# ----- outputs as serving inputs -----------------------------------------------------------------


@jsii.implements(IStableStringProducer)
class _ImageRequired:
    """``"true"`` once ``recommended_image()`` has been called, resolved at synth."""

    def __init__(self, job: OptimizationJob) -> None:
        self._job = job

    def produce(self) -> str:
        return "true" if self._job._requires_image else "false"


class _BuiltFor:
    """The layout an optimization job's artifacts are built for: compiled engines run only on
    the accelerator they were compiled for (TensorRT-LLM builds an engine per GPU architecture
    and tensor-parallel degree; Neuron compiles for the Neuron devices and degree of the
    target), and pre-sharded weights load only at the degree they were sharded for (LMI reads
    one checkpoint shard per rank). Quantized weights serve anywhere their kernels run."""

    def __init__(
        self, job: str, instance_type: InstanceType, techniques: Sequence[OptimizationTechnique]
    ) -> None:
        self.job = job
        self.instance_type = instance_type
        self.compiled = next(
            (t.compilation_target for t in techniques if t.compilation_target is not None), None
        )
        degrees = [
            t.environment.get(TENSOR_PARALLEL_VARIABLE)
            for t in techniques
            if t.kind in (TechniqueKind.COMPILATION, TechniqueKind.SHARDING)
        ]
        self.degree = next(
            (int(d) for d in degrees if d is not None and not is_unresolved(d) and d.isdigit()),
            None,
        )

    def problem(
        self, instance_type: InstanceType, tensor_parallel_degree: int | None
    ) -> tuple[str, str] | None:
        """Why the artifacts cannot be served on ``instance_type`` at that degree, if so."""
        built_on = self.instance_type
        if self.compiled is not None and not _same_accelerators(built_on, instance_type):
            what = (built_on.accelerator.name if built_on.accelerator else None) or built_on.name
            return (
                f"{self.job} compiled its {self.compiled.value} artifacts for {built_on.name} "
                f"({what}), and compiled artifacts run only on the accelerator they were "
                "compiled for",
                f"serve them on {built_on.name} (or a size with the same accelerator), or set "
                f"the job's instance_type to {instance_type.name}",
            )
        degree = self.degree
        gpus = instance_type.accelerator_count
        # The degree counts NeuronCores on Inferentia2/Trainium (Accelerator.neuron_cores).
        ranks = (gpus or 0) * instance_type.tensor_parallel_ranks_per_device
        if degree is not None and tensor_parallel_degree is None and gpus and degree > ranks:
            unit = "NeuronCores" if instance_type.is_neuron else "accelerators"
            return (
                f"{self.job} built its artifacts for tensor-parallel degree {degree}, more "
                f"than the {ranks} {unit} of {instance_type.name}",
                f"serve them on an instance type with at least {degree} {unit}",
            )
        if degree is not None and tensor_parallel_degree not in (None, degree):
            return (
                f"{self.job} built its artifacts for tensor-parallel degree {degree}, and they "
                f"load only at that degree (here {tensor_parallel_degree})",
                f"serve with tensor_parallel_degree={degree}, or set the job's "
                f"{TENSOR_PARALLEL_VARIABLE} to {tensor_parallel_degree}",
            )
        return None


def _same_accelerators(a: InstanceType, b: InstanceType) -> bool:
    """Whether ``a`` and ``b`` carry the same accelerator (by name when both are known, else
    the same instance family: ``ml.g5.2xlarge`` and ``ml.g5.12xlarge``)."""
    if a.accelerator is not None and b.accelerator is not None:
        return a.accelerator.name == b.accelerator.name
    return a.name.rsplit(".", 1)[0] == b.name.rsplit(".", 1)[0]


class _OptimizedModelSource(ModelSource):
    """The job's output folder; also grants decrypt on the output key."""

    def __init__(
        self,
        bucket: s3.IBucket,
        prefix: str,
        key: kms.IKey | None,
        built_for: _BuiltFor | None = None,
    ) -> None:
        super().__init__(ModelSourceKind.S3_PREFIX, bucket=bucket, key=prefix)
        self._kms_key = key
        self._built_for = built_for

    def serving_problem(
        self, instance_type: InstanceType, tensor_parallel_degree: int | None
    ) -> tuple[str, str] | None:
        """Compiled or pre-sharded artifacts serve only on the layout they were built for."""
        if self._built_for is None:  # a draft's folder, read for its grants only
            return None
        return self._built_for.problem(instance_type, tensor_parallel_degree)

    def bind(
        self,
        role: iam.IRole | None,
        region: str | None = None,
        token_variable: str = HUB_TOKEN_VARIABLE,
    ) -> BoundModelSource:
        bound = super().bind(role, region, token_variable)
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


class _OptimizedDraft(SpeculativeDecoding):
    """The job's output folder as an S3 draft; also grants decrypt on the output key."""

    def __init__(
        self,
        bucket: s3.IBucket,
        prefix: str,
        key: kms.IKey | None,
        speculative_length: int | None,
    ) -> None:
        super().__init__(
            DraftModelKind.S3, bucket=bucket, prefix=prefix, speculative_length=speculative_length
        )
        self._kms_key = key

    def _grant_read(self, role: iam.IRole) -> None:
        assert self.bucket is not None and self.prefix is not None
        _OptimizedModelSource(self.bucket, self.prefix, self._kms_key).bind(role)


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


def _job_names(prefix: str) -> str:
    """An IAM pattern of exactly the job names of ``prefix``: ``<prefix>-<definition hash>-
    <handle hash>``, with IAM's one-character wildcard for each hash digit."""
    return "-".join((prefix, "?" * DEFINITION_HASH_LENGTH, "?" * HANDLE_HASH_LENGTH))


def _create_job_role(scope: Construct) -> iam.Role:
    role = iam.Role(
        scope,
        "JobRole",
        assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
        description=f"SageMaker optimization job role of {scope.node.path}",
    )
    own_role(role)
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


# ----- the model to optimize ---------------------------------------------------------------------


def _source_spec(source: ModelSource | Model | str) -> ModelSpec | None:
    """The architecture of the model to optimize, when the library knows it."""
    if isinstance(source, Model):
        return source.spec or ModelSpec.from_hugging_face_id(_model_id(source.source))
    if isinstance(source, ModelSource):
        return ModelSpec.from_hugging_face_id(_model_id(source))
    return None if is_unresolved(source) else ModelSpec.from_hugging_face_id(source)


def _model_id(source: ModelSource | None) -> str | None:
    return source.model_id if source is not None and source.model_id else None
