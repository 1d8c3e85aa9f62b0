"""The published measurements replayed as sizing questions (issue 30 item 5).

Each measured sweep (``benchmarks/measurements/rows.csv``: one source, engine, instance type,
tensor-parallel degree, model and precision, several concurrencies) is a measured curve of one
copy. For every SLO on ms/token the sweep can meet and every rate, the measurement says how
many copies serve the rate (the measured capacity where ms/token reaches the SLO, interpolated
between the two levels around it: ``planning.measured_curve.MeasuredCurve.capacity_within``, the
rule ``recommend`` sizes a measured layout by), and so how many instances of the layout.
``recommend``, restricted to that instance type and
degree at the default risk, answers the same question; this script compares:

- how often its ceiling (``max_instance_count``) is below the measured need (target: never);
- its peak cost (``instance_count``, what runs at the peak) over the measured need, at the
  median and the 90th percentile of the questions (targets: 1.15x and 1.5x);
- the same after calibrating on the sweep itself (``planning.calibration_fit.calibrate``; target
  1.1x).

The comparison is per layout (the library restricted to the measured instance type and
degree), not against the cheapest measured layout across sources: the sweeps of one question
rarely share a workload. Questions the library answers with no option are counted apart.

What the peak cost is made of: per answered question, the capacity one copy is sized on
(``Option.requests_per_s_per_copy`` at ``Option.scaling_target``, at ``Risk.MEDIAN`` and at
the default risk) against the measured one (``CopyCapacity.at_slo``), by source and profile
and per rung of the measured need (1, 2, 4, 7); the default risk's cost split into the
median's capacity error with fractional instances (measured / predicted capacity), what whole
instances add (``Risk.MEDIAN`` as answered) and what the pessimistic scaling target adds (the
default as answered); and the sensitivity: the predicted / measured capacity below which each
rung costs more than the targets, how many questions lie past it, and how a ms/token error
near the SLO turns into a capacity error on the measured sweeps (their elasticity, and the
capacity the validation's near-knee ms/token errors would give).

Usage: ``python benchmarks/sizing_replay.py [--details] [--client-latency]`` (the latter reads
``SERVER_TIMED_SOURCES`` at the client's latency; the questions of those sweeps then move).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from operator import attrgetter

import profile_fitting as pf

from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import Calibration
from cdk_sagemaker_llm.planning.calibration_fit import calibrate
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.measured_curve import CopyCapacity, MeasuredCurve, MeasuredPoint
from cdk_sagemaker_llm.planning.performance import Layout
from cdk_sagemaker_llm.planning.recommend import Slo, Traffic, recommend
from cdk_sagemaker_llm.planning.service_options import Risk, SearchSpace, Sizing

SLOS_MS_PER_TOKEN = (20.0, 30.0, 40.0, 50.0, 75.0, 100.0, 150.0)
"""The per-token limits asked; a sweep answers those its measured levels meet."""
RATES_IN_COPIES = (0.8, 1.6, 3.2, 6.4)
"""Rates asked, in multiples of the measured copy's capacity within the SLO (so that the
measured need is 1, 2, 4 and 7 copies whatever the layout's speed; the capacity is
``CopyCapacity.at_slo``)."""
MAX_INSTANCES = 16
MS_PER_TOKEN_ERRORS = (0.12, 0.25)
"""Uniform ms/token errors whose capacity error the sensitivity shows: the validation's
out-of-sample |error| of ms/token near the knee at its median and its 90th percentile
(``python benchmarks/model_validation.py --aggregate``, README's per-regime table, on main's
profiles of 2026-11-29)."""
COST_TARGETS = (1.15, 1.5)
"""Peak cost / measured need targets at the median and the 90th percentile (issue 30 item 5)."""


@dataclass(frozen=True)
class Sized:
    """``recommend``'s answer to one question at one risk, on the sweep's layout."""

    instances: int
    """What runs at the peak (``instance_count``)."""
    ceiling: int
    """The autoscaling ceiling (``max_instance_count``)."""
    target: float
    """In flight per copy the option is sized at (``Option.scaling_target``)."""
    rate_per_copy: float
    """Requests/s one copy serves there (``Option.requests_per_s_per_copy``): the capacity
    the instances are sized on."""


@dataclass(frozen=True)
class Answer:
    """One sizing question and the library's answers, uncalibrated and calibrated."""

    key: str
    profile: str
    """The engine profile the sweep is predicted with."""
    slo: float
    multiple: float
    """The rate in copies' worth of the measured capacity (``RATES_IN_COPIES``)."""
    rate: float
    copies_per_instance: int
    measured: CopyCapacity
    """The measured copy's capacity within the SLO."""
    elasticity: float | None
    """Relative capacity change per relative ms/token change near the SLO on the measured
    curve (``_elasticity``); None where the two levels around the SLO do not rise."""
    needed: int
    """Instances the measured capacity needs (``CopyCapacity.at_slo``): the measured need."""
    at_least: int
    """Instances the measurement proves necessary (the first level over the SLO serves
    more per copy than the SLO allows)."""
    proven: int
    """Instances the measured levels prove sufficient (their busiest level within the SLO)."""
    default: Sized | None
    """At the default risk (``Risk.PESSIMISTIC``)."""
    at_median: Sized | None
    """At ``Risk.MEDIAN`` (the median's own scaling target): what the default's pessimistic
    scaling target adds shows against it."""
    tuned: Sized | None
    """At the default risk after a calibration on the sweep."""
    curve: MeasuredCurve | None = None
    """The sweep's measured curve, which ``over_slo`` reads a scaling target off."""

    @property
    def expected(self) -> int | None:
        """Instances at the peak at the default risk."""
        return None if self.default is None else self.default.instances

    @property
    def ceiling(self) -> int | None:
        """The default risk's ceiling."""
        return None if self.default is None else self.default.ceiling

    @property
    def median(self) -> int | None:
        """Instances at the peak at ``Risk.MEDIAN``."""
        return None if self.at_median is None else self.at_median.instances

    @property
    def calibrated(self) -> int | None:
        """Instances at the peak after a calibration on the sweep."""
        return None if self.tuned is None else self.tuned.instances

    @property
    def calibrated_ceiling(self) -> int | None:
        """The ceiling after a calibration on the sweep."""
        return None if self.tuned is None else self.tuned.ceiling

    def capacity_ratio(self, sized: Sized) -> float:
        """Predicted / measured requests/s per copy."""
        return sized.rate_per_copy / self.measured.at_slo

    def over_slo(self, sized: Sized) -> float:
        """How far over the SLO's ms/token the measured copy runs at ``sized``'s scaling
        target (0 at or below the measured capacity within the SLO): what autoscaling that
        holds the target serves at the peak until a benchmark replaces the target, read off
        the measured curve (at its busiest level where the target is beyond it)."""
        if self.curve is None or sized.target <= self.measured.concurrency:
            return 0.0
        at = self.curve.at(min(sized.target, self.curve.highest))
        return max(0.0, at.ms_per_token / self.slo - 1)


def _sweeps(rows: Sequence[pf.Row]) -> list[list[pf.Row]]:
    """Sweeps of at least two closed-loop levels with measured ms/token and tokens/s."""
    found: dict[tuple[object, ...], list[pf.Row]] = {}
    for row in rows:
        if row.static_batch or row.ms_per_token is None or row.tokens_per_s is None:
            continue
        key = (*row.sweep_key(), row.input_tokens, row.output_tokens)
        found.setdefault(key, []).append(row)
    sweeps = [sorted(group, key=lambda r: r.concurrency) for group in found.values()]
    return [s for s in sweeps if len({r.concurrency for r in s}) >= 2]


def _per_copy_rates(sweep: Sequence[pf.Row], slo: float) -> CopyCapacity | None:
    """The measured copy's capacity within ``slo`` by the library's own rule
    (``MeasuredCurve.capacity_within``); None unless a measured level breaks ``slo``."""
    return _curve(sweep).capacity_within(slo)


def _calibration(sweep: Sequence[pf.Row]) -> Calibration | None:
    first = sweep[0]
    levels = [
        {
            "concurrency": r.concurrency,
            "p50_ms_per_token": r.ms_per_token,
            "output_tokens_per_s": r.tokens_per_s,
            "p50_ttft_s": None if r.ttft_ms is None else r.ttft_ms / 1000,
            "requests": 4 * r.concurrency,
            "errors": 0,
        }
        for r in sweep
    ]
    layout = Layout(first.instance_type, first.tensor_parallel_degree, 1, 1)
    try:
        return calibrate(
            {"levels": levels},
            first.spec,
            layout,
            first.precision,
            workload=first.workload,
            kv_cache_precision=first.kv_cache,
        )
    except ValidationError:
        return None


def _ask(
    sweep: Sequence[pf.Row],
    slo: float,
    rate: float,
    calibration: Calibration | None,
    risk: Risk = Risk.PESSIMISTIC,
) -> Sized | None:
    """recommend's answer on the sweep's layout at ``risk`` (default the default risk)."""
    first = sweep[0]
    try:
        answer = recommend(
            first.spec,
            first.workload,
            Slo(max_ms_per_token=slo),
            Traffic(requests_per_second=rate),
            search=SearchSpace(
                instance_types=[first.instance_type],
                tensor_parallel_degrees=[first.tensor_parallel_degree],
                precision=first.precision,
                kv_cache_precision=first.kv_cache,
                max_instance_count=MAX_INSTANCES,
            ),
            sizing=Sizing(
                engine=first.as_run(engine_profile(first.profile)),
                calibration=calibration,
                risk=risk,
            ),
            top=1,
        )
    except ValidationError:
        return None
    if not answer.options:
        return None
    option = answer.options[0]
    assert option.requests_per_s_per_copy is not None  # a rate's option states it
    return Sized(
        option.layout.instance_count,
        option.ceiling,
        option.scaling_target,
        option.requests_per_s_per_copy,
    )


def _curve(sweep: Sequence[pf.Row]) -> MeasuredCurve:
    """The sweep's measured curve."""
    return MeasuredCurve.of(
        [
            MeasuredPoint(r.concurrency, r.ms_per_token, r.tokens_per_s)
            for r in sweep
            if r.ms_per_token is not None and r.tokens_per_s is not None
        ],
        sweep[0].workload,
    )


def elasticity(curve: MeasuredCurve, slo: float) -> float | None:
    """d ln(capacity) / d ln(ms/token) near ``slo`` on the measured curve: 1 / the log slope
    of ms/token against concurrency between the busiest level within the SLO and the first
    over it (the two levels ``capacity_within`` interpolates between). A uniform ms/token
    error e moves the capacity within the SLO by about -elasticity x e (at the SLO the rate is
    concurrency / SLO, so the rate moves with the concurrency)."""
    around = curve.levels_around(slo)
    if around is None:
        return None
    low, high = around
    if high.concurrency <= low.concurrency or high.ms_per_token <= low.ms_per_token:
        return None
    slope = math.log(high.ms_per_token / low.ms_per_token) / math.log(
        high.concurrency / low.concurrency
    )
    return 1 / slope


def replay(rows: Sequence[pf.Row]) -> list[Answer]:
    """Every sizing question of every sweep, answered."""
    answers: list[Answer] = []
    for sweep in _sweeps(rows):
        first = sweep[0]
        copies_per_instance = (
            first.instance_type.accelerator_devices // first.tensor_parallel_degree
        )
        calibration = _calibration(sweep)
        for slo in SLOS_MS_PER_TOKEN:
            capacity = _per_copy_rates(sweep, slo)
            if capacity is None:
                continue
            sensitivity = elasticity(_curve(sweep), slo)
            for multiple in RATES_IN_COPIES:
                rate = capacity.at_slo * multiple
                needed = math.ceil(math.ceil(multiple) / copies_per_instance)
                at_least = math.ceil(
                    math.ceil(rate / max(capacity.beyond, capacity.at_slo)) / copies_per_instance
                )
                proven = math.ceil(math.ceil(rate / capacity.proven) / copies_per_instance)
                answers.append(
                    Answer(
                        key=_describe(first),
                        profile=first.profile,
                        slo=slo,
                        multiple=multiple,
                        rate=rate,
                        copies_per_instance=copies_per_instance,
                        measured=capacity,
                        elasticity=sensitivity,
                        needed=needed,
                        at_least=at_least,
                        proven=proven,
                        default=_ask(sweep, slo, rate, None),
                        at_median=_ask(sweep, slo, rate, None, Risk.MEDIAN),
                        tuned=_ask(sweep, slo, rate, calibration) if calibration else None,
                        curve=_curve(sweep),
                    )
                )
    return answers


def _describe(row: pf.Row) -> str:
    """The sweep's source and layout, in one line."""
    return (
        f"{row.source} {row.model_name} {row.instance_type.name} "
        f"TP{row.tensor_parallel_degree} {row.input_tokens}/{row.output_tokens}"
    )


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def render(answers: Sequence[Answer], details: bool) -> str:
    answered = [a for a in answers if a.expected is not None]
    below = [a for a in answered if a.ceiling is not None and a.ceiling < a.needed]
    ratios = [a.expected / a.needed for a in answered if a.expected is not None]
    calibrated = [a.calibrated / a.needed for a in answers if a.calibrated is not None]
    tuned_below = [
        a for a in answers if a.calibrated_ceiling is not None and a.calibrated_ceiling < a.needed
    ]
    tuned_short = [
        a for a in answers if a.calibrated_ceiling is not None and a.calibrated_ceiling < a.at_least
    ]
    short = [a for a in answered if a.ceiling is not None and a.ceiling < a.at_least]
    under = [a for a in answered if a.expected is not None and a.expected < a.needed]
    lines = [
        f"sizing questions: {len(answers)} ({len({a.key for a in answers})} measured sweeps x "
        f"SLOs x {len(RATES_IN_COPIES)} rates); answered at the default risk: {len(answered)}",
        f"ceiling below the measured need: {len(below)} of {len(answered)} (target 0); below "
        f"what the measurement proves necessary: {len(short)}",
        f"expected instances below the measured need (a scale-out to the ceiling): "
        f"{len(under)} of {len(answered)}",
    ]
    if ratios:
        lines.append(
            f"peak cost / measured need: median {_quantile(ratios, 0.5):.2f}x (target <= 1.15), "
            f"p90 {_quantile(ratios, 0.9):.2f}x (target <= 1.5); within 1.15x "
            f"{sum(r <= 1.15 for r in ratios)} of {len(ratios)}, within 1.5x "
            f"{sum(r <= 1.5 for r in ratios)}"
        )
    lines += _target_lines(answered)
    medians = [a.median / a.needed for a in answered if a.median is not None]
    if medians:
        lines.append(
            f"the same questions at Risk.MEDIAN (the median's own scaling target): "
            f"{len(medians)} answered, peak cost / measured need median "
            f"{_quantile(medians, 0.5):.2f}x, p90 {_quantile(medians, 0.9):.2f}x: the model's "
            "own bias, without the pessimistic scaling target"
        )
    if calibrated:
        lines.append(
            f"after a calibration on the same layout: {len(calibrated)} answered, median "
            f"{_quantile(calibrated, 0.5):.2f}x, p90 {_quantile(calibrated, 0.9):.2f}x "
            f"(target <= 1.1); its ceiling below the measured need: {len(tuned_below)}, below "
            f"what the measurement proves necessary: {len(tuned_short)}"
        )
    lines += _breakdown([a for a in answered if a.at_median is not None])
    if details:
        for a in answers:
            lines.append(
                f"  {a.key} <= {a.slo:g} ms/token, {a.rate:.2f} req/s: need {a.needed} "
                f"(proven {a.at_least}-{a.proven}), "
                f"expected {a.expected}, ceiling {a.ceiling}, median {a.median}, "
                f"calibrated {a.calibrated} "
                f"(ceiling {a.calibrated_ceiling}); {_capacities(a)}"
            )
    return "\n".join(lines)


def _target_lines(answered: Sequence[Answer]) -> list[str]:
    """The questions whose scaling target is above the measured capacity within the SLO, at
    the default risk and at ``Risk.MEDIAN``, with how far over the SLO the measured copy runs
    there: a miss the autoscaling ceiling does not catch (it scales on the target)."""
    lines = []
    for name, pick in (
        ("default risk", attrgetter("default")),
        ("Risk.MEDIAN", attrgetter("at_median")),
    ):
        sized = [(a, s) for a in answered if (s := pick(a)) is not None]
        over = [a.over_slo(s) for a, s in sized if s.target > a.measured.concurrency]
        worst = f", ms/token at the peak up to {max(over):.1%} over the SLO" if over else ""
        lines.append(
            f"scaling target above the measured capacity within the SLO ({name}): "
            f"{len(over)} of {len(sized)}{worst}"
        )
    return lines


def _capacities(a: Answer) -> str:
    """The capacities per copy of one question: measured, then as each risk sized it."""
    measured = a.measured
    text = (
        f"capacity per copy measured {measured.concurrency:.2f} in flight / "
        f"{measured.at_slo:.3g} req/s"
    )
    for name, sized in (("median", a.at_median), ("default", a.default)):
        if sized is not None:
            text += (
                f", {name} {sized.target:.2f} / {sized.rate_per_copy:.3g} "
                f"({a.capacity_ratio(sized):.2f}x)"
            )
    if a.elasticity is not None:
        text += f"; elasticity {a.elasticity:.2f}"
    return text


def _spread(values: Sequence[float]) -> str:
    """``median M (p10 L, p90 H)`` of ``values``."""
    return (
        f"median {_quantile(values, 0.5):.2f} (p10 {_quantile(values, 0.1):.2f}, "
        f"p90 {_quantile(values, 0.9):.2f})"
    )


def _breakdown(both: Sequence[Answer]) -> list[str]:
    """What the peak cost of the questions answered at both risks is made of."""
    if not both:
        return []
    return [
        *_capacity_lines(both),
        *_rung_lines(both),
        *_decomposition_lines(both),
        *_sensitivity_lines(both),
    ]


def _sized(a: Answer, median: bool) -> Sized:
    sized = a.at_median if median else a.default
    assert sized is not None  # only questions answered at both risks are broken down
    return sized


def _capacity_lines(both: Sequence[Answer]) -> list[str]:
    """Predicted / measured capacity per copy, overall and per source / profile."""
    lines = [
        f"capacity per copy within the SLO, predicted / measured, over the {len(both)} "
        f"questions answered at both risks ({len({(a.key, a.profile, a.slo) for a in both})} "
        "sweep x SLO pairs, each once per rate):"
    ]
    for name, median in (("Risk.MEDIAN", True), ("default risk", False)):
        rates = [a.capacity_ratio(_sized(a, median)) for a in both]
        flight = [_sized(a, median).target / a.measured.concurrency for a in both]
        lines.append(f"  {name}: requests/s {_spread(rates)}; in flight {_spread(flight)}")
    groups: dict[str, list[Answer]] = {}
    for a in both:
        groups.setdefault(f"{a.key.split()[0]} / {a.profile}", []).append(a)
    for group, members in sorted(groups.items()):
        at_median = [a.capacity_ratio(_sized(a, True)) for a in members]
        at_default = [a.capacity_ratio(_sized(a, False)) for a in members]
        lines.append(
            f"  {group}: {len(members)} questions, requests/s at Risk.MEDIAN "
            f"{_spread(at_median)}; at the default {_spread(at_default)}"
        )
    return lines


def _rung_lines(both: Sequence[Answer]) -> list[str]:
    """Per measured need: how many questions cost more than it, and the cost ratios."""
    lines = ["per rung of the measured need (questions answered at both risks):"]
    for needed in sorted({a.needed for a in both}):
        rung = [a for a in both if a.needed == needed]
        parts = []
        for name, median in (("default", False), ("Risk.MEDIAN", True)):
            ratios = [_sized(a, median).instances / a.needed for a in rung]
            over = sum(ratio > 1 for ratio in ratios)
            parts.append(
                f"{name} {over} over the need, cost median {_quantile(ratios, 0.5):.2f}x, "
                f"mean {sum(ratios) / len(ratios):.2f}x, max {max(ratios):.2f}x"
            )
        lines.append(f"  need {needed}: {len(rung)} questions; " + "; ".join(parts))
    return lines


DECOMPOSITION_STEPS = (
    "capacity error at the median, fractional instances (measured / predicted)",
    "+ whole instances (Risk.MEDIAN as answered)",
    "+ pessimistic scaling target (the default as answered)",
)
"""The steps from the median's capacity error to the default risk's peak cost."""


def decomposition(both: Sequence[Answer]) -> list[tuple[float, float]]:
    """Per ``DECOMPOSITION_STEPS``, the (median, p90) over ``both`` of the cost / measured
    need as it stands after that step: the instances the median's capacity would take if
    instances were fractional (measured / predicted capacity: the rate over each), then as
    ``Risk.MEDIAN`` answered (whole instances), then as the default risk answered (its
    pessimistic scaling target too). The last is the default's own cost."""
    costs = (
        [1 / a.capacity_ratio(_sized(a, True)) for a in both],
        [_sized(a, True).instances / a.needed for a in both],
        [_sized(a, False).instances / a.needed for a in both],
    )
    return [(_quantile(values, 0.5), _quantile(values, 0.9)) for values in costs]


def _decomposition_lines(both: Sequence[Answer]) -> list[str]:
    """``decomposition`` in words, each step with what it adds to the previous one."""
    lines = [
        "the default risk's peak cost / measured need, decomposed (quantiles over the "
        f"{len(both)} questions; each step adds the difference to the previous one):"
    ]
    previous = (1.0, 1.0)
    for name, at in zip(DECOMPOSITION_STEPS, decomposition(both), strict=True):
        lines.append(
            f"  {name}: median {at[0]:.2f}x ({at[0] - previous[0]:+.2f}), "
            f"p90 {at[1]:.2f}x ({at[1] - previous[1]:+.2f})"
        )
        previous = at
    fractional = [1 / a.capacity_ratio(_sized(a, False)) for a in both]
    lines.append(
        "  (the default's own capacity error, fractional instances: median "
        f"{_quantile(fractional, 0.5):.2f}x, p90 {_quantile(fractional, 0.9):.2f}x)"
    )
    return lines


def threshold(a: Answer, target: float) -> float:
    """The predicted / measured capacity below which question ``a`` costs more than
    ``target`` x its need: the instances allowed are floor(target x need), each of
    ``copies_per_instance`` copies, and the rate is ``multiple`` copies' worth."""
    allowed = math.floor(target * a.needed + 1e-9) * a.copies_per_instance
    return a.multiple / allowed


def _sensitivity_lines(both: Sequence[Answer]) -> list[str]:
    """The capacity accuracy the targets require per rung, how many questions the current
    capacity errors and the validation's ms/token errors put past it, and the elasticity."""
    lines = ["sensitivity: predicted / measured capacity below which a rung costs more than"]
    rungs = {a.needed: a for a in both}
    lines.append(
        "  "
        + "; ".join(
            f"need {needed} ({a.multiple:g} copies' worth): "
            + ", ".join(f"{t:g}x below {threshold(a, t):.2f}" for t in COST_TARGETS)
            for needed, a in sorted(rungs.items())
        )
    )
    for name, median in (("Risk.MEDIAN", True), ("default risk", False)):
        past = [
            sum(a.capacity_ratio(_sized(a, median)) < threshold(a, t) for a in both)
            for t in COST_TARGETS
        ]
        lines.append(
            f"  {name}: past the {COST_TARGETS[0]:g}x threshold {past[0]} of {len(both)}, "
            f"past the {COST_TARGETS[1]:g}x one {past[1]}"
        )
    elastic = [a.elasticity for a in both if a.elasticity is not None]
    if elastic:
        lines.append(
            "  elasticity of capacity to ms/token near the SLO on the measured sweeps "
            f"(-d ln capacity / d ln ms/token): {_spread(elastic)} over {len(elastic)} questions"
        )
    lines += _ms_error_lines(both)
    return lines


def _ms_error_lines(both: Sequence[Answer]) -> list[str]:
    """What a uniform ms/token error near the SLO does to the capacity, by each question's
    elasticity (the measured curve's log slope around the SLO extended: capacity x
    (1 + error) ** -elasticity), and the ms/token accuracy the 0.8 threshold asks."""
    known = [a for a in both if a.elasticity is not None]
    if not known:
        return []
    lines = []
    for error in MS_PER_TOKEN_ERRORS:
        ratios = [(1 + error) ** -_elastic(a) for a in known]
        past = [
            sum(r < threshold(a, t) for a, r in zip(known, ratios, strict=True))
            for t in COST_TARGETS
        ]
        lines.append(
            f"  every ms/token {error:+.0%} near the SLO: capacity {_spread(ratios)} of "
            f"measured; past the {COST_TARGETS[0]:g}x threshold {past[0]} of {len(known)}, "
            f"past the {COST_TARGETS[1]:g}x one {past[1]}"
        )
    lowest = min(threshold(a, COST_TARGETS[0]) for a in known)
    accuracy = [100 * ((1 / lowest) ** (1 / _elastic(a)) - 1) for a in known]
    lines.append(
        f"  the most ms/token may be slow near the SLO for the capacity to stay at {lowest:.2f} "
        f"of measured (the {COST_TARGETS[0]:g}x threshold of every rung), in %: "
        f"{_spread(accuracy)}"
    )
    return lines


def _elastic(a: Answer) -> float:
    assert a.elasticity is not None  # only questions with a rising curve around the SLO
    return a.elasticity


SERVER_TIMED_SOURCES = ("hf-llama2-sagemaker-tgi",)
"""Sources whose ``ms_per_token`` is the server's time, not the client's: Hugging Face's TGI
runs record TGI's ``time_per_token``, the time since the request entered a batch / generated
tokens (huggingface/text-generation-inference ``router/src/server.rs``: ``inference_time /
generated_tokens``, ``queue_time`` apart), so the router's queue is left out; the same rows
carry the client's request latency (``e2e_latency_s``), what ``Slo.max_ms_per_token`` limits."""


def at_client_latency(rows: Sequence[pf.Row]) -> list[pf.Row]:
    """``rows`` with the ``SERVER_TIMED_SOURCES``' ms/token read at the client's request
    latency / output tokens where the row records it (``--client-latency``: the questions of
    those sweeps move with their measured capacity)."""
    with (pf.MEASUREMENTS / "rows.csv").open(newline="", encoding="utf-8") as handle:
        latency = {
            index: raw["e2e_latency_s"]
            for index, raw in enumerate(csv.DictReader(handle), start=2)
            if raw["source_id"] in SERVER_TIMED_SOURCES and raw["e2e_latency_s"]
        }
    return [
        replace(row, ms_per_token=float(latency[row.index]) * 1000 / row.output_tokens)
        if row.index in latency
        else row
        for row in rows
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--details", action="store_true", help="one line per question")
    parser.add_argument(
        "--client-latency",
        action="store_true",
        help="read the server-timed sources' ms/token at the client's latency (moves their "
        "questions with their measured capacity)",
    )
    args = parser.parse_args(argv)
    rows, _ = pf.load_rows()
    if args.client_latency:
        rows = at_client_latency(rows)
    print(render(replay(rows), args.details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
