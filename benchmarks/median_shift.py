"""Does sizing "at the median" help out of sample? (issue 30 items 4 and 5)

``recommend`` and ``LlmService`` size the peak at the model's times x the engine profile's
median residual (``Band.median_slowdown``: the square root of the median ms/token residual over
the median tokens/s residual, from the profile's leave-one-source-out residuals), where
``predict`` prints the model's own point prediction. This script scores both on the held-out
errors of ``model_validation.py``: each row's source left out, the shift that profile's other
sources' held-out errors would give it (what the profile's residuals are, without the row's
source; ``VALIDATION_ONLY_SOURCES`` never train, so never shift), applied to the row's held-out
error. It prints, per profile and per load regime, the median |ln(measured / predicted)| of
ms/token and tokens/s without the shift and with it.

    .venv/bin/python benchmarks/median_shift.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import model_validation as mv
import profile_fitting as pf

FIGURES = {"ms_per_token": "ms", "itl_ms": "ms", "tokens_per_s": "tokens"}
"""The held-out errors a median shift moves (inter-token latency counts as ms/token)."""

MIN_ERRORS = 3
"""Fewer training errors of a figure than this: no shift (as a profile pools its residuals)."""


def log_shift(held: Sequence[pf.HeldOutPrediction], profile: str, source: str) -> float:
    """ln of the slowdown ``profile``'s residuals would give it without ``source``: half the
    difference of its training rows' median ms/token and tokens/s errors (0 with too few)."""
    errors: dict[str, list[float]] = {"ms": [], "tokens": []}
    for h in held:
        if h.row.profile != profile or h.row.source == source or not pf.trains(h.row):
            continue
        for key, error in h.errors.items():
            if key in FIGURES:
                errors[FIGURES[key]].append(error)
    if min(len(errors["ms"]), len(errors["tokens"])) < MIN_ERRORS:
        return 0.0
    return (statistics.median(errors["ms"]) - statistics.median(errors["tokens"])) / 2


def table(held: Sequence[pf.HeldOutPrediction]) -> list[str]:
    """Median |error| without and with the shift, per profile and per load regime."""
    knees = mv.measured_knees(held)
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    shifts: dict[tuple[str, str], float] = {}
    for h in held:
        key = (h.row.profile, h.row.source)
        if key not in shifts:
            shifts[key] = log_shift(held, *key)
        shift = shifts[key]
        regime = mv.regime_of(h, knees)
        for name, error in h.errors.items():
            figure = FIGURES.get(name)
            if figure is None:
                continue
            shifted = error - shift if figure == "ms" else error + shift
            for group in (f"profile {h.row.profile}", f"regime {regime}", "all"):
                groups[f"{group} | {figure}"].append((abs(error), abs(shifted)))
    lines = [
        "| rows | figure | errors | median abs error: point prediction | at the median shift |",
        "|---|---|---:|---:|---:|",
    ]
    for name, pairs in sorted(groups.items()):
        plain = statistics.median(p for p, _ in pairs)
        shifted = statistics.median(s for _, s in pairs)
        lines.append(f"| {name} | {len(pairs)} | {plain:.1%} | {shifted:.1%} |")
    return lines


def main() -> None:
    rows, _ = pf.load_rows()
    held = pf.leave_one_source_out(rows)
    print("\n".join(table(held)))


if __name__ == "__main__":
    main()
