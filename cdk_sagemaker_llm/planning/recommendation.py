"""What ``recommend`` returns: the options that meet the SLO (``Option``, with their predicted
figures, price, band and autoscaling ceiling), the rejected layouts (``Rejection``, each with a
typed kind), the assumptions (``Recommendation``), and the order options rank in
(``rank_key``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..catalog.model_specs import KvCachePrecision
from .engine_profiles import Band
from .optimizations import JobEstimate, Optimization
from .option_band import OptionBand
from .performance import Layout, LevelPrediction
from .ranking import RejectionKind
from .service_options import Risk


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
        ``max_instance_count`` the autoscaling ceiling (``max_price_per_hour``);
        ``tensor_parallel_degree`` counts accelerators (chips on Inferentia2/Trainium) and
        ``serving_tensor_parallel_degree`` what the serving container's option counts
        (NeuronCores there: ``InstanceType.tensor_parallel_ranks_per_device``)."""
        ceiling_price, min_price = self.ceiling_price_per_hour, self.min_price_per_hour
        layout = self.layout
        return {
            "instance_type": layout.instance_type.name,
            "tensor_parallel_degree": layout.tensor_parallel_degree,
            "serving_tensor_parallel_degree": layout.tensor_parallel_degree
            * layout.instance_type.tensor_parallel_ranks_per_device,
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
        """The JSON form; ``tensor_parallel_degree`` is null for a rejection of the whole
        instance type (every key documented is always present)."""
        return {
            "instance_type": self.instance_type,
            "kind": self.kind.value,
            "reason": self.reason,
            "tensor_parallel_degree": self.tensor_parallel_degree,
        }


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


Decided = tuple[Option | None, Rejection | None, Option | None]
"""A layout's option, or why it is rejected, and the same layout at the median (``Risk.MEDIAN``'s
option, which the default risk's cost line compares against)."""


def rank_key(option: Option) -> tuple[bool, float, bool, float, float, float]:
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
