"""An LLM service sized from its SLO and its traffic: the layout is decided at synth time.

``LlmService`` asks ``planning.decision.decide`` for a ``ServiceDecision``: which instance type
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
  per copy, or at the knee a deploy-time ``EndpointBenchmark`` measures when ``benchmark=True``
  (whose gate is the SLO).

Every choice can be overridden by a prop; an override the model predicts breaks the SLO is a
warning naming the prop, one that breaks memory or capacity is a ValidationError. The decision,
its reasoning and the predicted figures with their sources are recorded as template metadata
(``cdk-sagemaker-llm:service``, ``ServiceDecision.to_metadata()``) that ``cdk-sagemaker-llm
plan`` reads back and shows beside the cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Annotations, Duration, Size, Stack
from constructs import Construct

from ..benchmarking import BenchmarkLoad, KneeRule, PayloadFormat, RequestProtocol
from ..catalog.containers import ContainerFamily
from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.model_specs import ModelSpec, Precision
from ..catalog.prices import DEFAULT_PRICE_LIST, PriceList
from ..planning.calibration import Calibration, EngineRelease
from ..planning.decision import (
    HOST_MEMORY_SHARE,
    TGI_DEFAULT_PREFILL_TOKENS,
    ExpectedTraffic,
    Overrides,
    ServiceDecision,
    ServiceRequest,
    ServingSettings,
    decide,
)
from ..planning.performance import Workload
from ..planning.recommend import PriceBasis, Risk, Slo
from ..prop_types import typed_props
from ..template_metadata import SERVICE
from .autoscaling import ComponentScaling
from .benchmark import EndpointBenchmark
from .benchmark_options import BenchmarkGate
from .component_options import ComponentModel, CopyResources
from .deployment import RollingDeployment
from .endpoint import InferenceComponentEndpoint, RoutingStrategy
from .images import ContainerImage
from .inference_component import InferenceComponent
from .model import Model
from .model_source import ModelSource
from .optimization_job import OptimizationJob
from .optimization_techniques import QuantizationMethod
from .serving_options import DataType, LmiOptions, Quantization, ServingOptions, TgiOptions
from .validation import ValidationError, check_range, is_unresolved
from .variant_options import ContainerStartup, ManagedInstanceScaling, VariantPlatform

__all__ = ["HOST_MEMORY_SHARE", "TGI_DEFAULT_PREFILL_TOKENS", "ExpectedTraffic", "LlmService"]

SERVICE_FAMILIES = (ContainerFamily.LMI, ContainerFamily.LMI_TENSORRT_LLM, ContainerFamily.TGI)
"""Images whose serving options LlmService renders (GPU LMI and TGI)."""


@typed_props
class LlmService(Construct):
    """A model served on an inference-component endpoint laid out from an SLO and traffic.

    ::

        service = LlmService(self, "Llama", image=ContainerImage.lmi("0.31.0"),
            source=ModelSource.from_hugging_face("meta-llama/Meta-Llama-3-8B-Instruct"),
            input_tokens=512, output_tokens=256,
            slo=Slo(max_ms_per_token=50, max_ttft_ms=2000),
            traffic=ExpectedTraffic.requests_per_second(4, minimum=0.5),
            instance_types=[InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE],
            benchmark=True)

    See the module documentation for what is decided and emitted.
    """

    __synth_decision__ = "LlmService decides the layout from its numbers"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    def __init__(  # noqa: PLR0913 - known offender (issue 18 item 5): group the props
        self,
        scope: Construct,
        id: str,
        *,
        image: ContainerImage | None = None,
        source: ModelSource | None = None,
        optimization_job: OptimizationJob | None = None,
        spec: ModelSpec | None = None,
        slo: Slo,
        traffic: ExpectedTraffic,
        input_tokens: int,
        output_tokens: int,
        instance_types: Sequence[InstanceType] | None = None,
        max_instance_count: int = 4,
        precision: Precision | None = None,
        prices: PriceList = DEFAULT_PRICE_LIST,
        price_basis: PriceBasis = PriceBasis.ON_DEMAND,
        calibration: Calibration | None = None,
        risk: Risk = Risk.PESSIMISTIC,
        instance_type: InstanceType | None = None,
        tensor_parallel_degree: int | None = None,
        copies_per_instance: int | None = None,
        max_batch_size: int | None = None,
        max_model_len: int | None = None,
        min_copies: int | None = None,
        max_copies: int | None = None,
        target_concurrency_per_copy: float | None = None,
        min_memory_per_copy: Size | None = None,
        cpu_cores_per_copy: float | None = None,
        environment: Mapping[str, str] | None = None,
        deployment: RollingDeployment | None = None,
        model_loading_timeout: Duration = Duration.minutes(15),
        benchmark: bool = False,
        benchmark_max_duration: Duration = Duration.hours(1),
    ) -> None:
        """
        :param image: the serving container, an LMI (vLLM, LMI-Dist, TensorRT-LLM) or TGI GPU
            image; default the optimization job's recommended image (required without one).
        :param source: the weights; give this or ``optimization_job``.
        :param optimization_job: serve this job's output (its quantization sets the default
            precision); give this or ``source``.
        :param spec: the model's architecture; default inferred from a well-known Hugging Face
            id (required otherwise: the performance model needs it).
        :param slo: the most ms/token (and, optionally, time to first token) a request sees.
        :param traffic: the peak and the minimum traffic.
        :param input_tokens: prompt tokens of a typical request.
        :param output_tokens: generated tokens of a typical request.
        :param instance_types: candidate instance types; default the optimization job's
            instance type (its output is built for it), else every GPU type of the catalog.
        :param max_instance_count: the most instances the service may use; default 4.
        :param precision: weights precision; default INT4 (AWQ) for an AWQ optimization job,
            FP8 for an FP8 one, else FP16.
        :param prices: prices that rank the options; default the library's list.
        :param price_basis: on-demand or 1-year savings plan prices; default on-demand.
        :param calibration: efficiency factors fitted from a deploy-time benchmark
            (``Calibration.from_file("calibration.json")``, written by ``cdk-sagemaker-llm
            calibrate``); the next synth re-decides with them. A calibration of another engine
            than the image's is a ValidationError; of another model or accelerator only the
            engine- and hardware-level factors transfer, and a synth warning says so. Default
            the model's uncalibrated constants.
        :param risk: which side of each prediction's band the layout is sized on:
            ``Risk.PESSIMISTIC`` (default; the slowest cross-validated residual of the engine
            profile, so no validation measurement would be under-provisioned) or
            ``Risk.MEDIAN`` (cheaper; about half of deployments would be slower than
            predicted). The reasoning says which side was used and what it costs.
        :param instance_type: override: serve on this type (it joins the candidates).
        :param tensor_parallel_degree: override: accelerators each copy is sharded over.
        :param copies_per_instance: override: copies on each instance; fewer than fit leaves
            accelerators free for other components and spreads the same copies over more
            instances.
        :param max_batch_size: override: the server's batch limit per copy; default the
            recommendation's. Above what the KV cache holds is an error.
        :param max_model_len: override: longest sequence served; default input + output tokens.
        :param min_copies: override: fewest copies; default what the minimum traffic needs at
            the target per copy (at least 1). 0 scales to zero (endpoint min instances 0).
        :param max_copies: override: most copies; default what the peak traffic needs.
        :param target_concurrency_per_copy: override: the in-flight requests per copy that
            autoscaling holds; default the predicted knee per copy, or the benchmark's measured
            knee when ``benchmark`` is True.
        :param min_memory_per_copy: host memory each copy reserves; default half of its share
            of the instance's memory (its accelerators' share).
        :param cpu_cores_per_copy: CPU cores each copy reserves; default none reserved.
        :param environment: extra container variables; default none.
        :param deployment: rolling updates of the component with alarm rollback; default
            SageMaker's.
        :param model_loading_timeout: how long a copy may take to load and pass its health
            check; default 15 minutes.
        :param benchmark: run a deploy-time ``EndpointBenchmark`` at the workload's payload
            whose gate is the SLO, and scale on its measured knee; default False.
        :param benchmark_max_duration: the sweep's time limit; default 1 hour.
        """
        super().__init__(scope, id)
        image, source = _image_and_source(image, source, optimization_job)
        check_range("input_tokens", input_tokens, minimum=1)
        check_range("output_tokens", output_tokens, minimum=1)
        check_range("max_instance_count", max_instance_count, minimum=1)
        precision = precision or _job_precision(optimization_job)
        _check_precision(precision)
        job_type = optimization_job.instance_type if optimization_job is not None else None
        region = Stack.of(self).region
        request = ServiceRequest(
            spec=_spec(spec, source),
            workload=Workload(input_tokens=input_tokens, output_tokens=output_tokens),
            slo=slo,
            traffic=traffic,
            candidates=_candidates(instance_types, instance_type, job_type),
            max_instance_count=max_instance_count,
            precision=precision,
            prices=prices,
            price_basis=price_basis,
            calibration=calibration,
            region=None if is_unresolved(region) else region,
            tgi=image.family.is_tgi,
            engine=serving_engine(image),
            risk=risk,
        )
        self.decision: ServiceDecision = decide(
            request,
            Overrides(
                instance_type=instance_type,
                tensor_parallel_degree=tensor_parallel_degree,
                copies_per_instance=copies_per_instance,
                max_batch_size=max_batch_size,
                max_model_len=max_model_len,
                min_copies=min_copies,
                max_copies=max_copies,
                target_concurrency_per_copy=target_concurrency_per_copy,
                min_memory_per_copy_mib=None
                if min_memory_per_copy is None
                else int(min_memory_per_copy.to_mebibytes()),
                benchmark=benchmark,
            ),
        )
        """What is deployed and why (``planning.decision``); recorded as template metadata."""
        assert self.decision.option is not None and self.decision.recommendation is not None
        self.recommendation = self.decision.recommendation
        """Every option and rejection the performance model produced."""
        self.option = self.decision.option
        """The option served (the cheapest that meets the overrides)."""
        self._annotate_warnings()
        self.model = self._render_model(image, source, request, environment, model_loading_timeout)
        """The model, with the serving options of the decision."""
        self.endpoint = self._render_endpoint(model_loading_timeout)
        """The inference-component endpoint on the chosen instance type."""
        self.component = self._render_component(min_memory_per_copy, cpu_cores_per_copy, deployment)
        """The component: accelerators = the tensor-parallel degree per copy."""
        self.scaling = self._render_scaling()
        """Copy autoscaling between the minimum and the peak traffic's copies."""
        self.benchmark: EndpointBenchmark | None = None
        """The deploy-time benchmark, when ``benchmark`` is True."""
        if benchmark:
            self.benchmark = self._render_benchmark(image, request, benchmark_max_duration)
        self.target_concurrency_per_copy = self._render_target()
        """The in-flight requests per copy autoscaling holds (a token with a benchmark)."""
        self.min_copies = self.decision.scaling.min_copies
        """Fewest copies."""
        self.max_copies = self.decision.scaling.max_copies
        """Most copies."""
        self._render_metadata()

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
        """The decision, for ``cdk-sagemaker-llm plan`` (``ServiceDecision.from_metadata``)."""
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

    def _render_model(
        self,
        image: ContainerImage,
        source: ModelSource,
        request: ServiceRequest,
        environment: Mapping[str, str] | None,
        loading_timeout: Duration,
    ) -> Model:
        return Model(
            self,
            "Model",
            image=image,
            source=source,
            spec=request.spec,
            serving=_serving(self.decision.serving, loading_timeout),
            environment=environment,
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

    def _render_component(
        self,
        min_memory: Size | None,
        cpu_cores: float | None,
        deployment: RollingDeployment | None,
    ) -> InferenceComponent:
        decision = self.decision
        return InferenceComponent(
            self,
            "Component",
            endpoint=self.endpoint,
            serves=ComponentModel.of(self.model),
            resources=CopyResources(
                accelerators=decision.layout.tensor_parallel_degree,
                min_memory=min_memory or Size.mebibytes(decision.min_memory_per_copy_mib),
                cpu_cores=cpu_cores,
            ),
            copy_count=max(1, decision.scaling.min_copies),
            deployment=deployment,
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
        self, image: ContainerImage, request: ServiceRequest, max_duration: Duration
    ) -> EndpointBenchmark:
        """A knee search of the initial copies that starts from their predicted knee (it
        brackets around the prediction and widens only where the measurement disagrees, up to
        four times the prediction), gated on the SLO."""
        copies = max(1, self.decision.scaling.min_copies)
        predicted = max(1, self.decision.predicted.knee_concurrency_per_copy * copies)
        top = min(4096, max(2, 4 * predicted))
        slo = request.slo
        # A TTFT-only SLO has no per-token limit to stop the sweep or gate the deployment on.
        per_token = slo.max_ms_per_token if slo.limits_ms_per_token else None
        rule = KneeRule(min_gain_per_doubling=0.10, slo_ms_per_token=per_token)
        return EndpointBenchmark(
            self,
            "Benchmark",
            inference_component=self.component,
            load=BenchmarkLoad.knee_search(
                low=1, high=top, expected=min(predicted, top), knee_rule=rule
            ),
            workload=request.workload,
            protocol=RequestProtocol(
                payload_format=PayloadFormat.TGI if image.family.is_tgi else PayloadFormat.LMI,
                stream=True,
            ),
            gate=BenchmarkGate(max_p50_ms_per_token=per_token) if per_token else None,
            max_duration=max_duration,
        )


# ----- helpers ----------------------------------------------------------------------------------


def _image_and_source(
    image: ContainerImage | None, source: ModelSource | None, job: OptimizationJob | None
) -> tuple[ContainerImage, ModelSource]:
    if job is not None:
        if source is not None:
            raise ValidationError(
                "source",
                source.model_id or source.s3_uri,
                "the service serves the optimization job's output",
                "drop source, or drop optimization_job",
            )
        source = job.as_model_source()
        image = image or job.recommended_image()
    if source is None:
        raise ValidationError(
            "source",
            None,
            "a service needs the model's weights",
            "pass source=ModelSource.from_hugging_face(...) or optimization_job=...",
        )
    if image is None:
        raise ValidationError(
            "image",
            None,
            "a service needs a serving container",
            'pass image=ContainerImage.lmi("0.31.0") or ContainerImage.tgi(...)',
        )
    if image.family not in SERVICE_FAMILIES:
        raise ValidationError(
            "image",
            image.family.value,
            "LlmService renders serving options for GPU LMI and TGI images only",
            "use ContainerImage.lmi(...), .lmi_tensorrt_llm(...) or .tgi(...), or build the "
            "endpoint by hand with Model and InferenceComponent",
        )
    return image, source


def serving_engine(image: ContainerImage) -> EngineRelease:
    """The engine ``image`` serves with, the key a calibration is checked against: its
    container family and release (release None for an image given by URI, whose tag the
    catalog does not read, e.g. an optimization job's recommended image)."""
    return EngineRelease(image.family.value, image.release)


def _spec(spec: ModelSpec | None, source: ModelSource) -> ModelSpec:
    found = spec or ModelSpec.from_hugging_face_id(source.model_id)
    if found is None:
        raise ValidationError(
            "spec",
            None,
            "the performance model needs the model's architecture, which cannot be inferred "
            f"from {source.model_id or 'an S3 source'}",
            "pass spec=ModelSpec.LLAMA_3_8B (a preset) or ModelSpec.custom(...)",
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
    if settings.tgi:
        return TgiOptions(
            num_gpus=settings.tensor_parallel_degree,
            max_input_tokens=settings.max_input_tokens,
            max_total_tokens=settings.max_model_len,
            max_batch_prefill_tokens=settings.max_batch_prefill_tokens,
            max_batch_total_tokens=settings.max_batch_total_tokens,
            quantization=quantization,
            dtype=dtype,
        )
    return LmiOptions(
        tensor_parallel_degree=settings.tensor_parallel_degree,
        max_rolling_batch_size=settings.max_batch_size,
        max_model_len=settings.max_model_len,
        dtype=dtype,
        quantization=quantization,
        model_loading_timeout=loading_timeout,
    )
