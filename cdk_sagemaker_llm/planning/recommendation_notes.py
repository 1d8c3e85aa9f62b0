"""What a recommendation says in words beyond each option's own sizing: the assumptions every
option shares (``shared_assumptions``), "optimize, or buy more accelerators?"
(``optimize_or_buy``), unpriced and unseen-hardware warnings, what the default risk costs against
the median (``pessimism_cost``) and which side of the band each option was sized on
(``with_median_cost``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..catalog.model_specs import KvCachePrecision, Precision
from .efficiency import Efficiency, efficiency_of
from .engine_profiles import EngineProfile, all_profiles, resolve_profile
from .layout_evaluation import BandSide, evaluate_layout
from .objectives import Slo, Traffic
from .performance import Layout, Workload, gpu_name, profile_model
from .ranking import RejectionKind
from .recommendation import Option, rank_key
from .search_context import SearchContext
from .service_options import PriceBasis, Pricing, Risk, SearchSpace, Sizing


def shared_assumptions(
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


def optimize_or_buy(options: Sequence[Option]) -> str:
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

    cheaper = rank_key(optimized) < rank_key(plain)
    verdict = "optimize" if cheaper else "buy (the optimization saves nothing)"
    return (
        f"optimize or buy more accelerators: {verdict}: as given {plain.layout.describe()} "
        f"at {price(plain)}; with {optimized.optimization.name if optimized.optimization else ''} "
        f"{optimized.layout.describe()} at {price(optimized)}, after a one-off "
        f"{optimized.job.describe()}"
    )


def unpriced_note(options: Sequence[Option]) -> str | None:
    """When the first option has no price, that it is ranked, not found, the cheapest."""
    if not options or options[0].price_per_hour is not None:
        return None
    return (
        f"price unknown: the first option ({options[0].layout.instance_type.name}) has no price "
        "in the list; unpriced options rank after every priced one and none of them is called "
        "the cheapest: add their prices with PriceList.with_prices to compare them"
    )


def unseen_hardware_note(options: Sequence[Option]) -> str | None:
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


def pessimism_cost(pessimistic: Option, median: Option | None) -> str:
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
            f"${abs(extra):,.2f}/hour at the peak (${pessimistic.price_per_hour:,.2f} vs "
            f"${median.price_per_hour:,.2f})"
        )
        ceiling = pessimistic.ceiling_price_per_hour
        if ceiling is not None and ceiling > pessimistic.price_per_hour:
            text += (
                f", and its autoscaling ceiling up to ${ceiling:,.2f}/hour if the pessimistic "
                "edge holds"
            )
    return text


def with_median_cost(
    option: Option,
    search: SearchContext,
    *,
    profile: EngineProfile,
    measured: Efficiency | None,
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
    precision = search.precision
    if option.optimization is not None:
        precision = option.optimization.precision(precision)
    spec, workload = search.spec, search.workload
    median, _ = evaluate_layout(
        replace(search, max_instance_count=search.max_instance_count * 4, region_note=None),
        base,
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
        side=BandSide(profile, Risk.MEDIAN, band),
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
        f": {count} instance(s) run at the peak{cost}; the pessimistic edge sizes only the "
        f"autoscaling ceiling ({ceiling} instance(s))"
    )
    return replace(option, reasoning=[*option.reasoning, line], median_instance_count=count)
