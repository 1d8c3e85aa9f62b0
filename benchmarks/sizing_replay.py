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
- the same after calibrating on the sweep itself (``planning.calibration.calibrate``; target
  1.1x).

The comparison is per layout (the library restricted to the measured instance type and
degree), not against the cheapest measured layout across sources: the sweeps of one question
rarely share a workload. Questions the library answers with no option are counted apart.

Usage: ``python benchmarks/sizing_replay.py [--details]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import profile_fitting as pf

from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.calibration import Calibration, calibrate
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


@dataclass(frozen=True)
class Answer:
    """One sizing question and the library's answers, uncalibrated and calibrated."""

    key: str
    slo: float
    rate: float
    needed: int
    """Instances the measured capacity needs (``CopyCapacity.at_slo``): the measured need."""
    at_least: int
    """Instances the measurement proves necessary (the first level over the SLO serves
    more per copy than the SLO allows)."""
    proven: int
    """Instances the measured levels prove sufficient (their busiest level within the SLO)."""
    expected: int | None
    ceiling: int | None
    calibrated: int | None
    calibrated_ceiling: int | None
    median: int | None
    """Instances at ``Risk.MEDIAN`` (the median's own scaling target): what the default's
    pessimistic scaling target adds shows against it."""


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
    first = sweep[0]
    curve = MeasuredCurve.of(
        [
            MeasuredPoint(r.concurrency, r.ms_per_token, r.tokens_per_s)
            for r in sweep
            if r.ms_per_token is not None and r.tokens_per_s is not None
        ],
        first.workload,
    )
    return curve.capacity_within(slo)


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
            {"levels": levels}, first.spec, layout, first.precision, workload=first.workload
        )
    except ValidationError:
        return None


def _ask(
    sweep: Sequence[pf.Row],
    slo: float,
    rate: float,
    calibration: Calibration | None,
    risk: Risk = Risk.PESSIMISTIC,
) -> tuple[int, int] | None:
    """(instance_count, max_instance_count) of recommend's answer on the sweep's layout at
    ``risk`` (default the default risk)."""
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
                max_instance_count=MAX_INSTANCES,
            ),
            sizing=Sizing(engine=first.profile, calibration=calibration, risk=risk),
            top=1,
        )
    except ValidationError:
        return None
    if not answer.options:
        return None
    option = answer.options[0]
    return option.layout.instance_count, option.ceiling


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
            for multiple in RATES_IN_COPIES:
                rate = capacity.at_slo * multiple
                needed = math.ceil(math.ceil(multiple) / copies_per_instance)
                at_least = math.ceil(
                    math.ceil(rate / max(capacity.beyond, capacity.at_slo)) / copies_per_instance
                )
                proven = math.ceil(math.ceil(rate / capacity.proven) / copies_per_instance)
                plain = _ask(sweep, slo, rate, None)
                tuned = _ask(sweep, slo, rate, calibration) if calibration else None
                at_median = _ask(sweep, slo, rate, None, Risk.MEDIAN)
                answers.append(
                    Answer(
                        key=_describe(first),
                        slo=slo,
                        rate=rate,
                        needed=needed,
                        at_least=at_least,
                        proven=proven,
                        expected=None if plain is None else plain[0],
                        ceiling=None if plain is None else plain[1],
                        calibrated=None if tuned is None else tuned[0],
                        calibrated_ceiling=None if tuned is None else tuned[1],
                        median=None if at_median is None else at_median[0],
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
            f"p90 {_quantile(ratios, 0.9):.2f}x (target <= 1.5)"
        )
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
    if details:
        for a in answers:
            lines.append(
                f"  {a.key} <= {a.slo:g} ms/token, {a.rate:.2f} req/s: need {a.needed} "
                f"(proven {a.at_least}-{a.proven}), "
                f"expected {a.expected}, ceiling {a.ceiling}, median {a.median}, "
                f"calibrated {a.calibrated} "
                f"(ceiling {a.calibrated_ceiling})"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--details", action="store_true", help="one line per question")
    args = parser.parse_args(argv)
    rows, _ = pf.load_rows()
    print(render(replay(rows), args.details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
