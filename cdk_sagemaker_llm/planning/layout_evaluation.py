"""One layout sized for the traffic (``evaluate_layout``): the most in-flight requests one copy
serves within the SLO, the scaling target per copy (the knee, or where the SLO stops the copy,
read off the predicted curve to a fraction of a request as a measured curve is read), the
instances the peak needs at that target (a concurrency directly, a rate by Little's law), the
whole deployment's predicted level there, its price, and the reasoning in lines."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from .engine_profiles import Band, EngineProfile
from .interconnect import interconnect_of
from .layout_capacity import LayoutCapacity, max_throughput_within
from .measured_curve import MeasuredCurve, MeasuredPoint, measured_level
from .objectives import Slo, Traffic
from .performance import (
    CopyLimits,
    CopyModel,
    Layout,
    LevelPrediction,
    Workload,
    _deployment_level,
    copy_knee,
    profile_limits,
)
from .ranking import RejectionKind, _reject_reason
from .recommendation import Option, Rejection
from .search_context import SearchContext
from .service_options import Risk, unit_price


@dataclass(frozen=True)
class BandSide:
    """The engine profile of a layout, the side of its band it is sized on, and the band."""

    profile: EngineProfile
    risk: Risk
    band: Band


def evaluate_layout(
    search: SearchContext,
    layout: Layout,
    *,
    precision: Precision,
    efficiency_model: CopyModel,
    side: BandSide,
    target: float | None = None,
) -> tuple[Option | None, Rejection | None]:
    """One layout of ``search`` served at ``precision`` by ``efficiency_model``, sized for the
    traffic at ``target`` in flight per copy (default its own scaling target,
    ``_scaling_target``; a fraction of a request is read off the predicted curve,
    ``_sizing_curve``), or why it cannot serve."""
    spec, workload, slo, traffic = search.spec, search.workload, search.slo, search.traffic
    prices, price_basis, region_note = search.prices, search.price_basis, search.region_note
    max_instance_count, max_batch_size = search.max_instance_count, search.max_batch_size
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


def rate_at(model: CopyModel, limits: CopyLimits, workload: Workload, target: float) -> float:
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
    return _at_rate(found, traffic.requests_per_second)


def _at_rate(level: LevelPrediction, rate: float) -> LevelPrediction:
    """``level`` producing ``rate`` requests/s: the fewest whole requests in flight that serve
    a rate may serve more (1 in flight serves 0.48 requests/s where 0.2 are asked), and the
    peak produces the rate's tokens, not that level's, which the tokens/s and the cost per
    1M tokens read."""
    if level.requests_per_s <= rate:
        return level
    share = rate / level.requests_per_s
    return replace(
        level,
        # Little's law at the rate: the mean in flight, as a rate read off a curve gives it.
        concurrency=max(1, round(rate * level.e2e_ms / 1000)),
        requests_per_s=rate,
        tokens_per_s=level.tokens_per_s * share,
    )


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
    comes from another side of the band, ``with_ceiling``)."""
    if given:
        bound = (
            f"set by the autoscaling ceiling's rule, which its line states; {within_slo} meet "
            "the SLO here at the median"
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


def _one_request_step(model: CopyModel) -> str:
    """The decode step of one request, at the factor the option's figures are sized at (the
    band's ``slowdown``), with the model's own step beside it where the two differ: a reader
    compares it with the option's ms/token, which carries that factor."""
    raw = model.step_s(1) * 1000
    sized = f"one request decodes at {raw * model.slowdown:.1f} ms/step"
    if model.slowdown == 1:
        return sized
    return f"{sized} (the model's {raw:.1f} x {model.slowdown:.2f}, the factor sizing applies)"


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
        f"{limits.batch_limit}; " + _one_request_step(model),
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
