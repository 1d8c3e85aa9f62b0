"""TTFT under load, as ``calibrate`` fits it, scored out of sample on published sweeps.

    python benchmarks/ttft_under_load.py            # the table by regime
    python benchmarks/ttft_under_load.py --details  # and every held-out level

Every sweep in ``measurements/rows.csv`` that measured TTFT at three or more closed-loop
concurrencies (one source, engine, instance, TP, model, precision and workload) is calibrated
the way ``calibrate`` fits TTFT (``planning.calibration_fit.TtftFit``), over the decode timing
of its engine profile:

- **before**: the prefill efficiency from the lightest level, nothing else (what ``calibrate``
  did before it fitted TTFT across loads);
- **after**: the same prefill efficiency, then the prefill hold
  (``Efficiency.prefill_hold_steps``) fitted to the sweep's other levels: leave-one-level-out,
  so no level is scored by a hold fitted to it.

The lightest level fits the prefill in both and is not scored. Each scored level's regime is read
against its copy's knee (``conformal_band.load_regime``): the measured one where the sweep's
tokens/s locate it, else the one its engine profile predicts (``profile_fitting
.predicted_knee``). The regime table prints the median and 90th percentile of
|predicted / measured TTFT - 1| before and after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_fitting as pf
from model_validation import _knee

from cdk_sagemaker_llm.planning.calibration_fit import MeasuredLevel, TtftFit
from cdk_sagemaker_llm.planning.conformal_band import REGIMES, load_regime
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.performance import CopyModel


def ttft_sweeps(rows: Sequence[pf.Row]) -> list[list[pf.Row]]:
    """Closed-loop sweeps with TTFT at three or more concurrencies, each in concurrency order."""
    groups: dict[tuple[object, ...], list[pf.Row]] = defaultdict(list)
    for row in rows:
        if row.ttft_ms is not None and not row.static_batch:
            groups[(*row.sweep_key(), row.input_tokens, row.output_tokens)].append(row)
    sweeps = []
    for members in groups.values():
        members.sort(key=lambda row: row.concurrency)
        if len({row.concurrency for row in members}) == len(members) >= 3:
            sweeps.append(members)
    return sorted(sweeps, key=lambda members: members[0].index)


def _level(row: pf.Row) -> MeasuredLevel:
    # TtftFit reads only the concurrency and the TTFT of a level.
    return MeasuredLevel(row.concurrency, 0.0, 0.0, row.ttft_ms)


def _knee_of(members: Sequence[pf.Row], model: CopyModel) -> int:
    """The sweep's measured knee where its tokens/s locate one, else the profile's."""
    measured = [(row.concurrency, row.tokens_per_s) for row in members if row.tokens_per_s]
    if len(measured) == len(members):
        return _knee(measured)
    row = members[0]
    profile = engine_profile(row.profile)
    return pf.predicted_knee(row, profile, model.efficiency)


def score(members: Sequence[pf.Row]) -> list[tuple[pf.Row, str, float, float, float]]:
    """(row, regime, measured, before, after TTFT ms) of each of the sweep's scored levels."""
    first = members[0]
    profile = engine_profile(first.profile)
    model = first.model(profile)
    capacity = pf._capacity(first, profile, model)
    levels = [_level(row) for row in members]
    before = TtftFit(model, capacity).prefill(levels[0])
    knee = _knee_of(members, before.model)
    scored = []
    for index in range(1, len(members)):
        others = [level for i, level in enumerate(levels) if i != index]
        after = before.hold(others)
        row = members[index]
        assert row.ttft_ms is not None
        scored.append(
            (
                row,
                load_regime(row.concurrency, knee),
                row.ttft_ms,
                _predicted(before, levels[index]),
                _predicted(after, levels[index]),
            )
        )
    return scored


def _predicted(fit: TtftFit, level: MeasuredLevel) -> float:
    return fit.model.level(level.concurrency, fit.capacity).ttft_ms


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _cell(errors: Sequence[float]) -> str:
    if not errors:
        return "-"
    return f"{statistics.median(errors):.0%} / {_quantile(errors, 0.9):.0%}"


def render(scored: Sequence[tuple[pf.Row, str, float, float, float]], details: bool) -> str:
    """The table by regime (and every scored level with ``details``)."""
    lines = [
        "TTFT |predicted / measured - 1|, median / p90, leave-one-level-out "
        f"({len(scored)} levels, {len({s[0].source for s in scored})} sources):",
        "",
        "| regime | levels | before (prefill only) | after (prefill + hold) |",
        "|---|---:|---:|---:|",
    ]
    for regime in (*REGIMES, "all"):
        cell = [s for s in scored if regime in ("all", s[1])]
        before = [abs(b / m - 1) for _, _, m, b, _ in cell]
        after = [abs(a / m - 1) for _, _, m, _, a in cell]
        lines.append(f"| {regime} | {len(cell)} | {_cell(before)} | {_cell(after)} |")
    if details:
        lines += [
            "",
            "Per level (source, layout, workload, concurrency: measured / before / after):",
        ]
        for row, regime, measured, before_ms, after_ms in scored:
            lines.append(
                f"- {row.source} {row.profile} {row.instance_type.name} "
                f"TP{row.tensor_parallel_degree} {row.model_name} {row.input_tokens}/"
                f"{row.output_tokens} c={row.concurrency} ({regime}): {measured:.0f} / "
                f"{before_ms:.0f} / {after_ms:.0f} ms"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--details", action="store_true", help="every scored level too")
    args = parser.parse_args(argv)
    rows, _ = pf.load_rows()
    scored = [item for members in ttft_sweeps(rows) for item in score(members)]
    sys.stdout.write(render(scored, args.details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
