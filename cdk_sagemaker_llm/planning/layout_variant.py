"""One candidate layout of a ``recommend`` search (``LayoutVariant``) in the search's shared
context (``planning.search_context``), with what a calibration says about the instance type
(``TypeCalibration``): the layout served at a precision by an engine profile, with its band, as
given or with one optimization; its model at a side of the band, its knee, its pessimistic edge
and the band its figures are quoted with."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

from ..catalog.model_specs import Precision
from .calibration import AppliedCalibration
from .conformal_band import load_regime
from .efficiency import Efficiency
from .engine_profiles import Band, EngineProfile
from .layout_evaluation import BandSide, evaluate_layout, rate_at
from .optimizations import Optimization
from .option_band import option_band
from .performance import (
    CopyModel,
    Layout,
    copy_knee,
    prediction_reasons,
    profile_limits,
    profile_model,
)
from .pessimistic_edge import PessimisticEdge, pessimistic_edge
from .recommendation import Option, Rejection
from .search_context import SearchContext
from .service_options import Risk
from .speculation import Speculation


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
        return evaluate_layout(
            self.search,
            self.layout,
            precision=self.precision,
            efficiency_model=self.model(
                risk.slowdown(self.band) if slowdown is None else slowdown, risk
            ),
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
