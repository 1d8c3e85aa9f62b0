"""A benchmark run while the stack deploys, whose figures other resources consume.

``EndpointBenchmark`` runs after its endpoint (or inference component) is in service, applies a
``BenchmarkLoad`` with a stated ``Workload``, writes ``results.json`` and ``chart.svg`` to S3
and exposes the knee concurrency, the max throughput and the p50 ms/token at the knee as
attributes, e.g. as an autoscaling target. The same wait design as ``OptimizationJob``:

1. ``Custom::SageMakerEndpointBenchmark`` (Lambda-backed, answers in seconds) starts a Step
   Functions Standard workflow named after the run and returns.
2. ``AWS::CloudFormation::WaitCondition`` holds the deployment until the workflow signals its
   handle: SUCCESS with the figures as data, or FAILURE with the reason and the measured
   figures (an unmet gate, every request failing, the deadline, a broken step).
3. The workflow loops ``Advance`` (Lambda) -> Choice -> ``RunLevel`` (Map over the level's
   workers, ``MaxConcurrency`` = the most workers any level needs) -> ``Advance``. Each Map
   item is one invocation of the worker Lambda for one level, so no Lambda runs longer than
   one level's share (a sweep may last hours; each worker stops starting requests 90 s
   before its 15-minute timeout and keeps what it measured). ``Advance`` merges the workers'
   raw samples from S3 (percentiles over all samples, never averaged), records the start
   skew, plans the next level or finishes.
4. ``Custom::SageMakerEndpointBenchmarkOutput`` (after the wait condition) turns the signal's
   data into attributes.

Loads (the CLI's, with the same ``results.json``): closed-loop
``BenchmarkLoad.concurrency([...])`` (default), open-loop ``BenchmarkLoad.request_rates([...])``
(seeded Poisson or constant arrivals, optional ``max_concurrency``; see
``benchmarking.open_loop``), goodput against a ``GoodputSlo``, and ``knee_search`` /
``max_rate_search``, which bracket and bisect: ``Advance`` plans each next level from the
levels measured so far (``benchmarking.search``).

Load beyond one worker (``BenchmarkEngine.lambda_workers``): a level of concurrency ``c`` runs
on ``ceil(c / worker_capacity)`` workers started together by the Map, each keeping its share in
flight; a level of rate ``r`` on ``ceil(r / worker_rate_capacity)`` workers, each sending its
seeded share of the level's arrival process. All of them wait for a common start time planned
10 s ahead; the results record each worker's first request start and the skew between them
(stated limit: 1 s).

Lifecycle: the handle and the wait condition carry a hash of the benchmark's definition in
their logical ids: the target's synthesized SageMaker resources (component, endpoint, their
endpoint configuration and models, read when the benchmark is constructed), the payload and
the load. Any change there runs a new sweep; anything else runs nothing. Delete always
succeeds, even after a failed create; it stops the run's execution if it still runs (workers
already running finish their share of the current level, then no further level starts).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aws_cdk import (
    CfnResource,
    CustomResource,
    Duration,
    Names,
    Stack,
    Token,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..benchmarking.benchmark_load import BenchmarkLoad
from ..benchmarking.payload import RequestProtocol
from ..benchmarking.pricing import BenchmarkPricing
from ..benchmarking.workloads import run_keys
from ..catalog.containers import FP8_KV_CACHE_SETTINGS
from ..catalog.instance_types import InstanceType
from ..catalog.prices import PriceList
from ..planning.sizing import serving_facts
from ..planning.workload import Workload
from ..prop_types import typed_props
from ..template_metadata import BENCHMARK, BENCHMARK_OUTPUT_RESOURCE, BENCHMARK_RESOURCE
from . import managed_benchmark
from .benchmark_options import BenchmarkEngine, BenchmarkGate, BenchmarkResults
from .benchmark_workflow import ENGINE_SOURCES, depend_on_policies_only, starter_function
from .benchmark_workload import check_deploy_time
from .deploy_time import (
    CUSTOM_RESOURCE_TIMEOUT,
    HandlerAsset,
    HandlerPlacement,
    handler_function,
    signalled_work,
)
from .endpoint import Endpoint, IEndpoint, InferenceComponentEndpoint
from .inference_component import IInferenceComponent, InferenceComponent
from .managed_benchmark import ManagedBenchmarkOptions
from .model import Model
from .nag import acknowledge_key_grant, acknowledge_wildcard_resources
from .validation import ValidationError, check_range, is_unresolved, whole_seconds
from .workflow_loop import check_poll_count, lambda_task, signalling_loop

HANDLER_ASSET = HandlerAsset(
    sources=ENGINE_SOURCES,
    entry_module="index",
    entry_source='"""Lambda entry points of EndpointBenchmark."""\n\n'
    "from cdk_sagemaker_llm.lambdas.benchmark.handler import advance, on_event, worker\n\n"
    '__all__ = ["advance", "on_event", "worker"]\n',
)
"""The handlers and the benchmark engine (boto3/botocore and the standard library only)."""
bundle_handler = HANDLER_ASSET.bundle
asset_hash = HANDLER_ASSET.hash

RESOURCE_TYPE = BENCHMARK_RESOURCE
OUTPUT_RESOURCE_TYPE = BENCHMARK_OUTPUT_RESOURCE
PLAN_METADATA = BENCHMARK
MAX_WAIT_SECONDS = 43_200
"""A CloudFormation wait condition's longest timeout (12 hours)."""
SIGNAL_MARGIN = Duration.minutes(15)
"""The wait lasts this much longer than ``max_duration``: the last level's requests finish,
the results are written, the signal is sent."""
MAX_TOKENS = 200_000
"""Tokens in or out of one request the workers send."""
DEFAULT_WORKLOAD = Workload(input_tokens=256, output_tokens=128)
DEFINITION_HASH_LENGTH = 8
WORKER_TIMEOUT = Duration.minutes(15)


# ----- the construct -------------------------------------------------------------------------


@typed_props
class EndpointBenchmark(Construct):
    """A load applied to an endpoint or inference component at deploy time.

    ::

        bench = EndpointBenchmark(self, "Bench", inference_component=component,
            load=BenchmarkLoad.concurrency([1, 2, 4, 8, 16],
                knee_rule=KneeRule(min_gain_per_doubling=0.1, slo_ms_per_token=60)),
            workload=Workload(input_tokens=512, output_tokens=256),
            gate=BenchmarkGate(max_p50_ms_per_token=50))
        scaling.scale_on_concurrent_requests(target=bench.knee_concurrency_per_copy)

    See the module documentation for how the sweep runs, reruns and is deleted.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: IEndpoint | None = None,
        inference_component: IInferenceComponent | None = None,
        load: BenchmarkLoad | None = None,
        workload: Workload | None = None,
        protocol: RequestProtocol | None = None,
        gate: BenchmarkGate | None = None,
        pricing: BenchmarkPricing | None = None,
        copies: int | None = None,
        engine: BenchmarkEngine | None = None,
        results: BenchmarkResults | None = None,
        max_duration: Duration = Duration.hours(2),
        handler_placement: HandlerPlacement | None = None,
    ) -> None:
        """
        :param endpoint: the endpoint to load; default the inference component's endpoint.
        :param inference_component: load this component of the endpoint; default none (the
            endpoint itself).
        :param load: the levels (closed-loop concurrency, open-loop request rates, or a search
            of either), with their requests per level, knee rule or arrivals and goodput SLO;
            default ``BenchmarkLoad.concurrency([1, 2, 4, 8, 16, 32])``.
        :param workload: what each request carries: synthetic prompts of ``input_tokens`` (at
            most 200,000), ``output_tokens`` generated, or a shape (``Workload.shared_prefix``,
            ``multi_turn``, ``trace`` of at most 1,000 requests); default the workload an
            ``LlmService``'s component was sized for, else 256 in, 128 out.
        :param protocol: the request schema and whether responses stream (streaming measures
            TTFT and inter-token latency); default ``RequestProtocol()`` (the inputs API, LMI
            or TGI answers detected, not streaming).
        :param gate: figures that fail the deployment when unmet, among them the peak the
            measured capacity must serve at the most copies autoscaling allows
            (``BenchmarkGate(peak=PeakCapacity.requests_per_second(4, max_copies=6))``);
            default none.
        :param pricing: the price per hour of what is measured, for the cost per 1M tokens;
            default ``BenchmarkPricing.from_price_list()``: derived from the library's prices
            (us-east-1 on-demand: the results say so, and when the stack runs elsewhere) when
            the instance type is known (a component: its share of the instance's accelerators
            x copies), else none.
        :param copies: copies serving the load on the whole endpoint while the sweep runs
            (instances x copies per instance), for the per-copy knee; default the component's
            ``copy_count``, an instance endpoint's total ``initial_instance_count`` (one copy
            per instance), else 1 (imported).
        :param engine: what runs the load; default ``BenchmarkEngine.lambda_workers()`` (256
            requests in flight or 100 requests/s per worker Lambda, measured).
        :param results: where results, charts and raw samples go; default
            ``BenchmarkResults.in_new_bucket()`` (KMS encryption, SSL enforced, public access
            blocked, retained; prefix ``endpoint-benchmarks/``).
        :param max_duration: the sweep stops starting requests after this long and fails the
            deployment if levels remain (1 minute to 11 h 45 min; the wait lasts 15 minutes
            longer); default 2 hours.
        :param handler_placement: VPC and log encryption of the handler Lambdas and the
            workflow; default Lambda's own network and CloudWatch Logs' encryption.
        """
        super().__init__(scope, id)
        self._placement = handler_placement or HandlerPlacement()
        stack = Stack.of(self)
        self.endpoint = _target_endpoint(stack, endpoint, inference_component)
        """The endpoint loaded."""
        self.inference_component = inference_component
        """The component loaded, if any."""
        self.load = load or BenchmarkLoad.concurrency()
        """The load applied."""
        workload = workload or _default_workload(inference_component)
        for prop in ("input_tokens", "output_tokens"):
            check_range(f"workload.{prop}", getattr(workload, prop), maximum=MAX_TOKENS)
        check_deploy_time(workload, self.load)
        protocol = protocol or RequestProtocol()
        gate = gate or BenchmarkGate()
        gate.check_applies_to(self.load)
        _check_ttft_measured(self.load, gate, protocol)
        engine = engine or BenchmarkEngine.lambda_workers()
        if engine.job is not None:
            engine.job.check_serves(self.load, workload, protocol)
        self.max_workers = engine.max_workers(self.load)
        """Workers of the largest level: the Map's MaxConcurrency."""
        results = results or BenchmarkResults.in_new_bucket()
        sweep_seconds = _sweep_seconds(max_duration)
        self.copies = _copies(copies, self.endpoint, inference_component)
        """Copies serving the load during the sweep on the whole endpoint (instances x copies
        per instance); the knee divided by it is the per-copy knee."""
        gate.check_copies(self.copies)
        price, price_source = self._price(pricing or BenchmarkPricing.from_price_list())
        self.price_per_hour = price
        """USD per hour of what is measured, or None when unknown."""
        self.results_bucket = results.bind(self)
        """The bucket of the results."""
        self.results_prefix = results.prefix
        """Key prefix of every run's folder."""

        run = self._run(workload, protocol, gate, engine, price, price_source)
        if engine.job is not None:
            run.update(engine.job.run_keys())
        self.definition_hash = self._definition_hash(run, sweep_seconds)
        """A hash of the target's resources, the payload and the load: a new one reruns."""
        name_prefix = (
            Names.unique_resource_name(self, max_length=40, separator="-").lower().strip("-")
        )
        self.run_name_stem = f"{name_prefix}-{self.definition_hash}"
        """Runs are named ``<stem>-<6 hex of the wait handle>``; results go to
        ``<prefix><run name>/``."""
        objects = self.results_bucket.arn_for_objects(
            f"{self.results_prefix}{self.run_name_stem}-*"
        )
        starter = (
            self._workflow(objects, sweep_seconds)
            if engine.job is None
            else self._managed_workflow(engine.job, run, objects, sweep_seconds)
        )
        self._start(starter, run, sweep_seconds)
        default_child = self._resource.node.default_child
        assert isinstance(default_child, CfnResource)
        default_child.add_metadata(
            PLAN_METADATA,
            _plan_details(self, workload, protocol, gate, engine, max_duration)
            | _load_details(self.load, self.max_workers, engine),
        )
        self._attributes()

    # ----- the steps ---------------------------------------------------------------------------

    def _price(self, pricing: BenchmarkPricing) -> tuple[float | None, str]:
        """USD per hour of what is measured (discounted) and what it is, or None and ''."""
        if pricing.price_per_hour is not None:
            discount = pricing.discount
            return pricing.price_per_hour * (1 - discount), (
                f"{pricing.basis}{f', less {discount:.0%} discount' if discount else ''}"
            )
        assert pricing.prices is not None
        region = Stack.of(self).region
        return _derive_price(
            self.endpoint,
            self.inference_component,
            self.copies,
            pricing.prices,
            None if is_unresolved(region) else region,
        )

    def _run(
        self,
        workload: Workload,
        protocol: RequestProtocol,
        gate: BenchmarkGate,
        engine: BenchmarkEngine,
        price: float | None,
        price_source: str,
    ) -> dict[str, Any]:
        """The run's configuration, as the handlers read it (``Run``)."""
        component = self.inference_component
        load = self.load
        run: dict[str, Any] = {
            "Bucket": self.results_bucket.bucket_name,
            "EndpointName": self.endpoint.endpoint_name,
            "InferenceComponentName": component.inference_component_name
            if component is not None
            else "",
            "InputTokens": workload.input_tokens,
            "OutputTokens": workload.output_tokens,
            "Stream": protocol.stream,
            "Format": protocol.payload_format.value,
            **_load_keys(load),
            "RequestsPerLevel": load.requests_per_level or 0,
            "WorkerCapacity": engine.worker_capacity,
            "Copies": self.copies,
            "Rule": _without_none(
                {
                    "MinGainPerDoubling": load.knee_rule.min_gain_per_doubling,
                    "SloMsPerToken": load.knee_rule.slo_ms_per_token,
                    "MaxErrorRate": load.knee_rule.max_error_rate,
                    "SloTtftMs": load.knee_rule.slo_ttft_ms,
                }
            ),
            "Gate": _without_none(
                {
                    "MaxP50MsPerToken": gate.max_p50_ms_per_token,
                    "MaxP50TtftMs": gate.max_p50_ttft_ms,
                    "MaxErrorRate": gate.max_error_rate,
                    "MinKneeConcurrency": gate.min_knee_concurrency,
                    "MinOutputTokensPerS": gate.min_output_tokens_per_s,
                    "MinSustainableRate": gate.min_sustainable_requests_per_s,
                }
            )
            | (gate.peak.gate_keys() if gate.peak is not None else {}),
        }
        if load.open_loop:
            run["WorkerRateCapacity"] = engine.worker_rate_capacity
        run.update(run_keys(workload.shape, protocol.prefix_aware_id))
        deployment = _deployment(self.endpoint, component)
        if deployment:
            run["Deployment"] = deployment
        if price is not None:
            run["PricePerHour"] = round(price, 6)
            run["PriceSource"] = price_source
        return run

    def _definition_hash(self, run: dict[str, Any], sweep_seconds: int) -> str:
        """A hash of what the sweep measures: the run, where its results go, its time limit and
        the target's synthesized resources."""
        stack = Stack.of(self)
        definition = stack.resolve(
            {
                # What was benchmarked follows from the target's resources (fingerprinted
                # below): it changes no run, so adding it reran no benchmark.
                "Run": {key: value for key, value in run.items() if key != "Deployment"},
                "Prefix": self.results_prefix,
                "SweepSeconds": sweep_seconds,
                "Target": _fingerprint(stack, self.endpoint, self.inference_component),
            }
        )
        digest = hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()
        return digest[:DEFINITION_HASH_LENGTH]

    def _workflow(self, objects: str, sweep_seconds: int) -> lambda_.IFunction:
        """The worker and Advance functions, the workflow of the sweep and the function that
        starts it (returned), each allowed only what it does."""
        code = HANDLER_ASSET.code()
        worker = handler_function(
            self,
            "Worker",
            placement=self._placement,
            code=code,
            handler="index.worker",
            timeout=WORKER_TIMEOUT,
            memory_size=1769,
            description="Runs one level's share of load",
        )
        if self.inference_component is not None:
            self.inference_component.grant_invoke(worker)
        else:
            self.endpoint.grant_invoke(worker)
        iam.Grant.add_to_principal(
            grantee=worker, actions=["s3:PutObject"], resource_arns=[objects]
        )
        advance = handler_function(
            self,
            "Advance",
            placement=self._placement,
            code=code,
            handler="index.advance",
            timeout=Duration.minutes(5),
            memory_size=1024,
            description="Aggregates levels, plans the next, writes results and signals the wait "
            "condition",
        )
        iam.Grant.add_to_principal(
            grantee=advance, actions=["s3:GetObject", "s3:PutObject"], resource_arns=[objects]
        )
        key = self.results_bucket.encryption_key
        if key is not None:
            for function in (worker, advance):
                key.grant_encrypt_decrypt(function)
                acknowledge_key_grant(
                    function,
                    "Key.grant_encrypt_decrypt's action families on exactly the results "
                    "bucket's key: the functions write and read SSE-KMS objects there",
                )
        margin = int(SIGNAL_MARGIN.to_seconds())
        self.state_machine = self._state_machine(
            advance, worker, Duration.seconds(sweep_seconds + margin)
        )
        """The Step Functions workflow of the sweep."""
        starter, executions = starter_function(
            self,
            code=code,
            placement=self._placement,
            state_machine=self.state_machine,
            description="Starts the sweep (CloudFormation custom resource); Delete stops it",
        )
        assert starter.role is not None
        acknowledge_wildcard_resources(
            starter.role,
            [executions],
            "StopExecution on this benchmark's own workflow only: run names carry the wait "
            "handle, known only at deploy time.",
        )
        depend_on_policies_only([worker, advance, starter], self.state_machine)
        self._acknowledge_findings(objects, advance, worker)
        return starter

    def _managed_workflow(
        self, options: ManagedBenchmarkOptions, run: dict[str, Any], objects: str, seconds: int
    ) -> lambda_.IFunction:
        """The SageMaker AI benchmark job's resources (``managed_benchmark``) instead of the
        Lambda workers'; returns the function that starts it."""
        check_poll_count(  # its workflow polls the job for as long as the wait lasts
            "engine (BenchmarkEngine.managed(poll_interval), seconds)",
            int(options.poll_interval.to_seconds()),
            seconds + int(SIGNAL_MARGIN.to_seconds()),
            ", or shorten max_duration",
        )
        target = self.inference_component or self.endpoint
        starter, self.state_machine = managed_benchmark.build(
            self,
            options,
            run,
            managed_benchmark.ManagedTarget(
                grant_invoke=target.grant_invoke,
                bucket=self.results_bucket,
                objects=objects,
                folder_pattern=f"{self.results_prefix}{self.run_name_stem}-*",
                run_name_stem=self.run_name_stem,
                definition_hash=self.definition_hash,
            ),
            placement=self._placement,
            timeout=Duration.seconds(seconds + int(SIGNAL_MARGIN.to_seconds())),
        )
        return starter

    def _start(self, starter: lambda_.IFunction, run: dict[str, Any], sweep_seconds: int) -> None:
        """The custom resource that starts the sweep once the target is in service, the wait
        condition it signals, and the resource that turns the signal into attributes."""
        work = signalled_work(
            self,
            definition_hash=self.definition_hash,
            handler=starter,
            resource_type=RESOURCE_TYPE,
            properties={
                "RunNameStem": self.run_name_stem,
                "Run": run,
                "ResultsPrefix": self.results_prefix,
                "SweepSeconds": sweep_seconds,
                "StateMachineArn": self.state_machine.state_machine_arn,
            },
            wait_seconds=sweep_seconds + int(SIGNAL_MARGIN.to_seconds()),
        )
        self._resource = work.resource
        # Start once the target is in service. A name known at synth time (a component's)
        # makes no reference, hence no implicit dependency: add it.
        for target, name in (
            (self.endpoint, self.endpoint.endpoint_name),
            (self.inference_component, run["InferenceComponentName"]),
        ):
            resource = getattr(target, "resource", None)
            if isinstance(resource, CfnResource) and not is_unresolved(name):
                self._resource.node.add_dependency(resource)
        self.wait_condition = work.wait_condition
        """Holds the deployment until the sweep has signalled."""
        self._output = CustomResource(
            self,
            "Output",
            service_token=starter.function_arn,
            resource_type=OUTPUT_RESOURCE_TYPE,
            service_timeout=CUSTOM_RESOURCE_TIMEOUT,
            properties={"WaitData": self.wait_condition.attr_data},
        )

    def _attributes(self) -> None:
        self.run_name: str = self._output.get_att_string("RunName")
        """The run measured by the last sweep."""
        self.knee_concurrency: float = Token.as_number(self._output.get_att("KneeConcurrency"))
        """The knee: the highest level that still bought throughput within the rule (the
        lowest level when even that one trips the rule). A number token."""
        self.knee_concurrency_per_copy: float = Token.as_number(
            self._output.get_att("KneeConcurrencyPerCopy")
        )
        """The knee divided by ``copies`` (at least 1): a per-copy autoscaling target."""
        self.knee_at_least: str = self._output.get_att_string("KneeAtLeast")
        """``true`` when no level tripped the knee rule: ``knee_concurrency`` is then only a
        lower bound (the highest level run), not a measured knee; ``false`` otherwise."""
        self.knee_p50_ms_per_token: float = Token.as_number(
            self._output.get_att("KneeP50MsPerToken")
        )
        """p50 end-to-end ms/token at the knee."""
        self.max_output_tokens_per_second: float = Token.as_number(
            self._output.get_att("MaxOutputTokensPerSecond")
        )
        """The highest output throughput within the rule's SLO (tokens/s)."""
        self.results_s3_uri: str = self._output.get_att_string("ResultsS3Uri")
        """``s3://bucket/<prefix><run>/results.json`` (the CLI's results schema + distribution)."""
        self.chart_s3_uri: str = self._output.get_att_string("ChartS3Uri")
        """``s3://bucket/<prefix><run>/chart.svg``: latency vs throughput, the knee circled."""
        self.sustainable_requests_per_second: float = Token.as_number(
            self._output.get_att("SustainableRequestsPerSecond")
        )
        """Open loop: the highest rate sustainable from the lowest level up (goodput at least
        the SLO's fraction of the offered rate, backlog not growing); 0 when none was, or
        for a closed-loop benchmark. A number token."""
        self.sustainable_rate_at_least: str = self._output.get_att_string("SustainableRateAtLeast")
        """Open loop: ``true`` when no level failed the goodput rule, so
        ``sustainable_requests_per_second`` is only a lower bound (the highest rate run);
        ``false`` otherwise."""

    # ----- internals -------------------------------------------------------------------------

    def _state_machine(
        self, advance: lambda_.IFunction, worker: lambda_.IFunction, timeout: Duration
    ) -> sfn.StateMachine:
        """``AdvanceSweep`` -> ``Done``? -> ``RunLevel`` (a Map of worker tasks) -> ..."""

        def run_level(report: sfn.Chain) -> sfn.Map:
            level = sfn.Map(
                self,
                "RunLevel",
                items_path="$.Slices",
                item_selector={
                    "Run": sfn.JsonPath.object_at("$.Run"),
                    "Slice": sfn.JsonPath.object_at("$$.Map.Item.Value"),
                },
                max_concurrency=self.max_workers,
                result_path=sfn.JsonPath.DISCARD,
            )
            level.item_processor(lambda_task(self, "RunWorker", worker))
            level.add_catch(report, errors=["States.ALL"], result_path="$.Error")
            return level

        return signalling_loop(
            self,
            advance,
            step_id="AdvanceSweep",
            failed_id="SweepFailed",
            error="SweepFailed",
            between=run_level,
            timeout=timeout,
            placement=self._placement,
            invoked=[advance, worker],
            summary="The workflow is a loop of Lambda tasks",
        )

    def _acknowledge_findings(
        self, objects: str, advance: lambda_.IFunction, worker: lambda_.IFunction
    ) -> None:
        """The cdk-nag (AwsSolutions) findings this construct cannot avoid, with reasons."""
        for function in (advance, worker):
            assert function.role is not None
            acknowledge_wildcard_resources(
                function.role,
                [objects],
                "Objects under exactly this benchmark's run folders (<prefix><name>-<hash>-*): "
                "run names carry the wait handle, known only at deploy time.",
            )


# ----- helpers -------------------------------------------------------------------------------


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _target_endpoint(
    stack: Stack, endpoint: IEndpoint | None, component: IInferenceComponent | None
) -> IEndpoint:
    """The endpoint loaded: the given one, or the component's (which must be the same)."""
    if endpoint is None and component is None:
        raise ValidationError(
            "endpoint",
            None,
            "a benchmark needs an endpoint or an inference component to load",
            "pass endpoint=..., or inference_component=... (its endpoint is used)",
        )
    if endpoint is None:
        assert component is not None
        return component.endpoint
    _check_invocable(endpoint, component)
    if component is not None and stack.resolve(component.endpoint.endpoint_name) != stack.resolve(
        endpoint.endpoint_name
    ):
        raise ValidationError(
            "inference_component",
            component.inference_component_name,
            "the component is hosted on another endpoint than the one given",
            "pass the component's own endpoint, or omit endpoint=",
        )
    return endpoint


def _default_workload(component: IInferenceComponent | None) -> Workload:
    """The workload of a benchmark given none: the typical request the component was sized
    for (an ``LlmService``'s workload), else ``DEFAULT_WORKLOAD``."""
    sized_for = getattr(component, "sized_for", None)
    return sized_for if isinstance(sized_for, Workload) else DEFAULT_WORKLOAD


def _check_invocable(endpoint: IEndpoint, component: IInferenceComponent | None) -> None:
    """Both engines send ``InvokeEndpoint`` (or its streaming form): an endpoint of inference
    components needs the ``InferenceComponentName`` of each request (SageMaker Runtime API,
    ``InvokeEndpoint``: "Inference Component Name header is required" otherwise), and an
    asynchronous endpoint answers only ``InvokeEndpointAsync`` (developer guide, "Asynchronous
    inference": requests go through S3)."""
    if component is None and isinstance(endpoint, InferenceComponentEndpoint):
        raise ValidationError(
            "inference_component",
            None,
            f"{endpoint.node.path} hosts inference components, and SageMaker refuses a request "
            "to it that names none",
            "pass inference_component=<the component to load> (its endpoint is used)",
        )
    if isinstance(endpoint, Endpoint) and endpoint.async_inference is not None:
        raise ValidationError(
            "endpoint",
            endpoint.node.path,
            "is asynchronous (async_inference): it answers InvokeEndpointAsync only, and "
            "both benchmark engines send InvokeEndpoint",
            "benchmark a real-time endpoint of the same model and instance type, and scale "
            "the asynchronous one with AsyncScaling on its backlog",
        )


def _sweep_seconds(max_duration: Duration) -> int:
    # The wait condition's Timeout is whole seconds; to_seconds() raises a bare
    # "CannotConvertedIntoWhole" for part seconds.
    seconds = whole_seconds("max_duration", max_duration)
    check_range(
        "max_duration (seconds)",
        seconds,
        minimum=60,
        maximum=MAX_WAIT_SECONDS - int(SIGNAL_MARGIN.to_seconds()),
        fix="set max_duration between 1 minute and 11 hours 45 minutes (CloudFormation "
        "waits at most 12 hours, 15 minutes longer than the sweep)",
    )
    return seconds


def _load_keys(load: BenchmarkLoad) -> dict[str, Any]:
    """The run keys of the load; keys at their defaults are left out (a closed-loop sweep's run
    is then what it always was)."""
    keys: dict[str, Any] = {}
    if load.open_loop:
        assert load.arrival is not None
        keys.update(
            Mode="rate",
            Concurrencies=[],
            Rates=list(load.levels),
            Arrival=load.arrival.kind,
            Seed=load.arrival.seed,
        )
        if load.arrival.kind == "gamma":
            keys["Burstiness"] = load.arrival.burstiness
        if load.arrival.ramp_up_s > 0:
            keys["RampUpS"] = load.arrival.ramp_up_s
        if load.max_concurrency is not None:
            keys["MaxConcurrency"] = load.max_concurrency
    else:
        keys["Concurrencies"] = list(load.levels)
    if load.search is not None:
        keys["Search"] = load.search
        keys["SearchResolution"] = load.resolution
        if load.expected is not None:
            keys["SearchExpected"] = load.expected
    if load.slo is not None:
        keys["Slo"] = _without_none(
            {
                "MsPerToken": load.slo.ms_per_token,
                "TtftMs": load.slo.ttft_ms,
                "Fraction": load.slo.fraction,
            }
        )
    return keys


def _copies(copies: int | None, endpoint: IEndpoint, component: IInferenceComponent | None) -> int:
    """Copies sharing the sweep's load: a component's ``copy_count`` (its copies on the whole
    endpoint, over all instances), or an instance endpoint's instances (one copy of the model
    per instance) over all its variants."""
    if copies is not None:
        check_range("copies", copies, minimum=1, fix="pass the copies serving during the sweep")
        return copies
    count: object = None
    if isinstance(component, InferenceComponent):
        count = component.copy_count
    elif component is None and isinstance(endpoint, Endpoint):
        count = sum(variant.initial_instance_count or 1 for variant in endpoint.variants)
    return count if isinstance(count, int) and not is_unresolved(count) and count >= 1 else 1


def _deployment(endpoint: IEndpoint, component: IInferenceComponent | None) -> dict[str, Any]:
    """What the sweep measures, for ``results.json``'s ``deployment`` section (the key
    ``cdk-sagemaker-llm calibrate`` files a calibration under): the model and its architecture
    (``ModelSpec.to_metadata()``, what ``calibrate`` fits a custom model to), the serving engine
    (container family and release), the instance type, the accelerators per copy, the
    precision, the memory share its environment gives the engine and an FP8 KV cache, as far
    as the target's constructs state them (empty for imported targets)."""
    model: object = None
    instance_type: InstanceType | None = None
    degree: int | None = None
    if isinstance(component, InferenceComponent) and isinstance(
        endpoint, InferenceComponentEndpoint
    ):
        model, instance_type = component.model, endpoint.instance_type
        accelerators = component.accelerators
        degree = accelerators if isinstance(accelerators, int) and accelerators > 0 else None
    elif component is None and isinstance(endpoint, Endpoint) and len(endpoint.variants) == 1:
        variant = endpoint.variants[0]
        model, instance_type = variant.model, variant.instance_type
    if not isinstance(model, Model) or model.image is None or instance_type is None:
        return {}
    environment = {
        key: value for key, value in model.environment.items() if not is_unresolved(value)
    }
    facts = serving_facts(environment)
    degree = degree or facts.tensor_parallel_degree
    share = model.image.engine_profile.batching.kv_cache_memory.configured_by(environment)
    fp8_kv = FP8_KV_CACHE_SETTINGS.get(model.image.family)
    kv_cache = environment.get(fp8_kv.variable) if fp8_kv is not None else None
    found: dict[str, Any] = {
        "Model": model.spec.name if model.spec is not None else None,
        # The architecture too, so that `calibrate` needs no --model for a ModelSpec.custom.
        "ModelSpec": model.spec.to_metadata() if model.spec is not None else None,
        "EngineFamily": model.image.family.value,
        "EngineVersion": model.image.release,
        "InstanceType": instance_type.name,
        "TensorParallelDegree": degree,
        "Precision": facts.precision.value,
        # The memory share the environment gives the engine (its KV cache): the fit needs it.
        "EngineMemoryShare": share.fraction if share.set_by is not None else None,
        # How the KV cache is stored, where the family's documented setting says (fp8_e4m3fn).
        "KvCachePrecision": "fp8" if str(kv_cache or "").startswith("fp8") else None,
    }
    return {key: value for key, value in found.items() if value is not None}


def _derive_price(
    endpoint: IEndpoint,
    component: IInferenceComponent | None,
    copies: int,
    prices: PriceList,
    region: str | None,
) -> tuple[float | None, str]:
    """Price per hour of what is measured, from the price list, when the types are known;
    the source states the list's basis (and the stack's region when it differs)."""
    where = prices.basis(region)
    if isinstance(component, InferenceComponent) and isinstance(
        endpoint, InferenceComponentEndpoint
    ):
        instance = endpoint.instance_type
        hourly = prices.price_per_hour(instance)
        gpus = instance.accelerator_count
        if hourly is None or not gpus or not component.accelerators:
            return None, ""
        share = component.accelerators / gpus
        return hourly * share * copies, (
            f"{copies} copies x {component.accelerators} of {gpus} accelerators of "
            f"{instance.name} at {hourly:g}/h ({where})"
        )
    if component is None and isinstance(endpoint, Endpoint) and len(endpoint.variants) == 1:
        variant = endpoint.variants[0]
        if variant.instance_type is None:  # instance pools or serverless: no single price
            return None, ""
        hourly = prices.price_per_hour(variant.instance_type)
        if hourly is None:
            return None, ""
        count = variant.initial_instance_count or 1
        return hourly * count, f"{count} x {variant.instance_type.name} at {hourly:g}/h ({where})"
    return None, ""


def _fingerprint(
    stack: Stack, endpoint: IEndpoint, component: IInferenceComponent | None
) -> dict[str, Any]:
    """The synthesized SageMaker resources the target is made of (component, endpoint,
    endpoint configuration, models), followed through references within the stack."""
    by_id: dict[str, CfnResource] = {}
    for child in stack.node.find_all():
        if isinstance(child, CfnResource) and child.cfn_resource_type.startswith(
            "AWS::SageMaker::"
        ):
            by_id[str(stack.resolve(child.logical_id))] = child
    found: dict[str, Any] = {}
    pending = [
        str(stack.resolve(resource.logical_id))
        for resource in (getattr(endpoint, "resource", None), getattr(component, "resource", None))
        if isinstance(resource, CfnResource)
    ]
    while pending:
        logical_id = pending.pop()
        if logical_id in found or logical_id not in by_id:
            continue
        resource = by_id[logical_id]
        properties = stack.resolve(resource._cfn_properties)
        found[logical_id] = {"Type": resource.cfn_resource_type, "Properties": properties}
        pending += _references(properties)
    return {
        "Endpoint": endpoint.endpoint_name,
        "Component": component.inference_component_name if component is not None else None,
        "Resources": found,
    }


def _references(value: Any) -> list[str]:
    if isinstance(value, dict):
        if "Ref" in value and isinstance(value["Ref"], str):
            return [value["Ref"]]
        if "Fn::GetAtt" in value and isinstance(value["Fn::GetAtt"], list):
            return [str(value["Fn::GetAtt"][0])]
        return [ref for item in value.values() for ref in _references(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _references(item)]
    return []


def _load_details(load: BenchmarkLoad, workers: int, engine: BenchmarkEngine) -> dict[str, Any]:
    """What ``plan`` shows of an open-loop load, a search or goodput SLOs."""
    details: dict[str, Any] = {}
    if load.open_loop:
        assert load.arrival is not None
        details["Concurrencies"] = "open loop (request rates)"
        details["RequestRates"] = ", ".join(f"{rate:g}/s" for rate in load.levels)
        details["Arrival"] = load.arrival.describe() + (
            f", at most {load.max_concurrency} in flight" if load.max_concurrency else ""
        )
        if not load.requests_per_level:
            details["RequestsPerLevel"] = "rate x 10 s (at least 32)"
        details["Workers"] = (
            f"up to {workers} in parallel ({engine.worker_rate_capacity:g} requests/s each)"
        )
    if load.search is not None:
        details["Search"] = (
            f"{load.search} by bracketing and bisection (resolution {load.resolution:.0%})"
        )
        if load.expected is not None:
            details["Search"] += f", starting from the expected {load.expected:g}"
        if not load.open_loop:
            details["Concurrencies"] = f"searched from {load.levels[0]:g} to {load.levels[-1]:g}"
    if load.slo is not None:
        details["Goodput"] = load.slo.describe()
    return details


def _check_ttft_measured(
    load: BenchmarkLoad, gate: BenchmarkGate, protocol: RequestProtocol
) -> None:
    """A TTFT in the load's goodput SLO or in the gate needs streamed responses (the first
    token's time is measured on the stream)."""
    fix = "stream the responses (protocol=RequestProtocol(..., stream=True)), or drop "
    if load.slo is not None:
        load.slo.check_measurable(protocol.stream, "load.slo.ttft_ms", fix + "ttft_ms")
    if gate.max_p50_ttft_ms is not None and not protocol.stream:
        raise ValidationError(
            "gate.max_p50_ttft_ms",
            gate.max_p50_ttft_ms,
            "time to first token is measured on streamed responses only",
            fix + "it",
        )


def _plan_details(
    bench: EndpointBenchmark,
    workload: Workload,
    protocol: RequestProtocol,
    gate: BenchmarkGate,
    engine: BenchmarkEngine,
    max_duration: Duration,
) -> dict[str, Any]:
    """What ``plan`` shows for the benchmark."""
    load = bench.load
    levels = [] if load.open_loop else [int(level) for level in load.levels]
    gates = []
    lowest = f"concurrency {levels[0]}" if levels else "the lowest rate"
    if gate.max_p50_ms_per_token is not None:
        gates.append(f"p50 ms/token at {lowest} <= {gate.max_p50_ms_per_token:g}")
    if gate.max_p50_ttft_ms is not None:
        gates.append(f"p50 TTFT at {lowest} <= {gate.max_p50_ttft_ms:g} ms")
    if gate.min_knee_concurrency is not None:
        gates.append(f"knee >= {gate.min_knee_concurrency}")
    if gate.min_output_tokens_per_s is not None:
        gates.append(f"max throughput >= {gate.min_output_tokens_per_s:g} tokens/s")
    if gate.min_sustainable_requests_per_s is not None:
        gates.append(f"sustainable rate >= {gate.min_sustainable_requests_per_s:g}/s")
    if gate.peak is not None:
        gates.append(gate.peak.describe())
    component = bench.inference_component
    return {
        "Target": component.inference_component_name
        if component is not None
        else bench.endpoint.endpoint_name,
        "Concurrencies": ", ".join(str(level) for level in levels),
        "Payload": f"{workload.describe()}{', streaming' if protocol.stream else ''}, "
        f"{protocol.payload_format.value} format",
        "RequestsPerLevel": str(load.requests_per_level)
        if load.requests_per_level
        else "4 x concurrency (at least 16)",
        "KneeRule": load.knee_rule.describe(),
        "Gate": "; ".join(gates) or "none",
        "Workers": f"up to {bench.max_workers} in parallel "
        f"({engine.worker_capacity} requests in flight each)"
        if engine.job is None
        else "a SageMaker AI benchmark job (AIPerf), polled every "
        f"{int(engine.job.poll_interval.to_seconds())} s",
        "MaxDuration": f"{int(max_duration.to_seconds())} s",
    }
