"""``EndpointBenchmark``'s load on a SageMaker AI benchmark job instead of Lambda workers
(``BenchmarkEngine.managed``): the same deploy-time wait (``deploy_time.signalled_work``), the
same results.

Resources, each allowed only what it does:

- ``WorkloadConfig``: ``AWS::SageMaker::AIWorkloadConfig`` (aws-cdk-lib's L1
  ``CfnAIWorkloadConfig``, since aws-cdk-lib 2.273) holding the AIPerf specification of the
  sweep (``benchmarking.aiperf.workload_spec``), named after the benchmark's definition hash
  (the resource is replaced, never updated, when the sweep changes; lowercase letters and
  digits only: ``DeleteAIWorkloadConfig`` lowercases the name it looks up).
- ``JobRole``: the role the job runs as (``CreateAIBenchmarkJob`` ``RoleArn``), assumed by
  SageMaker: it may invoke the endpoint (or component) and write the run folders' objects.
- ``Starter`` (the custom resource's handler): starts the poll workflow; Delete stops it and
  the job (``StopExecution``, ``StopAIBenchmarkJob``) and waits (``DescribeAIBenchmarkJob``,
  up to ``STARTER_TIMEOUT``) until the job has left ``Stopping``: SageMaker refuses to delete
  a workload configuration an active job references, and CloudFormation deletes the
  configuration right after this resource (on a stack delete and on every rollback). A Delete
  that finds no job looks again until the poll Lambda's timeout (``POLL_TIMEOUT_S``) has
  passed: a poll invoked before the stop may still create it. A job still active when the
  starter's time runs out fails the Delete (the configuration stays).
- ``Poll`` and the ``Workflow``: the first poll creates the job (``CreateAIBenchmarkJob``,
  named after the run, passing ``JobRole``), then ``DescribeAIBenchmarkJob`` every
  ``poll_interval``; once the
  job has completed, read its ``output.tar.gz``, map each level to this engine's summary, and
  finish as the Lambda workers' sweep does (``results.json``, ``chart.svg``, the gate, the
  wait condition's signal); a failed or stopped job, or the deadline (the job is stopped),
  signals FAILURE with the reason.

Operation names and shapes: botocore 1.44.5's SageMaker model (``CreateAIBenchmarkJob``,
``DescribeAIBenchmarkJob``, ``StopAIBenchmarkJob``; job ARNs
``arn:aws:sagemaker:<region>:<account>:ai-benchmark-job/<name>``, workload configurations
``...:ai-workload-config/<name>``). The IAM actions are the operations' names, as for every
SageMaker operation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..benchmarking.aiperf import MANAGED_ENGINE, POLL_TIMEOUT_S, workload_spec
from ..benchmarking.benchmark_load import BenchmarkLoad
from ..benchmarking.payload import PayloadFormat, RequestProtocol
from ..catalog.hub_access import hub_gate
from ..planning.workload import Workload
from .benchmark_workflow import ENGINE_SOURCES, depend_on_policies_only, starter_function
from .deploy_time import HandlerAsset, HandlerPlacement, handler_function
from .nag import acknowledge_key_grant, acknowledge_wildcard_resources, own_role
from .validation import ValidationError, check_range, whole_seconds
from .workflow_loop import signalling_loop

STARTER_TIMEOUT = Duration.minutes(15)
"""The starter's Lambda timeout: Lambda's most, all of it for a Delete waiting out ``Stopping``
(a CloudFormation custom resource may take up to an hour; Lambda's own limit is the bound). The
custom resource's ``ServiceTimeout`` follows it (``deploy_time.answer_timeout``)."""

MANAGED_ASSET = HandlerAsset(
    sources=(*ENGINE_SOURCES, "lambdas/job_poll.py", "lambdas/managed_benchmark"),
    entry_module="index",
    entry_source='"""Lambda entry points of EndpointBenchmark on a SageMaker AI benchmark job."""'
    "\n\nfrom cdk_sagemaker_llm.lambdas.managed_benchmark.handler import on_event, poll\n\n"
    '__all__ = ["on_event", "poll"]\n',
)
"""The handlers: the Lambda engine's (results, gate, signal) and the job's (start, poll)."""


@dataclass(frozen=True)
class ManagedBenchmarkOptions:
    """A SageMaker AI benchmark job's settings (``BenchmarkEngine.managed``)."""

    tokenizer: str | None
    tooling_version: str | None
    poll_interval: Duration

    @staticmethod
    def of(
        tokenizer: str | None, tooling_version: str | None, poll_interval: Duration
    ) -> ManagedBenchmarkOptions:
        """Checked settings."""
        owner = "BenchmarkEngine.managed"
        for prop, value in (("tokenizer", tokenizer), ("tooling_version", tooling_version)):
            if value is not None and not re.fullmatch(r"[A-Za-z0-9_.\-/]{1,200}", value):
                raise ValidationError(
                    f"{owner}({prop})", value,
                    "a Hugging Face model id or a version: letters, digits, '_.-/'",
                    "pass e.g. 'Qwen/Qwen2.5-7B-Instruct' or '0.8.0'",
                )  # fmt: skip
        if tokenizer is not None:
            _refuse_gated_tokenizer(tokenizer)
        # A Wait state waits whole seconds; to_seconds() raises a bare "CannotConvertedIntoWhole".
        seconds = whole_seconds(f"{owner}(poll_interval)", poll_interval)
        check_range(
            f"{owner}(poll_interval) (seconds)", seconds, minimum=10,
            maximum=3600, fix="poll every 10 seconds to 1 hour",
        )  # fmt: skip
        return ManagedBenchmarkOptions(tokenizer, tooling_version, poll_interval)

    def check_serves(
        self, load: BenchmarkLoad, workload: Workload, protocol: RequestProtocol
    ) -> None:
        """Raise ValidationError for what a benchmark job does not run."""
        fix = "use BenchmarkEngine.lambda_workers() for it"
        if load.open_loop or load.search is not None:
            raise ValidationError(
                "load", "open loop or search",
                "a SageMaker AI benchmark job here runs closed-loop concurrency sweeps",
                f"use BenchmarkLoad.concurrency([...]), or {fix}",
            )  # fmt: skip
        if load.slo is not None:
            raise ValidationError(
                "load.slo", load.slo, "goodput is computed from the Lambda workers' samples",
                f"drop slo, or {fix}",
            )  # fmt: skip
        if protocol.payload_format is not PayloadFormat.MESSAGES:
            raise ValidationError(
                "protocol.payload_format", protocol.payload_format.value,
                "a SageMaker AI benchmark job sends OpenAI chat completions (the endpoint must "
                "serve them)",
                f"pass RequestProtocol(payload_format=PayloadFormat.MESSAGES), or {fix}",
            )  # fmt: skip
        if workload.shape is not None or protocol.prefix_aware_id is not None:
            raise ValidationError(
                "workload", workload.describe(),
                "a SageMaker AI benchmark job here sends alike synthetic requests, without a "
                "PrefixAwareId", f"pass Workload(input_tokens, output_tokens), or {fix}",
            )  # fmt: skip

    def run_keys(self) -> dict[str, Any]:
        """The run's engine keys (part of the definition hash)."""
        managed: dict[str, Any] = {"PollSeconds": int(self.poll_interval.to_seconds())}
        if self.tokenizer:
            managed["Tokenizer"] = self.tokenizer
        if self.tooling_version:
            managed["ToolingVersion"] = self.tooling_version
        return {"Engine": MANAGED_ENGINE, "Managed": managed}


def _refuse_gated_tokenizer(tokenizer: str) -> None:
    """A gated tokenizer repository (``catalog/hub_access.py``) is refused: a SageMaker AI
    benchmark job cannot be given a Hugging Face token. botocore 1.44.5's
    ``CreateAIWorkloadConfig`` (a name, the inline specification or an S3 dataset, tags) and
    ``CreateAIBenchmarkJob`` (target, output, configuration, role, network, tags) have no token
    field, and the documented specification's ``parameters`` none either (SageMaker AI
    developer guide, "Set up a workload configuration"), so AIPerf's tokenizer download is
    refused (401) and the job fails at run time. An unknown id is allowed."""
    gate = hub_gate(tokenizer)
    if gate is not None and gate.gated:
        raise ValidationError(
            "BenchmarkEngine.managed(tokenizer)",
            tokenizer,
            "a gated Hugging Face repository, and a SageMaker AI benchmark job cannot be given "
            "a Hugging Face token (CreateAIWorkloadConfig and CreateAIBenchmarkJob have no "
            f"field for one), so its tokenizer download fails at run time ({gate.source})",
            "use BenchmarkEngine.lambda_workers() (the in-account engine, which downloads no "
            "tokenizer: it counts the tokens the endpoint reports), or pass an ungated "
            "repository holding the same tokenizer files (same vocabulary)",
        )


@dataclass(frozen=True)
class ManagedTarget:
    """What the job loads and where its results go."""

    grant_invoke: Any
    """``grant_invoke(grantee)`` of the endpoint or component."""
    bucket: s3.IBucket
    objects: str
    """ARN pattern of this benchmark's run folders' objects."""
    folder_pattern: str
    """Key pattern of those folders (``<prefix><stem>-*``), for ``s3:prefix`` conditions."""
    run_name_stem: str
    definition_hash: str


def build(
    scope: Construct,
    options: ManagedBenchmarkOptions,
    run: dict[str, Any],
    target: ManagedTarget,
    *,
    placement: HandlerPlacement,
    timeout: Duration,
) -> tuple[lambda_.IFunction, sfn.StateMachine]:
    """The workload configuration, the job's role, the poll workflow and the starter function
    (returned with the workflow); adds the job's keys to ``run``."""
    stack = Stack.of(scope)
    config = _workload_config(scope, options, run, target)
    role = _job_role(scope, target)
    jobs = stack.format_arn(
        service="sagemaker",
        resource="ai-benchmark-job",
        resource_name=f"{target.run_name_stem}-*",
        arn_format=ArnFormat.SLASH_RESOURCE_NAME,
    )
    run["Managed"] = {
        **run["Managed"],
        # The ARN (a name would do) makes the run reference the configuration, so CloudFormation
        # creates it before the job is started and deletes it after the job is stopped.
        "WorkloadConfig": config.attr_ai_workload_config_arn,
        "RoleArn": role.role_arn,
    }
    code = MANAGED_ASSET.code()
    poll = handler_function(
        scope, "Poll", placement=placement, code=code, handler="index.poll",
        timeout=Duration.seconds(POLL_TIMEOUT_S), memory_size=1024,
        description="Polls the SageMaker AI benchmark job, maps its results, signals",
    )  # fmt: skip
    _allow(
        poll,
        ["sagemaker:DescribeAIBenchmarkJob", "sagemaker:StopAIBenchmarkJob"],
        [jobs],
    )
    _allow(poll, ["sagemaker:CreateAIBenchmarkJob"], [jobs, config.attr_ai_workload_config_arn])
    iam.Grant.add_to_principal(
        grantee=poll, actions=["iam:PassRole"], resource_arns=[role.role_arn],
        conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
    )  # fmt: skip
    _allow(poll, ["s3:GetObject", "s3:PutObject"], [target.objects])
    iam.Grant.add_to_principal(
        grantee=poll, actions=["s3:ListBucket"], resource_arns=[target.bucket.bucket_arn],
        conditions={"StringLike": {"s3:prefix": [target.folder_pattern]}},
    )  # fmt: skip
    key = target.bucket.encryption_key
    if key is not None:
        key.grant_encrypt_decrypt(poll)
        acknowledge_key_grant(
            poll,
            "Key.grant_encrypt_decrypt's action families on exactly the results bucket's key: "
            "the function reads the job's SSE-KMS output and writes results there",
        )
    state_machine = _workflow(scope, poll, options.poll_interval, timeout, placement)
    starter, executions = starter_function(
        scope, code=code, placement=placement, state_machine=state_machine,
        description="Starts the SageMaker AI benchmark job and its poll workflow "
        "(CloudFormation custom resource); Delete stops them and waits for the job to stop",
        timeout=STARTER_TIMEOUT,
    )  # fmt: skip
    _allow(starter, ["sagemaker:StopAIBenchmarkJob", "sagemaker:DescribeAIBenchmarkJob"], [jobs])
    for function, patterns in ((poll, [jobs, target.objects]), (starter, [jobs, executions])):
        assert function.role is not None
        acknowledge_wildcard_resources(
            function.role, patterns,
            "This benchmark's own jobs, run folders and workflow executions only: run names "
            "carry the wait handle, known only at deploy time.",
        )  # fmt: skip
    depend_on_policies_only([poll, starter], state_machine)
    return starter, state_machine


def _allow(function: lambda_.IFunction, actions: list[str], resources: list[str]) -> None:
    iam.Grant.add_to_principal(grantee=function, actions=actions, resource_arns=resources)


def _workload_config(
    scope: Construct, options: ManagedBenchmarkOptions, run: dict[str, Any], target: ManagedTarget
) -> sagemaker.CfnAIWorkloadConfig:
    """``AWS::SageMaker::AIWorkloadConfig`` with the sweep's AIPerf specification."""
    levels = [int(level) for level in run["Concurrencies"]]
    count = int(run["RequestsPerLevel"]) or max(4 * levels[-1], 16)
    spec = workload_spec(
        input_tokens=int(run["InputTokens"]),
        output_tokens=int(run["OutputTokens"]),
        streaming=bool(run["Stream"]),
        concurrencies=levels,
        request_count=count,
        tokenizer=options.tokenizer,
        tooling_version=options.tooling_version,
    )
    stem = re.sub(r"[^a-z0-9]", "", target.run_name_stem.lower())
    name = f"{stem[: 63 - len(target.definition_hash)]}{target.definition_hash}"
    return sagemaker.CfnAIWorkloadConfig(
        scope,
        "WorkloadConfig",
        ai_workload_config_name=name,
        ai_workload_configs=sagemaker.CfnAIWorkloadConfig.AIWorkloadConfigsProperty(
            workload_spec=sagemaker.CfnAIWorkloadConfig.WorkloadSpecProperty(
                inline=json.dumps(spec, sort_keys=True)
            )
        ),
    )


def _job_role(scope: Construct, target: ManagedTarget) -> iam.Role:
    """The role the job runs as: invoke the target, write the run folders."""
    role = iam.Role(
        scope,
        "JobRole",
        assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
        description=f"SageMaker AI benchmark job of {scope.node.path}",
    )
    own_role(role)
    target.grant_invoke(role)
    iam.Grant.add_to_principal(
        grantee=role, actions=["s3:PutObject"], resource_arns=[target.objects]
    )
    key = target.bucket.encryption_key
    if key is not None:
        key.grant_encrypt_decrypt(role)
        acknowledge_key_grant(
            role,
            "Key.grant_encrypt_decrypt's action families on exactly the results bucket's key: "
            "the job writes SSE-KMS output there",
        )
    acknowledge_wildcard_resources(
        role, [target.objects],
        "The job writes its output under this benchmark's run folders only (run names carry "
        "the wait handle, known only at deploy time).",
    )  # fmt: skip
    return role


def _workflow(
    scope: Construct,
    poll: lambda_.IFunction,
    interval: Duration,
    timeout: Duration,
    placement: HandlerPlacement,
) -> sfn.StateMachine:
    """``PollJob`` -> ``Done``? -> ``WaitForJob`` -> ``PollJob``; a broken step signals
    FAILURE."""
    return signalling_loop(
        scope,
        poll,
        step_id="PollJob",
        failed_id="JobFailed",
        error="BenchmarkFailed",
        between=lambda _report: sfn.Wait(scope, "WaitForJob", time=sfn.WaitTime.duration(interval)),
        timeout=timeout,
        placement=placement,
        invoked=[poll],
        summary="The workflow polls a SageMaker AI benchmark job with one Lambda task",
    )
