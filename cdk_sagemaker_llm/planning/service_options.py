"""What a layout decision may use and what the user pins: typed objects shared by
``recommend``, ``decide`` (``ServiceRequest``, ``Overrides``), ``LlmService`` and the
``recommend`` command, so that each concept is written once.

- ``SearchSpace``: the candidates (instance types, instance count, tensor-parallel degrees),
  the weights' precision, the KV cache's precision, the optimizations to weigh, the server's
  batch cap.
- ``Pricing``: the price list, how instance-hours are paid for, and the region.
- ``Sizing``: how predictions are sized: the risk side of their band, a calibration, the
  engine profile.
- ``LayoutOverrides``: the layout the user pins (instance type, tensor-parallel degree,
  copies per instance, batch limit, longest sequence).
- ``CopyScaling``: the copy bounds and the autoscaling target the user pins.

No aws_cdk here: the construct-only settings (the model served, per-copy resources, the
deploy-time benchmark) are in ``constructs.llm_service_options``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import KvCachePrecision, Precision
from ..catalog.prices import DEFAULT_PRICE_LIST, PriceList
from ..catalog.registries import check_region
from ..errors import ValidationError, check_range
from ..prop_types import typed_factory, typed_props
from .calibration import Calibration, EngineRelease
from .engine_profiles import Band, EngineProfile
from .optimizations import Optimization

__all__ = [
    "WIDEST_SEARCHED_INSTANCE_COUNT",
    "CopyScaling",
    "LayoutOverrides",
    "PriceBasis",
    "Pricing",
    "Risk",
    "SearchSpace",
    "Sizing",
    "unit_price",
]

WIDEST_SEARCHED_INSTANCE_COUNT = 16
"""The widest layout ``recommend`` searches when the search space does not say: the most
instances one option may take (an ``LlmService``'s own default is
``planning.service_request.DEFAULT_SERVICE_MAX_INSTANCES``)."""


@typed_props
class Risk(Enum):
    """Which side of a prediction's band ``recommend`` sizes on."""

    PESSIMISTIC = "pessimistic"
    """The band is paid by the autoscaling ceiling (the default): a layout is offered where
    its median prediction meets the SLO; what runs at the peak is sized at the median
    (``instance_count``) at a scaling target per copy on the pessimistic side of the knee
    (until a calibration of the layout measures it), and the most instances
    (``max_instance_count``) at the pessimistic edge (``planning.pessimistic_edge``: the
    conformal band's held-out p90 for the target's load regime and extrapolation distance,
    or the calibrated band's edge after a calibration of the layout). Where that edge breaks
    the SLO even at one request per copy, the ceiling is sized by the edge's throughput and
    the option's reasoning says the SLO may be missed there."""
    MEDIAN = "median"
    """Size everything at the median of the residuals: cheaper, and about half of deployments
    would be slower than predicted, with no headroom in the ceiling."""
    WORST_CASE = "worst-case"
    """Size everything at the engine profile's pessimistic edge (its slowest cross-validated
    residual, widened where the prediction extrapolates), the peak's instances included: for
    teams that cannot autoscale (or scale too slowly for their peak), which pay the ceiling all
    the time. A layout is offered only where that edge meets the SLO."""

    def slowdown(self, band: Band) -> float:
        """The factor this risk applies to the model's times (and divides tokens/s by) where
        it sizes on the engine profile's band: its median at ``MEDIAN``, else its pessimistic
        edge (``WORST_CASE``; ``PESSIMISTIC`` sizes the peak at the median and its ceiling at
        ``planning.pessimistic_edge``)."""
        if self is Risk.MEDIAN:
            return band.median_slowdown
        return band.pessimistic_slowdown


class PriceBasis(Enum):
    """How instance-hours are paid for."""

    ON_DEMAND = "on-demand"
    SAVINGS_PLAN_1Y = "savings-plan-1y"


def unit_price(instance_type: InstanceType, prices: PriceList, basis: PriceBasis) -> float | None:
    """Price of one instance-hour on ``basis``; None when the list has no price."""
    price = prices.price_per_hour(instance_type)
    if price is None:
        return None
    if basis is PriceBasis.SAVINGS_PLAN_1Y:
        return price * (1 - prices.savings_plan_1y_discount)
    return price


@typed_props
@dataclass(frozen=True, kw_only=True)
class SearchSpace:
    """The layouts a decision chooses from: every candidate instance type x tensor-parallel
    degree, served as given or with each optimization, on at most ``max_instance_count``
    instances.

    ::

        SearchSpace(instance_types=[InstanceType.G5_2XLARGE, InstanceType.G5_12XLARGE],
                    max_instance_count=4, optimizations=[Optimization.awq()])
    """

    __synth_decision__ = "The search space bounds the layouts (LlmService, recommend)"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    instance_types: Sequence[InstanceType] | None = None
    """Candidate instance types. Default: ``recommend`` every accelerated type of the catalog;
    ``LlmService`` the optimization job's instance type (its output is built for it), else
    every GPU type of the catalog."""
    max_instance_count: int | None = None
    """The most instances one option may use. Default 16 for ``recommend``
    (``WIDEST_SEARCHED_INSTANCE_COUNT``), 4 for ``LlmService``
    (``service_request.DEFAULT_SERVICE_MAX_INSTANCES``)."""
    tensor_parallel_degrees: Sequence[int] | None = None
    """Only these degrees; default every degree that splits an instance into whole copies."""
    precision: Precision | None = None
    """The weights' precision as given. Default FP16; for an ``LlmService`` serving an AWQ
    optimization job INT4 (AWQ), an FP8 one FP8."""
    kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO
    """How the engine stores the KV cache (``KvCachePrecision``): every candidate is predicted
    and placed with it. ``FP8`` takes one byte per element (about twice the sequences fit, a
    decode step reads half the KV bytes) and is offered only on accelerators with FP8 (others
    are rejected, ``RejectionKind.KV_CACHE_PRECISION``); ``LlmService`` renders the engine's
    setting for it (``catalog.containers.FP8_KV_CACHE_SETTINGS``). Default ``AUTO``: the
    activation precision (fp16/bf16)."""
    optimizations: Sequence[Optimization] = ()
    """Also weigh serving the model optimized (``Optimization.awq()``, ``.fp8()``,
    ``.speculative_decoding()``): each layout is evaluated as given and with each; an
    optimized option names the optimization job it needs with its time and cost (and
    ``LlmService`` creates that job when such an option wins). Default none."""
    max_batch_size: int | None = None
    """The server's request cap per copy the predictions assume; default the engine profile's
    (vLLM/LMI 256; TGI a KV-token budget). (``LayoutOverrides.max_batch_size`` pins the
    rendered limit instead.)"""

    def __post_init__(self) -> None:
        if self.instance_types is not None:
            if not self.instance_types:
                raise ValidationError(
                    "instance_types",
                    [],
                    "no candidate instance type",
                    "pass at least one, or leave it out for the catalog's",
                )
            object.__setattr__(self, "instance_types", tuple(self.instance_types))
        if self.max_instance_count is not None:
            check_range("max_instance_count", self.max_instance_count, minimum=1)
        if self.tensor_parallel_degrees is not None:
            for degree in self.tensor_parallel_degrees:
                check_range("tensor_parallel_degrees", degree, minimum=1)
            object.__setattr__(self, "tensor_parallel_degrees", tuple(self.tensor_parallel_degrees))
        if self.max_batch_size is not None:
            check_range("max_batch_size", self.max_batch_size, minimum=1)
        object.__setattr__(self, "optimizations", tuple(self.optimizations))


@typed_props
@dataclass(frozen=True, kw_only=True)
class Pricing:
    """The prices that rank the options: a price list, how instance-hours are paid for, and
    where the endpoint runs (prices from another region are marked as estimates).

    ::

        Pricing.on_demand()
        Pricing.savings_plan_1y(region="eu-west-1")
    """

    prices: PriceList = DEFAULT_PRICE_LIST
    """The price list; default the library's."""
    basis: PriceBasis = PriceBasis.ON_DEMAND
    """On-demand or 1-year savings plan prices; default on-demand."""
    region: str | None = None
    """Where the endpoint runs. Default: ``recommend`` none (the list's region is assumed);
    ``LlmService`` its stack's region when resolved."""

    def __post_init__(self) -> None:
        check_region("Pricing.region", self.region)

    @staticmethod
    @typed_factory
    def on_demand(prices: PriceList = DEFAULT_PRICE_LIST, *, region: str | None = None) -> Pricing:
        """On-demand prices of ``prices`` (default the library's list)."""
        return Pricing(prices=prices, basis=PriceBasis.ON_DEMAND, region=region)

    @staticmethod
    @typed_factory
    def savings_plan_1y(
        prices: PriceList = DEFAULT_PRICE_LIST, *, region: str | None = None
    ) -> Pricing:
        """1-year savings plan prices: ``prices`` less its savings plan discount."""
        return Pricing(prices=prices, basis=PriceBasis.SAVINGS_PLAN_1Y, region=region)


@typed_props
@dataclass(frozen=True, kw_only=True)
class Sizing:
    """How the predictions that size a layout are made: which side of each prediction's band,
    measured efficiency factors, and the serving engine's profile.

    ::

        Sizing(risk=Risk.MEDIAN, calibration=Calibration.from_file("calibration.json"))
    """

    risk: Risk = Risk.PESSIMISTIC
    """``Risk.PESSIMISTIC`` (default: offered where the median meets the SLO, the peak's
    instances at the median, the band in the autoscaling ceiling, sized at
    ``planning.pessimistic_edge``'s edge), ``Risk.MEDIAN`` (everything at the median; about
    half of deployments would be slower than predicted) or ``Risk.WORST_CASE`` (everything at
    the engine profile's slowest cross-validated residual, for teams that cannot autoscale).
    The reasoning says which side was used and what it costs."""
    calibration: Calibration | None = None
    """Efficiency factors fitted from a deploy-time benchmark (``Calibration.from_file``,
    written by ``cdk-sagemaker-llm calibrate``), applied to each candidate by
    ``Calibration.applied_to``: a calibration of another engine is a ValidationError; of
    another model or accelerator only the engine- and hardware-level factors transfer, and
    the assumptions (a synth warning for ``LlmService``) say so. Default the engine profile's
    uncalibrated constants."""
    engine: EngineRelease | EngineProfile | str | None = None
    """The serving engine: a container ``EngineRelease`` (it chooses the engine profile and
    is checked against a calibration), an ``EngineProfile`` or a profile name (``tgi-1``).
    Default: ``LlmService`` its image's family and release; ``recommend`` profile
    ``lmi-vllm-v1`` on GPUs and ``lmi-neuronx`` on Inferentia/Trainium, and a calibration's
    engine is assumed (and said)."""

    @property
    def release(self) -> EngineRelease | None:
        """The container release that serves, when stated."""
        return self.engine if isinstance(self.engine, EngineRelease) else None


@typed_props
@dataclass(frozen=True, kw_only=True)
class LayoutOverrides:
    """Choices the user pins; None leaves each to the decision. An override the model
    predicts breaks the SLO is a synth warning naming it; one that breaks memory or capacity
    is a ValidationError naming it.

    ::

        LayoutOverrides(instance_type=InstanceType.G5_12XLARGE, tensor_parallel_degree=2)
    """

    __synth_decision__ = "LlmService renders the pinned layout"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    instance_type: InstanceType | None = None
    """Serve on this type (it joins the candidates)."""
    tensor_parallel_degree: int | None = None
    """Accelerators each copy is sharded over."""
    copies_per_instance: int | None = None
    """Copies on each instance; fewer than fit leaves accelerators free for other components
    and spreads the same copies over more instances."""
    max_batch_size: int | None = None
    """The server's batch limit per copy rendered; default the chosen option's. Above what
    the KV cache holds is an error."""
    max_model_len: int | None = None
    """Longest sequence served; default input + output tokens."""

    def __post_init__(self) -> None:
        for prop in ("tensor_parallel_degree", "copies_per_instance", "max_batch_size"):
            value = getattr(self, prop)
            if value is not None:
                check_range(prop, value, minimum=1)
        if self.max_model_len is not None:
            check_range("max_model_len", self.max_model_len, minimum=2)


@typed_props
@dataclass(frozen=True, kw_only=True)
class CopyScaling:
    """Copy autoscaling the user pins; None leaves each to the decision.

    ::

        CopyScaling(min_copies=0)  # scale to zero
    """

    __synth_decision__ = "LlmService renders the pinned copy scaling"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    min_copies: int | None = None
    """Fewest copies; default what the minimum traffic needs at the target per copy (at least
    1). 0 scales to zero (endpoint min instances 0)."""
    max_copies: int | None = None
    """Most copies; default what the peak traffic needs."""
    target_concurrency_per_copy: float | None = None
    """The in-flight requests per copy that autoscaling holds; default the predicted knee per
    copy, or the deploy-time benchmark's measured knee when ``LlmService`` runs one."""

    def __post_init__(self) -> None:
        if self.min_copies is not None:
            check_range("min_copies", self.min_copies, minimum=0)
        if self.max_copies is not None:
            check_range("max_copies", self.max_copies, minimum=1)
        if self.target_concurrency_per_copy is not None:
            check_range(
                "target_concurrency_per_copy",
                self.target_concurrency_per_copy,
                minimum=0.001,
            )
