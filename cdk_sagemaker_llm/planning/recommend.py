"""Recommendation: the cheapest instance type x TP degree x copies x instance count that meets a
latency SLO at a given traffic.

For every candidate instance type and tensor-parallel degree dividing its accelerators the search
rejects layouts whose degree does not divide the attention/KV heads, that leave less than 1 GB
of KV cache, or whose single request already misses the SLO. For the rest it finds the most
in-flight requests one copy serves within the SLO (``performance.max_throughput_within``), fills
every accelerator of an instance with copies (a paid-for accelerator left idle buys nothing),
and takes the fewest instances that carry the traffic: a concurrency directly, a request rate by
Little's law (in-flight requests = rate x end-to-end latency), at the fraction of a request in
flight where the predicted ms/token reaches the SLO where the SLO stops the copy (``_slo_curve``:
the rule a measured curve is read by). Options are ranked by price per
hour of the whole option, then by cost per 1M output tokens at that traffic.

A layout a calibration measured, at a workload close to the measured one, is sized from its
measured levels instead (``_from_measurement``, ``planning.measured_curve``): the measurement
decides, the fitted model only transfers it elsewhere, and the option's reasoning says which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..catalog.prices import PriceList
from ..errors import ValidationError
from ..prop_types import typed_props
from .calibrated_band import calibrated_band, measured_here
from .calibration import AppliedCalibration, EngineRelease
from .conformal_band import load_regime
from .engine_profiles import (
    Band,
    ContainerRelease,
    EngineProfile,
    all_profiles,
    resolve_profile,
)
from .knee import Knee
from .measured_curve import (
    CopyCapacity,
    MeasuredCurve,
    MeasuredPoint,
    measured_copies,
    measured_level,
)
from .optimizations import JobEstimate, Optimization
from .option_band import OptionBand, option_band
from .performance import (
    CopyLimits,
    CopyModel,
    Efficiency,
    Layout,
    LayoutCapacity,
    LevelPrediction,
    Workload,
    _deployment_level,
    copy_knee,
    efficiency_of,
    gpu_name,
    interconnect_of,
    kv_cache_precision_problem,
    max_throughput_within,
    optimization_notes,
    precision_problem,
    prediction_band,
    prediction_reasons,
    profile_limits,
    profile_model,
)
from .pessimistic_edge import PessimisticEdge, pessimistic_edge
from .quantized_coverage import int4_problem
from .ranking import RankedLayout as RankedLayout  # (re-exported: where it was defined)
from .ranking import RejectionKind, _reject_reason, degrees
from .ranking import rank_layouts as rank_layouts
from .service_options import PriceBasis, Pricing, Risk, SearchSpace, Sizing
from .speculation import Speculation
from .workload import check_workload_context

__all__ = [
    "Option",
    "PriceBasis",
    "Pricing",
    "Recommendation",
    "Rejection",
    "RejectionKind",
    "Risk",
    "SearchSpace",
    "Sizing",
    "Slo",
    "Traffic",
    "recommend",
]

WIDEST_SEARCHED_INSTANCE_COUNT = 16
"""The widest layout ``recommend`` searches when the search space does not say: the most
instances one option may take (an ``LlmService``'s own default is
``planning.service_request.DEFAULT_SERVICE_MAX_INSTANCES``)."""


@typed_props
@dataclass(frozen=True)
class Slo:
    """The latency a deployment must meet: a per-token limit, a time-to-first-token limit, or
    both (at least one). ``Slo(max_ttft_ms=2000)`` is a TTFT-only SLO."""

    __synth_decision__ = "The SLO ranks the layouts (LlmService, recommend)"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    max_ms_per_token: float = math.inf
    """Per-token latency limit (end-to-end latency / output tokens), ms. Default: none
    (``math.inf``; then ``max_ttft_ms`` is required)."""
    max_ttft_ms: float | None = None
    """Time-to-first-token limit, ms. Default: none."""

    def __post_init__(self) -> None:
        if self.max_ms_per_token == math.inf and self.max_ttft_ms is None:
            raise ValidationError(  # what no bound means, in words (not None)
                "max_ms_per_token / max_ttft_ms",
                "no per-token limit, no TTFT limit",
                "an SLO needs at least one bound",
                "pass Slo(max_ms_per_token=100), Slo(max_ttft_ms=2000) or both",
            )
        if not self.max_ms_per_token > 0:  # NaN too
            raise ValidationError(
                "max_ms_per_token",
                self.max_ms_per_token,
                "must be positive",
                "pass e.g. 100, or omit it for a TTFT-only SLO",
            )
        if self.max_ttft_ms is not None and not 0 < self.max_ttft_ms < math.inf:
            raise ValidationError(
                "max_ttft_ms", self.max_ttft_ms, "must be positive", "pass e.g. 2000, or omit it"
            )

    @property
    def limits_ms_per_token(self) -> bool:
        """False for a TTFT-only SLO."""
        return self.max_ms_per_token != math.inf

    def describe(self) -> str:
        """E.g. ``<= 100 ms/token, TTFT <= 2000 ms`` or ``TTFT <= 2000 ms``."""
        parts = []
        if self.limits_ms_per_token:
            parts.append(f"<= {self.max_ms_per_token:g} ms/token")
        if self.max_ttft_ms is not None:
            parts.append(f"TTFT <= {self.max_ttft_ms:g} ms")
        return ", ".join(parts)


@dataclass(frozen=True)
class Traffic:
    """Expected traffic: exactly one of a request rate or a concurrency."""

    requests_per_second: float | None = None
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if (self.requests_per_second is None) == (self.concurrency is None):
            raise ValidationError(
                "traffic",
                {"requests_per_second": self.requests_per_second, "concurrency": self.concurrency},
                "give exactly one of requests_per_second and concurrency",
                "pass Traffic(requests_per_second=5) or Traffic(concurrency=32)",
            )
        if self.requests_per_second is not None and not 0 < self.requests_per_second < math.inf:
            raise ValidationError(
                "requests_per_second",
                self.requests_per_second,
                "must be a positive, finite rate",
                "pass e.g. 5",
            )
        if self.concurrency is not None and (
            not isinstance(self.concurrency, int)
            or isinstance(self.concurrency, bool)
            or self.concurrency < 1
        ):
            raise ValidationError(
                "concurrency", self.concurrency, "must be a positive integer", "pass e.g. 32"
            )

    def describe(self) -> str:
        """E.g. ``5 requests/s`` or ``32 concurrent requests``."""
        if self.requests_per_second is not None:
            return f"{self.requests_per_second:g} requests/s"
        return f"{self.concurrency} concurrent requests"


@dataclass(frozen=True)
class Option:
    """One layout that meets the SLO at the traffic, with its predicted figures and price."""

    layout: Layout
    concurrency_per_copy: int
    """In-flight requests each copy serves at the traffic given (the busiest copy)."""
    knee_concurrency_per_copy: int
    """The predicted knee of one copy: a scaling target."""
    max_batch_size: int
    """The server batch limit to configure per copy (what its KV cache holds, capped)."""
    predicted: LevelPrediction
    """At the traffic given, whole deployment."""
    price_per_hour: float | None
    """Whole option (instances x price per instance-hour); None without a price."""
    cost_per_million_tokens: float | None
    """Price per hour / (output tokens/s x 3600 / 10^6) at the traffic given."""
    reasoning: list[str]
    price_region: str | None = None
    """The region of the price (it may differ from the region asked for; see reasoning)."""
    max_concurrency_per_copy: int = 0
    """The most in-flight requests per copy within the SLO."""
    max_tokens_per_s_within_slo: float = 0.0
    """Output tokens/s of the whole option at its most in-flight requests within the SLO."""
    risk: Risk = Risk.MEDIAN
    """The side of the band the option was sized on."""
    band: Band | None = None
    """The residual band the option was sized with: the engine profile's cross-validated
    residuals (their median sizes the peak, their slowest ``Risk.WORST_CASE``), or a
    calibration's. Not what its figures are quoted with: that is ``p10_p90``."""
    p10_p90: OptionBand | None = None
    """The band its predicted figures are quoted with (``planning.option_band``): the
    conformal band of the predicted level's regime and distance, or a calibration's."""
    min_instance_count: int | None = None
    """The instances the minimum traffic keeps (``service_request.with_minimum``, the rule
    ``LlmService`` sets its fewest copies by); None: no minimum was given."""
    edge_slowdown: float | None = None
    """The factor on the model's times the ceiling was sized at (``Risk.PESSIMISTIC``: the
    pessimistic edge); None where the ceiling is the instance count."""
    median_instance_count: int | None = None
    """Instances the same layout needs when sized at the median (pessimistic sizing only)."""
    max_instance_count: int | None = None
    """The autoscaling ceiling: the instances the peak needs at the pessimistic edge of the
    band (``Risk.PESSIMISTIC``, where ``layout.instance_count`` is the median's); None: the
    instance count."""
    optimization: Optimization | None = None
    """The optimization the option serves the model with (None: as given)."""
    job: JobEstimate | None = None
    """The optimization job that optimization needs, with its time and cost."""
    target_concurrency_per_copy: float | None = None
    """The in-flight requests per copy autoscaling holds where it is not a whole number (a
    measured capacity within the SLO, ``planning.measured_curve``); None: the knee."""
    kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO
    """How the engine stores the KV cache the option was predicted and placed with."""
    requests_per_s_per_copy: float | None = None
    """Requests/s one copy serves at ``scaling_target`` in flight: what the instances at the
    peak divide a request rate by (the predicted rate there, or the measured one on a measured
    layout), so the copy's capacity the option is sized on. None: not computed."""

    @property
    def scaling_target(self) -> float:
        """The in-flight requests per copy the option is sized at and autoscaling holds (an
        average over the metric's period, so a fraction is meaningful)."""
        if self.target_concurrency_per_copy is not None:
            return self.target_concurrency_per_copy
        return self.knee_concurrency_per_copy

    @property
    def ceiling(self) -> int:
        """The most instances autoscaling may run (``max_instance_count``, else the count)."""
        return self.max_instance_count or self.layout.instance_count

    def rate_per_copy_at(self, target: float) -> float:
        """Requests/s one copy serves at ``target`` in flight: the option's own
        (``requests_per_s_per_copy``) at its scaling target, else Little's law at its predicted
        end-to-end latency."""
        if target == self.scaling_target and self.requests_per_s_per_copy is not None:
            return self.requests_per_s_per_copy
        return target / (self.predicted.e2e_ms / 1000)

    @property
    def min_price_per_hour(self) -> float | None:
        """The price per hour at the minimum (None without a price or a minimum)."""
        if self.price_per_hour is None or self.min_instance_count is None:
            return None
        return self.price_per_hour / self.layout.instance_count * self.min_instance_count

    @property
    def ceiling_price_per_hour(self) -> float | None:
        """The price per hour at the ceiling (None without a price)."""
        if self.price_per_hour is None:
            return None
        return self.price_per_hour / self.layout.instance_count * self.ceiling

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (one entry of ``recommend --format json``'s ``options``):
        ``instance_count`` is what runs at the peak (priced by ``price_per_hour``),
        ``max_instance_count`` the autoscaling ceiling (``max_price_per_hour``)."""
        ceiling_price, min_price = self.ceiling_price_per_hour, self.min_price_per_hour
        return {
            "instance_type": self.layout.instance_type.name,
            "tensor_parallel_degree": self.layout.tensor_parallel_degree,
            "copies_per_instance": self.layout.copies_per_instance,
            "min_instance_count": self.min_instance_count,
            "min_price_per_hour": None if min_price is None else round(min_price, 4),
            "instance_count": self.layout.instance_count,
            "max_instance_count": self.ceiling,
            "max_price_per_hour": None if ceiling_price is None else round(ceiling_price, 4),
            "concurrency_per_copy": self.concurrency_per_copy,
            "knee_concurrency_per_copy": self.knee_concurrency_per_copy,
            "target_concurrency_per_copy": self.scaling_target,
            "max_batch_size": self.max_batch_size,
            "kv_cache_precision": self.kv_cache_precision.value,
            "predicted": {
                "ms_per_token": round(self.predicted.ms_per_token, 2),
                "ttft_ms": round(self.predicted.ttft_ms, 1),
                "tokens_per_s": round(self.predicted.tokens_per_s, 1),
            },
            "price_per_hour": None
            if self.price_per_hour is None
            else round(self.price_per_hour, 4),
            "price_region": self.price_region,
            "cost_per_million_tokens": None
            if self.cost_per_million_tokens is None
            else round(self.cost_per_million_tokens, 4),
            "risk": self.risk.value,
            "band": None if self.p10_p90 is None else self.p10_p90.to_dict(),
            "sizing_factors": None if self.band is None else self._sizing_factors(self.band),
            "median_instance_count": self.median_instance_count,
            "optimization": None if self.optimization is None else self.optimization.name,
            "job": None if self.job is None else self.job.to_dict(),
            "reasoning": list(self.reasoning),
        }

    def _sizing_factors(self, band: Band) -> dict[str, Any]:
        """The factors on the model's times the option was sized at (``Band.sizing_factors``
        and the ceiling's edge)."""
        ceiling = None if self.edge_slowdown is None else round(self.edge_slowdown, 3)
        return band.sizing_factors() | {"ceiling": ceiling}


@dataclass(frozen=True)
class Rejection:
    """A layout (or a whole instance type) the search rejected, and why."""

    instance_type: str
    kind: RejectionKind
    """What kind of problem it is (what a user changes to get an option)."""
    reason: str
    """The problem in words."""
    tensor_parallel_degree: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        data: dict[str, Any] = {
            "instance_type": self.instance_type,
            "kind": self.kind.value,
            "reason": self.reason,
        }
        if self.tensor_parallel_degree is not None:
            data["tensor_parallel_degree"] = self.tensor_parallel_degree
        return data


@dataclass(frozen=True)
class Recommendation:
    """The options that meet the SLO, cheapest first, and what was rejected."""

    options: list[Option]
    rejected: list[Rejection]
    assumptions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``recommend --format json`` document."""
        return {
            "options": [option.to_dict() for option in self.options],
            "rejected": [rejection.to_dict() for rejection in self.rejected],
            "assumptions": list(self.assumptions),
        }


def default_instance_types() -> list[InstanceType]:
    """Every accelerated instance type of the catalog."""
    return [t for t in CATALOG.values() if t.accelerator is not None]


def unit_price(instance_type: InstanceType, prices: PriceList, basis: PriceBasis) -> float | None:
    """Price of one instance-hour on ``basis``; None when the list has no price."""
    price = prices.price_per_hour(instance_type)
    if price is None:
        return None
    if basis is PriceBasis.SAVINGS_PLAN_1Y:
        return price * (1 - prices.savings_plan_1y_discount)
    return price


def _deployment_for_rate(
    model: CopyModel, copies: int, capacity: int, rate: float, limit: int
) -> LevelPrediction | None:
    """The level of the smallest whole-deployment concurrency that serves ``rate`` requests/s
    (Little's law), or None when ``limit`` in-flight requests do not."""
    low, high = 1, limit
    top = _deployment_level(model, copies, high, capacity)
    if top.requests_per_s < rate:
        return None
    while low < high:
        middle = (low + high) // 2
        if _deployment_level(model, copies, middle, capacity).requests_per_s >= rate:
            high = middle
        else:
            low = middle + 1
    return _deployment_level(model, copies, low, capacity)


@dataclass(frozen=True, kw_only=True)
class _Search:
    """What every layout of a ``recommend`` search shares; built by ``_Search.of``."""

    spec: ModelSpec
    workload: Workload
    slo: Slo
    traffic: Traffic
    precision: Precision
    max_instance_count: int
    prices: PriceList
    price_basis: PriceBasis
    max_batch_size: int | None
    region_note: str | None
    engine: EngineProfile | ContainerRelease | str | None
    risk: Risk
    tensor_parallel_degrees: Sequence[int] | None
    optimizations: Sequence[Optimization] = ()
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO

    @staticmethod
    def of(
        *,
        spec: ModelSpec,
        workload: Workload,
        slo: Slo,
        traffic: Traffic,
        search: SearchSpace,
        pricing: Pricing,
        sizing: Sizing,
    ) -> _Search:
        """The shared state of a search for ``spec`` under ``workload``, ``slo`` and
        ``traffic``: the search space with its defaults (FP16, ``WIDEST_SEARCHED_INSTANCE_COUNT``
        instances), the pricing's list, basis and region note, and the sizing's engine (the
        calibrated one when it states none) and risk side."""
        return _Search(
            spec=spec,
            workload=workload,
            slo=slo,
            traffic=traffic,
            precision=search.precision or Precision.FP16,
            max_instance_count=search.max_instance_count or WIDEST_SEARCHED_INSTANCE_COUNT,
            prices=pricing.prices,
            price_basis=pricing.basis,
            max_batch_size=search.max_batch_size,
            region_note=_region_note(pricing),
            engine=sizing.engine,
            risk=sizing.risk,
            tensor_parallel_degrees=search.tensor_parallel_degrees,
            optimizations=tuple(search.optimizations),
            kv_cache=search.kv_cache_precision,
        )


@dataclass
class _Found:
    """What a search found: the options, the rejections, and every layout as sized at the
    median (what ``Risk.MEDIAN`` would offer: the default risk's cost line compares against
    its cheapest without searching again)."""

    options: list[Option] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    at_median: list[Option] = field(default_factory=list)


def _search_instance(search: _Search, instance_type: InstanceType, measured: _Measured) -> _Found:
    """The options and rejections of every tensor-parallel degree of one instance type."""
    found = _Found()
    wanted = search.tensor_parallel_degrees
    for degree in degrees(instance_type):
        if wanted is not None and degree not in wanted:
            continue
        layout = Layout(instance_type, degree, instance_type.accelerator_devices // degree)
        for optimization in (None, *search.optimizations):
            option, rejection, median = _search_variant(search, layout, measured, optimization)
            if option is not None:
                found.options.append(option)
            elif rejection is not None:
                found.rejected.append(rejection)
            if median is not None:
                found.at_median.append(median)
    return found


def _speculation_at_risk(optimization: Optimization | None, risk: Risk) -> Speculation | None:
    """An optimization's speculative decoding as sized at ``risk``: on the pessimistic side
    at the low end of its acceptance (``Speculation.pessimistic``)."""
    if optimization is None or optimization.speculation is None:
        return None
    speculation = optimization.speculation
    return speculation if risk is Risk.MEDIAN else speculation.pessimistic()


def _search_variant(
    search: _Search,
    layout: Layout,
    measured: _Measured,
    optimization: Optimization | None,
) -> tuple[Option | None, Rejection | None, Option | None]:
    """One layout, served as given or with one optimization (its precision and speculative
    decoding in the model; the job it needs in the option), and the same layout as sized at
    the median (None where the median does not serve). A calibration narrows the band where
    it measured this layout (``calibrated_band``)."""
    instance_type = layout.instance_type
    precision = optimization.precision(search.precision) if optimization else search.precision
    profile = resolve_profile(search.engine, instance_type.is_neuron)
    unsupported = precision_problem(instance_type, precision) or int4_problem(
        instance_type, layout.tensor_parallel_degree, precision
    )
    if unsupported is not None:
        return (
            None,
            Rejection(
                instance_type.name,
                RejectionKind.PRECISION,
                f"precision: {unsupported}",
                layout.tensor_parallel_degree,
            ),
            None,
        )
    kv_problem = kv_cache_precision_problem(instance_type, search.kv_cache)
    if kv_problem is not None:
        return (
            None,
            Rejection(
                instance_type.name,
                RejectionKind.KV_CACHE_PRECISION,
                f"kv cache precision: {kv_problem}",
                layout.tensor_parallel_degree,
            ),
            None,
        )
    unservable = optimization.engine_problem(search.engine, profile.name) if optimization else None
    if unservable is not None:
        assert optimization is not None
        reason = (
            f"with {optimization.name}: the engine ({profile.name}) cannot serve it: {unservable}"
        )
        return (
            None,
            Rejection(
                instance_type.name, RejectionKind.ENGINE, reason, layout.tensor_parallel_degree
            ),
            None,
        )
    band = calibrated_band(
        prediction_band(profile, search.spec, layout, search.workload, precision, optimization),
        measured.applied,
        search.spec,
        layout,
        search.workload,
        precision,
        search.engine if isinstance(search.engine, EngineRelease) else None,
        kv_cache_precision=search.kv_cache,
    )
    variant = _Variant(search, layout, precision, profile, band, measured, optimization)
    decided, why = _from_measurement(variant) if optimization is None else (None, "")
    if decided is not None:
        measured_option, measured_rejection, measured_median = decided
        return variant.quoted(measured_option, 1.0), measured_rejection, measured_median
    # The default risk decides feasibility and the peak's instances at the median; the band
    # goes into the ceiling only (``_with_ceiling``).
    sized_at = Risk.MEDIAN if search.risk is Risk.PESSIMISTIC else search.risk
    model = variant.model(sized_at.slowdown(band), sized_at)
    option, rejection = variant.evaluate(sized_at, None)
    median = option if sized_at is Risk.MEDIAN else variant.evaluate(Risk.MEDIAN, None)[0]
    if option is not None and search.risk is Risk.PESSIMISTIC:
        option, rejection = _with_ceiling(variant, option)
    option = variant.quoted(option, sized_at.slowdown(band))
    if optimization is None:
        if why and option is not None:
            option = replace(option, reasoning=[*option.reasoning, f"measurement: {why}"])
        return option, rejection, median
    unit = unit_price(instance_type, search.prices, search.price_basis)
    job = optimization.job(search.spec, unit)
    limits, _ = profile_limits(model, profile, search.max_batch_size)
    notes = optimization_notes(optimization, model, limits, price_per_hour=unit)

    def optimized(sized: Option | None) -> Option | None:
        if sized is None:
            return None
        reasoning = [*sized.reasoning, *notes]
        return replace(sized, optimization=optimization, job=job, reasoning=reasoning)

    if option is None:
        assert rejection is not None
        reason = f"with {optimization.name}: {rejection.reason}"
        return None, replace(rejection, reason=reason), optimized(median)
    return optimized(option), None, optimized(median)


@dataclass(frozen=True)
class _Variant:
    """One layout of a search as ``_search_variant`` evaluates it: served at ``precision``
    by ``profile``, with its ``band`` and calibration, as given or with ``optimization``."""

    search: _Search
    layout: Layout
    precision: Precision
    profile: EngineProfile
    band: Band
    measured: _Measured
    optimization: Optimization | None

    def model(self, slowdown: float, risk: Risk) -> CopyModel:
        """The layout's model with the times x ``slowdown`` (speculative decoding's acceptance
        as sized at ``risk``)."""
        search = self.search
        return profile_model(
            search.spec,
            self.layout,
            self.precision,
            search.workload,
            self.profile,
            self.measured.efficiency,
            slowdown,
            _speculation_at_risk(self.optimization, risk),
            kv_cache=search.kv_cache,
        )

    def evaluate(
        self, risk: Risk, target: float | None, slowdown: float | None = None
    ) -> tuple[Option | None, Rejection | None]:
        """The layout sized at ``risk``'s side of the band (or at ``slowdown``, an edge
        ``pessimistic_edge`` chose), at ``target`` per copy (default the scaling target of
        that side)."""
        search = self.search
        return _evaluate(
            search.spec,
            self.layout,
            search.workload,
            search.slo,
            search.traffic,
            precision=self.precision,
            efficiency_model=self.model(
                risk.slowdown(self.band) if slowdown is None else slowdown, risk
            ),
            max_instance_count=search.max_instance_count,
            prices=search.prices,
            price_basis=search.price_basis,
            max_batch_size=search.max_batch_size,
            region_note=search.region_note,
            side=_Side(self.profile, risk, self.band),
            target=target,
        )

    @cached_property
    def knee(self) -> int:
        """The median's knee of one copy, where doubling the requests in flight stops buying
        throughput (the SLO aside): the load regimes are read against it."""
        model = self.model(Risk.MEDIAN.slowdown(self.band), Risk.MEDIAN)
        limits, _ = profile_limits(model, self.profile, self.search.max_batch_size)
        return copy_knee(model, limits).concurrency or 1

    @cached_property
    def reasons(self) -> tuple[str, ...]:
        """Each way the layout's prediction leaves what its profile was fitted on: its
        extrapolation distance."""
        search = self.search
        return tuple(
            prediction_reasons(
                self.profile,
                search.spec,
                self.layout,
                search.workload,
                self.precision,
                self.optimization,
            )
        )

    def edge(self, target: float) -> PessimisticEdge:
        """The pessimistic edge of this layout's ceiling at ``target`` per copy: its load
        regime against the median's knee, its extrapolation distance."""
        return pessimistic_edge(self.band, load_regime(target, self.knee), len(self.reasons))

    def quoted(self, option: Option | None, centre: float) -> Option | None:
        """``option`` with the band its predicted figures are quoted with
        (``planning.option_band``), and a reasoning line that quotes it: its level's regime
        against the median's knee, its figures predicted at ``centre`` times the model's."""
        if option is None:
            return None
        regime = load_regime(option.concurrency_per_copy, self.knee)
        quoted = option_band(self.band, regime, self.reasons, centre)
        line = quoted.describe(option.predicted.ms_per_token)
        return replace(option, p10_p90=quoted, reasoning=[*option.reasoning, line])

    def instances_at_edge(self, target: float, factor: float) -> int:
        """The instances the traffic takes at ``target`` per copy when each copy serves
        ``factor`` times less than at the median (the edge's throughput)."""
        search = self.search
        traffic, per_instance = search.traffic, self.layout.copies_per_instance
        if traffic.concurrency is not None:
            return math.ceil(traffic.concurrency * factor / (target * per_instance))
        assert traffic.requests_per_second is not None
        model = self.model(Risk.MEDIAN.slowdown(self.band), Risk.MEDIAN)
        limits, _ = profile_limits(model, self.profile, search.max_batch_size)
        per_copy = _rate_at(model, limits, search.workload, target)
        copies = math.ceil(traffic.requests_per_second * factor / per_copy)
        return math.ceil(copies / per_instance)


def _with_ceiling(variant: _Variant, median: Option) -> tuple[Option | None, Rejection | None]:
    """``Risk.PESSIMISTIC``: the band paid by the autoscaling ceiling. ``median`` (the layout
    sized at the band's median, which meets the SLO) decides that the layout is offered. The
    scaling target per copy is on the pessimistic side of the knee (``_ceiling_target``)
    unless a calibration measured this layout (then the calibrated median's); the peak's
    instances are the median's at that target; the ceiling is the pessimistic edge's
    (``pessimistic_edge``) at that target, or, where the edge does not serve the target
    within the SLO, what the edge's throughput needs, said plainly."""
    search, band = variant.search, variant.band
    measured = measured_here(band)
    own = median.scaling_target
    # Until measured, the target stays on the pessimistic side of the knee: at most the knee.
    highest = own if measured else min(own, variant.knee)
    edge = variant.edge(highest)
    factor = edge.relative_to(band)
    at_edge, refused = variant.evaluate(Risk.PESSIMISTIC, None, slowdown=edge.slowdown)
    whole = search.traffic.concurrency is not None
    target = _ceiling_target(highest, factor, at_edge, measured, whole)
    expected, rejection = (median, None) if target == own else variant.evaluate(Risk.MEDIAN, target)
    if expected is None:
        return None, rejection
    ceiling, why = None, _edge_shortfall(search, at_edge, refused, target)
    if not why and at_edge is not None and target == at_edge.scaling_target:
        ceiling = at_edge  # already sized at this target
    elif not why:
        ceiling, refused = variant.evaluate(Risk.PESSIMISTIC, target, slowdown=edge.slowdown)
        why = _edge_shortfall(search, ceiling, refused, target)
    count = expected.layout.instance_count
    # Where the edge does not serve the target within the SLO, the ceiling is what the edge
    # needs within it (its own sizing), or what its throughput at the target needs, the more.
    within = at_edge.layout.instance_count if at_edge is not None else 0
    at_target = 0 if ceiling is not None else variant.instances_at_edge(target, factor)
    needed = ceiling.layout.instance_count if ceiling is not None else max(within, at_target)
    most = max(count, min(needed, search.max_instance_count))
    edge_target = at_edge.scaling_target if at_edge is not None else 0
    basis = (
        "the calibrated median's knee (a calibration measured this layout)"
        if measured
        else f"the median's {highest:g} (at most its knee), which the pessimistic edge's own "
        "target reaches"
        if target == highest
        else "the pessimistic edge's own, until a benchmark measures it"
        if target == edge_target
        else f"the median's {highest:g} (at most its knee) / {factor:.2f} (the edge's share of "
        "its throughput), until a benchmark measures it"
    )
    lines = [
        f"the band in the ceiling: {count} instance(s) run at the peak if the median holds, "
        f"{most} (max_instance_count) at the pessimistic edge (times x{edge.slowdown:.2f}: "
        f"{edge.basis}); scaling target {target:g} per copy: {basis}"
    ]
    if why:
        held = (
            f"; held at max_instance_count {search.max_instance_count}"
            if needed > search.max_instance_count
            else ""
        )
        own_sizing = (
            f", or {within} at its own {edge_target:g} per copy within the SLO, the more"
            if within
            else ""
        )
        lines.append(
            f"at the pessimistic edge {why}: the ceiling is sized by that edge's throughput "
            f"(the median's capacity / {factor:.2f}: {at_target} instance(s){own_sizing}"
            f"{held}); the SLO may be missed if the pessimistic edge holds, and the "
            "deploy-time benchmark's gates tell"
        )
    speculation = _speculation_at_risk(variant.optimization, Risk.PESSIMISTIC)
    if speculation is not None:
        lines.append(f"speculative decoding at the pessimistic edge: {speculation.describe()}")
    return replace(
        expected,
        risk=Risk.PESSIMISTIC,
        max_instance_count=most,
        edge_slowdown=edge.slowdown,
        reasoning=[*expected.reasoning, *lines],
    ), None


_Decided = tuple[Option | None, Rejection | None, Option | None]
"""A layout's option, or why it is rejected, and the same layout at the median."""


def _from_measurement(variant: _Variant) -> tuple[_Decided | None, str]:
    """The layout sized from the calibration's measured levels where they decide it
    (``Calibration.measured_curve_for``; ``planning.measured_curve``): a copy's capacity
    within the SLO and the knee as measured, the ceiling at the calibrated band's pessimistic
    edge. None where they do not, with why in words (empty: no calibration of this layout),
    and the fitted model sizes it."""
    search, layout = variant.search, variant.layout
    applied = variant.measured.applied
    if applied is None:
        return None, ""
    engine = search.engine if isinstance(search.engine, EngineRelease) else None
    curve, why = applied.calibration.measured_curve_for(
        search.spec, layout, search.workload, variant.precision, engine, search.kv_cache
    )
    if curve is None:
        return None, why
    slo = search.slo
    if slo.max_ttft_ms is not None and any(p.ttft_ms is None for p in curve.points):
        return None, (
            "the benchmark did not stream, so its levels cannot check the TTFT limit: the "
            "fitted model sizes it (benchmark with --stream to size from the measurement)"
        )
    capacity = curve.capacity_within(slo.max_ms_per_token, slo.max_ttft_ms)
    if capacity is None:
        low, high = curve.points[0].concurrency, curve.highest
        if curve.points[0].breaks(slo.max_ms_per_token, slo.max_ttft_ms):
            return None, (
                f"even the lightest measured level ({low:g} per copy) misses "
                f"{slo.describe()}: the fitted model extrapolates below it"
            )
        return None, (
            f"every measured level ({low:g}-{high:g} per copy) meets {slo.describe()}: beyond "
            f"{high:g} per copy the fitted model extrapolates the capacity"
        )
    median = _measured_option(variant, curve, capacity, Risk.MEDIAN)
    option = median if search.risk is Risk.MEDIAN else None
    if option is None:
        option = _measured_option(variant, curve, capacity, search.risk)
    if isinstance(option, Rejection):
        return (None, option, median if isinstance(median, Option) else None), ""
    return (option, None, median if isinstance(median, Option) else None), ""


def _measured_option(
    variant: _Variant, curve: MeasuredCurve, capacity: CopyCapacity, risk: Risk
) -> Option | Rejection:
    """The layout sized at ``risk`` from ``curve``: the peak at the measured capacity
    (``Risk.WORST_CASE``: at the calibrated band's pessimistic edge), the scaling target at the
    measured knee, the ceiling (``Risk.PESSIMISTIC``) at the band's pessimistic edge."""
    search, layout, band = variant.search, variant.layout, variant.band
    slo, traffic = search.slo, search.traffic
    knee = curve.knee(slo.max_ms_per_token, slo.max_ttft_ms)
    target = curve.scaling_target(capacity, knee)
    edge = band.pessimistic_slowdown
    rate, concurrency = traffic.requests_per_second, traffic.concurrency
    per_instance = layout.copies_per_instance
    peak_slowdown = edge if risk is Risk.WORST_CASE else 1.0
    count = math.ceil(
        measured_copies(
            curve, target, slowdown=peak_slowdown, requests_per_s=rate, concurrency=concurrency
        )
        / per_instance
    )
    if count > search.max_instance_count:
        return Rejection(
            layout.instance_type.name,
            RejectionKind.INSTANCE_COUNT,
            f"instance count: needs {count} instances for {traffic.describe()} as measured "
            f"(> max_instance_count {search.max_instance_count})",
            layout.tensor_parallel_degree,
        )
    at_edge = math.ceil(
        measured_copies(curve, target, slowdown=edge, requests_per_s=rate, concurrency=concurrency)
        / per_instance
    )
    ceiling = max(count, min(at_edge, search.max_instance_count))
    sized = replace(layout, instance_count=count)
    per_copy, point = measured_level(
        curve, sized.copies, target, requests_per_s=rate, concurrency=concurrency
    )
    model = variant.model(1.0, Risk.MEDIAN)
    limits, _ = profile_limits(model, variant.profile, search.max_batch_size)
    level = _measured_prediction(variant, curve, sized.copies, per_copy, point)
    unit = unit_price(layout.instance_type, search.prices, search.price_basis)
    price = None if unit is None else unit * count
    reasoning = _measured_reasoning(variant, curve, capacity, knee, target, sized, level)
    if risk is Risk.PESSIMISTIC:
        reasoning.append(
            f"the band in the ceiling: {count} instance(s) run at the peak as measured, "
            f"{ceiling} (max_instance_count) at the calibrated band's edge (its pessimistic "
            f"side, throughput / {edge:.2f}: {band.basis or band.describe()})"
        )
    if unit is None:
        reasoning.append(f"no {search.price_basis.value} price for {layout.instance_type.name}")
    elif search.region_note:
        reasoning.append(search.region_note)
    return Option(
        layout=sized,
        concurrency_per_copy=math.ceil(per_copy),
        knee_concurrency_per_copy=max(1, math.floor(target)),
        max_batch_size=limits.capacity,
        predicted=level,
        price_per_hour=price,
        cost_per_million_tokens=None if price is None else price / (level.tokens_per_s * 3.6e-3),
        reasoning=reasoning,
        price_region=search.prices.region if unit is not None else None,
        max_concurrency_per_copy=max(1, math.floor(capacity.concurrency)),
        max_tokens_per_s_within_slo=capacity.at_slo * curve.output_tokens * sized.copies,
        risk=risk,
        band=band,
        max_instance_count=ceiling if risk is Risk.PESSIMISTIC else count,
        edge_slowdown=edge if risk is Risk.PESSIMISTIC else None,
        target_concurrency_per_copy=target,
        kv_cache_precision=search.kv_cache,
        requests_per_s_per_copy=curve.requests_per_s(target) / peak_slowdown,
    )


def _measured_prediction(
    variant: _Variant, curve: MeasuredCurve, copies: int, per_copy: float, point: MeasuredPoint
) -> LevelPrediction:
    """The whole deployment at ``per_copy`` in flight per copy as measured (TTFT from the
    fitted model where the benchmark did not stream)."""
    ttft = point.ttft_ms
    if ttft is None:
        model = variant.model(1.0, Risk.MEDIAN)
        limits, _ = profile_limits(model, variant.profile, variant.search.max_batch_size)
        ttft = model.level(max(1.0, per_copy), limits.capacity).ttft_ms
    tokens_per_s = point.tokens_per_s * copies
    return LevelPrediction(
        concurrency=max(1, math.ceil(per_copy * copies)),
        ms_per_token=point.ms_per_token,
        ttft_ms=ttft,
        e2e_ms=point.ms_per_token * curve.output_tokens,
        tokens_per_s=tokens_per_s,
        requests_per_s=tokens_per_s / curve.output_tokens,
    )


def _measured_reasoning(
    variant: _Variant,
    curve: MeasuredCurve,
    capacity: CopyCapacity,
    knee: Knee,
    target: float,
    sized: Layout,
    level: LevelPrediction,
) -> list[str]:
    """Why a layout sized from its measurement is sized so, in lines."""
    search = variant.search
    levels = ", ".join(f"{p.concurrency:g}" for p in curve.points)
    return [
        f"{search.spec.name} TP{sized.tensor_parallel_degree} on {sized.instance_type.name} "
        f"was measured (levels {levels} per copy at {curve.input_tokens}/{curve.output_tokens} "
        "tokens): the measurement sizes it, the fitted model only transfers it",
        f"within {search.slo.describe()} one copy serves {capacity.concurrency:.1f} in flight, "
        f"{capacity.at_slo:.3f} requests/s (measured: interpolated between the levels around "
        f"the SLO; {capacity.proven:.3f} requests/s proven at the busiest level within it)",
        f"scaling target {target:g} in flight per copy (measured knee: {knee.describe()}): copy "
        "autoscaling holds it, and the instances ranked are those that run at the peak",
        f"{search.traffic.describe()} needs {sized.instance_count} instance(s) x "
        f"{sized.copies_per_instance} copies = {sized.copies} copies; measured "
        f"{level.ms_per_token:.1f} ms/token, {level.tokens_per_s:.0f} tokens/s at "
        f"{level.concurrency} in flight",
    ]


def _ceiling_target(
    own: float, factor: float, at_edge: Option | None, measured: bool, whole: bool
) -> float:
    """The scaling target per copy of ``Risk.PESSIMISTIC``: the calibrated median's own
    (``own``) where a calibration measured the layout; else the pessimistic edge's own target
    (``Option.scaling_target``: where the SLO stops the edge's copy, the fraction of a request
    its predicted curve reaches the SLO at, as the median's own), but never below ``own`` (the
    median's, at most its knee) divided by the edge's ``factor`` (a copy at the edge serves
    that share of the median's throughput: holding fewer in flight would size the peak for
    more than the band's slowdown) nor above ``own``. That share is rounded down to a whole
    request where the traffic is a concurrency (``whole``), else to a hundredth: a rate's mean
    in flight is not a whole number, and rounding 2.4 down to 2 would cost a sixth of the
    copy's capacity for nothing the band says."""
    if measured:
        return own
    steps = 1 if whole else 100  # per request in flight
    share = max(1.0, math.floor(own / factor * steps) / steps)
    edge_target = at_edge.scaling_target if at_edge is not None else 0
    return min(own, max(edge_target, share))


def _edge_shortfall(
    search: _Search, at_edge: Option | None, refused: Rejection | None, target: float
) -> str:
    """Why the pessimistic edge does not serve ``target`` per copy within the SLO on at most
    ``max_instance_count`` instances, in words; empty when it does."""
    if at_edge is not None:
        within = max(at_edge.max_concurrency_per_copy, at_edge.scaling_target)
        if target <= within:
            return ""
        return (
            f"{target:g} in flight per copy break {search.slo.describe()} (it serves "
            f"{within:g} within it)"
        )
    if refused is not None and refused.kind is RejectionKind.INSTANCE_COUNT:
        return f"the peak needs more than max_instance_count {search.max_instance_count}"
    return f"even one request per copy breaks {search.slo.describe()}"


@dataclass(frozen=True)
class _Measured:
    """What a calibration says about one candidate instance type: the efficiency factors the
    predictions use (None: the engine profile's) and the calibration as applied (None when
    uncalibrated), whose distance from the layout sets the band."""

    efficiency: Efficiency | None
    applied: AppliedCalibration | None


@dataclass(frozen=True)
class _Side:
    """The engine profile of a layout, the side of its band it is sized on, and the band."""

    profile: EngineProfile
    risk: Risk
    band: Band


def recommend(
    spec: ModelSpec,
    workload: Workload,
    slo: Slo,
    traffic: Traffic,
    *,
    search: SearchSpace | None = None,
    pricing: Pricing | None = None,
    sizing: Sizing | None = None,
    top: int = 5,
) -> Recommendation:
    """The cheapest layouts that serve ``traffic`` within ``slo`` (see the module docstring).

    :param search: the candidates, instance count, tensor-parallel degrees, precision,
        optimizations and server batch cap (``SearchSpace``); default every accelerated type
        of the catalog, at most 16 instances, FP16, no optimization. With
        ``optimizations`` each layout is evaluated as given and with each optimization; an
        optimized option names the job it needs with its time and cost, and the assumptions
        answer "optimize, or buy more accelerators?".
    :param pricing: the price list, basis and region (``Pricing``); default on-demand list
        prices; prices from another region than ``pricing.region`` are marked as such.
    :param sizing: the risk side, calibration and engine (``Sizing``): a calibration applies
        to each candidate by ``Calibration.applied_to`` (in full on the calibrated
        accelerator, only the engine-level overhead elsewhere; another model gets only the
        engine- and hardware-level factors, and the assumptions say so); default the
        pessimistic side, uncalibrated, the default engine profile.
    :param top: options to return; default 5.
    """
    search = search or SearchSpace()
    pricing = pricing or Pricing()
    sizing = sizing or Sizing()
    calibration, engine = sizing.calibration, sizing.engine
    if top < 1:
        raise ValidationError("top", top, "must be at least 1", "pass e.g. 5")
    check_workload_context(spec, workload)
    resolve_profile(engine)  # an unknown profile name is an error before the search
    release = engine if isinstance(engine, EngineRelease) else None
    efficiency = calibration.efficiency if calibration else None
    calibration_notes = calibration.engine_notes(release) if calibration else []
    sizing = _with_calibrated_engine(sizing)
    engine = sizing.engine
    shared = _Search.of(
        spec=spec,
        workload=workload,
        slo=slo,
        traffic=traffic,
        search=search,
        pricing=pricing,
        sizing=sizing,
    )
    candidates = (
        list(search.instance_types)
        if search.instance_types is not None
        else [t for t in default_instance_types() if _engine_runs_on(engine, t)]
    )
    options: list[Option] = []
    rejected: list[Rejection] = []
    at_median: list[Option] = []  # every layout sized at the median, for the cost line
    measured_on: dict[str, _Measured] = {}  # the calibration as applied per type
    for instance_type in candidates:
        unusable = _unpredictable(instance_type) or _wrong_hardware(engine, instance_type)
        if unusable is not None:
            rejected.append(unusable)
            continue
        measured = _Measured(efficiency, None)
        if calibration is not None:
            applied = calibration.applied_to(spec, instance_type, engine=release)
            measured = _Measured(applied.efficiency, applied)
            calibration_notes += [n for n in applied.warnings if n not in calibration_notes]
        measured_on[instance_type.name] = measured
        found = _search_instance(shared, instance_type, measured)
        options += found.options
        rejected += found.rejected
        at_median += found.at_median
        if not found.options and not any(r.instance_type == instance_type.name for r in rejected):
            rejected.append(
                Rejection(instance_type.name, RejectionKind.NO_LAYOUT, "no layout fits")
            )
    options.sort(key=_rank)
    trade_off = _optimize_or_buy(options) if shared.optimizations else None
    kept = [
        _with_median_cost(
            option,
            spec,
            workload,
            slo,
            traffic,
            precision=shared.precision,
            profile=resolve_profile(engine, option.layout.instance_type.is_neuron),
            measured=measured_on[option.layout.instance_type.name].efficiency,
            max_instance_count=shared.max_instance_count,
            prices=shared.prices,
            price_basis=shared.price_basis,
            max_batch_size=shared.max_batch_size,
        )
        for option in options[:top]
    ]
    notes = [
        shared.region_note,
        trade_off,
        _unpriced_note(kept),
        _unseen_hardware_note(kept),
        *(f"calibration: {note}" for note in calibration_notes),
    ]
    assumptions = _assumptions(workload, slo, traffic, search, pricing, sizing, notes)
    if shared.risk is not Risk.MEDIAN and kept:
        line = _pessimism_cost(kept[0], min(at_median, key=_rank, default=None))
        assumptions.append(line)
        kept[0] = replace(kept[0], reasoning=[*kept[0].reasoning, line])
    return Recommendation(kept, rejected, assumptions)


def _with_calibrated_engine(sizing: Sizing) -> Sizing:
    """``sizing`` with the calibrated engine when it states none: the engine the calibration's
    notes say is assumed chooses the profile too (its batch limit, kernels and band), not the
    default engine's. An engine named by another profile than the calibrated one is an
    error."""
    calibration, engine = sizing.calibration, sizing.engine
    if calibration is not None and isinstance(engine, EngineProfile | str):
        calibration.check_profile(resolve_profile(engine))  # another profile: an error
    if engine is not None or calibration is None or calibration.engine is None:
        return sizing
    return replace(sizing, engine=calibration.engine)


def _region_note(pricing: Pricing) -> str | None:
    """Prices from another region than the endpoint's are an estimate, and said so."""
    prices, region = pricing.prices, pricing.region
    if region is None or region == prices.region:
        return None
    return (
        f"no {region} prices: the {prices.region} list is used as an estimate ({prices.describe()})"
    )


def _assumptions(
    workload: Workload,
    slo: Slo,
    traffic: Traffic,
    search: SearchSpace,
    pricing: Pricing,
    sizing: Sizing,
    notes: Sequence[str | None],
) -> list[str]:
    """What every option of a recommendation assumes, one line each, then ``notes`` (the
    region's prices, the optimization trade-off, the calibration; None skipped)."""
    calibration, engine, prices = sizing.calibration, sizing.engine, pricing.prices
    profile = resolve_profile(engine)
    efficiency = calibration.efficiency if calibration else None
    shown = efficiency if efficiency is not None else efficiency_of(profile)
    max_batch_size = search.max_batch_size
    batch_limit = (
        f"server batch limit {max_batch_size} per copy"
        if max_batch_size is not None
        else f"server batch limit: {profile.describe_batching()}"
    )
    assumptions = [
        f"workload: {workload.input_tokens} input + {workload.output_tokens} output tokens; "
        f"SLO {slo.describe()}; traffic {traffic.describe()}",
        profile.describe()
        + ("; on Inferentia/Trainium the lmi-neuronx profile" if engine is None else ""),
        f"efficiency: {shown.describe()}"
        + (f" ({calibration.describe()})" if calibration else f" ({profile.name} profile)"),
        _risk_note(sizing.risk),
        f"{batch_limit}; every accelerator of an instance holds a copy",
        f"prices: {pricing.basis.value}, {prices.describe()}"
        + (
            f", savings plan {prices.savings_plan_1y_discount:.0%} off on-demand"
            if pricing.basis is PriceBasis.SAVINGS_PLAN_1Y
            else ""
        ),
    ]
    if search.kv_cache_precision is not KvCachePrecision.AUTO:
        weights = search.precision or Precision.FP16
        assumptions.append(
            f"KV cache {search.kv_cache_precision.describe(weights)}: every candidate predicted "
            "and placed with it; accelerators without FP8 are not offered (kind "
            f"'{RejectionKind.KV_CACHE_PRECISION.value}')"
        )
    return assumptions + [note for note in notes if note]


def _optimize_or_buy(options: Sequence[Option]) -> str:
    """ "Optimize, or buy more accelerators?": the cheapest option served as given against the
    cheapest optimized one (``options`` ranked), with the job the latter needs."""
    plain = next((o for o in options if o.optimization is None), None)
    optimized = next((o for o in options if o.optimization is not None), None)
    if optimized is None or optimized.job is None:
        return "optimize or buy more accelerators: no optimized option meets the SLO"
    if plain is None:
        return (
            f"optimize or buy more accelerators: only optimized options meet the SLO; the "
            f"cheapest ({optimized.layout.describe()}) needs {optimized.job.describe()}"
        )

    def price(option: Option) -> str:
        hourly = option.price_per_hour
        return "price unknown" if hourly is None else f"${hourly:,.2f}/hour"

    verdict = (
        "optimize" if _rank(optimized) < _rank(plain) else "buy (the optimization saves nothing)"
    )
    return (
        f"optimize or buy more accelerators: {verdict}: as given {plain.layout.describe()} "
        f"at {price(plain)}; with {optimized.optimization.name if optimized.optimization else ''} "
        f"{optimized.layout.describe()} at {price(optimized)}, after a one-off "
        f"{optimized.job.describe()}"
    )


def _unpriced_note(options: Sequence[Option]) -> str | None:
    """When the first option has no price, that it is ranked, not found, the cheapest."""
    if not options or options[0].price_per_hour is not None:
        return None
    return (
        f"price unknown: the first option ({options[0].layout.instance_type.name}) has no price "
        "in the list; unpriced options rank after every priced one and none of them is called "
        "the cheapest: add their prices with PriceList.with_prices to compare them"
    )


def _unseen_hardware_note(options: Sequence[Option]) -> str | None:
    """When the first option runs on an accelerator no engine profile was fitted on, that
    its figures are an extrapolation to check, not a decision to deploy."""
    if not options:
        return None
    gpu = gpu_name(options[0].layout.instance_type)
    seen = sorted({g for p in all_profiles() if p.fitted for g in p.fitted.gpus})
    if gpu in seen:
        return None
    return (
        f"extrapolation, not a decision: the first option runs on "
        f"{gpu or options[0].layout.instance_type.name}, which no engine profile was fitted on "
        f"(fitted: {', '.join(seen)}); its figures and band are the model's extrapolation: "
        "benchmark it (EndpointBenchmark, then calibrate) before relying on them"
    )


def _pessimism_cost(pessimistic: Option, median: Option | None) -> str:
    """What sizing on the pessimistic side costs against the cheapest option at the median."""
    if median is None:
        return "at the median no option would serve either"
    served = "" if median.optimization is None else f" with {median.optimization.name}"
    if median.price_per_hour is None:  # unpriced options rank last: nothing says cheapest
        return (
            f"at the median the first option would be {median.layout.describe()}{served}, "
            "whose price is not in the list: what sizing on the pessimistic side costs is "
            "unknown (add the price with PriceList.with_prices)"
        )
    text = (
        f"at the median the cheapest option would be {median.layout.describe()}{served} at "
        f"${median.price_per_hour:,.2f}/hour"
    )
    if pessimistic.price_per_hour is not None and median.price_per_hour is not None:
        extra = pessimistic.price_per_hour - median.price_per_hour
        text += (
            f": sizing on the pessimistic side costs {'+' if extra >= 0 else '-'}"
            f"${abs(extra):,.2f}/hour (${pessimistic.price_per_hour:,.2f} vs "
            f"${median.price_per_hour:,.2f})"
        )
    return text


def _risk_note(risk: Risk) -> str:
    if risk is Risk.PESSIMISTIC:
        return (
            "risk: the band paid by the autoscaling ceiling: a layout is offered where its "
            "median meets the SLO, instance_count runs at the peak if the median holds, "
            "max_instance_count at the pessimistic edge (the conformal band's held-out p90 of "
            "the scaling target's load regime and extrapolation distance; after a calibration "
            "of the layout, the calibrated band's); --risk worst-case (Risk.WORST_CASE) sizes "
            "everything at the engine profile's slowest residual, --risk median (Risk.MEDIAN) "
            "sizes even the ceiling at the median"
        )
    if risk is Risk.WORST_CASE:
        return (
            "risk: worst case: every instance sized on the pessimistic side of each "
            "prediction's band (for a service that cannot autoscale); the default "
            "(Risk.PESSIMISTIC) runs the median's instances and keeps this as the ceiling"
        )
    return (
        "risk: sized at the median of the engine profile's residuals: about half of "
        "deployments would be slower than predicted (Sizing(risk=Risk.PESSIMISTIC) sizes the "
        "ceiling for the slowest validation measurement)"
    )


def _with_median_cost(
    option: Option,
    spec: ModelSpec,
    workload: Workload,
    slo: Slo,
    traffic: Traffic,
    *,
    precision: Precision,
    profile: EngineProfile,
    measured: Any,
    max_instance_count: int,
    prices: PriceList,
    price_basis: PriceBasis,
    max_batch_size: int | None,
) -> Option:
    """Say in the reasoning which side of the band the option was sized on and what that
    costs against sizing at the median."""
    band = option.band
    if band is None:
        return option
    sized_at = Risk.MEDIAN if option.risk is Risk.PESSIMISTIC else option.risk
    side = "on the pessimistic side" if sized_at is Risk.WORST_CASE else "at the median"
    line = (
        f"sized {side}: the model's times x{sized_at.slowdown(band):.2f} "
        f"(tokens/s / {sized_at.slowdown(band):.2f}; {band.describe()})"
    )
    if option.risk is Risk.MEDIAN:
        return replace(option, reasoning=[*option.reasoning, line])
    if option.risk is Risk.PESSIMISTIC:
        return _with_ceiling_cost(option, line)
    layout = option.layout
    base = Layout(layout.instance_type, layout.tensor_parallel_degree, layout.copies_per_instance)
    if option.optimization is not None:
        precision = option.optimization.precision(precision)
    median, _ = _evaluate(
        spec,
        base,
        workload,
        slo,
        traffic,
        precision=precision,
        efficiency_model=profile_model(
            spec,
            base,
            precision,
            workload,
            profile,
            measured,
            Risk.MEDIAN.slowdown(band),
            option.optimization.speculation if option.optimization else None,
            kv_cache=option.kv_cache_precision,
        ),
        max_instance_count=max_instance_count * 4,
        prices=prices,
        price_basis=price_basis,
        max_batch_size=max_batch_size,
        region_note=None,
        side=_Side(profile, Risk.MEDIAN, band),
    )
    if median is None:
        line += "; at the median no fewer instances would do"
        return replace(option, reasoning=[*option.reasoning, line])
    count = median.layout.instance_count
    extra = layout.instance_count - count
    cost = ""
    if option.price_per_hour is not None and median.price_per_hour is not None:
        cost = f", +${option.price_per_hour - median.price_per_hour:,.2f}/hour"
    line += (
        f"; at the median {count} instance(s) would do: the pessimistic side costs "
        f"{extra:+d} instance(s){cost}"
    )
    return replace(option, reasoning=[*option.reasoning, line], median_instance_count=count)


def _with_ceiling_cost(option: Option, line: str) -> Option:
    """``Risk.PESSIMISTIC``'s line: the peak is sized at the median, the pessimistic edge
    sizes the ceiling only; what runs at the peak and what the ceiling would cost."""
    count, ceiling = option.layout.instance_count, option.ceiling
    cost = ""
    ceiling_price = option.ceiling_price_per_hour
    if option.price_per_hour is not None and ceiling_price is not None:
        cost = f" (${option.price_per_hour:,.2f}/hour; ${ceiling_price:,.2f}/hour at the ceiling)"
    line += (
        f", for the autoscaling ceiling only ({ceiling} instance(s)): at the median {count} "
        f"instance(s) run at the peak{cost}"
    )
    return replace(option, reasoning=[*option.reasoning, line], median_instance_count=count)


def _unpredictable(instance_type: InstanceType) -> Rejection | None:
    """Why the model cannot predict ``instance_type`` (no accelerator, unpublished figures);
    None when it can."""
    if instance_type.accelerator is None:
        return Rejection(
            instance_type.name,
            RejectionKind.UNPREDICTABLE,
            "not an accelerated instance type the catalog knows",
        )
    if not instance_type.accelerator.performance_known:
        return Rejection(
            instance_type.name,
            RejectionKind.UNPREDICTABLE,
            f"performance unknown: {instance_type.accelerator.unpublished}, so its latency "
            "cannot be predicted",
        )
    return None


def _engine_runs_on(engine: object, instance_type: InstanceType) -> bool:
    """True when the engine (a profile, a release, or None: the default per accelerator)
    runs on ``instance_type``'s accelerators (its profile's ``serves.accelerators``)."""
    return resolve_profile(engine, instance_type.is_neuron).serves.runs_on(instance_type)


def _wrong_hardware(engine: object, instance_type: InstanceType) -> Rejection | None:
    """A candidate the engine does not run on (vLLM on Inferentia, NeuronX on a GPU), as
    ``LlmService`` refuses it: predicting it as other hardware would be a guess."""
    if _engine_runs_on(engine, instance_type):
        return None
    profile = resolve_profile(engine, instance_type.is_neuron)
    accelerator = instance_type.accelerator.name if instance_type.accelerator else "no accelerator"
    return Rejection(
        instance_type.name,
        RejectionKind.ENGINE,
        f"engine: {profile.name} runs on {profile.serves.accelerators.value} accelerators, "
        f"not on {accelerator} ({profile.serves.source})",
    )


def _rank(option: Option) -> tuple[bool, float, bool, float, float, float]:
    """Price per hour; then, at an equal price, the model served as given before an
    optimized one (an optimization wins only where it lowers the bill: its job costs deploy
    hours, and serving the same traffic faster on the same instances saves nothing); then
    cost per 1M tokens at the traffic; then, at equal price and traffic, the option serving
    more within the SLO (lower cost per 1M tokens at capacity); then the lower predicted
    ms/token."""
    return (
        option.price_per_hour is None,
        option.price_per_hour if option.price_per_hour is not None else 0.0,
        option.optimization is not None,
        round(option.cost_per_million_tokens or 0.0, 6),
        -option.max_tokens_per_s_within_slo,
        option.predicted.ms_per_token,
    )


def _evaluate(
    spec: ModelSpec,
    layout: Layout,
    workload: Workload,
    slo: Slo,
    traffic: Traffic,
    *,
    precision: Precision,
    efficiency_model: CopyModel,
    max_instance_count: int,
    prices: PriceList,
    price_basis: PriceBasis,
    max_batch_size: int | None,
    region_note: str | None,
    side: _Side,
    target: float | None = None,
) -> tuple[Option | None, Rejection | None]:
    """One layout sized for the traffic at ``target`` in flight per copy (default its own
    scaling target, ``_scaling_target``; a fraction of a request is read off the predicted
    curve, ``_sizing_curve``), or why it cannot serve."""
    profile, risk, band = side.profile, side.risk, side.band
    instance_type = layout.instance_type
    degree = layout.tensor_parallel_degree
    limits, memory = profile_limits(efficiency_model, profile, max_batch_size)
    capacity = max_throughput_within(
        spec,
        layout,
        workload,
        slo.max_ms_per_token,
        precision=precision,
        efficiency=efficiency_model.efficiency,
        max_batch_size=max_batch_size,
        max_ttft_ms=slo.max_ttft_ms,
        engine=profile,
        slowdown=efficiency_model.slowdown,
        speculation=efficiency_model.speculation,
        kv_cache=efficiency_model.kv_cache,
    )
    if capacity is None:
        kind, reason = _reject_reason(
            efficiency_model, limits, memory, slo.max_ms_per_token, slo.max_ttft_ms
        )
        return None, Rejection(instance_type.name, kind, reason, degree)
    per_copy = capacity.concurrency_per_copy
    knee = copy_knee(efficiency_model, limits, slo.max_ms_per_token, slo.max_ttft_ms)
    # A knee of None: even one request per copy trips the rule, so the walk stopped at 1.
    knee_clients = knee.concurrency or 1
    own = _scaling_target(knee_clients, per_copy)
    slo_curve = _sizing_curve(
        efficiency_model, limits, workload, slo, traffic, own, per_copy, target
    )
    at_slo = None if slo_curve is None else slo_curve[1]
    target = target or own
    per_instance_copies = layout.copies_per_instance
    rate_per_copy = _rate_per_copy(efficiency_model, limits, target, slo_curve)
    count = _peak_instances(traffic, rate_per_copy, target, per_instance_copies)
    if count > max_instance_count:
        return None, Rejection(
            instance_type.name,
            RejectionKind.INSTANCE_COUNT,
            f"instance count: needs {count} instances for {traffic.describe()} "
            f"(> max_instance_count {max_instance_count})",
            degree,
        )
    sized = Layout(instance_type, degree, per_instance_copies, count)
    copies = sized.copies
    level = _peak_level(traffic, efficiency_model, limits, copies, target, slo_curve)
    busiest = math.ceil(level.concurrency / copies)
    unit = unit_price(instance_type, prices, price_basis)
    price = None if unit is None else unit * count
    cost = (
        None
        if price is None or level.tokens_per_s <= 0
        else price / (level.tokens_per_s * 3600 / 1e6)
    )
    reasoning = _reasoning(
        spec,
        sized,
        workload,
        slo,
        traffic,
        efficiency_model,
        limits,
        capacity,
        level,
        knee.detail or "",
    )
    reasoning.insert(2, _target_line(at_slo or target, knee_clients, per_copy, target != own))
    if unit is None:
        reasoning.append(f"no {price_basis.value} price for {instance_type.name} in the list")
    elif region_note:
        reasoning.append(region_note)
    return (
        Option(
            layout=sized,
            concurrency_per_copy=busiest,
            knee_concurrency_per_copy=math.floor(target),
            max_batch_size=limits.capacity,
            predicted=level,
            price_per_hour=price,
            cost_per_million_tokens=cost,
            reasoning=reasoning,
            price_region=prices.region if unit is not None else None,
            max_concurrency_per_copy=per_copy,
            max_tokens_per_s_within_slo=capacity.level.tokens_per_s / layout.copies * copies,
            risk=risk,
            band=band,
            max_instance_count=count,
            target_concurrency_per_copy=at_slo,
            kv_cache_precision=efficiency_model.kv_cache,
            requests_per_s_per_copy=rate_per_copy,
        ),
        None,
    )


def _rate_per_copy(
    model: CopyModel,
    limits: CopyLimits,
    target: float,
    slo_curve: tuple[MeasuredCurve, float] | None,
) -> float:
    """Requests/s one copy serves at ``target`` in flight: where the SLO stops the copy
    (``slo_curve``: the predicted curve and its capacity within the SLO, from ``_slo_curve``),
    read off that curve at the capacity as a measured one is
    (``MeasuredCurve.requests_per_s``); else the model's level at ``target``."""
    if slo_curve is not None:
        curve, at_slo = slo_curve
        return curve.requests_per_s(at_slo)
    return _deployment_level(model, 1, math.floor(target), limits.capacity).requests_per_s


def _rate_at(model: CopyModel, limits: CopyLimits, workload: Workload, target: float) -> float:
    """Requests/s one copy serves at ``target`` in flight (``_rate_per_copy``), a fraction of a
    request read off the predicted curve (``_fractional_curve``)."""
    return _rate_per_copy(model, limits, target, _fractional_curve(model, limits, workload, target))


def _peak_instances(
    traffic: Traffic, rate_per_copy: float, target: float, per_instance_copies: int
) -> int:
    """Instances that carry ``traffic``: a concurrency at ``target`` in flight per copy, a
    rate at ``rate_per_copy`` requests/s per copy (``_rate_per_copy``)."""
    if traffic.concurrency is not None:
        return math.ceil(traffic.concurrency / (target * per_instance_copies))
    assert traffic.requests_per_second is not None
    copies = math.ceil(traffic.requests_per_second / rate_per_copy)
    return math.ceil(copies / per_instance_copies)


def _peak_level(
    traffic: Traffic,
    model: CopyModel,
    limits: CopyLimits,
    copies: int,
    target: float,
    slo_curve: tuple[MeasuredCurve, float] | None,
) -> LevelPrediction:
    """The whole deployment of ``copies`` copies at the peak ``traffic`` (a concurrency, or a
    rate spread at ``target`` per copy; read off ``slo_curve`` where the SLO stops the copy)."""
    if traffic.concurrency is not None:
        return _deployment_level(model, copies, traffic.concurrency, limits.capacity)
    if slo_curve is not None:
        curve, at_slo = slo_curve
        return _curve_level(curve, copies, at_slo, traffic.requests_per_second)
    assert traffic.requests_per_second is not None
    found = _deployment_for_rate(
        model, copies, limits.capacity, traffic.requests_per_second, math.floor(target) * copies
    )
    assert found is not None  # the count was chosen so that target x copies serves it
    return found


def _slo_curve(
    model: CopyModel, limits: CopyLimits, workload: Workload, slo: Slo, within_slo: int
) -> tuple[MeasuredCurve | None, float | None]:
    """Where the SLO stops a copy between ``within_slo`` and one more in flight (below its
    batch limit), the model's levels of one copy at 1 to ``within_slo`` + 1 as a curve, and
    the in-flight requests per copy where the predicted ms/token (or TTFT) reaches the SLO:
    read by the rule a measured curve is read by (``MeasuredCurve.capacity_within``,
    interpolated between the two levels around the limit, down to a hundredth as
    ``MeasuredCurve.scaling_target``). A rate's mean in flight is not a whole number, so a
    copy predicted to serve 1.9 within the SLO is not sized as one that serves 1 (twice the
    copies for a 5 % error at 2 in flight). (None, None) where the SLO does not bind there."""
    if within_slo >= limits.capacity:
        return None, None
    curve = _predicted_curve(model, limits, workload, within_slo + 1)
    capacity = curve.capacity_within(slo.max_ms_per_token, slo.max_ttft_ms)
    if capacity is None:
        return None, None
    return curve, max(float(within_slo), math.floor(capacity.concurrency * 100) / 100)


def _predicted_curve(
    model: CopyModel, limits: CopyLimits, workload: Workload, highest: int
) -> MeasuredCurve:
    """The model's levels of one copy at 1 to ``highest`` in flight, as a curve read by the
    rule a measured one is (``planning.measured_curve``)."""
    points = []
    for clients in range(1, highest + 1):
        at = model.level(clients, limits.capacity)
        points.append(MeasuredPoint(clients, at.ms_per_token, at.tokens_per_s, at.ttft_ms))
    return MeasuredCurve.of(points, workload)


def _sizing_curve(
    model: CopyModel,
    limits: CopyLimits,
    workload: Workload,
    slo: Slo,
    traffic: Traffic,
    own: int,
    within_slo: int,
    target: float | None,
) -> tuple[MeasuredCurve, float] | None:
    """The predicted curve a request rate is sized on and the fraction of a request in flight
    per copy it is read at: with no ``target``, where the SLO stops the copy (``own`` is
    ``within_slo``) and its predicted ms/token reaches the SLO (``_slo_curve``); with a
    ``target`` that is not a whole number (the pessimistic side's, ``_ceiling_target``), at
    that target. None: a concurrency, or whole requests."""
    if traffic.requests_per_second is None:
        return None
    if target is None:
        if own != within_slo:
            return None
        curve, at_slo = _slo_curve(model, limits, workload, slo, within_slo)
        return None if curve is None or at_slo is None else (curve, at_slo)
    return _fractional_curve(model, limits, workload, target)


def _fractional_curve(
    model: CopyModel, limits: CopyLimits, workload: Workload, target: float
) -> tuple[MeasuredCurve, float] | None:
    """The predicted curve of one copy up to ``target`` and the target, where the target is
    not a whole number of requests in flight; None where it is."""
    if target == math.floor(target):
        return None
    return _predicted_curve(model, limits, workload, math.ceil(target)), target


def _curve_level(
    curve: MeasuredCurve, copies: int, target: float, requests_per_s: float | None
) -> LevelPrediction:
    """The whole deployment where ``requests_per_s`` spreads over ``copies`` copies of
    ``curve`` (``measured_level``: at most ``target`` in flight per copy), each serving the
    curve's rate there (``MeasuredCurve.requests_per_s``: Little's law at its ms/token)."""
    per_copy, point = measured_level(
        curve, copies, target, requests_per_s=requests_per_s, concurrency=None
    )
    rate = curve.requests_per_s(per_copy) * copies
    return LevelPrediction(
        concurrency=max(1, round(per_copy * copies)),  # the mean in flight (Little's law)
        ms_per_token=point.ms_per_token,
        ttft_ms=point.ttft_ms or 0.0,
        e2e_ms=point.ms_per_token * curve.output_tokens,
        tokens_per_s=rate * curve.output_tokens,
        requests_per_s=rate,
    )


def _scaling_target(knee: int, within_slo: int) -> int:
    """The in-flight requests per copy an option is sized at and its copy autoscaling holds:
    the knee where throughput stops growing first; where the SLO stops the knee's doubling
    walk (twice the knee breaks it), the most one copy serves within the SLO. One figure for
    both, so the instances ranked are the instances that run at the peak."""
    return max(1, within_slo if 2 * knee > within_slo else knee)


def _target_line(target: float, knee: int, within_slo: int, given: bool) -> str:
    """Why the option is sized at ``target`` per copy, in one line (``given``: the target
    comes from another side of the band, ``_with_ceiling``)."""
    if given:
        bound = (
            f"set on the side of the band the ceiling line names; {within_slo} meet the SLO here"
        )
    elif target == knee:
        bound = f"the knee; {within_slo} meet the SLO"
    else:
        between = (
            f", where the predicted levels {within_slo} and {within_slo + 1} reach the SLO "
            "(interpolated, as a measured curve is read)"
            if target != within_slo
            else ""
        )
        bound = f"the most within the SLO{between}; the knee walk stopped at {knee}"
    return (
        f"scaling target {target:g} in flight per copy ({bound}): copy autoscaling holds it, "
        "and the instances ranked are those that run at the peak"
    )


def _kv_cache_note(model: CopyModel) -> str:
    """`` (fp8, 1 byte per element)`` where the KV cache is not the activation precision's;
    empty for ``KvCachePrecision.AUTO`` (the default every layout assumed before)."""
    if model.kv_cache is KvCachePrecision.AUTO:
        return ""
    return f" ({model.kv_cache.describe(model.precision)})"


def _ttft_at_capacity(slo: Slo, capacity: LayoutCapacity) -> str:
    """Where the SLO's TTFT limit is what stopped a copy (TTFT grows with the load: the wait
    for admission and for the prefill), the figures: ``, TTFT X ms; at N + 1 per copy TTFT
    would be Y ms > L``; empty otherwise."""
    limit, beyond = slo.max_ttft_ms, capacity.next_ttft_ms
    if limit is None or beyond is None or beyond <= limit:
        return ""
    return (
        f", TTFT {capacity.level.ttft_ms:.0f} ms; at {capacity.concurrency_per_copy + 1} per "
        f"copy TTFT would be {beyond:.0f} ms > {limit:g}"
    )


def _reasoning(
    spec: ModelSpec,
    layout: Layout,
    workload: Workload,
    slo: Slo,
    traffic: Traffic,
    model: CopyModel,
    limits: CopyLimits,
    capacity: LayoutCapacity,
    level: LevelPrediction,
    knee_reason: str,
) -> list[str]:
    degree = layout.tensor_parallel_degree
    lines = [
        f"{spec.name} TP{degree}: one copy holds {limits.kv_sequences} sequences of "
        f"{workload.total_tokens} tokens in its KV cache{_kv_cache_note(model)}, batch limit "
        f"{limits.batch_limit}; "
        f"one request decodes at {model.step_s(1) * 1000:.1f} ms/step",
        f"within {slo.describe()} one copy serves up to {capacity.concurrency_per_copy} "
        f"in-flight requests ({capacity.level.tokens_per_s / capacity.layout.copies:.0f} "
        f"tokens/s per copy at {capacity.level.ms_per_token:.1f} ms/token"
        + _ttft_at_capacity(slo, capacity)
        + ")",
        f"{traffic.describe()} needs {layout.instance_count} instance(s) x "
        f"{layout.copies_per_instance} copies = {layout.copies} copies; predicted "
        f"{level.ms_per_token:.1f} ms/token, TTFT {level.ttft_ms:.0f} ms, "
        f"{level.tokens_per_s:.0f} tokens/s at {level.concurrency} in flight",
        f"knee: {knee_reason}",
    ]
    if layout.instance_type.is_neuron:
        lines.append(
            "Neuron: modeled at chip level like a GPU; serving needs artifacts compiled for this "
            "batch size, sequence length and degree, and the figures are approximate: calibrate "
            "with a benchmark"
        )
    if degree > 1:
        link = interconnect_of(layout.instance_type, degree)
        lines.append(
            f"TP{degree} pays {model.all_reduce_s(1) * 1000:.1f} ms of all-reduces per step over "
            f"{link.name}{link.unmeasured_note()}"
        )
    return lines
