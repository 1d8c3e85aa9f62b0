"""What every candidate layout of a ``recommend`` search shares (``SearchContext``): the model,
the workload, the SLO and the traffic; the search space with its defaults (precision, widest
instance count, batch cap, KV cache, optimizations); the prices, their basis and region note;
and the sizing's engine and risk side. Built once per search by ``SearchContext.of``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..catalog.prices import PriceList
from .calibration import EngineRelease
from .engine_profiles import ContainerRelease, EngineProfile
from .objectives import Slo, Traffic
from .optimizations import Optimization
from .performance import Workload
from .service_options import (
    WIDEST_SEARCHED_INSTANCE_COUNT,
    PriceBasis,
    Pricing,
    Risk,
    SearchSpace,
    Sizing,
)


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

    @property
    def release(self) -> EngineRelease | None:
        """The engine release the search was given (what a calibration's transfer and its
        measured levels are checked against); None for a profile, a profile name or none."""
        return self.engine if isinstance(self.engine, EngineRelease) else None

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
