"""A benchmark run while the stack deploys, whose figures other resources consume.

``EndpointBenchmark`` runs after its endpoint (or inference component) is in service, sweeps
concurrency levels with a stated payload, writes ``results.json`` and ``chart.svg`` to S3 and
exposes the knee concurrency, the max throughput and the p50 ms/token at the knee as
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

Modes (the CLI's, with the same ``results.json``): closed-loop ``concurrencies`` (default), or
open-loop ``request_rates`` (seeded Poisson or constant arrivals, optional ``max_concurrency``;
see ``benchmarking.open_loop``), goodput against an ``slo``, and a ``search`` for the knee or
the sustainable rate by bracketing and bisection, whose next level ``Advance`` plans from the
levels measured so far (``benchmarking.search``).

Load beyond one worker: a level of concurrency ``c`` runs on ``ceil(c / worker_capacity)``
workers started together by the Map, each keeping its share in flight; a level of rate ``r``
on ``ceil(r / worker_rate_capacity)`` workers, each sending its seeded share of the level's
arrival process. All of them wait for a
common start time planned 10 s ahead; the results record each worker's first request start
and the skew between them (stated limit: 1 s).

Lifecycle: the handle and the wait condition carry a hash of the benchmark's definition in
their logical ids: the target's synthesized SageMaker resources (component, endpoint, their
endpoint configuration and models, read when the benchmark is constructed), the payload and
the sweep. Any change there runs a new sweep; anything else runs nothing. Delete always
succeeds, even after a failed create; it stops the run's execution if it still runs (workers
already running finish their share of the current level, then no further level starts).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from aws_cdk import (
    ArnFormat,
    CfnResource,
    CustomResource,
    Duration,
    Names,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from ..benchmarking import KneeRule
from ..benchmarking.goodput import GoodputSlo
from ..benchmarking.search import DEFAULT_RESOLUTION
from ..catalog.prices import DEFAULT_PRICE_LIST, PriceList, check_discount
from .deploy_time import (
    CUSTOM_RESOURCE_TIMEOUT,
    HandlerAsset,
    HandlerPlacement,
    depend_on_policy_only,
    handler_function,
    logged_workflow,
    signalled_work,
)
from .endpoint import Endpoint, IEndpoint, InferenceComponentEndpoint
from .inference_component import IInferenceComponent, InferenceComponent
from .nag import acknowledge, acknowledge_wildcard_resources
from .prop_types import typed_props
from .validation import ValidationError, check_range, is_unresolved

HANDLER_ASSET = HandlerAsset(
    sources=(
        "errors.py",
        "lambdas/runtime_support.py",
        "lambdas/benchmark/__init__.py",
        "lambdas/benchmark/handler.py",
        "benchmarking",
    ),
    entry_module="index",
    entry_source='"""Lambda entry points of EndpointBenchmark."""\n\n'
    "from cdk_sagemaker_llm.lambdas.benchmark.handler import advance, on_event, worker\n\n"
    '__all__ = ["advance", "on_event", "worker"]\n',
)
"""The handlers and the benchmark engine (boto3/botocore and the standard library only)."""
bundle_handler = HANDLER_ASSET.bundle
asset_hash = HANDLER_ASSET.hash

RESOURCE_TYPE = "Custom::SageMakerEndpointBenchmark"
OUTPUT_RESOURCE_TYPE = "Custom::SageMakerEndpointBenchmarkOutput"
PLAN_METADATA = "cdk-sagemaker-llm:benchmark"
MAX_WAIT_SECONDS = 43_200
"""A CloudFormation wait condition's longest timeout (12 hours)."""
SIGNAL_MARGIN = Duration.minutes(15)
"""The wait lasts this much longer than ``max_duration``: the last level's requests finish,
the results are written, the signal is sent."""
MAX_LEVELS = 16
MAX_CONCURRENCY = 4096
MAX_RATE = 100_000.0
MAX_WORKER_CAPACITY = 1024
MAX_WORKER_RATE = 10_000.0
DEFAULT_CONCURRENCIES = (1, 2, 4, 8, 16, 32)
DEFAULT_WORKER_CAPACITY = 256
"""Concurrent streams per worker Lambda (1 vCPU): the highest level measured within 2 % p50 and
5 % TTFT error of the server's truth (``benchmarks/worker_capacity.py``)."""
DEFAULT_WORKER_RATE_CAPACITY = 100.0
"""Open-loop requests/s per worker Lambda, measured with the same script (schedule lag and TTFT
error within the limits with headroom)."""
MAX_WORKERS = 64
MAX_REQUESTS = 100_000
MAX_TOKENS = 200_000
DEFINITION_HASH_LENGTH = 8
WORKER_TIMEOUT = Duration.minutes(15)
LAMBDA_RETRY_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]
"""Transient Lambda errors retried by the workflow (with backoff and full jitter)."""


class Arrival(Enum):
    """How an open-loop level's requests arrive (seeded)."""

    POISSON = "poisson"
    """Exponential gaps (a Poisson process), scaled so the level's rate is exact."""
    CONSTANT = "constant"
    """One request every 1 / rate seconds."""


class BenchmarkSearch(Enum):
    """An adaptive search instead of running every level (bracketing, then bisection)."""

    KNEE = "knee"
    """The knee over the range of ``concurrencies`` (closed loop)."""
    MAX_RATE = "max-rate"
    """The highest sustainable rate over the range of ``request_rates`` (open loop)."""


class PayloadFormat(Enum):
    """The request schema sent to the serving container and the response format it answers in.

    Streaming benchmarks add ``"stream": true`` to the body: the containers stream only when
    the body asks.
    """

    AUTO = "auto"
    """The inputs API (``{"inputs", "parameters"}``); LMI or TGI answers detected per response."""
    LMI = "lmi"
    """LMI (DJL Serving): ``{"generated_text", "details"}``, JSON-lines streams."""
    TGI = "tgi"
    """Hugging Face TGI: ``[{"generated_text", "details"}]``, server-sent-event streams."""
    MESSAGES = "messages"
    """OpenAI chat completions (``{"messages", "max_tokens"}``, served by LMI and TGI): SSE
    ``choices[0].delta.content`` chunks; token counts from ``usage`` (streams ask for it with
    ``stream_options.include_usage``). For chat-tuned models."""


@typed_props
@dataclass(frozen=True, kw_only=True)
class BenchmarkGate:
    """Measured figures below which the deployment fails (with the figures as the reason)."""

    max_p50_ms_per_token: float | None = None
    """The SLO at the lowest level (concurrency 1 in the default sweep): fail when its p50
    ms/token is above this. Default: not checked."""
    min_knee_concurrency: int | None = None
    """Fail when the knee is below this concurrency. Default: not checked."""
    min_output_tokens_per_s: float | None = None
    """Fail when the max output throughput (within the knee rule's SLO) is below this.
    Default: not checked."""
    min_sustainable_requests_per_s: float | None = None
    """Open loop: fail when the sustainable rate is below this (requests/s). Default: not
    checked."""


# ----- the construct -------------------------------------------------------------------------


@typed_props
class EndpointBenchmark(Construct):
    """A concurrency sweep against an endpoint or inference component, run at deploy time.

    ::

        bench = EndpointBenchmark(self, "Bench", inference_component=component,
            concurrencies=[1, 2, 4, 8, 16], input_tokens=512, output_tokens=256,
            knee_rule=KneeRule(min_gain_per_doubling=0.1, slo_ms_per_token=60),
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
        concurrencies: Sequence[int] | None = None,
        request_rates: Sequence[float] | None = None,
        arrival: Arrival = Arrival.POISSON,
        seed: int = 0,
        max_concurrency: int | None = None,
        slo: GoodputSlo | None = None,
        search: BenchmarkSearch | None = None,
        search_resolution: float = DEFAULT_RESOLUTION,
        input_tokens: int = 256,
        output_tokens: int = 128,
        requests_per_level: int | None = None,
        stream: bool = False,
        payload_format: PayloadFormat = PayloadFormat.AUTO,
        knee_rule: KneeRule | None = None,
        gate: BenchmarkGate | None = None,
        price_per_hour: float | None = None,
        price_list: PriceList = DEFAULT_PRICE_LIST,
        discount: float = 0.0,
        copies: int | None = None,
        worker_capacity: int = DEFAULT_WORKER_CAPACITY,
        worker_rate_capacity: float = DEFAULT_WORKER_RATE_CAPACITY,
        results_bucket: s3.IBucket | None = None,
        results_encryption_key: kms.IKey | None = None,
        results_prefix: str = "endpoint-benchmarks/",
        max_duration: Duration = Duration.hours(2),
        handler_placement: HandlerPlacement | None = None,
    ) -> None:
        """
        :param endpoint: the endpoint to load; default the inference component's endpoint.
        :param inference_component: load this component of the endpoint; default none (the
            endpoint itself).
        :param concurrencies: the closed-loop levels, positive and increasing (at most 16, each
            at most 4096); default 1, 2, 4, 8, 16, 32 unless ``request_rates`` is given.
        :param request_rates: open-loop levels instead (requests/s, increasing, at most 16):
            each level sends at its rate whether or not the endpoint keeps up and reports the
            achieved rate, schedule lag, backlog growth, goodput and whether it is sustainable;
            default none (closed loop).
        :param arrival: how open-loop requests arrive; default POISSON.
        :param seed: the arrival schedule's seed; default 0.
        :param max_concurrency: open loop: cap on requests in flight (a request due beyond it
            waits, and shows as schedule lag); default none.
        :param slo: goodput objectives (ms/token, TTFT) and the sustainable fraction; default
            none (open loop: every successful request is good, fraction 95 %).
        :param search: find the knee (``KNEE``, over the range of ``concurrencies``) or the
            sustainable rate (``MAX_RATE``, over the range of ``request_rates``) by bracketing
            and bisection instead of running every level; default none (a full sweep).
        :param search_resolution: bisection stops when the bracket is within this ratio;
            default 0.25.
        :param input_tokens: tokens of each synthetic prompt; default 256.
        :param output_tokens: ``max_new_tokens`` of each request; default 128.
        :param requests_per_level: requests per level (at least the highest concurrency, so
            every level reaches its concurrency); default 4 x the level's concurrency, at least 16.
        :param stream: use InvokeEndpointWithResponseStream (measures TTFT and inter-token
            latency); default False.
        :param payload_format: the request schema and response format (``MESSAGES`` for the
            chat-completions API); default AUTO (the inputs API, LMI or TGI detected).
        :param knee_rule: when more concurrency stops paying off; default ``KneeRule()``
            (throughput gain per doubling below 10 %, no latency SLO).
        :param gate: figures that fail the deployment when unmet; default none.
        :param price_per_hour: USD per hour of what is measured, for the cost per 1M tokens;
            default derived from ``price_list`` when the instance type is known (a component:
            its share of the instance's accelerators x copies), else none.
        :param price_list: prices used to derive ``price_per_hour``; default the library's
            (us-east-1 on-demand: the results say so, and when the stack runs elsewhere).
        :param discount: savings-plan discount (0 to below 1) off ``price_per_hour`` or the
            list's prices (replacing the list's own discount); default none.
        :param copies: copies serving the load on the whole endpoint while the sweep runs
            (instances x copies per instance), for the per-copy knee; default the component's
            ``copy_count``, an instance endpoint's total ``initial_instance_count`` (one copy
            per instance), else 1 (imported).
        :param worker_capacity: concurrent requests one worker Lambda keeps in flight (1-1024);
            levels above it are split across parallel workers; default 256 (measured: see
            ``benchmarks/worker_capacity.py``).
        :param worker_rate_capacity: open loop: requests/s one worker Lambda sends (0.1-10000);
            faster levels are split across parallel workers; default 100 (measured likewise).
        :param results_bucket: where results, charts and raw samples go; default a new
            bucket (KMS encryption, SSL enforced, public access blocked, retained).
        :param results_encryption_key: the customer key of the bucket the benchmark creates;
            default the AWS-managed ``aws/s3`` key. A given ``results_bucket`` keeps its own.
        :param results_prefix: key prefix (ending in ``/``) of every run's folder; default
            ``endpoint-benchmarks/``.
        :param handler_placement: VPC and log encryption of the handler Lambdas and the
            workflow; default Lambda's own network and CloudWatch Logs' encryption.
        :param max_duration: the sweep stops starting requests after this long and fails the
            deployment if levels remain (1 minute to 11 h 45 min; the wait lasts 15 minutes
            longer); default 2 hours.
        """
        super().__init__(scope, id)
        self._placement = handler_placement or HandlerPlacement()
        stack = Stack.of(self)
        if endpoint is None and inference_component is None:
            raise ValidationError(
                "endpoint",
                None,
                "a benchmark needs an endpoint or an inference component to load",
                "pass endpoint=..., or inference_component=... (its endpoint is used)",
            )
        if endpoint is None:
            assert inference_component is not None
            endpoint = inference_component.endpoint
        elif inference_component is not None and stack.resolve(
            inference_component.endpoint.endpoint_name
        ) != stack.resolve(endpoint.endpoint_name):
            raise ValidationError(
                "inference_component",
                inference_component.inference_component_name,
                "the component is hosted on another endpoint than the one given",
                "pass the component's own endpoint, or omit endpoint=",
            )
        self.endpoint = endpoint
        """The endpoint loaded."""
        self.inference_component = inference_component
        """The component loaded, if any."""
        mode = _check_mode(
            concurrencies, request_rates, arrival, seed, max_concurrency, slo, search,
            search_resolution,
        )  # fmt: skip
        rates: list[float] = mode.get("Rates", [])
        levels: list[int] = mode.get("Concurrencies", [])
        check_range("input_tokens", input_tokens, minimum=1, maximum=MAX_TOKENS)
        check_range("output_tokens", output_tokens, minimum=1, maximum=MAX_TOKENS)
        if requests_per_level is not None and rates:
            check_range(
                "requests_per_level",
                requests_per_level,
                minimum=2,
                maximum=MAX_REQUESTS,
                fix="send at least 2 requests per level (a rate needs two sends), or omit it "
                "for 10 s at each rate (at least 32)",
            )
        elif requests_per_level is not None:
            check_range(
                "requests_per_level",
                requests_per_level,
                minimum=levels[-1],
                maximum=MAX_REQUESTS,
                fix=f"send at least {levels[-1]} requests per level (the highest concurrency), "
                "so every level reaches its concurrency, or omit it for 4 x each level",
            )
        if not isinstance(payload_format, PayloadFormat):
            raise ValidationError(
                "payload_format",
                payload_format,
                "not a PayloadFormat",
                "pass PayloadFormat.AUTO, LMI, TGI or MESSAGES",
            )
        rule = knee_rule or KneeRule()
        _check_rule(rule)
        gate = gate or BenchmarkGate()
        _check_gate(gate, open_loop=bool(rates))
        check_range(
            "worker_capacity",
            worker_capacity,
            minimum=1,
            maximum=MAX_WORKER_CAPACITY,
            fix="keep 1 to 1024 requests in flight per worker Lambda",
        )
        check_range(
            "worker_rate_capacity",
            worker_rate_capacity,
            minimum=0.1,
            maximum=MAX_WORKER_RATE,
            fix="send 0.1 to 10000 requests/s per worker Lambda",
        )
        capped = mode.get("MaxConcurrency", 0)
        if rates:
            self.max_workers = max(
                math.ceil(rates[-1] / worker_rate_capacity - 1e-9),
                -(-capped // worker_capacity) if capped else 1,
            )
        else:
            self.max_workers = max(-(-level // worker_capacity) for level in levels)
        """Workers of the largest level: the Map's MaxConcurrency."""
        if self.max_workers > MAX_WORKERS:
            prop, value, top, need = (
                ("worker_rate_capacity", worker_rate_capacity, rates[-1],
                 f"{rates[-1] / MAX_WORKERS:g}")
                if rates and rates[-1] / worker_rate_capacity > MAX_WORKERS
                else ("worker_capacity", worker_capacity, (levels or [capped])[-1],
                      str(-(-(levels or [capped])[-1] // MAX_WORKERS)))
            )  # fmt: skip
            raise ValidationError(
                prop,
                value,
                f"the highest level ({top:g}) would need {self.max_workers} workers, "
                f"more than {MAX_WORKERS}",
                f"raise {prop} to at least {need}",
            )
        _check_prefix(results_prefix)
        sweep_seconds = int(max_duration.to_seconds())
        margin = int(SIGNAL_MARGIN.to_seconds())
        check_range(
            "max_duration (seconds)",
            sweep_seconds,
            minimum=60,
            maximum=MAX_WAIT_SECONDS - margin,
            fix="set max_duration between 1 minute and 11 hours 45 minutes (CloudFormation "
            "waits at most 12 hours, 15 minutes longer than the sweep)",
        )
        self.copies = _copies(copies, endpoint, inference_component)
        """Copies serving the load during the sweep on the whole endpoint (instances x copies
        per instance); the knee divided by it is the per-copy knee."""
        check_discount("discount", discount)
        price: float | None = price_per_hour
        if price_per_hour is not None:
            check_range("price_per_hour", price_per_hour, minimum=0)
            price = price_per_hour * (1 - discount)
            price_source = f"given{f', less {discount:.0%} discount' if discount else ''}"
        else:
            listed = price_list.with_discount(discount) if discount else price_list
            region = None if is_unresolved(stack.region) else stack.region
            price, price_source = _derive_price(
                endpoint, inference_component, self.copies, listed, region
            )
        self.price_per_hour = price
        """USD per hour of what is measured, or None when unknown."""

        if results_bucket is not None and results_encryption_key is not None:
            raise ValidationError(
                "results_encryption_key",
                results_encryption_key.key_arn,
                "a given results_bucket keeps its own encryption",
                "drop results_encryption_key, or drop results_bucket to have one created "
                "with this key",
            )
        self.results_bucket = results_bucket or _results_bucket(self, results_encryption_key)
        """The bucket of the results."""
        self.results_prefix = results_prefix

        run: dict[str, Any] = {
            "Bucket": self.results_bucket.bucket_name,
            "EndpointName": endpoint.endpoint_name,
            "InferenceComponentName": inference_component.inference_component_name
            if inference_component is not None
            else "",
            "InputTokens": input_tokens,
            "OutputTokens": output_tokens,
            "Stream": stream,
            "Format": payload_format.value,
            **mode,
            "RequestsPerLevel": requests_per_level or 0,
            "WorkerCapacity": worker_capacity,
            "Copies": self.copies,
            "Rule": _without_none(
                {
                    "MinGainPerDoubling": rule.min_gain_per_doubling,
                    "SloMsPerToken": rule.slo_ms_per_token,
                    "MaxErrorRate": rule.max_error_rate,
                }
            ),
            "Gate": _without_none(
                {
                    "MaxP50MsPerToken": gate.max_p50_ms_per_token,
                    "MinKneeConcurrency": gate.min_knee_concurrency,
                    "MinOutputTokensPerS": gate.min_output_tokens_per_s,
                    "MinSustainableRate": gate.min_sustainable_requests_per_s,
                }
            ),
        }
        if rates:
            run["WorkerRateCapacity"] = worker_rate_capacity
        if price is not None:
            run["PricePerHour"] = round(price, 6)
            run["PriceSource"] = price_source
        definition = stack.resolve(
            {
                "Run": run,
                "Prefix": results_prefix,
                "SweepSeconds": sweep_seconds,
                "Target": _fingerprint(stack, endpoint, inference_component),
            }
        )
        self.definition_hash = hashlib.sha256(
            json.dumps(definition, sort_keys=True).encode()
        ).hexdigest()[:DEFINITION_HASH_LENGTH]
        """A hash of the target's resources, the payload and the sweep: a new one reruns."""
        name_prefix = (
            Names.unique_resource_name(self, max_length=40, separator="-").lower().strip("-")
        )
        stem = f"{name_prefix}-{self.definition_hash}"
        self.run_name_stem = stem
        """Runs are named ``<stem>-<6 hex of the wait handle>``; results go to
        ``<results_prefix><run name>/``."""
        objects = self.results_bucket.arn_for_objects(f"{results_prefix}{stem}-*")

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
        if inference_component is not None:
            inference_component.grant_invoke(worker)
        else:
            endpoint.grant_invoke(worker)
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
            key.grant_encrypt_decrypt(worker)
            key.grant_encrypt_decrypt(advance)
        self.state_machine = self._state_machine(
            advance, worker, Duration.seconds(sweep_seconds + margin)
        )
        """The Step Functions workflow of the sweep."""
        starter = handler_function(
            self,
            "Starter",
            placement=self._placement,
            code=code,
            handler="index.on_event",
            timeout=Duration.minutes(1),
            description="Starts the sweep (CloudFormation custom resource); Delete stops it",
        )
        self.state_machine.grant_start_execution(starter)
        # Delete stops the run's execution: only this state machine's executions.
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        iam.Grant.add_to_principal(
            grantee=starter, actions=["states:StopExecution"], resource_arns=[executions]
        )
        assert starter.role is not None
        acknowledge_wildcard_resources(
            starter.role,
            [executions],
            "StopExecution on this benchmark's own workflow only: run names carry the wait "
            "handle, known only at deploy time.",
        )

        work = signalled_work(
            self,
            definition_hash=self.definition_hash,
            handler=starter,
            resource_type=RESOURCE_TYPE,
            properties={
                "RunNameStem": stem,
                "Run": run,
                "ResultsPrefix": results_prefix,
                "SweepSeconds": sweep_seconds,
                "StateMachineArn": self.state_machine.state_machine_arn,
            },
            wait_seconds=sweep_seconds + margin,
        )
        self._resource = work.resource
        # Start once the target is in service. A name known at synth time (a component's)
        # makes no reference, hence no implicit dependency: add it.
        for target, name in (
            (endpoint, endpoint.endpoint_name),
            (inference_component, run["InferenceComponentName"]),
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
        default_child = self._resource.node.default_child
        assert isinstance(default_child, CfnResource)
        default_child.add_metadata(
            PLAN_METADATA,
            _plan_details(
                endpoint,
                inference_component,
                levels,
                input_tokens,
                output_tokens,
                stream,
                payload_format,
                requests_per_level,
                rule,
                gate,
                worker_capacity,
                max_duration,
            )
            | _mode_details(mode, gate, self.max_workers, worker_rate_capacity, requests_per_level),
        )
        for function in (worker, advance, starter):
            depend_on_policy_only(function, function.role)
        depend_on_policy_only(self.state_machine, self.state_machine.role)
        self._acknowledge_findings(objects, advance, worker)

        self.run_name: str = self._output.get_att_string("RunName")
        """The run measured by the last sweep."""
        self.knee_concurrency: float = Token.as_number(self._output.get_att("KneeConcurrency"))
        """The knee: the highest level that still bought throughput within the rule (the
        lowest level when even that one trips the rule). A number token."""
        self.knee_concurrency_per_copy: float = Token.as_number(
            self._output.get_att("KneeConcurrencyPerCopy")
        )
        """The knee divided by ``copies`` (at least 1): a per-copy autoscaling target."""
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

    # ----- internals -------------------------------------------------------------------------

    def _invoke(self, id: str, function: lambda_.IFunction) -> tasks.LambdaInvoke:
        task = tasks.LambdaInvoke(
            self,
            id,
            lambda_function=function,
            payload_response_only=True,
            retry_on_service_exceptions=False,
        )
        task.add_retry(
            errors=LAMBDA_RETRY_ERRORS,
            interval=Duration.seconds(2),
            max_attempts=6,
            backoff_rate=2,
            max_delay=Duration.seconds(60),
            jitter_strategy=sfn.JitterType.FULL,
        )
        return task

    def _state_machine(
        self, advance: lambda_.IFunction, worker: lambda_.IFunction, timeout: Duration
    ) -> sfn.StateMachine:
        step = self._invoke("AdvanceSweep", advance)
        report = self._invoke("ReportFailure", advance).next(
            sfn.Fail(self, "SweepFailed", error="SweepFailed")
        )
        step.add_catch(report, errors=["States.ALL"], result_path="$.Error")
        run_level = sfn.Map(
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
        run_level.item_processor(self._invoke("RunWorker", worker))
        run_level.add_catch(report, errors=["States.ALL"], result_path="$.Error")
        done = (
            sfn.Choice(self, "Done")
            .when(sfn.Condition.boolean_equals("$.Done", True), sfn.Succeed(self, "Signalled"))
            .otherwise(run_level.next(step))
        )
        return logged_workflow(
            self,
            definition=step.next(done),
            timeout=timeout,
            log_encryption_key=self._placement.log_encryption_key,
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


def _results_bucket(scope: Construct, key: kms.IKey | None) -> s3.Bucket:
    bucket = s3.Bucket(
        scope,
        "Results",
        encryption=s3.BucketEncryption.KMS if key else s3.BucketEncryption.KMS_MANAGED,
        encryption_key=key,
        bucket_key_enabled=True,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        versioned=False,
        removal_policy=RemovalPolicy.RETAIN,
    )
    acknowledge(
        bucket,
        "AwsSolutions-S1",
        "Benchmark results written only by this benchmark's functions; pass results_bucket= "
        "to use a bucket with server access logging.",
    )
    return bucket


def _check_mode(
    concurrencies: Sequence[int] | None,
    request_rates: Sequence[float] | None,
    arrival: Arrival,
    seed: int,
    max_concurrency: int | None,
    slo: GoodputSlo | None,
    search: BenchmarkSearch | None,
    resolution: float,
) -> dict[str, Any]:
    """The run keys of the load mode, validated; keys at their defaults are left out (a
    closed-loop sweep's run is then what it always was)."""
    if concurrencies is not None and request_rates is not None:
        raise ValidationError(
            "request_rates",
            list(request_rates),
            "a benchmark is closed loop (concurrencies) or open loop (request_rates), not both",
            "drop concurrencies for a request-rate sweep, or request_rates for a concurrency one",
        )
    for prop, value, kind in (
        ("arrival", arrival, Arrival),
        ("search", search, BenchmarkSearch),
    ):
        if value is not None and not isinstance(value, kind):
            raise ValidationError(
                prop, value, f"not a {kind.__name__}", f"pass one of {[m.name for m in kind]}"
            )
    if slo is not None and not isinstance(slo, GoodputSlo):
        raise ValidationError(
            "slo", slo, "not an Slo", "pass GoodputSlo(ms_per_token=..., ttft_ms=...)"
        )
    check_range("seed", seed, minimum=0, maximum=2**31 - 1)
    check_range("search_resolution", resolution, minimum=0.01, maximum=10)
    keys: dict[str, Any] = {}
    if request_rates is None:
        keys["Concurrencies"] = _check_concurrencies(
            DEFAULT_CONCURRENCIES if concurrencies is None else concurrencies
        )
        open_loop_only: tuple[tuple[str, Any, Any], ...] = (
            ("max_concurrency", max_concurrency, None),
            ("arrival", arrival, Arrival.POISSON),
            ("seed", seed, 0),
        )
        for prop, value, default in open_loop_only:
            if value != default:
                raise ValidationError(
                    prop, value, "applies to open-loop levels only",
                    "give request_rates, or drop it",
                )  # fmt: skip
    else:
        keys.update(
            Mode="rate",
            Concurrencies=[],
            Rates=_check_rates(request_rates),
            Arrival=arrival.value,
            Seed=seed,
        )
        if max_concurrency is not None:
            check_range("max_concurrency", max_concurrency, minimum=1, maximum=MAX_CONCURRENCY)
            keys["MaxConcurrency"] = max_concurrency
    if search is not None:
        wanted = BenchmarkSearch.MAX_RATE if request_rates is not None else BenchmarkSearch.KNEE
        if search is not wanted:
            raise ValidationError(
                "search",
                search.name,
                "KNEE searches concurrencies (closed loop), MAX_RATE searches request_rates "
                "(open loop)",
                f"use search=BenchmarkSearch.{wanted.name} with these levels",
            )
        keys["Search"] = search.value
        keys["SearchResolution"] = resolution
    if slo is not None and (slo.stated or request_rates is not None):
        keys["Slo"] = {
            key: value
            for key, value in (
                ("MsPerToken", slo.ms_per_token),
                ("TtftMs", slo.ttft_ms),
                ("Fraction", slo.fraction),
            )
            if value is not None
        }
    return keys


def _check_rates(request_rates: Sequence[float]) -> list[float]:
    rates = list(request_rates)
    if not 1 <= len(rates) <= MAX_LEVELS:
        raise ValidationError(
            "request_rates", rates, f"a sweep has 1 to {MAX_LEVELS} levels",
            "pass e.g. [1, 2, 4, 8] (requests/s)",
        )  # fmt: skip
    for index, rate in enumerate(rates):
        if (
            is_unresolved(rate)
            or not isinstance(rate, int | float)
            or isinstance(rate, bool)
            or not 0 < rate <= MAX_RATE
        ):
            raise ValidationError(
                f"request_rates[{index}]",
                rate,
                f"a rate is a number of requests/s above 0 and at most {MAX_RATE:g}, known at "
                "synth time",
                "pass literal positive numbers, e.g. [1, 2, 4, 8]",
            )
    if any(b <= a for a, b in itertools.pairwise(rates)):
        raise ValidationError(
            "request_rates", rates, "rates must increase",
            f"sort them and drop repeats: {sorted(set(rates))}",
        )  # fmt: skip
    return [float(rate) for rate in rates]


def _check_concurrencies(concurrencies: Sequence[int]) -> list[int]:
    levels = list(concurrencies)
    if not 1 <= len(levels) <= MAX_LEVELS:
        raise ValidationError(
            "concurrencies",
            levels,
            f"a sweep has 1 to {MAX_LEVELS} levels",
            "pass e.g. [1, 2, 4, 8, 16, 32]",
        )
    for index, level in enumerate(levels):
        if is_unresolved(level) or not isinstance(level, int) or isinstance(level, bool):
            raise ValidationError(
                f"concurrencies[{index}]",
                level,
                "a level is a whole number known at synth time",
                "pass literal integers, e.g. [1, 2, 4, 8]",
            )
        if not 1 <= level <= MAX_CONCURRENCY:
            raise ValidationError(
                f"concurrencies[{index}]",
                level,
                f"a level is 1 to {MAX_CONCURRENCY} concurrent requests",
                "use positive levels within that range",
            )
    for index in range(1, len(levels)):
        if levels[index] <= levels[index - 1]:
            raise ValidationError(
                "concurrencies",
                levels,
                f"levels must increase ({levels[index]} follows {levels[index - 1]})",
                f"sort them and drop repeats: {sorted(set(levels))}",
            )
    return levels


def _check_rule(rule: KneeRule) -> None:
    check_range(
        "knee_rule.min_gain_per_doubling", rule.min_gain_per_doubling, minimum=0, maximum=10
    )
    if rule.slo_ms_per_token is not None:
        check_range("knee_rule.slo_ms_per_token", rule.slo_ms_per_token, minimum=0.001)
    if rule.max_error_rate is not None:
        check_range("knee_rule.max_error_rate", rule.max_error_rate, minimum=0, maximum=1)


def _check_gate(gate: BenchmarkGate, *, open_loop: bool) -> None:
    if gate.min_sustainable_requests_per_s is not None:
        if not open_loop:
            raise ValidationError(
                "gate.min_sustainable_requests_per_s", gate.min_sustainable_requests_per_s,
                "only an open-loop benchmark measures a sustainable rate",
                "give request_rates, or drop this gate",
            )  # fmt: skip
        check_range(
            "gate.min_sustainable_requests_per_s", gate.min_sustainable_requests_per_s,
            minimum=0.001, maximum=MAX_RATE,
        )  # fmt: skip
    if open_loop and gate.min_knee_concurrency is not None:
        raise ValidationError(
            "gate.min_knee_concurrency", gate.min_knee_concurrency,
            "an open-loop benchmark has no knee (a closed-loop figure)",
            "gate on min_sustainable_requests_per_s, or sweep concurrencies",
        )  # fmt: skip
    if gate.max_p50_ms_per_token is not None:
        check_range("gate.max_p50_ms_per_token", gate.max_p50_ms_per_token, minimum=0.001)
    if gate.min_knee_concurrency is not None:
        check_range(
            "gate.min_knee_concurrency",
            gate.min_knee_concurrency,
            minimum=1,
            maximum=MAX_CONCURRENCY,
        )
    if gate.min_output_tokens_per_s is not None:
        check_range("gate.min_output_tokens_per_s", gate.min_output_tokens_per_s, minimum=0.001)


def _check_prefix(prefix: str) -> None:
    if is_unresolved(prefix):
        raise ValidationError(
            "results_prefix",
            prefix,
            "the prefix scopes the workers' write permission, so it must be known at synth time",
            "pass a literal prefix such as 'endpoint-benchmarks/'",
        )
    if not prefix or prefix.startswith("/") or not prefix.endswith("/"):
        raise ValidationError(
            "results_prefix",
            prefix,
            "a key prefix must be non-empty, end with '/' and not start with '/'",
            f"pass {(prefix.strip('/') or 'endpoint-benchmarks') + '/'!r}",
        )


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


def _mode_details(
    mode: dict[str, Any],
    gate: BenchmarkGate,
    workers: int,
    rate_capacity: float,
    requests_per_level: int | None,
) -> dict[str, Any]:
    """What ``plan`` shows of an open-loop benchmark, a search or goodput SLOs."""
    details: dict[str, Any] = {}
    if mode.get("Rates"):
        details["Concurrencies"] = "open loop (request rates)"
        details["RequestRates"] = ", ".join(f"{rate:g}/s" for rate in mode["Rates"])
        details["Arrival"] = f"{mode['Arrival']} (seed {mode['Seed']})" + (
            f", at most {mode['MaxConcurrency']} in flight" if mode.get("MaxConcurrency") else ""
        )
        if not requests_per_level:
            details["RequestsPerLevel"] = "rate x 10 s (at least 32)"
        details["Workers"] = f"up to {workers} in parallel ({rate_capacity:g} requests/s each)"
    if "Search" in mode:
        details["Search"] = (
            f"{mode['Search']} by bracketing and bisection (resolution "
            f"{mode['SearchResolution']:.0%})"
        )
    if "Slo" in mode:
        details["Goodput"] = GoodputSlo(
            mode["Slo"].get("MsPerToken"), mode["Slo"].get("TtftMs"), mode["Slo"]["Fraction"]
        ).describe()
    return details


def _plan_details(
    endpoint: IEndpoint,
    component: IInferenceComponent | None,
    levels: list[int],
    input_tokens: int,
    output_tokens: int,
    stream: bool,
    payload_format: PayloadFormat,
    requests_per_level: int | None,
    rule: KneeRule,
    gate: BenchmarkGate,
    worker_capacity: int,
    max_duration: Duration,
) -> dict[str, Any]:
    """What ``plan`` shows for the benchmark."""
    gates = []
    if gate.max_p50_ms_per_token is not None:
        lowest = f"concurrency {levels[0]}" if levels else "the lowest rate"
        gates.append(f"p50 ms/token at {lowest} <= {gate.max_p50_ms_per_token:g}")
    if gate.min_knee_concurrency is not None:
        gates.append(f"knee >= {gate.min_knee_concurrency}")
    if gate.min_output_tokens_per_s is not None:
        gates.append(f"max throughput >= {gate.min_output_tokens_per_s:g} tokens/s")
    if gate.min_sustainable_requests_per_s is not None:
        gates.append(f"sustainable rate >= {gate.min_sustainable_requests_per_s:g}/s")
    workers = max((-(-level // worker_capacity) for level in levels), default=1)
    return {
        "Target": component.inference_component_name
        if component is not None
        else endpoint.endpoint_name,
        "Concurrencies": ", ".join(str(level) for level in levels),
        "Payload": f"{input_tokens} in / {output_tokens} out tokens"
        f"{', streaming' if stream else ''}, {payload_format.value} format",
        "RequestsPerLevel": str(requests_per_level)
        if requests_per_level
        else "4 x concurrency (at least 16)",
        "KneeRule": rule.describe(),
        "Gate": "; ".join(gates) or "none",
        "Workers": f"up to {workers} in parallel ({worker_capacity} requests in flight each)",
        "MaxDuration": f"{int(max_duration.to_seconds())} s",
    }
