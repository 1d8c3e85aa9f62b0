"""One candidate layout of a ``recommend`` search (``LayoutVariant``): what the whole search
shares (``SearchContext``), what a calibration says about the instance type
(``TypeCalibration``), and the layout served at a precision by an engine profile, with its band,
as given or with one optimization: its model at a side of the band, its knee, its pessimistic
edge and the band its figures are quoted with."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..catalog.prices import PriceList
from .calibration import AppliedCalibration
from .conformal_band import load_regime
from .efficiency import Efficiency
from .engine_profiles import Band, ContainerRelease, EngineProfile
from .layout_evaluation import BandSide, evaluate_layout, rate_at
from .objectives import Slo, Traffic
from .optimizations import Optimization
from .option_band import option_band
from .performance import (
    CopyModel,
    Layout,
    Workload,
    copy_knee,
    prediction_reasons,
    profile_limits,
    profile_model,
)
from .pessimistic_edge import PessimisticEdge, pessimistic_edge
from .recommendation import Option, Rejection
from .service_options import (
    WIDEST_SEARCHED_INSTANCE_COUNT,
    PriceBasis,
    Pricing,
    Risk,
    SearchSpace,
    Sizing,
)
from .speculation import Speculation


@dataclass(frozen=True, kw_only=True)
class SearchContext:
    """What every layout of a ``recommend`` search shares; built by ``SearchContext.of``."""

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
    ) -> SearchContext:
        """The shared state of a search for ``spec`` under ``workload``, ``slo`` and
        ``traffic``: the search space with its defaults (FP16, ``WIDEST_SEARCHED_INSTANCE_COUNT``
        instances), the pricing's list, basis and region note, and the sizing's engine (the
        calibrated one when it states none) and risk side."""
        return SearchContext(
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


def _region_note(pricing: Pricing) -> str | None:
    """Prices from another region than the endpoint's are an estimate, and said so."""
    prices, region = pricing.prices, pricing.region
    if region is None or region == prices.region:
        return None
    return (
        f"no {region} prices: the {prices.region} list is used as an estimate ({prices.describe()})"
    )


@dataclass(frozen=True)
class TypeCalibration:
    """What a calibration says about one candidate instance type: the efficiency factors the
    predictions use (None: the engine profile's) and the calibration as applied (None when
    uncalibrated), whose distance from the layout sets the band."""

    efficiency: Efficiency | None
    applied: AppliedCalibration | None


def speculation_at_risk(optimization: Optimization | None, risk: Risk) -> Speculation | None:
    """An optimization's speculative decoding as sized at ``risk``: on the pessimistic side
    at the low end of its acceptance (``Speculation.pessimistic``)."""
    if optimization is None or optimization.speculation is None:
        return None
    speculation = optimization.speculation
    return speculation if risk is Risk.MEDIAN else speculation.pessimistic()


@dataclass(frozen=True)
class LayoutVariant:
    """One layout of a search as ``recommend``'s search evaluates it: served at ``precision``
    by ``profile``, with its ``band`` and calibration, as given or with ``optimization``."""

    search: SearchContext
    layout: Layout
    precision: Precision
    profile: EngineProfile
    band: Band
    measured: TypeCalibration
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
            speculation_at_risk(self.optimization, risk),
            kv_cache=search.kv_cache,
        )

    def evaluate(
        self, risk: Risk, target: float | None, slowdown: float | None = None
    ) -> tuple[Option | None, Rejection | None]:
        """The layout sized at ``risk``'s side of the band (or at ``slowdown``, an edge
        ``pessimistic_edge`` chose), at ``target`` per copy (default the scaling target of
        that side)."""
        search = self.search
        return evaluate_layout(
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
            side=BandSide(self.profile, risk, self.band),
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
        per_copy = rate_at(model, limits, search.workload, target)
        copies = math.ceil(traffic.requests_per_second * factor / per_copy)
        return math.ceil(copies / per_instance)
