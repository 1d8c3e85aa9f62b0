"""An LLM service sized from its SLO and its traffic: the layout is decided at synth time.

``LlmService`` asks ``planning.decider.decide`` for a ``ServiceDecision``: which instance type
x tensor-parallel degree x copies per instance x instance count serves the peak traffic within
the SLO for the lowest price per hour (``planning.recommend``), under the user's overrides. The
construct only renders that decision:

- an inference-component endpoint on that instance type, with managed instance scaling
  between the instances the minimum and the peak traffic need;
- the model (LMI or TGI) with serving options that match the decision: tensor-parallel
  degree, the server's batch limit (LMI ``OPTION_MAX_ROLLING_BATCH_SIZE``, TGI
  ``MAX_BATCH_TOTAL_TOKENS`` = batch x tokens per request) and the longest sequence (input +
  output tokens);
- one inference component (accelerators = the tensor-parallel degree per copy);
- copy autoscaling: min/max copies from the minimum/peak traffic, held at the predicted knee
  per copy, or at the knee a deploy-time ``EndpointBenchmark`` measures when
  ``benchmark=ServiceBenchmark.knee_search()``: its knee rule holds the SLO (ms/token and
  TTFT, streamed), and its gate fails the deployment when the SLO's ms/token is missed at
  the lowest level or when the measured capacity per copy at the most copies cannot serve
  the peak traffic (``PeakCapacity``).

With ``SearchSpace(optimizations=[Optimization.awq()])`` the decision also weighs the model
quantized; when such an option wins, the construct creates the ``OptimizationJob`` it needs
(``_render_optimization_job``) and the model serves the job's output.
``Optimization.speculative_decoding()`` (an EAGLE head) is weighed the same way; when it wins,
the job trains the head (``ModelSpeculativeDecodingConfig``, technique ``EAGLE``) and the model
serves the original weights with the head as its draft: the job's recommended inference image,
``OPTION_SPECULATIVE_DRAFT_MODEL`` = the job's output folder and ``OPTION_SPECULATIVE_LENGTH``
= the draft length the decision assumed (``OptimizationJob.as_speculative_draft``). An image
that cannot serve a draft (TGI, LMI with TensorRT-LLM, LMI before 0.27.0) is refused when
speculation is among the optimizations (``speculative_decoding.check_serving_image``).

Every choice can be overridden by a prop; an override the model predicts breaks the SLO is a
warning naming the prop, one that breaks memory or capacity is a ValidationError. The decision,
its reasoning and the predicted figures with their sources are recorded as template metadata
(``cdk-sagemaker-llm:service``, ``ServiceDecision.to_metadata()``) that ``cdk-sagemaker-llm
plan`` reads back and shows beside the cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from aws_cdk import Annotations, Duration, Size, Stack
from constructs import Construct

from ..benchmarking import BenchmarkLoad, KneeRule, PayloadFormat, RequestProtocol
from ..catalog.containers import fp8_kv_cache_problem
from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.jumpstart import JumpStartModel
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..planning.calibration import EngineRelease
from ..planning.decider import HOST_MEMORY_SHARE, decide
from ..planning.engine_profiles import EngineProfile, resolve_profile
from ..planning.objectives import Slo, Traffic
from ..planning.optimizations import OptimizationKind
from ..planning.performance import Workload
from ..planning.service_decision import TGI_DEFAULT_PREFILL_TOKENS, ServiceDecision, ServingSettings
from ..planning.service_options import CopyScaling, LayoutOverrides, Pricing, SearchSpace, Sizing
from ..planning.service_request import ExpectedTraffic, Overrides, ServiceRequest
from ..planning.sizing import configured_kv_cache_memory
from ..planning.speculation import Speculation, SpeculationKind
from ..prop_types import typed_props
from ..template_metadata import SERVICE
from .autoscaling import ComponentScaling
from .benchmark import EndpointBenchmark
from .benchmark_options import BenchmarkGate, PeakCapacity
from .component_options import ComponentModel, CopyResources
from .endpoint import InferenceComponentEndpoint, RoutingStrategy
from .images import ContainerFamily, ContainerImage
from .inference_component import InferenceComponent
from .llm_service_options import ComponentSettings, ServiceBenchmark, ServiceModel
from .model import Model
from .model_source import ModelSource, ModelSourceKind
from .optimization_job import OptimizationJob
from .optimization_techniques import OptimizationTechnique, QuantizationMethod
from .serving_options import DataType, LmiOptions, Quantization, ServingOptions, TgiOptions
from .speculative_decoding import FIRST_DRAFT_RELEASE, check_serving_image
from .validation import ValidationError, is_unresolved
from .variant_options import ContainerStartup, ManagedInstanceScaling, VariantPlatform

SERVICE_MAX_ERROR_RATE = 0.05
"""A service's deploy-time benchmark: a level with more than this share of requests failing is
past the knee, and such a level at or below the knee fails the deployment. The same 5 % as a
knee search given no range (``benchmark_load.OPEN_SEARCH_MAX_ERROR_RATE``)."""

__all__ = [
    "HOST_MEMORY_SHARE",
    "TGI_DEFAULT_PREFILL_TOKENS",
    "ComponentSettings",
    "CopyScaling",
    "ExpectedTraffic",
    "LayoutOverrides",
    "LlmService",
    "Pricing",
    "SearchSpace",
    "ServiceBenchmark",
    "ServiceModel",
    "Sizing",
]


@typed_props
class LlmService(Construct):
    """A model served on an inference-component endpoint laid out from an SLO and traffic.

    ::

        service = LlmService(self, "Llama",
            model=ServiceModel.from_source(
                ModelSource.from_hugging_face(
                    "meta-llama/Meta-Llama-3-8B-Instruct", token_secret=hf_token),
                image=ContainerImage.lmi("0.38.0")),
            workload=Workload(input_tokens=512, output_tokens=256),
            slo=Slo(max_ms_per_token=50, max_ttft_ms=2000),
            traffic=ExpectedTraffic.requests_per_second(4, minimum=0.5),
            search=SearchSpace(instance_types=[InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE]),
            benchmark=ServiceBenchmark.knee_search())

    See the module documentation for what is decided and emitted.
    """

    __synth_decision__ = "LlmService decides the layout from its numbers"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        model: ServiceModel,
        workload: Workload,
        slo: Slo,
        traffic: ExpectedTraffic,
        search: SearchSpace | None = None,
        pricing: Pricing | None = None,
        sizing: Sizing | None = None,
        overrides: LayoutOverrides | None = None,
        scaling: CopyScaling | None = None,
        component: ComponentSettings | None = None,
        benchmark: ServiceBenchmark | None = None,
    ) -> None:
        """
        :param model: what is served (``ServiceModel.from_source``, ``.from_jumpstart`` or
            ``.from_optimization_job``), with its image, architecture, environment and
            loading timeout.
        :param workload: a typical request's input and output tokens (``Workload``, shared
            with ``recommend`` and ``EndpointBenchmark``).
        :param slo: the most ms/token (and, optionally, time to first token) a request sees.
        :param traffic: the peak and the minimum traffic.
        :param search: the candidates (default the optimization job's instance type, else
            every GPU type of the catalog), at most 4 instances unless it says, the precision
            (default INT4 (AWQ) for an AWQ optimization job, FP8 for an FP8 one, else FP16),
            the KV cache's precision (``KvCachePrecision.FP8``: sized with one byte per element,
            offered only on accelerators with FP8, and rendered as the image's documented
            setting, LMI ``OPTION_KV_CACHE_DTYPE=fp8`` from 0.32.0 or TGI
            ``KV_CACHE_DTYPE=fp8_e4m3fn`` from 2.4.0; another engine or release is a
            ValidationError), the tensor-parallel degrees, the server batch cap the search
            assumes, and the optimizations to weigh (AWQ, FP8 and EAGLE speculative decoding:
            when one wins, the service creates its ``OptimizationJob``, which needs S3 weights and
            ``optimization_output``; speculation needs an LMI image from 0.27.0).
        :param pricing: prices that rank the options; default the library's on-demand list
            prices in the stack's region.
        :param sizing: the risk side (default ``Risk.PESSIMISTIC``: the minimum and the
            instances expected at the peak at the median, the scaling target on the
            pessimistic side of the knee and the most instances at the pessimistic edge of the
            band, so that no validation measurement would find the ceiling too low;
            ``Risk.WORST_CASE`` sizes everything at that edge, for a service that cannot
            autoscale; ``Risk.MEDIAN`` sizes even the ceiling at the median; the reasoning
            says which side was used and what it costs), a calibration
            (``Calibration.from_file``: the next synth re-decides with it; another engine
            than the image's is a ValidationError, another model or accelerator a synth
            warning on what transferred) and the engine (default the image's).
        :param overrides: the layout pinned: instance type (it joins the candidates),
            tensor-parallel degree, copies per instance, batch limit, longest sequence.
        :param scaling: min/max copies and the target per copy pinned; default from the
            minimum and peak traffic at the predicted (or benchmarked) knee. ``min_copies=0``
            scales to zero.
        :param component: per-copy memory and CPU reservations and the rolling deployment;
            default half of a copy's share of host memory, no CPU reserved, SageMaker's
            deployment.
        :param benchmark: a deploy-time ``EndpointBenchmark`` at the workload's payload
            (``ServiceBenchmark.knee_search()``), streamed, whose knee rule holds the SLO
            (ms/token and TTFT), whose measured knee the copy autoscaling holds, and whose gate
            fails the deployment when the SLO is missed at the lowest level or the measured
            capacity at the most copies cannot serve the peak traffic; default none.
        """
        super().__init__(scope, id)
        overrides = overrides or LayoutOverrides()
        component = component or ComponentSettings()
        request = self._request(
            model, workload, slo, traffic, search or SearchSpace(), pricing, sizing, overrides
        )
        self.decision: ServiceDecision = decide(
            request,
            Overrides(
                layout=overrides,
                scaling=scaling or CopyScaling(),
                min_memory_per_copy_mib=component.min_memory_mib,
                benchmark=benchmark is not None,
            ),
        )
        """What is deployed and why (``planning.service_decision``); recorded as template
        metadata."""
        self.recommendation = self.decision.recommendation
        """Every option and rejection the performance model produced."""
        self.option = self.decision.option
        """The option served (the cheapest that meets the overrides)."""
        self._annotate_warnings()
        self.optimization_job: OptimizationJob | None = None
        """The optimization job the decision chose (``search.optimizations``), whose output
        the model serves; None when the model is served as given."""
        self.optimization_job = self._render_optimization_job(model)
        self.model = self._render_model(model, request)
        """The model, with the serving options of the decision."""
        self.endpoint = self._render_endpoint(model.loading_timeout)
        """The inference-component endpoint on the chosen instance type."""
        self.component = self._render_component(component)
        """The component: accelerators = the tensor-parallel degree per copy."""
        self.component.sized_for = workload
        self.scaling = self._render_scaling()
        """Copy autoscaling between the minimum and the peak traffic's copies."""
        self.benchmark: EndpointBenchmark | None = None
        """The deploy-time benchmark, when ``benchmark`` is given."""
        if benchmark is not None:
            self.benchmark = self._render_benchmark(model.image, request, benchmark)
        self.target_concurrency_per_copy = self._render_target()
        """The in-flight requests per copy autoscaling holds (a token with a benchmark)."""
        self.min_copies = self.decision.scaling.min_copies
        """Fewest copies."""
        self.max_copies = self.decision.scaling.max_copies
        """Most copies."""
        self._render_metadata()

    # ----- asking for the decision ----------------------------------------------------------

    def _request(
        self,
        model: ServiceModel,
        workload: Workload,
        slo: Slo,
        traffic: ExpectedTraffic,
        search: SearchSpace,
        pricing: Pricing | None,
        sizing: Sizing | None,
        overrides: LayoutOverrides,
    ) -> ServiceRequest:
        """The decision's inputs: the search space with the service's defaults (the job's
        instance type and precision; the pinned instance type joins the candidates), the
        stack's region, and the image's engine unless the sizing names one."""
        _check_optimizations(search, model)
        _check_environment(model)
        job = model.optimization_job
        precision = search.precision or _job_precision(job)
        _check_precision(precision)
        _check_kv_cache(search.kv_cache_precision, model.image)
        candidates = _candidates(
            search.instance_types,
            overrides.instance_type,
            job.instance_type if job is not None else None,
        )
        if model.source is not None and model.source.jumpstart is not None:
            candidates = _jumpstart_candidates(
                candidates,
                model.source.jumpstart,
                [*(search.instance_types or ()), overrides.instance_type],
            )
        pricing = pricing or Pricing()
        region = pricing.region or Stack.of(self).region
        pricing = replace(pricing, region=None if is_unresolved(region) else region)
        sizing = sizing or Sizing()
        engine = serving_engine(model.image) if sizing.engine is None else sizing.engine
        sizing = replace(sizing, engine=_configured(engine, model.environment))
        return ServiceRequest(
            spec=_spec(model.spec, model.weights()),
            workload=workload,
            slo=slo,
            traffic=traffic,
            search=replace(search, instance_types=candidates, precision=precision),
            pricing=pricing,
            sizing=sizing,
            tgi=model.image.family.is_tgi,
        )

    # ----- rendering the decision -----------------------------------------------------------

    def _render_scaling(self) -> ComponentScaling:
        scaling = self.decision.scaling
        return ComponentScaling(
            self,
            "Scaling",
            component=self.component,
            min_copies=scaling.min_copies,
            max_copies=scaling.max_copies,
        )

    def _render_metadata(self) -> None:
        """The decision's record, for ``cdk-sagemaker-llm plan``
        (``DecisionRecord.from_metadata``)."""
        self.component.resource.add_metadata(SERVICE, self.decision.to_metadata())

    def _annotate_warnings(self) -> None:
        """Each override the model predicts will hurt becomes a synth warning naming it, and
        each part of the calibration that did not transfer (another model or accelerator, an
        assumed engine) a warning naming ``calibration``."""
        for warning in self.decision.warnings:
            Annotations.of(self).add_warning_v2(
                f"cdk-sagemaker-llm:service-{warning.prop}", warning.message
            )
        for index, note in enumerate(self.decision.calibration_notes):
            Annotations.of(self).add_warning_v2(
                f"cdk-sagemaker-llm:service-calibration-{index}", f"calibration: {note}"
            )

    def _render_optimization_job(self, model: ServiceModel) -> OptimizationJob | None:
        """The optimization job the chosen option needs (None when the model is served as
        given): a quantization of the source's weights, or an EAGLE head trained for them,
        for the chosen instance type, written to the model's ``optimization_output``
        (``SearchSpace.optimizations``, checked by ``_check_optimizations``)."""
        optimization = self.decision.optimization
        if optimization is None:
            return None
        assert model.source is not None and model.optimization_output is not None
        technique = (
            OptimizationTechnique.speculative_decoding()
            if optimization.kind is OptimizationKind.SPECULATIVE_DECODING
            else OptimizationTechnique.quantization_of(JOB_QUANTIZATION[optimization.kind])
        )
        return OptimizationJob(
            self,
            "OptimizationJob",
            source=model.source,
            instance_type=self.decision.layout.instance_type,
            techniques=[technique],
            output=model.optimization_output,
        )

    def _render_model(self, model: ServiceModel, request: ServiceRequest) -> Model:
        """The model with the decision's serving options: the weights as given, a
        quantization job's output, or (speculative decoding) the weights as given with the
        job's EAGLE head as the draft, on the job's recommended image."""
        job = self.optimization_job
        optimization = self.decision.optimization
        image, weights, draft = model.image, model.weights(), None
        if job is not None and optimization is not None and optimization.speculation is not None:
            image = job.recommended_image(ContainerFamily.LMI)
            draft = job.as_speculative_draft(
                speculative_length=optimization.speculation.draft_length
            )
        elif job is not None:
            weights = job.as_model_source()
        jumpstart = weights.jumpstart
        if jumpstart is not None:
            # JumpStart's image and environment for the decided type, in the stack's region.
            weights = ModelSource.from_jumpstart(
                jumpstart.model_id,
                version=jumpstart.version,
                accept_eula=weights.accept_eula,
                instance_type=self.decision.layout.instance_type.name,
            )
        return Model(
            self,
            "Model",
            image=None if jumpstart is not None else image,
            source=weights,
            spec=request.spec,
            serving=_serving(self.decision.serving, model.loading_timeout),
            environment=model.environment or None,
            speculative_decoding=draft,
        )

    def _render_endpoint(self, loading_timeout: Duration) -> InferenceComponentEndpoint:
        scaling = self.decision.scaling
        return InferenceComponentEndpoint(
            self,
            "Endpoint",
            instance_type=self.decision.layout.instance_type,
            instance_scaling=ManagedInstanceScaling(
                initial_instance_count=max(1, scaling.min_instances),
                min_instance_count=scaling.min_instances,
                max_instance_count=scaling.max_instances,
            ),
            platform=VariantPlatform(routing_strategy=RoutingStrategy.LEAST_OUTSTANDING_REQUESTS),
            startup=ContainerStartup(health_check_timeout=loading_timeout),
        )

    def _render_component(self, settings: ComponentSettings) -> InferenceComponent:
        decision = self.decision
        return InferenceComponent(
            self,
            "Component",
            endpoint=self.endpoint,
            serves=ComponentModel.of(self.model),
            resources=CopyResources(
                accelerators=decision.layout.tensor_parallel_degree,
                min_memory=settings.min_memory_per_copy
                or Size.mebibytes(decision.min_memory_per_copy_mib),
                cpu_cores=settings.cpu_cores_per_copy,
            ),
            copy_count=max(1, decision.scaling.min_copies),
            deployment=settings.deployment,
        )

    def _render_target(self) -> float:
        """Scale on in-flight requests per copy: the decided target, or the benchmark's
        measured knee (a token) when the decision defers to it."""
        scaling = self.decision.scaling
        target: float = scaling.target_concurrency_per_copy
        if scaling.benchmark and self.benchmark is not None:
            target = self.benchmark.knee_concurrency_per_copy
        self.scaling.scale_on_concurrent_requests(
            target=target,
            scale_out_cooldown=Duration.minutes(1),
            scale_in_cooldown=Duration.minutes(10),
        )
        return target

    def _render_benchmark(
        self, image: ContainerImage, request: ServiceRequest, settings: ServiceBenchmark
    ) -> EndpointBenchmark:
        """A knee search of the initial copies that starts from their predicted knee (it
        brackets around the prediction and widens only where the measurement disagrees, up to
        four times the prediction), whose knee rule holds the SLO (ms/token and TTFT: the
        responses stream), gated on the SLO (one request's ms/token and TTFT) and on the peak
        at the most copies."""
        copies = max(1, self.decision.scaling.min_copies)
        predicted = max(1, self.decision.predicted.knee_concurrency_per_copy * copies)
        top = min(4096, max(2, 4 * predicted))
        slo = request.slo
        # A TTFT-only SLO has no per-token limit to stop the sweep or gate the deployment on.
        per_token = slo.max_ms_per_token if slo.limits_ms_per_token else None
        rule = KneeRule(
            min_gain_per_doubling=0.10,
            slo_ms_per_token=per_token,
            slo_ttft_ms=slo.max_ttft_ms,
            max_error_rate=SERVICE_MAX_ERROR_RATE,
        )
        return EndpointBenchmark(
            self,
            "Benchmark",
            inference_component=self.component,
            load=BenchmarkLoad.knee_search(
                low=1, high=top, expected=min(predicted, top), knee_rule=rule
            ),
            workload=request.workload,
            protocol=RequestProtocol(
                payload_format=PayloadFormat(image.family.facts.request_format),
                stream=True,
            ),
            gate=BenchmarkGate(
                max_p50_ms_per_token=per_token,
                max_p50_ttft_ms=slo.max_ttft_ms,
                max_error_rate=SERVICE_MAX_ERROR_RATE,
                peak=_peak_capacity(request.traffic.peak, self.decision.scaling.max_copies),
            ),
            max_duration=settings.max_duration,
        )


# ----- helpers ----------------------------------------------------------------------------------


def _peak_capacity(peak: Traffic, max_copies: int) -> PeakCapacity:
    """The peak traffic the benchmark's measured capacity must serve at the most copies."""
    if peak.requests_per_second is not None:
        return PeakCapacity.requests_per_second(peak.requests_per_second, max_copies=max_copies)
    assert peak.concurrency is not None
    return PeakCapacity.concurrency(peak.concurrency, max_copies=max_copies)


JOB_QUANTIZATION = {
    OptimizationKind.AWQ: QuantizationMethod.AWQ,
    OptimizationKind.FP8: QuantizationMethod.FP8,
}
"""The optimization job's quantization for each quantization LlmService can create a job for
(speculative decoding's job trains an EAGLE head instead)."""


def _check_optimizations(search: SearchSpace, model: ServiceModel) -> None:
    """Optimizations the decision may choose need weights an optimization job can read and a
    bucket for its output; speculative decoding needs an EAGLE head (what the job trains)
    and an image that serves a draft."""
    names = [o.name for o in search.optimizations]
    if not names:
        return
    if model.optimization_job is not None:
        raise ValidationError(
            "search.optimizations",
            names,
            "the model is already an optimization job's output",
            "drop optimizations, or serve the original weights with ServiceModel.from_source",
        )
    for index, optimization in enumerate(search.optimizations):
        if optimization.speculation is not None:
            _check_speculation(f"search.optimizations[{index}]", optimization.speculation, model)
    source = model.source
    if source is None or source.kind is not ModelSourceKind.S3_PREFIX:
        raise ValidationError(
            "model",
            None if source is None else source.model_id or source.s3_uri,
            "an optimization job reads uncompressed weights under an S3 prefix",
            "copy the weights to S3 and pass ServiceModel.from_source(ModelSource.from_s3(bucket, "
            "'prefix/'), ...), or drop search.optimizations",
        )
    if model.optimization_output is None:
        raise ValidationError(
            "model",
            "optimization_output=None",
            "an optimized option needs a place for its optimization job's output",
            "pass ServiceModel.from_source(..., optimization_output=OptimizationOutput."
            "in_bucket(bucket)), or drop search.optimizations",
        )


def _check_speculation(prop: str, speculation: Speculation, model: ServiceModel) -> None:
    """A speculative option LlmService can serve: an EAGLE head (the job trains it; a separate
    draft model's weights are not the service's to find) on an image that reads a draft."""
    if speculation.kind is not SpeculationKind.EAGLE:
        raise ValidationError(
            prop,
            speculation.describe(),
            "LlmService serves the EAGLE head its optimization job trains; a separate draft "
            "model's weights are not known to it",
            "use Optimization.speculative_decoding() (EAGLE), or build the Model with "
            "speculative_decoding=SpeculativeDecoding.from_s3(bucket, 'draft/')",
        )
    check_serving_image(
        "model.image",
        model.image,
        f"serve with ContainerImage.lmi('{FIRST_DRAFT_RELEASE}') or later (vLLM / LMI-Dist), "
        f"or drop Optimization.speculative_decoding() from {prop.split('[')[0]}",
    )


def serving_engine(image: ContainerImage) -> EngineRelease:
    """The engine ``image`` serves with, the key a calibration is checked against: its
    container family and release (release None for an image given by URI, whose tag the
    catalog does not read, e.g. an optimization job's recommended image)."""
    return EngineRelease(image.family.value, image.release)


def _configured(
    engine: EngineRelease | EngineProfile | str, environment: Mapping[str, str]
) -> EngineRelease | EngineProfile:
    """``engine`` with the memory share the model's ``environment`` gives its container
    (``OPTION_GPU_MEMORY_UTILIZATION``, ``CUDA_MEMORY_FRACTION``): the decision sizes the KV
    cache the container will allocate, as the model's fit check does."""
    if isinstance(engine, EngineRelease):
        return engine.configured_by(environment)
    return resolve_profile(engine).with_kv_cache_memory(
        configured_kv_cache_memory(engine, False, environment)
    )


def _jumpstart_candidates(
    candidates: list[InstanceType],
    model: JumpStartModel,
    given: Sequence[InstanceType | None],
) -> list[InstanceType]:
    """The candidates JumpStart hosts ``model`` on; a type given (in ``search.instance_types``
    or ``overrides.instance_type``) that JumpStart does not host is a ValidationError."""
    hosted = [c for c in candidates if c.name in model.instance_types]
    refused = [t.name for t in given if t is not None and t.name not in model.instance_types]
    if refused or not hosted:
        raise ValidationError(
            "search.instance_types",
            refused or [c.name for c in candidates],
            f"JumpStart does not host {model.model_id} {model.version} on these types",
            f"search among {', '.join(model.instance_types)}",
        )
    return hosted


def _source_name(source: ModelSource) -> str:
    if source.jumpstart is not None:
        return source.jumpstart.model_id
    return source.model_id or "an S3 source"


def _spec(spec: ModelSpec | None, source: ModelSource) -> ModelSpec:
    found = spec or source.spec
    if found is None:
        raise ValidationError(
            "spec",
            None,
            "the performance model needs the model's architecture, which cannot be inferred "
            f"from {_source_name(source)}",
            "pass spec= the architecture it has: the preset it derives from (ModelSpec."
            "LLAMA_3_70B for a Llama 3 70B fine-tune or distillation, ...) or "
            "ModelSpec.custom(...) with the figures of its config.json",
        )
    return found


SERVED_PRECISIONS = (Precision.FP16, Precision.BF16, Precision.FP8, Precision.INT4_AWQ)
"""Precisions LlmService renders as serving options (dtype, or AWQ/FP8 quantization)."""


def _check_precision(precision: Precision) -> None:
    if precision not in SERVED_PRECISIONS:
        raise ValidationError(
            "precision",
            precision.value,
            "LlmService renders fp16, bf16, fp8 and int4 (AWQ) serving options only",
            "pick one of those, or build the endpoint by hand with Model and InferenceComponent",
        )


_LAYOUT = "set overrides=LayoutOverrides({}=...) instead"
_PRECISION = "set search=SearchSpace(precision=...) instead"
_KV_CACHE = "set search=SearchSpace(kv_cache_precision=...) instead"
_DECIDED_LMI = {
    "OPTION_TENSOR_PARALLEL_DEGREE": _LAYOUT.format("tensor_parallel_degree"),
    "OPTION_MAX_ROLLING_BATCH_SIZE": _LAYOUT.format("max_batch_size"),
    "OPTION_MAX_MODEL_LEN": _LAYOUT.format("max_model_len"),
    "OPTION_DTYPE": _PRECISION,
    "OPTION_QUANTIZE": _PRECISION,
    "OPTION_KV_CACHE_DTYPE": _KV_CACHE,
    "OPTION_MODEL_LOADING_TIMEOUT": "set the ServiceModel factory's loading_timeout instead",
    "OPTION_ROLLING_BATCH": "the service serves with continuous batching (nothing to set)",
}
_DECIDED_TGI = {
    "SM_NUM_GPUS": _LAYOUT.format("tensor_parallel_degree"),
    "MAX_BATCH_TOTAL_TOKENS": _LAYOUT.format("max_batch_size"),
    "MAX_BATCH_PREFILL_TOKENS": "the service sets TGI's prefill budget (nothing to set)",
    "MAX_TOTAL_TOKENS": _LAYOUT.format("max_model_len"),
    "MAX_INPUT_TOKENS": _LAYOUT.format("max_model_len"),
    "MAX_INPUT_LENGTH": _LAYOUT.format("max_model_len"),
    "DTYPE": _PRECISION,
    "QUANTIZE": _PRECISION,
    "KV_CACHE_DTYPE": _KV_CACHE,
}
"""The container variables an ``LlmService`` decides (``_serving`` renders them from
``LmiOptions`` or ``TgiOptions``), each with what to do instead: the model's ``environment``
setting one would deploy what the decision did not size."""


def _check_environment(model: ServiceModel) -> None:
    """A variable of the model's ``environment`` that the service decides is a ValidationError
    naming it and the prop that sets it. Before, one the service renders reached the
    ``Model``'s merge, whose fix ("use the typed option") names options an ``LlmService`` user
    does not pass; one it renders only sometimes (an FP8 KV cache, a quantization) deployed
    what the decision had not sized."""
    decided = _DECIDED_TGI if model.image.family.is_tgi else _DECIDED_LMI
    for name, value in model.environment.items():
        if name in decided:
            raise ValidationError(
                f"model.environment[{name!r}]",
                value,
                f"{name} is what the service decides from its performance model (it renders "
                "it from the decision)",
                f"drop it from the environment; {decided[name]}",
            )


def _check_kv_cache(kv_cache: KvCachePrecision, image: ContainerImage) -> None:
    """An FP8 KV cache needs the serving container's documented setting
    (``catalog.containers.FP8_KV_CACHE_SETTINGS``): an engine or release without one is
    refused at synth rather than sized for FP8 and deployed with the activation precision's."""
    if kv_cache is KvCachePrecision.AUTO:
        return
    problem = fp8_kv_cache_problem(image.family, image.release)
    if problem is None:
        return
    engine = f"{image.family.value} {image.release or ''}".strip()
    raise ValidationError(
        "search.kv_cache_precision",
        kv_cache.value,
        f"the serving engine ({engine}) cannot be told to store its KV cache in FP8: {problem}",
        "serve on ContainerImage.lmi(...) from 0.32.0 (vLLM) or ContainerImage.tgi(...) from "
        "2.4.0, or keep KvCachePrecision.AUTO",
    )


def _job_precision(job: OptimizationJob | None) -> Precision:
    methods = {t.quantization for t in job.techniques} if job is not None else set()
    if QuantizationMethod.AWQ in methods:
        return Precision.INT4_AWQ
    if QuantizationMethod.FP8 in methods:
        return Precision.FP8
    return Precision.FP16


def _candidates(
    instance_types: Sequence[InstanceType] | None,
    instance_type: InstanceType | None,
    job_instance_type: InstanceType | None,
) -> list[InstanceType]:
    if instance_types is not None:
        candidates = list(instance_types)
    elif job_instance_type is not None:
        candidates = [job_instance_type]
    else:
        candidates = [t for t in CATALOG.values() if t.is_gpu]
    if instance_type is not None and instance_type not in candidates:
        candidates.append(instance_type)
    if not candidates:
        raise ValidationError(
            "instance_types", [], "no candidate instance type", "pass at least one GPU type"
        )
    for index, candidate in enumerate(candidates):
        if not candidate.is_gpu:
            raise ValidationError(
                f"instance_types[{index}]",
                candidate.name,
                "LlmService serves on NVIDIA GPU instances the catalog knows",
                "pass GPU types such as InstanceType.G5_12XLARGE",
            )
    return candidates


def _serving(settings: ServingSettings, loading_timeout: Duration) -> ServingOptions:
    """The decision's serving settings as the image's serving options."""
    quantization = {
        Precision.INT4_AWQ: Quantization.AWQ,
        Precision.FP8: Quantization.FP8,
    }.get(settings.precision)
    dtype = DataType.BF16 if settings.precision is Precision.BF16 else DataType.FP16
    kv_cache = None if settings.kv_cache is KvCachePrecision.AUTO else settings.kv_cache
    if settings.tgi:
        return TgiOptions(
            num_gpus=settings.tensor_parallel_degree,
            max_input_tokens=settings.max_input_tokens,
            max_total_tokens=settings.max_model_len,
            max_batch_prefill_tokens=settings.max_batch_prefill_tokens,
            max_batch_total_tokens=settings.max_batch_total_tokens,
            quantization=quantization,
            dtype=dtype,
            kv_cache_precision=kv_cache,
        )
    return LmiOptions(
        tensor_parallel_degree=settings.tensor_parallel_degree,
        max_rolling_batch_size=settings.max_batch_size,
        max_model_len=settings.max_model_len,
        dtype=dtype,
        quantization=quantization,
        model_loading_timeout=loading_timeout,
        kv_cache_precision=kv_cache,
    )
