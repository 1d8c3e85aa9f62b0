"""``Risk.PESSIMISTIC``: the band paid by the autoscaling ceiling (``with_ceiling``). The peak
runs the median's instances at a scaling target on the pessimistic side of the knee
(``_ceiling_target``); the ceiling is what the pessimistic edge needs at that target, or, where
the edge does not serve it within the SLO, what the edge's throughput needs, said plainly
(``_edge_shortfall``)."""

from __future__ import annotations

import math
from dataclasses import replace

from .calibrated_band import measured_here
from .layout_variant import LayoutVariant, speculation_at_risk
from .ranking import RejectionKind
from .recommendation import Option, Rejection
from .search_context import SearchContext
from .service_options import Risk


def with_ceiling(variant: LayoutVariant, median: Option) -> tuple[Option | None, Rejection | None]:
    """``Risk.PESSIMISTIC``: the band paid by the autoscaling ceiling. ``median`` (the layout
    sized at the band's median, which meets the SLO) decides that the layout is offered. The
    scaling target per copy is on the pessimistic side of the knee (``_ceiling_target``)
    unless a calibration measured this layout (then the calibrated median's); the peak's
    instances are the median's at that target; the ceiling is the pessimistic edge's
    (``pessimistic_edge``) at that target, or, where the edge does not serve the target
    within the SLO, what the edge's throughput needs, said plainly."""
    search, band = variant.search, variant.band
    measured = measured_here(band)
    own = median.scaling_target
    # Until measured, the target stays on the pessimistic side of the knee: at most the knee.
    highest = own if measured else min(own, variant.knee)
    edge = variant.edge(highest)
    factor = edge.relative_to(band)
    at_edge, refused = variant.evaluate(Risk.PESSIMISTIC, None, slowdown=edge.slowdown)
    # The edge's own sizing needs more instances than max_instance_count allows.
    over_cap = refused is not None and refused.kind is RejectionKind.INSTANCE_COUNT
    whole = search.traffic.concurrency is not None
    target = _ceiling_target(highest, factor, at_edge, measured, whole)
    expected, rejection = (median, None) if target == own else variant.evaluate(Risk.MEDIAN, target)
    if expected is None:
        return None, rejection
    ceiling, why = None, _edge_shortfall(search, at_edge, refused, target)
    if not why and at_edge is not None and target == at_edge.scaling_target:
        ceiling = at_edge  # already sized at this target
    elif not why:
        ceiling, refused = variant.evaluate(Risk.PESSIMISTIC, target, slowdown=edge.slowdown)
        why = _edge_shortfall(search, ceiling, refused, target)
    count = expected.layout.instance_count
    # Where the edge does not serve the target within the SLO, the ceiling is what the edge
    # needs within it (its own sizing), or what its throughput at the target needs, the more.
    within = at_edge.layout.instance_count if at_edge is not None else 0
    at_target = 0 if ceiling is not None else variant.instances_at_edge(target, factor)
    needed = ceiling.layout.instance_count if ceiling is not None else max(within, at_target)
    if at_edge is None and over_cap:  # hold the ceiling at the cap, never below the need
        needed = max(needed, search.max_instance_count + 1)
    most = max(count, min(needed, search.max_instance_count))
    edge_target = at_edge.scaling_target if at_edge is not None else 0
    basis = (
        "the calibrated median's knee (a calibration measured this layout)"
        if measured
        else f"the median's {highest:g} (at most its knee), which the pessimistic edge's own "
        "target reaches"
        if target == highest
        else "the pessimistic edge's own, until a benchmark measures it"
        if target == edge_target
        else f"the median's {highest:g} (at most its knee) / {factor:.2f} (the edge's share of "
        "its throughput), until a benchmark measures it"
    )
    lines = [
        f"the band in the ceiling: {count} instance(s) run at the peak if the median holds, "
        f"{most} (max_instance_count) at the pessimistic edge (times x{edge.slowdown:.2f}: "
        f"{edge.basis}); scaling target {target:g} per copy: {basis}"
    ]
    if why:
        held = (
            f"; held at max_instance_count {search.max_instance_count}"
            if needed > search.max_instance_count
            else ""
        )
        own_sizing = (
            f", or {within} at its own {edge_target:g} per copy within the SLO, the more"
            if within
            else f", or more than {search.max_instance_count} at its own target within the SLO"
            if at_edge is None and over_cap
            else ""
        )
        lines.append(
            f"at the pessimistic edge {why}: the ceiling is sized by that edge's throughput "
            f"(the median's capacity / {factor:.2f}: {at_target} instance(s){own_sizing}"
            f"{held}); the SLO may be missed if the pessimistic edge holds, and the "
            "deploy-time benchmark's gates tell"
        )
    speculation = speculation_at_risk(variant.optimization, Risk.PESSIMISTIC)
    if speculation is not None:
        lines.append(f"speculative decoding at the pessimistic edge: {speculation.describe()}")
    return replace(
        expected,
        risk=Risk.PESSIMISTIC,
        max_instance_count=most,
        edge_slowdown=edge.slowdown,
        reasoning=[*expected.reasoning, *lines],
    ), None


def _ceiling_target(
    own: float, factor: float, at_edge: Option | None, measured: bool, whole: bool
) -> float:
    """The scaling target per copy of ``Risk.PESSIMISTIC``: the calibrated median's own
    (``own``) where a calibration measured the layout; else the pessimistic edge's own target
    (``Option.scaling_target``: where the SLO stops the edge's copy, the fraction of a request
    its predicted curve reaches the SLO at, as the median's own), but never below ``own`` (the
    median's, at most its knee) divided by the edge's ``factor`` (a copy at the edge serves
    that share of the median's throughput: holding fewer in flight would size the peak for
    more than the band's slowdown) nor above ``own``. That share is rounded down to a whole
    request where the traffic is a concurrency (``whole``), else to a hundredth: a rate's mean
    in flight is not a whole number, and rounding 2.4 down to 2 would cost a sixth of the
    copy's capacity for nothing the band says."""
    if measured:
        return own
    steps = 1 if whole else 100  # per request in flight
    share = max(1.0, math.floor(own / factor * steps) / steps)
    edge_target = at_edge.scaling_target if at_edge is not None else 0
    return min(own, max(edge_target, share))


def _edge_shortfall(
    search: SearchContext, at_edge: Option | None, refused: Rejection | None, target: float
) -> str:
    """Why the pessimistic edge does not serve ``target`` per copy within the SLO on at most
    ``max_instance_count`` instances, in words; empty when it does."""
    if at_edge is not None:
        within = max(at_edge.max_concurrency_per_copy, at_edge.scaling_target)
        if target <= within:
            return ""
        return (
            f"{target:g} in flight per copy break {search.slo.describe()} (it serves "
            f"{within:g} within it)"
        )
    if refused is not None and refused.kind is RejectionKind.INSTANCE_COUNT:
        return f"the peak needs more than max_instance_count {search.max_instance_count}"
    return f"even one request per copy breaks {search.slo.describe()}"
