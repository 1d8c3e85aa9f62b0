"""A layout a calibration measured, sized from its measured levels (``from_measurement``;
``planning.measured_curve``): a copy's capacity within the SLO and the knee as measured, the
peak at the measured capacity and the ceiling at the calibrated band's pessimistic edge. The
measurement decides; the fitted model only transfers it elsewhere."""

from __future__ import annotations

import math
from dataclasses import replace

from .knee import Knee
from .layout_variant import LayoutVariant
from .measured_curve import (
    CopyCapacity,
    MeasuredCurve,
    MeasuredPoint,
    measured_copies,
    measured_level,
)
from .performance import Layout, LevelPrediction, profile_limits
from .ranking import RejectionKind
from .recommendation import Decided, Option, Rejection
from .service_options import Risk, unit_price


def from_measurement(variant: LayoutVariant) -> tuple[Decided | None, str]:
    """The layout sized from the calibration's measured levels where they decide it
    (``Calibration.measured_curve_for``; ``planning.measured_curve``): a copy's capacity
    within the SLO and the knee as measured, the ceiling at the calibrated band's pessimistic
    edge. None where they do not, with why in words (empty: no calibration of this layout),
    and the fitted model sizes it."""
    search, layout = variant.search, variant.layout
    applied = variant.measured.applied
    if applied is None:
        return None, ""
    curve, why = applied.calibration.measured_curve_for(
        search.spec, layout, search.workload, variant.precision, search.release, search.kv_cache
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
    variant: LayoutVariant, curve: MeasuredCurve, capacity: CopyCapacity, risk: Risk
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
    variant: LayoutVariant, curve: MeasuredCurve, copies: int, per_copy: float, point: MeasuredPoint
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
    variant: LayoutVariant,
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
