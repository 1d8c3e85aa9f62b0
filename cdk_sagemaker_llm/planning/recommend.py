"""Recommendation: the cheapest instance type x TP degree x copies x instance count that meets a
latency SLO at a given traffic.

For every candidate instance type and tensor-parallel degree dividing its accelerators the search
rejects layouts whose degree does not divide the attention/KV heads, that leave less than 1 GB
of KV cache, or whose single request already misses the SLO. For the rest it finds the most
in-flight requests one copy serves within the SLO (``layout_capacity.max_throughput_within``), fills
every accelerator of an instance with copies (a paid-for accelerator left idle buys nothing),
and takes the fewest instances that carry the traffic: a concurrency directly, a request rate by
Little's law (in-flight requests = rate x end-to-end latency), at the fraction of a request in
flight where the predicted ms/token reaches the SLO where the SLO stops the copy (the rule a
measured curve is read by): ``planning.layout_evaluation``. Options are ranked by price per hour
of the whole option, then by cost per 1M output tokens at that traffic
(``recommendation.rank_key``).

At the default risk the band goes into the autoscaling ceiling
(``planning.autoscaling_ceiling``). A layout a calibration measured, at a workload close to the
measured one, is sized from its measured levels instead (``planning.measured_sizing``): the
measurement decides, the fitted model only transfers it elsewhere, and the option's reasoning
says which. What every option assumes is said once (``planning.recommendation_notes``).

This module is the search: the candidates, their layouts and variants, and the ranking; the
types it answers with are ``planning.objectives`` (``Slo``, ``Traffic``) and
``planning.recommendation`` (``Option``, ``Rejection``, ``Recommendation``), re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..catalog.containers import ContainerFamily, fp8_kv_cache_problem
from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..errors import ValidationError
from .autoscaling_ceiling import with_ceiling
from .calibrated_band import calibrated_band
from .calibration import EngineRelease
from .engine_profiles import EngineProfile, resolve_profile
from .layout_variant import LayoutVariant, TypeCalibration
from .measured_sizing import from_measurement
from .objectives import Slo, Traffic
from .optimizations import Optimization
from .performance import (
    Layout,
    Workload,
    kv_cache_precision_problem,
    optimization_notes,
    precision_problem,
    prediction_band,
    profile_limits,
)
from .placement import head_divisibility_problem
from .quantized_coverage import int4_problem
from .ranking import RankedLayout as RankedLayout  # (re-exported: where it was defined)
from .ranking import RejectionKind, degrees
from .ranking import rank_layouts as rank_layouts
from .recommendation import Decided, Option, Recommendation, Rejection, rank_key
from .recommendation_notes import (
    optimize_or_buy,
    pessimism_cost,
    shared_assumptions,
    unpriced_note,
    unseen_hardware_note,
    with_median_cost,
)
from .search_context import SearchContext
from .service_options import (
    WIDEST_SEARCHED_INSTANCE_COUNT,
    PriceBasis,
    Pricing,
    Risk,
    SearchSpace,
    Sizing,
    unit_price,
)
from .workload import check_workload_context

__all__ = [
    "WIDEST_SEARCHED_INSTANCE_COUNT",
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


def default_instance_types() -> list[InstanceType]:
    """Every accelerated instance type of the catalog."""
    return [t for t in CATALOG.values() if t.accelerator is not None]


@dataclass
class _Found:
    """What a search found: the options, the rejections, and every layout as sized at the
    median (what ``Risk.MEDIAN`` would offer: the default risk's cost line compares against
    its cheapest without searching again)."""

    options: list[Option] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    at_median: list[Option] = field(default_factory=list)


def _search_instance(
    search: SearchContext, instance_type: InstanceType, measured: TypeCalibration
) -> _Found:
    """The options and rejections of every tensor-parallel degree of one instance type."""
    found = _Found()
    wanted = search.tensor_parallel_degrees
    splits = degrees(instance_type)
    for degree in sorted(set(wanted or ())):
        if degree not in splits:
            found.rejected.append(_unsplit(search, instance_type, degree, splits))
    for degree in splits:
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


def _unsplit(
    search: SearchContext, instance_type: InstanceType, degree: int, splits: list[int]
) -> Rejection:
    """A wanted degree (``search.tensor_parallel_degrees``) that splits ``instance_type`` into
    no whole copies, said as such (and as a head-divisibility problem where it is one too)."""
    heads = head_divisibility_problem(search.spec, degree)
    reason = (
        f"search.tensor_parallel_degrees: {degree} does not split the "
        f"{instance_type.accelerator_devices} accelerators of {instance_type.name} into whole "
        f"copies (it takes {', '.join(map(str, splits))})"
        + (f"; head divisibility: {heads}" if heads else "")
    )
    kind = RejectionKind.HEAD_DIVISIBILITY if heads else RejectionKind.NO_LAYOUT
    return Rejection(instance_type.name, kind, reason, degree)


def _search_variant(
    search: SearchContext,
    layout: Layout,
    measured: TypeCalibration,
    optimization: Optimization | None,
) -> Decided:
    """One layout, served as given or with one optimization (its precision and speculative
    decoding in the model; the job it needs in the option), and the same layout as sized at
    the median (None where the median does not serve). A calibration narrows the band where
    it measured this layout (``calibrated_band``)."""
    precision = optimization.precision(search.precision) if optimization else search.precision
    profile = resolve_profile(search.engine, layout.instance_type.is_neuron)
    refused = _unservable(search, layout, precision, profile, optimization)
    if refused is not None:
        return None, refused, None
    band = calibrated_band(
        prediction_band(profile, search.spec, layout, search.workload, precision, optimization),
        measured.applied,
        search.spec,
        layout,
        search.workload,
        precision,
        search.release,
        kv_cache_precision=search.kv_cache,
    )
    variant = LayoutVariant(search, layout, precision, profile, band, measured, optimization)
    decided, why = from_measurement(variant) if optimization is None else (None, "")
    if decided is not None:
        measured_option, measured_rejection, measured_median = decided
        return variant.quoted(measured_option, 1.0), measured_rejection, measured_median
    # The default risk decides feasibility and the peak's instances at the median; the band
    # goes into the ceiling only (``with_ceiling``).
    sized_at = Risk.MEDIAN if search.risk is Risk.PESSIMISTIC else search.risk
    option, rejection = variant.evaluate(sized_at, None)
    median = option if sized_at is Risk.MEDIAN else variant.evaluate(Risk.MEDIAN, None)[0]
    if option is not None and search.risk is Risk.PESSIMISTIC:
        option, rejection = with_ceiling(variant, option)
    option = variant.quoted(option, sized_at.slowdown(band))
    if optimization is None:
        if why and option is not None:
            option = replace(option, reasoning=[*option.reasoning, f"measurement: {why}"])
        return option, rejection, median
    return _optimized(variant, optimization, sized_at, option, rejection, median)


def _unservable(
    search: SearchContext,
    layout: Layout,
    precision: Precision,
    profile: EngineProfile,
    optimization: Optimization | None,
) -> Rejection | None:
    """Why ``layout`` cannot serve at all, before any prediction: its accelerator lacks the
    weights' precision (or int4's published speed at its degree) or the KV cache's, or the
    engine cannot serve the optimization; None where it can."""
    instance_type, degree = layout.instance_type, layout.tensor_parallel_degree
    unsupported = precision_problem(instance_type, precision) or int4_problem(
        instance_type, degree, precision
    )
    if unsupported is not None:
        reason = f"precision: {unsupported}"
        return Rejection(instance_type.name, RejectionKind.PRECISION, reason, degree)
    kv_problem = kv_cache_precision_problem(instance_type, search.kv_cache)
    if kv_problem is not None:
        reason = f"kv cache precision: {kv_problem}"
        return Rejection(instance_type.name, RejectionKind.KV_CACHE_PRECISION, reason, degree)
    kv_engine = _fp8_kv_engine_problem(search)
    if kv_engine is not None:
        return Rejection(instance_type.name, RejectionKind.ENGINE, kv_engine, degree)
    problem = optimization.engine_problem(search.engine, profile.name) if optimization else None
    if optimization is None or problem is None:
        return None
    reason = f"with {optimization.name}: the engine ({profile.name}) cannot serve it: {problem}"
    return Rejection(instance_type.name, RejectionKind.ENGINE, reason, degree)


def _fp8_kv_engine_problem(search: SearchContext) -> str | None:
    """Why the search's serving container cannot be told to keep an FP8 KV cache (the rule
    ``LlmService`` deploys by: ``catalog.containers.fp8_kv_cache_problem``); None where it
    can, or where the engine is a profile rather than a container release."""
    engine = search.engine
    if search.kv_cache is not KvCachePrecision.FP8 or isinstance(engine, EngineProfile | str):
        return None
    if engine is None:
        return None
    problem = fp8_kv_cache_problem(ContainerFamily(engine.family), engine.version)
    if problem is None:
        return None
    release = f"{engine.family} {engine.version}" if engine.version else engine.family
    return (
        f"kv cache precision fp8: the serving engine ({release}) cannot be told to store its "
        f"KV cache in FP8: {problem}"
    )


def _optimized(
    variant: LayoutVariant,
    optimization: Optimization,
    sized_at: Risk,
    option: Option | None,
    rejection: Rejection | None,
    median: Option | None,
) -> Decided:
    """The layout's option (or rejection) and its median as served with ``optimization``:
    the job it needs, with its time and cost, and what the optimization changes in the
    reasoning (its model at ``sized_at``'s side of the band)."""
    search = variant.search
    model = variant.model(sized_at.slowdown(variant.band), sized_at)
    unit = unit_price(variant.layout.instance_type, search.prices, search.price_basis)
    job = optimization.job(search.spec, unit)
    limits, _ = profile_limits(model, variant.profile, search.max_batch_size)
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
    shared = SearchContext.of(
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
    measured_on: dict[str, TypeCalibration] = {}  # the calibration as applied per type
    for instance_type in candidates:
        unusable = _unpredictable(instance_type) or _wrong_hardware(engine, instance_type)
        if unusable is not None:
            rejected.append(unusable)
            continue
        measured = TypeCalibration(efficiency, None)
        if calibration is not None:
            applied = calibration.applied_to(spec, instance_type, engine=release)
            measured = TypeCalibration(applied.efficiency, applied)
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
    options.sort(key=rank_key)
    trade_off = optimize_or_buy(options) if shared.optimizations else None
    kept = [
        with_median_cost(
            option,
            shared,
            profile=resolve_profile(engine, option.layout.instance_type.is_neuron),
            measured=measured_on[option.layout.instance_type.name].efficiency,
        )
        for option in options[:top]
    ]
    notes = [
        shared.region_note,
        trade_off,
        unpriced_note(kept),
        unseen_hardware_note(kept),
        *(f"calibration: {note}" for note in calibration_notes),
    ]
    assumptions = shared_assumptions(workload, slo, traffic, search, pricing, sizing, notes)
    if shared.risk is not Risk.MEDIAN and kept:
        line = pessimism_cost(kept[0], min(at_median, key=rank_key, default=None))
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
    profile = resolve_profile(engine, instance_type.is_neuron)
    refusal = profile.serves.refusal(instance_type)
    if refusal is None:
        return None
    return Rejection(instance_type.name, RejectionKind.ENGINE, f"engine: {profile.name} {refusal}")
