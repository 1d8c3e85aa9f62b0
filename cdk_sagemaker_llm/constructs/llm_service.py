"""An LLM service sized from its SLO and its traffic: the layout is decided at synth time.

``LlmService`` asks the performance model (``planning.recommend``) which instance type x
tensor-parallel degree x copies per instance x instance count serves the peak traffic within
the SLO for the lowest price per hour, then emits what that decision means:

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
its reasoning and the predicted figures are recorded as template metadata
(``cdk-sagemaker-llm:service``) that ``cdk-sagemaker-llm plan`` shows beside the cost.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aws_cdk import Annotations, Duration, Size, Stack
from constructs import Construct

from ..benchmarking import BenchmarkLoad, KneeRule, PayloadFormat, RequestProtocol
from ..catalog.containers import ContainerFamily
from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.model_specs import ModelSpec, Precision
from ..catalog.prices import DEFAULT_PRICE_LIST, PriceList
from ..planning.calibration import Calibration
from ..planning.performance import (
    DEFAULT_EFFICIENCY,
    CopyModel,
    Layout,
    Workload,
    copy_limits,
    predict,
)
from ..planning.recommend import (
    Option,
    PriceBasis,
    Recommendation,
    Slo,
    Traffic,
    recommend,
    unit_price,
)
from ..template_metadata import SERVICE
from .autoscaling import ComponentScaling
from .benchmark import EndpointBenchmark
from .benchmark_options import BenchmarkGate
from .deployment import RollingDeployment
from .endpoint import InferenceComponentEndpoint, RoutingStrategy
from .images import ContainerImage
from .inference_component import InferenceComponent
from .model import Model
from .model_source import ModelSource
from .optimization_job import OptimizationJob, QuantizationMethod
from .serving_options import DataType, LmiOptions, Quantization, ServingOptions, TgiOptions
from .validation import ValidationError, check_range, is_unresolved

SERVICE_FAMILIES = (ContainerFamily.LMI, ContainerFamily.LMI_TENSORRT_LLM, ContainerFamily.TGI)
"""Images whose serving options LlmService renders (GPU LMI and TGI)."""
HOST_MEMORY_SHARE = 0.5
"""Of a copy's share of host memory (its accelerators' share of the instance), the part its
``min_memory`` reserves by default: the rest stays free for SageMaker's agents, the OS and the
page cache that loading weights goes through."""
TGI_DEFAULT_PREFILL_TOKENS = 4096
"""TGI's default ``MAX_BATCH_PREFILL_TOKENS``; a longer prompt needs it raised."""


@dataclass(frozen=True)
class ExpectedTraffic:
    """The traffic the service must carry: its peak, and the least it sees (what it keeps).

    Build it with ``ExpectedTraffic.requests_per_second(peak, minimum=...)`` or
    ``ExpectedTraffic.concurrency(peak, minimum=...)``.
    """

    peak: Traffic
    """The most traffic, served within the SLO at the most copies."""
    minimum: float = 0
    """The least traffic, in the peak's unit (requests/s or concurrent requests): it sets the
    fewest copies kept (at least 1)."""

    @staticmethod
    def requests_per_second(peak: float, *, minimum: float = 0) -> ExpectedTraffic:
        """Traffic as arrival rates (requests/s); concurrency follows by Little's law."""
        check_range("traffic.peak (requests/s)", peak, minimum=0.001)
        check_range("traffic.minimum (requests/s)", minimum, minimum=0, maximum=peak)
        return ExpectedTraffic(Traffic(requests_per_second=peak), minimum)

    @staticmethod
    def concurrency(peak: int, *, minimum: int = 0) -> ExpectedTraffic:
        """Traffic as requests in flight at once."""
        check_range("traffic.peak (concurrency)", peak, minimum=1)
        check_range("traffic.minimum (concurrency)", minimum, minimum=0, maximum=peak)
        return ExpectedTraffic(Traffic(concurrency=peak), minimum)

    def minimum_concurrency(self, e2e_seconds: float) -> float:
        """The minimum as requests in flight (Little's law: rate x end-to-end latency)."""
        if self.peak.requests_per_second is not None:
            return self.minimum * e2e_seconds
        return self.minimum

    def describe(self) -> str:
        """``peak 4 requests/s, minimum 0.5 requests/s`` or the same in concurrency."""
        if self.peak.requests_per_second is not None:
            return (
                f"peak {self.peak.requests_per_second:g} requests/s, minimum "
                f"{self.minimum:g} requests/s"
            )
        return f"peak {self.peak.concurrency} concurrent, minimum {self.minimum:g}"


@dataclass(frozen=True)
class _Choice:
    """A value LlmService settled on and where it came from."""

    value: Any
    source: str  # "recommended", "predicted", "override", "benchmark"


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

    def __init__(
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
        :param calibration: efficiency factors fitted from a benchmark's results; default the
            model's uncalibrated constants.
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
        self._warnings: list[str] = []
        image, source = _image_and_source(image, source, optimization_job)
        spec = _spec(spec, source)
        check_range("input_tokens", input_tokens, minimum=1)
        check_range("output_tokens", output_tokens, minimum=1)
        check_range("max_instance_count", max_instance_count, minimum=1)
        precision = precision or _job_precision(optimization_job)
        _check_precision(precision)
        workload = Workload(input_tokens=input_tokens, output_tokens=output_tokens)
        candidates = _candidates(
            instance_types,
            instance_type,
            optimization_job.instance_type if optimization_job is not None else None,
        )

        region = Stack.of(self).region
        recommendation = recommend(
            spec,
            workload,
            slo,
            traffic.peak,
            precision=precision,
            instance_types=candidates,
            max_instance_count=max_instance_count,
            prices=prices,
            price_basis=price_basis,
            calibration=calibration,
            top=len(candidates) * 64,
            region=None if is_unresolved(region) else region,
        )
        option = _choose(
            recommendation,
            instance_type=instance_type,
            tensor_parallel_degree=tensor_parallel_degree,
            max_instance_count=max_instance_count,
        )
        if copies_per_instance is not None:
            option = _repack(
                option,
                copies_per_instance,
                spec=spec,
                workload=workload,
                precision=precision,
                calibration=calibration,
                price=unit_price(option.layout.instance_type, prices, price_basis),
                max_instance_count=max_instance_count,
            )
        self.recommendation = recommendation
        """Every option and rejection the performance model produced."""
        self.option = option
        """The option served (the cheapest that meets the overrides)."""
        layout = option.layout
        per_instance = layout.copies_per_instance

        # ----- copies and the scaling target ------------------------------------------------
        batch = _override(max_batch_size, option.max_batch_size)
        self._check_batch(spec, layout, workload, precision, calibration, batch.value)
        knee = _override(target_concurrency_per_copy, option.knee_concurrency_per_copy)
        if target_concurrency_per_copy is not None:
            check_range("target_concurrency_per_copy", target_concurrency_per_copy, minimum=0.001)
            self._check_target(
                spec, layout, workload, precision, calibration, slo, knee.value, batch.value
            )
        if knee.value > batch.value:
            self._warn(
                "target_concurrency_per_copy",
                f"target_concurrency_per_copy={knee.value:g} is above the batch limit per copy "
                f"({batch.value}): requests beyond the batch queue in the server",
            )
        peak_concurrency = option.predicted.concurrency
        needed_max = max(1, math.ceil(peak_concurrency / knee.value))
        most = _override(
            max_copies, max(needed_max, layout.instance_count * per_instance), "derived"
        )
        if max_copies is not None:
            check_range("max_copies", max_copies, minimum=1)
            if max_copies < needed_max:
                self._warn(
                    "max_copies",
                    f"max_copies={max_copies} is below the {needed_max} copies the peak "
                    f"({peak_concurrency} in flight) needs at {knee.value:g} per copy: the peak "
                    "would exceed the SLO",
                )
        minimum_concurrency = traffic.minimum_concurrency(option.predicted.e2e_ms / 1000)
        fewest = _override(
            min_copies,
            min(most.value, max(1, math.ceil(minimum_concurrency / knee.value))),
            "derived",
        )
        check_range("min_copies", fewest.value, minimum=0, maximum=most.value)
        max_instances = math.ceil(most.value / per_instance)
        if max_instances > max_instance_count:
            raise ValidationError(
                "max_copies",
                most.value,
                f"{most.value} copies at {per_instance} per {layout.instance_type.name} need "
                f"{max_instances} instances, above max_instance_count ({max_instance_count})",
                f"lower max_copies to at most {max_instance_count * per_instance}, or raise "
                "max_instance_count",
            )
        min_instances = math.ceil(fewest.value / per_instance)
        model_len = _override(max_model_len, input_tokens + output_tokens, "derived")
        check_range(
            "max_model_len",
            model_len.value,
            minimum=input_tokens + output_tokens,
            fix="serve at least input_tokens + output_tokens per request",
        )

        # ----- resources --------------------------------------------------------------------
        serving = _serving(
            image,
            layout.tensor_parallel_degree,
            batch.value,
            model_len.value,
            input_tokens,
            precision,
            model_loading_timeout,
        )
        self.model = Model(
            self,
            "Model",
            image=image,
            source=source,
            spec=spec,
            serving=serving,
            environment=environment,
        )
        """The model, with the serving options of the decision."""
        self.endpoint = InferenceComponentEndpoint(
            self,
            "Endpoint",
            instance_type=layout.instance_type,
            initial_instance_count=max(1, min_instances),
            min_instance_count=min_instances,
            max_instance_count=max_instances,
            routing_strategy=RoutingStrategy.LEAST_OUTSTANDING_REQUESTS,
            container_startup_health_check_timeout=model_loading_timeout,
        )
        """The inference-component endpoint on the chosen instance type."""
        memory = min_memory_per_copy or _default_memory(layout)
        self.component = InferenceComponent(
            self,
            "Component",
            endpoint=self.endpoint,
            model=self.model,
            accelerators=layout.tensor_parallel_degree,
            min_memory=memory,
            cpu_cores=cpu_cores_per_copy,
            copy_count=max(1, fewest.value),
            deployment=deployment,
        )
        """The component: accelerators = the tensor-parallel degree per copy."""
        self.scaling = ComponentScaling(
            self,
            "Scaling",
            component=self.component,
            min_copies=fewest.value,
            max_copies=most.value,
        )
        """Copy autoscaling between the minimum and the peak traffic's copies."""
        self.benchmark: EndpointBenchmark | None = None
        """The deploy-time benchmark, when ``benchmark`` is True."""
        target: float = knee.value
        if benchmark:
            self.benchmark = self._benchmark(
                image, workload, slo, option, max(1, fewest.value), benchmark_max_duration
            )
            if target_concurrency_per_copy is None:
                target = self.benchmark.knee_concurrency_per_copy
                knee = _Choice(knee.value, "benchmark")
        self.scaling.scale_on_concurrent_requests(
            target=target,
            scale_out_cooldown=Duration.minutes(1),
            scale_in_cooldown=Duration.minutes(10),
        )
        self.min_copies = fewest.value
        """Fewest copies."""
        self.max_copies = most.value
        """Most copies."""
        self.target_concurrency_per_copy = target
        """The in-flight requests per copy autoscaling holds (a token with a benchmark)."""

        self.decision = self._decision(
            spec=spec,
            precision=precision,
            workload=workload,
            slo=slo,
            traffic=traffic,
            candidates=candidates,
            prices=prices,
            price_basis=price_basis,
            calibration=calibration,
            choices={
                "instance_type": _Choice(layout.instance_type.name, _source(instance_type)),
                "tensor_parallel_degree": _Choice(
                    layout.tensor_parallel_degree, _source(tensor_parallel_degree)
                ),
                "copies_per_instance": _Choice(per_instance, _source(copies_per_instance)),
                "max_batch_size": batch,
                "max_model_len": model_len,
                "min_copies": fewest,
                "max_copies": most,
                "min_instances": _Choice(min_instances, "derived"),
                "max_instances": _Choice(max_instances, "derived"),
                "target_concurrency_per_copy": knee,
                "min_memory_per_copy_mib": _Choice(
                    int(memory.to_mebibytes()),
                    "override" if min_memory_per_copy is not None else "derived",
                ),
            },
        )
        """What was decided, why, and the predicted figures (the template metadata)."""
        self.component.resource.add_metadata(SERVICE, self.decision)

    # ----- checks of overrides ------------------------------------------------------------------

    def _warn(self, prop: str, message: str) -> None:
        self._warnings.append(message)
        Annotations.of(self).add_warning_v2(f"cdk-sagemaker-llm:service-{prop}", message)

    @staticmethod
    def _check_batch(
        spec: ModelSpec,
        layout: Layout,
        workload: Workload,
        precision: Precision,
        calibration: Calibration | None,
        batch: int,
    ) -> None:
        """A batch limit above the sequences one copy's KV cache holds is an error."""
        check_range("max_batch_size", batch, minimum=1)
        model = CopyModel(
            spec,
            layout.instance_type,
            layout.tensor_parallel_degree,
            precision,
            workload,
            calibration.efficiency if calibration is not None else DEFAULT_EFFICIENCY,
        )
        limits, _ = copy_limits(model, batch)
        if batch > limits.kv_sequences:
            raise ValidationError(
                "max_batch_size",
                batch,
                f"one copy (tensor-parallel degree {layout.tensor_parallel_degree} on "
                f"{layout.instance_type.name}) holds at most {limits.kv_sequences} sequences of "
                f"{workload.input_tokens} + {workload.output_tokens} tokens in its KV cache",
                f"lower max_batch_size to at most {limits.kv_sequences}, or shard each copy wider",
            )

    def _check_target(
        self,
        spec: ModelSpec,
        layout: Layout,
        workload: Workload,
        precision: Precision,
        calibration: Calibration | None,
        slo: Slo,
        target: float,
        batch: int,
    ) -> None:
        one_copy = Layout(layout.instance_type, layout.tensor_parallel_degree, 1, 1)
        level = max(1, math.ceil(target))
        predicted = predict(
            spec,
            one_copy,
            workload,
            [level],
            precision=precision,
            calibration=calibration,
            max_batch_size=batch,
        ).levels[0]
        broken = []
        if predicted.ms_per_token > slo.max_ms_per_token:
            broken.append(f"{predicted.ms_per_token:.1f} ms/token > {slo.max_ms_per_token:g}")
        if slo.max_ttft_ms is not None and predicted.ttft_ms > slo.max_ttft_ms:
            broken.append(f"TTFT {predicted.ttft_ms:.0f} ms > {slo.max_ttft_ms:g}")
        if broken:
            self._warn(
                "target_concurrency_per_copy",
                f"target_concurrency_per_copy={target:g}: at {level} requests per copy the model "
                f"predicts {', '.join(broken)} (the SLO)",
            )

    # ----- the benchmark ------------------------------------------------------------------------

    def _benchmark(
        self,
        image: ContainerImage,
        workload: Workload,
        slo: Slo,
        option: Option,
        copies: int,
        max_duration: Duration,
    ) -> EndpointBenchmark:
        """A knee search of the initial copies that starts from their predicted knee (it
        brackets around the prediction and widens only where the measurement disagrees, up to
        four times the prediction), gated on the SLO."""
        predicted = max(1, option.knee_concurrency_per_copy * copies)
        top = min(4096, max(2, 4 * predicted))
        rule = KneeRule(min_gain_per_doubling=0.10, slo_ms_per_token=slo.max_ms_per_token)
        return EndpointBenchmark(
            self,
            "Benchmark",
            inference_component=self.component,
            load=BenchmarkLoad.knee_search(
                low=1, high=top, expected=min(predicted, top), knee_rule=rule
            ),
            workload=workload,
            protocol=RequestProtocol(
                payload_format=PayloadFormat.TGI if image.family.is_tgi else PayloadFormat.LMI,
                stream=True,
            ),
            gate=BenchmarkGate(max_p50_ms_per_token=slo.max_ms_per_token),
            max_duration=max_duration,
        )

    # ----- the decision record ------------------------------------------------------------------

    def _decision(
        self,
        *,
        spec: ModelSpec,
        precision: Precision,
        workload: Workload,
        slo: Slo,
        traffic: ExpectedTraffic,
        candidates: Sequence[InstanceType],
        prices: PriceList,
        price_basis: PriceBasis,
        calibration: Calibration | None,
        choices: dict[str, _Choice],
    ) -> dict[str, Any]:
        option = self.option
        predicted = option.predicted
        others = [o for o in self.recommendation.options if o is not option][:3]
        return {
            "model": spec.name,
            "precision": precision.value,
            "workload": f"{workload.input_tokens} in / {workload.output_tokens} out tokens",
            "slo": f"<= {slo.max_ms_per_token:g} ms/token"
            + (f", TTFT <= {slo.max_ttft_ms:g} ms" if slo.max_ttft_ms is not None else ""),
            "traffic": traffic.describe(),
            "candidates": [t.name for t in candidates],
            "prices": f"{price_basis.value}; {prices.describe()}",
            "calibration": "calibrated" if calibration is not None else "uncalibrated",
            "choices": {
                name: {"value": choice.value, "source": choice.source}
                for name, choice in sorted(choices.items())
            },
            "predicted": {
                "concurrency": predicted.concurrency,
                "concurrency_per_copy": option.concurrency_per_copy,
                "knee_concurrency_per_copy": option.knee_concurrency_per_copy,
                "ms_per_token": round(predicted.ms_per_token, 2),
                "ttft_ms": round(predicted.ttft_ms, 1),
                "tokens_per_s": round(predicted.tokens_per_s, 1),
                "requests_per_s": round(predicted.requests_per_s, 3),
            },
            "price_per_hour": _rounded(option.price_per_hour, 4),
            "cost_per_million_tokens": _rounded(option.cost_per_million_tokens, 4),
            "reasoning": list(option.reasoning),
            "alternatives": [_summary(o) for o in others],
            "rejected": [
                f"{r.instance_type}"
                + (f" TP{r.tensor_parallel_degree}" if r.tensor_parallel_degree else "")
                + f": {r.reason}"
                for r in self.recommendation.rejected[:8]
            ],
            "rejected_count": len(self.recommendation.rejected),
            "warnings": list(self._warnings),
        }


# ----- helpers ----------------------------------------------------------------------------------


def _override(given: Any, default: Any, source: str = "recommended") -> _Choice:
    return _Choice(given, "override") if given is not None else _Choice(default, source)


def _source(given: Any) -> str:
    return "override" if given is not None else "recommended"


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _summary(option: Option) -> str:
    layout = option.layout
    price = f"${option.price_per_hour:,.2f}/h" if option.price_per_hour is not None else "no price"
    return (
        f"{layout.instance_count} x {layout.instance_type.name}, TP{layout.tensor_parallel_degree}"
        f" x {layout.copies_per_instance} copies: {price}, "
        f"{option.predicted.ms_per_token:.1f} ms/token"
    )


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


def _choose(
    recommendation: Recommendation,
    *,
    instance_type: InstanceType | None,
    tensor_parallel_degree: int | None,
    max_instance_count: int,
) -> Option:
    """The cheapest option that meets every layout override; an error naming the override
    that no option meets, with the performance model's reason."""
    overrides = {
        "instance_type": instance_type.name if instance_type is not None else None,
        "tensor_parallel_degree": tensor_parallel_degree,
    }
    options = list(recommendation.options)
    if not options:
        raise ValidationError(
            "slo",
            "unmet",
            "no candidate layout serves the peak traffic within the SLO and memory: "
            + "; ".join(_rejections(recommendation, None, None)),
            "relax the SLO, add larger instance types, raise max_instance_count, or lower the "
            "peak traffic",
        )
    for prop, value in overrides.items():
        if value is None:
            continue
        kept = [o for o in options if _attribute(o, prop) == value]
        if not kept:
            reasons = _rejections(
                recommendation,
                instance_type.name if instance_type is not None else None,
                tensor_parallel_degree,
            )
            available = sorted({str(_attribute(o, prop)) for o in options})
            raise ValidationError(
                prop,
                value,
                "no layout with it serves the peak traffic within the SLO and memory on at "
                f"most {max_instance_count} instances"
                + (f" ({'; '.join(reasons)})" if reasons else ""),
                f"drop the override or use one of {', '.join(available)}",
            )
        options = kept
    return options[0]


def _repack(
    option: Option,
    copies_per_instance: int,
    *,
    spec: ModelSpec,
    workload: Workload,
    precision: Precision,
    calibration: Calibration | None,
    price: float | None,
    max_instance_count: int,
) -> Option:
    """The option with its copies spread at ``copies_per_instance`` per instance (leaving
    accelerators free for other components): the same copies, on more instances."""
    check_range("copies_per_instance", copies_per_instance, minimum=1)
    layout = option.layout
    copies = layout.copies
    count = math.ceil(copies / copies_per_instance)
    if count > max_instance_count:
        raise ValidationError(
            "copies_per_instance",
            copies_per_instance,
            f"the peak needs {copies} copies; at {copies_per_instance} per "
            f"{layout.instance_type.name} they need {count} instances, above "
            f"max_instance_count ({max_instance_count})",
            f"raise copies_per_instance (up to {layout.copies_per_instance}) or max_instance_count",
        )
    spread = Layout(layout.instance_type, layout.tensor_parallel_degree, copies_per_instance, count)
    level = predict(
        spec,
        spread,
        workload,
        [option.predicted.concurrency],
        precision=precision,
        calibration=calibration,
        max_batch_size=option.max_batch_size,
    ).levels[0]
    hourly = None if price is None else price * count
    return replace(
        option,
        layout=spread,
        predicted=level,
        concurrency_per_copy=math.ceil(level.concurrency / spread.copies),
        price_per_hour=hourly,
        cost_per_million_tokens=None
        if hourly is None or level.tokens_per_s <= 0
        else hourly / (level.tokens_per_s * 3600 / 1e6),
        reasoning=[
            *option.reasoning,
            f"copies_per_instance override: {copies_per_instance} of the "
            f"{layout.copies_per_instance} copies that fit per {layout.instance_type.name}, so "
            f"{copies} copies take {count} instances",
        ],
    )


def _attribute(option: Option, prop: str) -> Any:
    layout = option.layout
    if prop == "instance_type":
        return layout.instance_type.name
    return getattr(layout, prop)


def _rejections(
    recommendation: Recommendation, instance_type: str | None, degree: int | None
) -> list[str]:
    found = [
        f"{r.instance_type}"
        + (f" TP{r.tensor_parallel_degree}" if r.tensor_parallel_degree else "")
        + f": {r.reason}"
        for r in recommendation.rejected
        if (instance_type is None or r.instance_type == instance_type)
        and (degree is None or r.tensor_parallel_degree in (None, degree))
    ]
    return found[:4]


def _default_memory(layout: Layout) -> Size:
    instance = layout.instance_type
    assert instance.memory_mib is not None and instance.accelerator_count
    share = instance.memory_mib * layout.tensor_parallel_degree / instance.accelerator_count
    return Size.gibibytes(max(1, int(share * HOST_MEMORY_SHARE // 1024)))


def _serving(
    image: ContainerImage,
    degree: int,
    batch: int,
    model_len: int,
    input_tokens: int,
    precision: Precision,
    loading_timeout: Duration,
) -> ServingOptions:
    """Serving options that make the container do what the decision assumed."""
    quantization = {
        Precision.INT4_AWQ: Quantization.AWQ,
        Precision.FP8: Quantization.FP8,
    }.get(precision)
    dtype = DataType.BF16 if precision is Precision.BF16 else DataType.FP16
    if image.family.is_tgi:
        # TGI bounds its batch by tokens (MAX_BATCH_TOTAL_TOKENS): batch x tokens per request;
        # one prefill step takes at least a whole prompt and at most the batch's tokens.
        total = batch * model_len
        return TgiOptions(
            num_gpus=degree,
            max_input_tokens=input_tokens,
            max_total_tokens=model_len,
            max_batch_prefill_tokens=max(input_tokens, min(TGI_DEFAULT_PREFILL_TOKENS, total)),
            max_batch_total_tokens=total,
            quantization=quantization,
            dtype=dtype,
        )
    return LmiOptions(
        tensor_parallel_degree=degree,
        max_rolling_batch_size=batch,
        max_model_len=model_len,
        dtype=dtype,
        quantization=quantization,
        model_loading_timeout=loading_timeout,
    )
