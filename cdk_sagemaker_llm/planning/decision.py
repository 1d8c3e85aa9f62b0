"""The service decision: what an ``LlmService`` deploys, decided purely, rendered elsewhere.

``decide`` turns a request (model, workload, SLO, traffic, candidates, prices) and the user's
overrides into a ``ServiceDecision``: the layout (instance type, tensor-parallel degree,
copies per instance, instance counts), the serving options the engine needs to behave as the
performance model assumed (batch limit, sequence length, TGI's token budgets), the scaling
bounds and target, the reasoning, the alternatives, and the predictions with their figures
and sources. ``recommend`` supplies the ranked options; ``LlmService`` renders the decision
into resources and writes ``to_metadata()`` into the template; ``cdk-sagemaker-llm plan``
reads it back with ``ServiceDecision.from_metadata``. No aws_cdk here.

Overrides are checked where they are applied, and an error names the override that caused
it: a tensor-parallel degree whose heads do not divide, more copies per instance than its
accelerators hold, a batch above the KV cache. A layout no candidate can hold in memory is
blamed on the candidates, not on the SLO.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.model_specs import ModelSpec, Precision
from ..catalog.prices import PriceList
from ..errors import ValidationError, check_range
from ..prop_types import typed_props
from .calibration import AppliedCalibration, Calibration, EngineRelease
from .engine_profiles import EngineProfile, profile_origin, resolve_profile
from .optimizations import JobEstimate, Optimization
from .performance import (
    CopyModel,
    Efficiency,
    Layout,
    Workload,
    copy_limits,
    efficiency_of,
    predict,
    profile_model,
)
from .placement import head_divisibility_problem
from .ranking import RejectionKind
from .recommend import (
    Option,
    Recommendation,
    Slo,
    Traffic,
    recommend,
    unit_price,
)
from .service_options import (
    CopyScaling,
    LayoutOverrides,
    PriceBasis,
    Pricing,
    Risk,
    SearchSpace,
    Sizing,
)
from .workload import check_context, check_workload_context

HOST_MEMORY_SHARE = 0.5
"""Of a copy's share of host memory (its accelerators' share of the instance), the part its
``min_memory`` reserves by default: the rest stays free for SageMaker's agents, the OS and the
page cache that loading weights goes through."""
TGI_DEFAULT_PREFILL_TOKENS = 4096
"""TGI's default ``MAX_BATCH_PREFILL_TOKENS``; a longer prompt needs it raised."""
MAX_REJECTIONS_RECORDED = 8
MAX_ALTERNATIVES_RECORDED = 3


# ----- What is asked -----------------------------------------------------------------------------


@typed_props
@dataclass(frozen=True)
class ExpectedTraffic:
    """The traffic the service must carry: its peak, and the least it sees (what it keeps).

    Build it with ``ExpectedTraffic.requests_per_second(peak, minimum=...)`` or
    ``ExpectedTraffic.concurrency(peak, minimum=...)``.
    """

    __synth_decision__ = "LlmService sizes the copies and instances from the traffic"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

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


DEFAULT_MAX_INSTANCE_COUNT = 4
"""A service's most instances when its search space does not say."""


@dataclass(frozen=True)
class ServiceRequest:
    """What the service must do, and what it may use (the inputs of ``decide``): the same
    ``Workload``, ``Slo``, ``SearchSpace``, ``Pricing`` and ``Sizing`` that ``recommend``
    takes, and the traffic with its minimum."""

    spec: ModelSpec
    workload: Workload
    slo: Slo
    traffic: ExpectedTraffic
    search: SearchSpace = field(default_factory=SearchSpace)
    """The candidates (default every GPU type of the catalog), at most
    ``DEFAULT_MAX_INSTANCE_COUNT`` instances unless it says, the precision (default FP16) and
    the optimizations to weigh."""
    pricing: Pricing = field(default_factory=Pricing)
    sizing: Sizing = field(default_factory=Sizing)
    """The risk side (default pessimistic, as ``recommend``), the calibration, and the serving
    engine: the image's container family and release (``EngineRelease``) chooses the engine
    profile (``planning.engine_profiles``), a calibration of another engine is a
    ValidationError, and one of a release outside the range is noted. A profile (the
    ``recommend`` command's ``--engine tgi-1``) or None: that or the default profile, and a
    calibration's engine is assumed (the decision says so)."""
    tgi: bool = False
    """The engine batches by tokens (TGI) rather than by requests (LMI)."""

    @property
    def candidates(self) -> Sequence[InstanceType]:
        """The candidate instance types."""
        found = self.search.instance_types
        return found if found is not None else [t for t in CATALOG.values() if t.is_gpu]

    @property
    def max_instance_count(self) -> int:
        """The most instances."""
        return self.search.max_instance_count or DEFAULT_MAX_INSTANCE_COUNT

    @property
    def precision(self) -> Precision:
        """The weights' precision as given."""
        return self.search.precision or Precision.FP16

    @property
    def prices(self) -> PriceList:
        """The price list."""
        return self.pricing.prices

    @property
    def price_basis(self) -> PriceBasis:
        """How instance-hours are paid for."""
        return self.pricing.basis

    @property
    def region(self) -> str | None:
        """Where the endpoint runs."""
        return self.pricing.region

    @property
    def calibration(self) -> Calibration | None:
        """The measured efficiency factors."""
        return self.sizing.calibration

    @property
    def risk(self) -> Risk:
        """The side of each prediction's band the layout is sized on."""
        return self.sizing.risk

    @property
    def engine(self) -> EngineRelease | EngineProfile | None:
        """The serving engine: a container release, a profile (a name resolved), the
        calibrated engine when none is stated (assumed, and said), or None."""
        engine = self.sizing.engine
        if engine is None and self.calibration is not None:
            return self.calibration.engine
        return resolve_profile(engine) if isinstance(engine, str) else engine


@dataclass(frozen=True)
class Overrides:
    """The user's overrides of the decision; None leaves a choice to the performance model."""

    layout: LayoutOverrides = field(default_factory=LayoutOverrides)
    """Instance type, tensor-parallel degree, copies per instance, batch limit, longest
    sequence."""
    scaling: CopyScaling = field(default_factory=CopyScaling)
    """Min/max copies and the target per copy."""
    min_memory_per_copy_mib: int | None = None
    benchmark: bool = False
    """A deploy-time benchmark measures the knee that the scaling target holds."""

    @property
    def instance_type(self) -> InstanceType | None:
        return self.layout.instance_type

    @property
    def tensor_parallel_degree(self) -> int | None:
        return self.layout.tensor_parallel_degree

    @property
    def copies_per_instance(self) -> int | None:
        return self.layout.copies_per_instance

    @property
    def max_batch_size(self) -> int | None:
        return self.layout.max_batch_size

    @property
    def max_model_len(self) -> int | None:
        return self.layout.max_model_len

    @property
    def min_copies(self) -> int | None:
        return self.scaling.min_copies

    @property
    def max_copies(self) -> int | None:
        return self.scaling.max_copies

    @property
    def target_concurrency_per_copy(self) -> float | None:
        return self.scaling.target_concurrency_per_copy


# ----- What is decided ---------------------------------------------------------------------------


class ChoiceSource(Enum):
    """Where a decision's value came from (its metadata's ``source``)."""

    RECOMMENDED = "recommended"
    """The performance model's option."""
    DERIVED = "derived"
    """Computed from other choices."""
    OVERRIDE = "override"
    """The user's prop."""
    BENCHMARK = "benchmark"
    """Measured at deploy time (the benchmark's knee)."""


@dataclass(frozen=True)
class Choice:
    """A value the decision settled on and where it came from (``ChoiceSource``)."""

    value: Any
    source: ChoiceSource


@dataclass(frozen=True)
class ServingSettings:
    """The engine settings that make the container serve as the decision assumed."""

    tgi: bool
    tensor_parallel_degree: int
    max_batch_size: int
    """Requests one copy batches (LMI ``OPTION_MAX_ROLLING_BATCH_SIZE``)."""
    max_model_len: int
    """Longest sequence served (input + output tokens): the workload's longest request."""
    max_input_tokens: int
    precision: Precision
    mean_tokens: int | None = None
    """Mean input + output tokens per request, what TGI's batch budget counts; None:
    ``max_model_len`` (every request alike, or a ``max_model_len`` given)."""

    @property
    def max_batch_total_tokens(self) -> int:
        """TGI's ``MAX_BATCH_TOTAL_TOKENS``: TGI bounds its batch by tokens, batch x mean
        tokens per request (what the KV cache was checked to hold), and at least one longest
        sequence."""
        per_request = self.max_model_len if self.mean_tokens is None else self.mean_tokens
        return max(self.max_model_len, self.max_batch_size * per_request)

    @property
    def max_batch_prefill_tokens(self) -> int:
        """TGI's ``MAX_BATCH_PREFILL_TOKENS``: one prefill step takes at least a whole prompt
        and at most the batch's tokens."""
        total = self.max_batch_total_tokens
        return max(self.max_input_tokens, min(TGI_DEFAULT_PREFILL_TOKENS, total))


@dataclass(frozen=True)
class ScalingBounds:
    """Copy autoscaling: the copies and instances the traffic needs, and the target per copy."""

    min_copies: int
    max_copies: int
    min_instances: int
    max_instances: int
    target_concurrency_per_copy: float
    """The predicted (or overridden) knee per copy; with a benchmark, the construct holds the
    measured knee instead."""
    benchmark: bool = False
    """The target is the deploy-time benchmark's measured knee."""


@dataclass(frozen=True)
class Prediction:
    """The performance model's figures at the peak, and where its inputs come from."""

    concurrency: int
    concurrency_per_copy: int
    knee_concurrency_per_copy: int
    ms_per_token: float
    ttft_ms: float
    tokens_per_s: float
    requests_per_s: float
    sources: tuple[str, ...] = ()
    """The facts and constants behind the figures, each with its source."""

    def to_metadata(self) -> dict[str, Any]:
        """The ``predicted`` entry of the template metadata (figures rounded)."""
        return {
            "concurrency": self.concurrency,
            "concurrency_per_copy": self.concurrency_per_copy,
            "knee_concurrency_per_copy": self.knee_concurrency_per_copy,
            "ms_per_token": round(self.ms_per_token, 2),
            "ttft_ms": round(self.ttft_ms, 1),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "requests_per_s": round(self.requests_per_s, 3),
        }


@dataclass(frozen=True)
class DecisionWarning:
    """An override the model predicts will hurt, naming the prop (an annotation at synth)."""

    prop: str
    message: str


@typed_props
@dataclass(frozen=True)
class ServiceDecision:
    """What an ``LlmService`` deploys and why: decided by ``decide``, rendered by the
    construct, recorded as template metadata, read back by ``plan``."""

    goal: Mapping[str, Any]
    """model, precision, workload, slo, traffic, candidates, prices, calibration (in words)."""
    layout: Layout
    """Instance type, tensor-parallel degree, copies per instance and instances at the peak."""
    serving: ServingSettings
    """The serving settings rendered into the container (batch limit, longest sequence)."""
    scaling: ScalingBounds
    """The copy and instance bounds autoscaling keeps."""
    min_memory_per_copy_mib: int
    """Host memory each copy reserves, MiB."""
    choices: Mapping[str, Choice]
    """Every decided value and its source (the metadata's ``choices``)."""
    predicted: Prediction
    """The performance model's figures for the layout at the traffic."""
    price_per_hour: float | None
    """Price per hour of the layout at its most instances; None when unpriced."""
    cost_per_million_tokens: float | None
    """Cost per 1M output tokens at the peak traffic; None when unpriced."""
    reasoning: tuple[str, ...]
    """Why this layout, one line each."""
    alternatives: tuple[str, ...]
    """The next-best layouts, described."""
    rejected: tuple[str, ...]
    """Layouts rejected, with why (the first few)."""
    rejected_count: int
    """How many layouts were rejected in all."""
    warnings: tuple[DecisionWarning, ...] = ()
    """Overrides the model predicts break the SLO, and other warnings."""
    calibration_notes: tuple[str, ...] = ()
    """What of the calibration did not transfer to this model, engine or hardware, and what was
    assumed (``AppliedCalibration.warnings`` on the chosen instance type; synth warnings)."""
    calibration_change: str | None = None
    """The uncalibrated decision beside this one: what the calibration changed (None:
    uncalibrated)."""
    optimization: Optimization | None = None
    """The optimization the served option applies to the model (``SearchSpace.optimizations``;
    ``LlmService`` creates its job and serves the job's output); None: the model as given."""
    job: JobEstimate | None = None
    """The optimization job that optimization needs, with its expected time and cost."""
    option: Option | None = field(default=None, compare=False, repr=False)
    """The recommendation's option served (None when read back from metadata)."""
    recommendation: Recommendation | None = field(default=None, compare=False, repr=False)
    """Every option and rejection (None when read back from metadata)."""

    def to_metadata(self) -> dict[str, Any]:
        """The JSON-ready record under ``template_metadata.SERVICE`` (``calibration_notes``
        and ``calibration_change`` only when calibrated)."""
        return {
            **self.goal,
            "choices": {
                name: {"value": choice.value, "source": choice.source.value}
                for name, choice in sorted(self.choices.items())
            },
            "predicted": self.predicted.to_metadata(),
            "price_per_hour": _rounded(self.price_per_hour, 4),
            "cost_per_million_tokens": _rounded(self.cost_per_million_tokens, 4),
            "reasoning": list(self.reasoning),
            "alternatives": list(self.alternatives),
            "rejected": list(self.rejected),
            "rejected_count": self.rejected_count,
            "warnings": [warning.message for warning in self.warnings],
            **(
                {
                    "calibration_notes": list(self.calibration_notes),
                    "calibration_change": self.calibration_change,
                }
                if self.calibration_change is not None
                else {}
            ),
            **(
                {"optimization": _optimization_metadata(self.optimization, self.job)}
                if self.optimization is not None
                else {}
            ),
            "sources": list(self.predicted.sources),
        }

    @staticmethod
    def from_metadata(data: Mapping[str, Any]) -> ServiceDecision:
        """The decision an ``LlmService`` recorded (``plan`` reads it from cdk.out); values
        the record lacks read as 0 or empty."""
        choices = {
            name: Choice(entry.get("value"), ChoiceSource(entry["source"]))
            for name, entry in (data.get("choices") or {}).items()
            if isinstance(entry, Mapping)
        }

        def value(name: str, default: Any = 0) -> Any:
            found = choices.get(name)
            return default if found is None or found.value is None else found.value

        name = str(value("instance_type", ""))
        instance = CATALOG.get(name) or InstanceType(name)
        degree = int(value("tensor_parallel_degree", 1))
        per_instance = int(value("copies_per_instance", 1))
        predicted = data.get("predicted") or {}
        concurrency = int(predicted.get("concurrency") or 0)
        per_copy = int(predicted.get("concurrency_per_copy") or 0)
        precision = _precision(data.get("precision"))
        model_len = int(value("max_model_len", 0))
        return ServiceDecision(
            goal={key: data[key] for key in GOAL_KEYS if key in data},
            layout=Layout(
                instance,
                degree,
                per_instance,
                max(1, math.ceil(concurrency / max(1, per_copy * per_instance))),
            ),
            serving=ServingSettings(
                tgi=False,
                tensor_parallel_degree=degree,
                max_batch_size=int(value("max_batch_size", 0)),
                max_model_len=model_len,
                max_input_tokens=model_len,
                precision=precision,
            ),
            scaling=ScalingBounds(
                min_copies=int(value("min_copies")),
                max_copies=int(value("max_copies")),
                min_instances=int(value("min_instances")),
                max_instances=int(value("max_instances")),
                target_concurrency_per_copy=float(value("target_concurrency_per_copy")),
                benchmark=(
                    "target_concurrency_per_copy" in choices
                    and choices["target_concurrency_per_copy"].source is ChoiceSource.BENCHMARK
                ),
            ),
            min_memory_per_copy_mib=int(value("min_memory_per_copy_mib")),
            choices=choices,
            predicted=Prediction(
                concurrency=concurrency,
                concurrency_per_copy=per_copy,
                knee_concurrency_per_copy=int(predicted.get("knee_concurrency_per_copy") or 0),
                ms_per_token=float(predicted.get("ms_per_token") or 0),
                ttft_ms=float(predicted.get("ttft_ms") or 0),
                tokens_per_s=float(predicted.get("tokens_per_s") or 0),
                requests_per_s=float(predicted.get("requests_per_s") or 0),
                sources=tuple(str(s) for s in data.get("sources") or ()),
            ),
            price_per_hour=data.get("price_per_hour"),
            cost_per_million_tokens=data.get("cost_per_million_tokens"),
            reasoning=tuple(str(line) for line in data.get("reasoning") or ()),
            alternatives=tuple(str(line) for line in data.get("alternatives") or ()),
            rejected=tuple(str(line) for line in data.get("rejected") or ()),
            rejected_count=int(data.get("rejected_count") or len(data.get("rejected") or ())),
            warnings=tuple(DecisionWarning("", str(w)) for w in data.get("warnings") or ()),
            calibration_notes=tuple(str(line) for line in data.get("calibration_notes") or ()),
            calibration_change=None
            if data.get("calibration_change") is None
            else str(data["calibration_change"]),
            **_optimization_from_metadata(data.get("optimization")),
        )


def _optimization_metadata(optimization: Optimization, job: JobEstimate | None) -> dict[str, Any]:
    """The ``optimization`` entry of the metadata: what it serves and the job it needs."""
    return {
        "name": optimization.name,
        "serves": optimization.describe(),
        "job": None if job is None else job.to_dict(),
    }


def _optimization_from_metadata(entry: Any) -> dict[str, Any]:
    """``optimization`` and ``job`` read back from the metadata's entry (none when absent or
    not understood)."""
    if not isinstance(entry, Mapping):
        return {}
    try:
        optimization = Optimization.of(str(entry.get("name")))
    except ValidationError:
        return {}
    job = entry.get("job")
    estimate = None
    if isinstance(job, Mapping):
        estimate = JobEstimate(
            technique=str(job.get("technique", "")),
            hours=job.get("hours"),
            cost=job.get("cost"),
            basis=str(job.get("basis", "")),
        )
    return {"optimization": optimization, "job": estimate}


GOAL_KEYS = (
    "model",
    "precision",
    "workload",
    "slo",
    "traffic",
    "candidates",
    "prices",
    "calibration",
)
"""The keys of ``ServiceDecision.goal``, in the metadata's order."""


# ----- Deciding ----------------------------------------------------------------------------------


def decide(
    request: ServiceRequest,
    overrides: Overrides | None = None,
    *,
    recommendation: Recommendation | None = None,
) -> ServiceDecision:
    """The service decision for ``request`` under ``overrides`` (see the module docstring).

    :param recommendation: ``recommend``'s answer to the same request, when the caller has it
        (the ``recommend`` command); default computed here.

    Raises ``ValidationError`` naming the prop at fault when no layout can serve (the SLO,
    the candidates, the instance count) or an override cannot hold (its value and the fix).
    """
    overrides = overrides or Overrides()
    check_workload_context(request.spec, request.workload)
    if overrides.max_model_len is not None:
        check_context(request.spec, overrides.max_model_len, "max_model_len")
    decider = _Decider(request, overrides)
    option = decider.layout(recommendation)
    serving, choices = decider.serving(option)
    scaling, scaling_chosen = decider.scaling(option, serving)
    choices.update(scaling_chosen)
    choices.update(decider.layout_choices(option))
    memory = decider.memory(option.layout)
    choices["min_memory_per_copy_mib"] = memory
    choices.update(decider.optimization_choices())
    decision = ServiceDecision(
        goal=decider.goal(),
        layout=option.layout,
        serving=serving,
        scaling=scaling,
        min_memory_per_copy_mib=int(memory.value),
        choices=choices,
        predicted=decider.prediction(option),
        price_per_hour=option.price_per_hour,
        cost_per_million_tokens=option.cost_per_million_tokens,
        reasoning=(
            decider.engine_reasoning(option.layout.instance_type),
            *decider.optimization_reasoning(option),
            *option.reasoning,
        ),
        alternatives=tuple(summary(o) for o in decider.recommendation.options if o is not option)[
            :MAX_ALTERNATIVES_RECORDED
        ],
        rejected=tuple(
            describe_rejection(r.instance_type, r.tensor_parallel_degree, r.reason)
            for r in decider.recommendation.rejected[:MAX_REJECTIONS_RECORDED]
        ),
        rejected_count=len(decider.recommendation.rejected),
        warnings=tuple(decider.warnings),
        optimization=option.optimization,
        job=option.job,
        option=option,
        recommendation=decider.recommendation,
    )
    if request.calibration is None:
        return decision
    applied = decider.measured(decision.layout.instance_type)
    return replace(
        decision,
        calibration_notes=tuple(applied.warnings if applied is not None else ()),
        calibration_change=decider.calibration_change(decision),
    )


class _Decider:
    """The steps of ``decide``, each a method over the request and the overrides."""

    def __init__(self, request: ServiceRequest, overrides: Overrides) -> None:
        self.request = request
        self.overrides = overrides
        self.warnings: list[DecisionWarning] = []
        self._applied: dict[str, AppliedCalibration] = {}
        self.recommendation = Recommendation([], [])
        self.optimization: Optimization | None = None
        """The optimization of the option served (None: the model as given)."""
        self.precision = request.precision
        """The weights' precision served: the request's, or the optimization's."""

    def warn(self, prop: str, message: str) -> None:
        self.warnings.append(DecisionWarning(prop, message))

    # ----- calibration and engine --------------------------------------------------------

    @property
    def release(self) -> EngineRelease | None:
        """The container release that serves, when the request states one."""
        engine = self.request.engine
        return engine if isinstance(engine, EngineRelease) else None

    def measured(self, instance_type: InstanceType) -> AppliedCalibration | None:
        """The calibration as it applies to the model on ``instance_type`` under the request's
        engine (``Calibration.applied_to``: only what transfers); None when uncalibrated.
        Another engine than the calibrated one is a ValidationError naming ``calibration``."""
        request = self.request
        if request.calibration is None:
            return None
        found = self._applied.get(instance_type.name)
        if found is None:
            found = request.calibration.applied_to(request.spec, instance_type, engine=self.release)
            self._applied[instance_type.name] = found
        return found

    def efficiency_on(self, instance_type: InstanceType) -> Efficiency | None:
        """The measured efficiency factors the predictions use on ``instance_type`` (None:
        the engine profile's)."""
        applied = self.measured(instance_type)
        return applied.efficiency if applied is not None else None

    def profile(self, instance_type: InstanceType) -> EngineProfile:
        """The engine profile of the request's engine on ``instance_type``."""
        return resolve_profile(self.request.engine, instance_type.is_neuron)

    def engine_reasoning(self, instance_type: InstanceType) -> str:
        """The serving engine the decision assumed, its profile on ``instance_type``, and what
        is not checked without a container release."""
        engine = self.request.engine
        profile = f"engine profile {self.profile(instance_type).name}"
        if isinstance(engine, EngineProfile):
            return (
                f"serving engine: {profile} (named; no container release: a calibration's "
                "engine is assumed, not checked)"
            )
        if engine is None:
            return (
                f"serving engine: not stated, the default {profile}; a calibration's engine is "
                "assumed, not checked"
            )
        if self.request.sizing.engine is None:
            return (
                f"serving engine: not stated, the calibrated {engine.describe()} assumed "
                f"(not checked), {profile}"
            )
        if engine.version is None:
            return (
                f"serving engine: {engine.family}, release unknown (an image given by URI), "
                f"{profile}: a calibration of another family is refused, its release range is "
                "not checked"
            )
        return (
            f"serving engine: {engine.describe()} (the image's container family and release), "
            f"{profile}"
        )

    def calibration_change(self, decision: ServiceDecision) -> str:
        """The uncalibrated decision of the same request beside ``decision``, in one line."""
        after = _outline(decision)
        try:
            request = self.request
            uncalibrated = decide(
                replace(request, sizing=replace(request.sizing, calibration=None)), self.overrides
            )
        except ValidationError as error:
            return (
                f"changed the decision: uncalibrated, no layout ({error.problem}); calibrated "
                f"{after}"
            )
        before = _outline(uncalibrated)
        if _shape(uncalibrated) == _shape(decision):
            return f"kept the layout: uncalibrated {before}; calibrated {after}"
        return f"changed the decision: uncalibrated {before}; calibrated {after}"

    # ----- layout ------------------------------------------------------------------------

    def layout(self, recommendation: Recommendation | None) -> Option:
        """The cheapest recommended option that meets the layout overrides, repacked at the
        copies-per-instance override."""
        request, overrides = self.request, self.overrides
        self._check_degree()
        self.recommendation = recommendation or recommend(
            request.spec,
            request.workload,
            request.slo,
            request.traffic.peak,
            search=replace(
                request.search,
                instance_types=list(request.candidates),
                max_instance_count=request.max_instance_count,
                precision=request.precision,
            ),
            pricing=request.pricing,
            sizing=replace(request.sizing, engine=request.engine),
            top=len(request.candidates) * 64,
        )
        option = choose(
            self.recommendation,
            instance_type=overrides.instance_type,
            tensor_parallel_degree=overrides.tensor_parallel_degree,
            max_instance_count=request.max_instance_count,
        )
        self.optimization = option.optimization
        if option.optimization is not None:
            self.precision = option.optimization.precision(request.precision)
        if overrides.copies_per_instance is not None:
            option = self._repack(option, overrides.copies_per_instance)
        return option

    def _check_degree(self) -> None:
        """A tensor-parallel override that cannot shard the model: heads that do not divide,
        or more accelerators than every candidate has."""
        degree = self.overrides.tensor_parallel_degree
        if degree is None:
            return
        check_range("tensor_parallel_degree", degree, minimum=1)
        problem = head_divisibility_problem(self.request.spec, degree)
        if problem:
            raise ValidationError(
                "tensor_parallel_degree",
                degree,
                f"{self.request.spec.name} cannot be sharded {degree} ways: {problem}",
                "use a degree that divides the attention and KV heads (1, 2, 4 or 8 for most "
                "models), or drop the override",
            )
        types = [self.overrides.instance_type] if self.overrides.instance_type else []
        hosts = types or list(self.request.candidates)
        if not any(t.accelerator_devices % degree == 0 for t in hosts):
            raise ValidationError(
                "tensor_parallel_degree",
                degree,
                "no candidate instance type splits its accelerators into copies of "
                f"{degree} ({', '.join(f'{t.name}: {t.accelerator_devices}' for t in hosts)})",
                "use a degree that divides an instance's accelerators, or add an instance type "
                "with a multiple of it, or drop the override",
            )

    def _repack(self, option: Option, copies_per_instance: int) -> Option:
        """The option with its copies spread at ``copies_per_instance`` per instance (leaving
        accelerators free for other components): the same copies, on more instances."""
        request = self.request
        check_range("copies_per_instance", copies_per_instance, minimum=1)
        layout = option.layout
        fit = layout.copies_per_instance
        if copies_per_instance > fit:
            raise ValidationError(
                "copies_per_instance",
                copies_per_instance,
                f"a {layout.instance_type.name} holds {fit} copies of tensor-parallel degree "
                f"{layout.tensor_parallel_degree} ({layout.instance_type.accelerator_devices} "
                "accelerators)",
                f"use at most {fit} copies per instance, or drop the override",
            )
        copies = layout.copies
        count = math.ceil(copies / copies_per_instance)
        ceiling_copies = option.ceiling * fit
        ceiling = max(count, math.ceil(ceiling_copies / copies_per_instance))
        if ceiling > request.max_instance_count:
            raise ValidationError(
                "copies_per_instance",
                copies_per_instance,
                f"the peak needs up to {ceiling_copies} copies (the ceiling); at "
                f"{copies_per_instance} per {layout.instance_type.name} they need {ceiling} "
                f"instances, above max_instance_count ({request.max_instance_count})",
                f"raise copies_per_instance (up to {fit}) or max_instance_count",
            )
        spread = Layout(
            layout.instance_type, layout.tensor_parallel_degree, copies_per_instance, count
        )
        level = predict(
            request.spec,
            spread,
            request.workload,
            [option.predicted.concurrency],
            precision=request.precision,
            calibration=self.measured(layout.instance_type),
            max_batch_size=option.max_batch_size,
            engine=request.engine,
            optimization=self.optimization,
        ).levels[0]
        price = unit_price(layout.instance_type, self.request.prices, request.price_basis)
        hourly = None if price is None else price * count
        return replace(
            option,
            layout=spread,
            max_instance_count=ceiling,
            predicted=level,
            concurrency_per_copy=math.ceil(level.concurrency / spread.copies),
            price_per_hour=hourly,
            cost_per_million_tokens=None
            if hourly is None or level.tokens_per_s <= 0
            else hourly / (level.tokens_per_s * 3600 / 1e6),
            reasoning=[
                *option.reasoning,
                f"copies_per_instance override: {copies_per_instance} of the "
                f"{fit} copies that fit per {layout.instance_type.name}, so "
                f"{copies} copies take {count} instances",
            ],
        )

    def layout_choices(self, option: Option) -> dict[str, Choice]:
        layout, overrides = option.layout, self.overrides
        return {
            "instance_type": Choice(layout.instance_type.name, _source(overrides.instance_type)),
            "tensor_parallel_degree": Choice(
                layout.tensor_parallel_degree, _source(overrides.tensor_parallel_degree)
            ),
            "copies_per_instance": Choice(
                layout.copies_per_instance, _source(overrides.copies_per_instance)
            ),
        }

    def optimization_choices(self) -> dict[str, Choice]:
        """The optimization and the precision it serves at, when an optimized option won
        (nothing otherwise: a decision without one records what it always did)."""
        if self.optimization is None:
            return {}
        return {
            "optimization": Choice(self.optimization.name, ChoiceSource.RECOMMENDED),
            "precision": Choice(self.precision.value, ChoiceSource.DERIVED),
        }

    def optimization_reasoning(self, option: Option) -> list[str]:
        """Why an optimized option was chosen, and the job it needs with its time and cost."""
        optimization = option.optimization
        if optimization is None:
            return []
        job = option.job.describe() if option.job is not None else "a job"
        plain = next((o for o in self.recommendation.options if o.optimization is None), None)
        given = (
            f"the model as given would take {summary(plain)}"
            if plain is not None
            else "the model as given meets the SLO and memory on no candidate"
        )
        served = (
            "served as the weights given with the EAGLE head the optimization job trains as "
            "its draft (the job's recommended image; LlmService creates the job before the model)"
            if optimization.speculation is not None
            else "served from the optimization job's output, which LlmService creates before "
            "the model"
        )
        return [
            f"optimization chosen: {optimization.describe()} ({optimization.name}), {served}: "
            f"{job}; {given}"
        ]

    # ----- serving -----------------------------------------------------------------------

    def serving(self, option: Option) -> tuple[ServingSettings, dict[str, Choice]]:
        """The batch limit (checked against the KV cache) and the longest sequence."""
        request, overrides = self.request, self.overrides
        batch = _override(overrides.max_batch_size, option.max_batch_size)
        self._check_batch(option.layout, batch.value)
        workload = request.workload
        # the longest request, not the mean: vLLM rejects a prompt + max_tokens above
        # max_model_len, TGI one above max_total_tokens / max_input_tokens
        longest = min(workload.longest_tokens, request.spec.max_context)
        model_len = _override(overrides.max_model_len, longest, ChoiceSource.DERIVED)
        longest_input = min(workload.longest_input_tokens, model_len.value - 1)
        serving = ServingSettings(
            tgi=request.tgi,
            tensor_parallel_degree=option.layout.tensor_parallel_degree,
            max_batch_size=batch.value,
            max_model_len=model_len.value,
            max_input_tokens=max(workload.input_tokens, longest_input),
            precision=self.precision,
            mean_tokens=workload.total_tokens if overrides.max_model_len is None else None,
        )
        return serving, {"max_batch_size": batch, "max_model_len": model_len}

    def _copy_model(self, layout: Layout) -> CopyModel:
        request = self.request
        return profile_model(
            request.spec,
            layout,
            self.precision,
            request.workload,
            self.profile(layout.instance_type),
            self.efficiency_on(layout.instance_type),
            speculation=self.optimization.speculation if self.optimization else None,
        )

    def _check_batch(self, layout: Layout, batch: int) -> None:
        """A batch limit above the sequences one copy's KV cache holds is an error."""
        check_range("max_batch_size", batch, minimum=1)
        limits, _ = copy_limits(self._copy_model(layout), batch)
        workload = self.request.workload
        if batch > limits.kv_sequences:
            raise ValidationError(
                "max_batch_size",
                batch,
                f"one copy (tensor-parallel degree {layout.tensor_parallel_degree} on "
                f"{layout.instance_type.name}) holds at most {limits.kv_sequences} sequences of "
                f"{workload.input_tokens} + {workload.output_tokens} tokens in its KV cache",
                f"lower max_batch_size to at most {limits.kv_sequences}, or shard each copy wider",
            )

    # ----- scaling -----------------------------------------------------------------------

    def scaling(
        self, option: Option, serving: ServingSettings
    ) -> tuple[ScalingBounds, dict[str, Choice]]:
        """Min/max copies from the minimum/peak traffic at the target per copy, and the
        instances they take."""
        overrides = self.overrides
        knee = self._target(option, serving.max_batch_size)
        most = self._max_copies(option, knee.value)
        fewest = self._min_copies(option, knee.value, most.value)
        per_instance = option.layout.copies_per_instance
        max_instances = math.ceil(most.value / per_instance)
        limit = self.request.max_instance_count
        if max_instances > limit:
            raise ValidationError(
                "max_copies",
                most.value,
                f"{most.value} copies at {per_instance} per {option.layout.instance_type.name} "
                f"need {max_instances} instances, above max_instance_count ({limit})",
                f"lower max_copies to at most {limit * per_instance}, or raise max_instance_count",
            )
        model_len = serving.max_model_len
        workload = self.request.workload
        check_range(
            "max_model_len",
            model_len,
            minimum=workload.total_tokens,
            fix="serve at least input_tokens + output_tokens per request",
        )
        if overrides.benchmark and overrides.target_concurrency_per_copy is None:
            knee = Choice(knee.value, ChoiceSource.BENCHMARK)
        bounds = ScalingBounds(
            min_copies=fewest.value,
            max_copies=most.value,
            min_instances=math.ceil(fewest.value / per_instance),
            max_instances=max_instances,
            target_concurrency_per_copy=knee.value,
            benchmark=knee.source is ChoiceSource.BENCHMARK,
        )
        return bounds, {
            "min_copies": fewest,
            "max_copies": most,
            "min_instances": Choice(bounds.min_instances, ChoiceSource.DERIVED),
            "max_instances": Choice(max_instances, ChoiceSource.DERIVED),
            "target_concurrency_per_copy": knee,
        }

    def _target(self, option: Option, batch: int) -> Choice:
        target = self.overrides.target_concurrency_per_copy
        knee = _override(target, option.knee_concurrency_per_copy)
        if target is not None:
            check_range("target_concurrency_per_copy", target, minimum=0.001)
            self._check_target(option.layout, target, batch)
        if knee.value > batch:
            self.warn(
                "target_concurrency_per_copy",
                f"target_concurrency_per_copy={knee.value:g} is above the batch limit per copy "
                f"({batch}): requests beyond the batch queue in the server",
            )
        return knee

    def _check_target(self, layout: Layout, target: float, batch: int) -> None:
        """A target above what one copy serves within the SLO is a warning."""
        request = self.request
        one_copy = Layout(layout.instance_type, layout.tensor_parallel_degree, 1, 1)
        level = max(1, math.ceil(target))
        predicted = predict(
            request.spec,
            one_copy,
            request.workload,
            [level],
            precision=request.precision,
            calibration=self.measured(layout.instance_type),
            max_batch_size=batch,
            engine=request.engine,
            optimization=self.optimization,
        ).levels[0]
        slo = request.slo
        broken = []
        if predicted.ms_per_token > slo.max_ms_per_token:
            broken.append(f"{predicted.ms_per_token:.1f} ms/token > {slo.max_ms_per_token:g}")
        if slo.max_ttft_ms is not None and predicted.ttft_ms > slo.max_ttft_ms:
            broken.append(f"TTFT {predicted.ttft_ms:.0f} ms > {slo.max_ttft_ms:g}")
        if broken:
            self.warn(
                "target_concurrency_per_copy",
                f"target_concurrency_per_copy={target:g}: at {level} requests per copy the model "
                f"predicts {', '.join(broken)} (the SLO)",
            )

    def _max_copies(self, option: Option, knee: float) -> Choice:
        given = self.overrides.max_copies
        layout = option.layout
        peak = option.predicted.concurrency
        needed = max(1, math.ceil(peak / knee))
        fits = self.request.max_instance_count * layout.copies_per_instance
        # the autoscaling ceiling: the instances the peak needs at the band's pessimistic edge
        derived = max(needed, option.ceiling * layout.copies_per_instance)
        if given is None and derived > fits:
            # The option serves the peak within the SLO on its instances; the knee asks for
            # more copies than max_instance_count holds: cap there, and say so.
            self.warn(
                "max_instance_count",
                f"the peak ({peak} in flight) would take {needed} copies at the knee "
                f"({knee:g} per copy), more than max_instance_count holds ({fits}): max_copies "
                f"is capped at {fits}, where the model predicts the SLO still holds",
            )
            derived = fits
        most = _override(given, derived, ChoiceSource.DERIVED)
        if given is not None:
            check_range("max_copies", given, minimum=1)
            if given < needed:
                self.warn(
                    "max_copies",
                    f"max_copies={given} is below the {needed} copies the peak "
                    f"({peak} in flight) needs at {knee:g} per copy: the peak "
                    "would exceed the SLO",
                )
        return most

    def _min_copies(self, option: Option, knee: float, most: int) -> Choice:
        traffic = self.request.traffic
        minimum = traffic.minimum_concurrency(option.predicted.e2e_ms / 1000)
        fewest = _override(
            self.overrides.min_copies,
            min(most, max(1, math.ceil(minimum / knee))),
            ChoiceSource.DERIVED,
        )
        check_range("min_copies", fewest.value, minimum=0, maximum=most)
        return fewest

    # ----- memory, goal and prediction ---------------------------------------------------

    def memory(self, layout: Layout) -> Choice:
        """Host memory each copy reserves: half its accelerators' share of the instance."""
        if self.overrides.min_memory_per_copy_mib is not None:
            return Choice(self.overrides.min_memory_per_copy_mib, ChoiceSource.OVERRIDE)
        instance = layout.instance_type
        assert instance.memory_mib is not None and instance.accelerator_count
        share = instance.memory_mib * layout.tensor_parallel_degree / instance.accelerator_count
        return Choice(max(1, int(share * HOST_MEMORY_SHARE // 1024)) * 1024, ChoiceSource.DERIVED)

    def goal(self) -> dict[str, Any]:
        request = self.request
        workload = request.workload
        prices = self.request.prices
        return {
            "model": request.spec.name,
            "precision": request.precision.value,
            "workload": f"{workload.input_tokens} in / {workload.output_tokens} out tokens",
            "slo": request.slo.describe(),
            "traffic": request.traffic.describe(),
            "candidates": [t.name for t in request.candidates],
            "prices": f"{request.price_basis.value}; {prices.describe()}",
            "calibration": request.calibration.describe()
            if request.calibration is not None
            else "uncalibrated",
        }

    def prediction(self, option: Option) -> Prediction:
        predicted = option.predicted
        return Prediction(
            concurrency=predicted.concurrency,
            concurrency_per_copy=option.concurrency_per_copy,
            knee_concurrency_per_copy=option.knee_concurrency_per_copy,
            ms_per_token=predicted.ms_per_token,
            ttft_ms=predicted.ttft_ms,
            tokens_per_s=predicted.tokens_per_s,
            requests_per_s=predicted.requests_per_s,
            sources=tuple(prediction_sources(self.request, option.layout)),
        )


def prediction_sources(request: ServiceRequest, layout: Layout) -> list[str]:
    """Where the figures come from: the accelerator's published figures, the model's
    architecture, the efficiency constants (or the calibration), and the prices."""
    instance = layout.instance_type
    accelerator = instance.accelerator
    spec = request.spec
    lines = []
    if accelerator is not None:
        lines.append(
            f"accelerator: {accelerator.name}, {accelerator.memory_mib:,} MiB, "
            f"{accelerator.memory_bandwidth_gbps or '?'} GB/s, "
            f"{accelerator.fp16_tflops or '?'} dense FP16 TFLOPS (instance catalog, from the "
            "vendor's datasheet)"
        )
    origin = (
        "model catalog, from its Hugging Face config"
        if spec.hugging_face_ids
        else "given with ModelSpec.custom"
    )
    lines.append(
        f"model: {spec.name}, {spec.layers} layers, {spec.attention_heads} attention / "
        f"{spec.kv_heads} KV heads ({origin})"
    )
    profile = resolve_profile(request.engine, instance.is_neuron)
    lines.append(f"engine: {profile.describe()}")
    if request.calibration is not None:
        calibration = request.calibration
        release = request.engine if isinstance(request.engine, EngineRelease) else None
        applied = calibration.applied_to(spec, instance, engine=release)
        engine = f" with {calibration.engine.describe()}" if calibration.engine else ""
        lines.append(
            f"efficiency: {applied.efficiency.describe()} (calibrated on {calibration.source}: "
            f"{calibration.model}{engine} on {calibration.instance_type} "
            f"TP{calibration.tensor_parallel_degree}; "
            + (
                "every factor applies here)"
                if not applied.warnings
                else "as it applies here, see the calibration notes)"
            )
        )
    else:
        lines.append(
            f"efficiency: {efficiency_of(profile).describe()} ({profile_origin(profile)}; "
            "calibrate with a deploy-time benchmark)"
        )
    lines.append(f"price: {request.price_basis.value}; {request.prices.describe()}")
    return lines


def choose(
    recommendation: Recommendation,
    *,
    instance_type: InstanceType | None,
    tensor_parallel_degree: int | None,
    max_instance_count: int,
) -> Option:
    """The cheapest option that meets every layout override; an error naming the prop at
    fault (the SLO, the candidates, the instance count, or the override no option meets),
    with the performance model's reasons."""
    options = list(recommendation.options)
    if not options:
        raise _no_option_error(recommendation, max_instance_count)
    overrides = {
        "instance_type": instance_type.name if instance_type is not None else None,
        "tensor_parallel_degree": tensor_parallel_degree,
    }
    for prop, value in overrides.items():
        if value is None:
            continue
        kept = [o for o in options if _attribute(o, prop) == value]
        if not kept:
            reasons = rejections(
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


def _no_option_error(recommendation: Recommendation, max_instance_count: int) -> ValidationError:
    """No option at all: blame what every rejection has in common (memory: the candidates;
    unpublished accelerator figures: the candidates; the instance count: max_instance_count),
    else the SLO."""
    reasons = "; ".join(rejections(recommendation, None, None))
    kinds = {r.kind for r in recommendation.rejected}
    candidates = sorted({r.instance_type for r in recommendation.rejected})
    if RejectionKind.UNPREDICTABLE in kinds and kinds <= _CANDIDATE_KINDS:
        return ValidationError(
            "instance_types",
            candidates,
            f"no candidate can be predicted or fits the model: {reasons}",
            "add instance types whose accelerators' performance figures are published (the "
            "catalog's GPU and Neuron types), or benchmark the type and serve it with a "
            "pinned layout; more accelerator memory is not what is missing",
        )
    if kinds and kinds <= _CANDIDATE_KINDS:
        return ValidationError(
            "instance_types",
            candidates,
            f"the model does not fit on any candidate: {reasons}",
            "add instance types with more accelerator memory (or more accelerators), or lower "
            "the precision (e.g. Precision.INT4_AWQ); the SLO is not the cause",
        )
    if kinds == {RejectionKind.INSTANCE_COUNT}:
        return ValidationError(
            "max_instance_count",
            max_instance_count,
            f"every layout needs more instances for the peak traffic: {reasons}",
            "raise max_instance_count, add larger instance types, or lower the peak traffic",
        )
    return ValidationError(
        "slo",
        "unmet",
        f"no candidate layout serves the peak traffic within the SLO and memory: {reasons}",
        "relax the SLO, add larger instance types, raise max_instance_count, or lower the "
        "peak traffic",
    )


_CANDIDATE_KINDS = frozenset(
    {
        RejectionKind.MEMORY,
        RejectionKind.HEAD_DIVISIBILITY,
        RejectionKind.UNPREDICTABLE,
        RejectionKind.ENGINE,
        RejectionKind.NO_LAYOUT,
        RejectionKind.PRECISION,
        RejectionKind.TIMEOUT,
    }
)
"""Rejection kinds the candidate instance types answer for (a different candidate, not a
looser SLO or more instances, gives an option)."""


def rejections(
    recommendation: Recommendation, instance_type: str | None, degree: int | None
) -> list[str]:
    """Up to four rejections of ``instance_type`` at ``degree`` (None: any), in words."""
    found = [
        describe_rejection(r.instance_type, r.tensor_parallel_degree, r.reason)
        for r in recommendation.rejected
        if (instance_type is None or r.instance_type == instance_type)
        and (degree is None or r.tensor_parallel_degree in (None, degree))
    ]
    return found[:4]


def describe_rejection(instance_type: str, degree: int | None, reason: str) -> str:
    """``ml.g5.2xlarge TP1: memory: ...``."""
    return f"{instance_type}" + (f" TP{degree}" if degree else "") + f": {reason}"


def summary(option: Option) -> str:
    """One line per alternative: layout, price and predicted ms/token."""
    layout = option.layout
    price = f"${option.price_per_hour:,.2f}/h" if option.price_per_hour is not None else "no price"
    return (
        f"{layout.instance_count} x {layout.instance_type.name}, TP{layout.tensor_parallel_degree}"
        f" x {layout.copies_per_instance} copies: {price}, "
        f"{option.predicted.ms_per_token:.1f} ms/token"
    )


def _shape(decision: ServiceDecision) -> tuple[Any, ...]:
    """What a decision deploys: the layout at the peak and the scaling bounds."""
    layout, scaling = decision.layout, decision.scaling
    return (
        layout.instance_type.name,
        layout.tensor_parallel_degree,
        layout.copies_per_instance,
        layout.instance_count,
        scaling.min_instances,
        scaling.max_instances,
    )


def _outline(decision: ServiceDecision) -> str:
    """``3 x ml.g5.2xlarge TP1 x 1 copies at the peak (1-3 instances), $4.23/h, 41.2
    ms/token``: a decision in one line, to compare with another."""
    layout, scaling = decision.layout, decision.scaling
    price = decision.price_per_hour
    return (
        f"{layout.instance_count} x {layout.instance_type.name} TP{layout.tensor_parallel_degree}"
        f" x {layout.copies_per_instance} copies at the peak ({scaling.min_instances}-"
        f"{scaling.max_instances} instances), "
        + ("no price" if price is None else f"${price:,.2f}/h")
        + f", {decision.predicted.ms_per_token:.1f} ms/token predicted"
    )


def _attribute(option: Option, prop: str) -> Any:
    layout = option.layout
    if prop == "instance_type":
        return layout.instance_type.name
    return getattr(layout, prop)


def _override(given: Any, default: Any, source: ChoiceSource = ChoiceSource.RECOMMENDED) -> Choice:
    if given is not None:
        return Choice(given, ChoiceSource.OVERRIDE)
    return Choice(default, source)


def _source(given: Any) -> ChoiceSource:
    return ChoiceSource.OVERRIDE if given is not None else ChoiceSource.RECOMMENDED


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _precision(value: Any) -> Precision:
    try:
        return Precision(value)
    except ValueError:
        return Precision.FP16
