"""What an ``LlmService`` is asked to serve: the request ``decide`` takes (model, workload,
SLO, traffic with its minimum, candidates, prices, sizing) and the user's overrides of the
decision. No aws_cdk here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..errors import check_range
from ..prop_types import typed_props
from .calibration import EngineRelease
from .engine_profiles import EngineProfile, resolve_profile
from .objectives import Slo, Traffic
from .performance import Workload
from .recommendation import Recommendation
from .service_options import (
    CopyScaling,
    LayoutOverrides,
    Pricing,
    SearchSpace,
    Sizing,
)


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

    def fewest_copies(self, target: float, rate_per_copy: float, most: int) -> int:
        """The copies the minimum keeps, at least one and at most ``most``, counted as the
        peak's are: a rate over the requests/s one copy serves at its scaling target
        (``rate_per_copy``), a concurrency over the ``target`` in flight per copy."""
        check_range("target", target, minimum=1e-9)
        check_range("rate_per_copy", rate_per_copy, minimum=1e-9)
        check_range("most", most, minimum=1)
        if self.peak.requests_per_second is not None:
            needed = self.minimum / rate_per_copy
        else:
            needed = self.minimum / target
        return min(most, max(1, math.ceil(needed)))

    def describe(self) -> str:
        """``peak 4 requests/s, minimum 0.5 requests/s`` or the same in concurrency."""
        if self.peak.requests_per_second is not None:
            return (
                f"peak {self.peak.requests_per_second:g} requests/s, minimum "
                f"{self.minimum:g} requests/s"
            )
        return f"peak {self.peak.concurrency} concurrent, minimum {self.minimum:g}"


def with_minimum(result: Recommendation, traffic: ExpectedTraffic) -> Recommendation:
    """``result`` with each option's instances at the minimum of ``traffic``
    (``Option.min_instance_count``): the copies the minimum keeps at the option's scaling
    target (``ExpectedTraffic.fewest_copies``, the rule ``LlmService`` sets its fewest copies
    by), on whole instances, never more than run at the peak."""
    options = []
    for option in result.options:
        layout = option.layout
        per_instance = layout.copies_per_instance
        target = option.scaling_target
        copies = traffic.fewest_copies(target, option.rate_per_copy_at(target), layout.copies)
        fewest = min(layout.instance_count, math.ceil(copies / per_instance))
        options.append(replace(option, min_instance_count=fewest))
    return replace(result, options=options)


DEFAULT_SERVICE_MAX_INSTANCES = 4
"""The most instances an ``LlmService`` may scale to when its search space does not say (a
``recommend`` search goes wider:
``planning.service_options.WIDEST_SEARCHED_INSTANCE_COUNT``)."""


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
    ``DEFAULT_SERVICE_MAX_INSTANCES`` instances unless it says, the precision (default FP16),
    the KV cache's precision (default auto) and the optimizations to weigh."""
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
        return self.search.max_instance_count or DEFAULT_SERVICE_MAX_INSTANCES

    @property
    def precision(self) -> Precision:
        """The weights' precision as given."""
        return self.search.precision or Precision.FP16

    @property
    def kv_cache_precision(self) -> KvCachePrecision:
        """How the engine stores the KV cache (``SearchSpace.kv_cache_precision``)."""
        return self.search.kv_cache_precision

    @property
    def engine(self) -> EngineRelease | EngineProfile | None:
        """The serving engine: a container release, a profile (a name resolved), the
        calibrated engine when none is stated (assumed, and said), or None."""
        engine = self.sizing.engine
        calibration = self.sizing.calibration
        if engine is None and calibration is not None:
            return calibration.engine
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
