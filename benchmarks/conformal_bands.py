"""The conformal band table: per load regime and extrapolation distance, the quantiles of the
held-out errors of every published row (``planning/conformal_band.py`` reads it).

    python benchmarks/conformal_bands.py           # rewrite planning/conformal_bands.json
    python benchmarks/conformal_bands.py --check   # exit 1 when the shipped table is stale

Each row of ``benchmarks/measurements/rows.csv`` is predicted by the engine profiles fitted
without its source (``profile_fitting.leave_one_source_out``, as ``model_validation.py``);
its errors ln(measured / predicted) of ms/token (or inter-token latency) and of tokens/s go
into the cell of its load regime (``load_regime`` against the knee its held-out profile
predicts, as ``predict`` does; offline runs are saturated) and of its extrapolation distance
(the reasons the profile fitted without its source gives, ``performance.prediction_reasons``).
Validation-only sources count here: no profile is fitted to them, so their errors are as
out of sample as any. A cell's p10 and p90 are the split-conformal ranks floor((n + 1) 0.1) and
ceil((n + 1) 0.9) of its n sorted errors. A cell with fewer than ``MIN_CELL_RESIDUALS`` errors
or errors of fewer than ``MIN_CELL_SOURCES`` sources takes its regime's quantiles over every
distance (marked pooled), and a farther distance takes a nearer one's edges where those are
wider (marked held to nearer), so a prediction farther from its data is never claimed more
certain. ``model_validation.py`` scores the table leave-one-source-out: each source against the
table built without its rows (``table_without``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_fitting as pf

from cdk_sagemaker_llm.planning.conformal_band import (
    DISTANCES,
    FIGURES,
    REGIMES,
    TABLE_FILE,
    distance_bucket,
    load_regime,
)
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.performance import Layout, prediction_reasons

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "cdk_sagemaker_llm" / "planning" / TABLE_FILE
GENERATOR = "benchmarks/conformal_bands.py"

MIN_CELL_RESIDUALS = 20
"""Fewer held-out errors than this in a cell: its p10 and p90 would rest on one or two order
statistics, so it takes its regime's over every distance."""
TARGET = 0.80
"""The share of held-out errors a band must hold (issue 30: p10-p90 coverage >= 80 %)."""
LEVELS = (0.10, 0.075, 0.05, 0.025, 0.0)
"""The tail shares tried, narrowest band first: 0.10 puts the edges at the p10 and p90 ranks,
0.0 at the extremes seen."""
MIN_CELL_SOURCES = 3
"""Errors from fewer sources than this: leaving one out (the validation) would leave one
source's offset standing for every deployment."""


class Residual(NamedTuple):
    """One held-out error and its cell."""

    row_index: int
    """The row's line in rows.csv."""
    source: str
    figure: str
    regime: str
    distance: str
    error: float
    """ln(measured / predicted)."""


def held_out_reasons(
    h: pf.HeldOutPrediction, held: Sequence[pf.HeldOutPrediction], rows: Sequence[pf.Row]
) -> list[str]:
    """The extrapolation reasons of ``h``'s row under its profile fitted without its source
    (the range of the profile's other training sources; unfitted where there are none)."""
    row = h.row
    profile = engine_profile(row.profile)
    others = any(
        g.row.profile == row.profile and g.row.source != row.source and pf.trains(g.row)
        for g in held
    )
    train = [
        r for r in rows if r.profile == row.profile and r.source != row.source and pf.trains(r)
    ]
    fitted = pf.fitted_range(train) if h.fitted and others and train else None
    profile = replace(profile, fitted=fitted)
    layout = Layout(row.instance_type, row.tensor_parallel_degree, 1)
    return prediction_reasons(profile, row.spec, layout, row.workload, row.precision)


def residuals(held: Sequence[pf.HeldOutPrediction], rows: Sequence[pf.Row]) -> list[Residual]:
    """Every held-out error of ``held`` with its cell."""
    found = []
    for h in held:
        row = h.row
        regime = "saturated" if row.static_batch else load_regime(row.concurrency, h.knee)
        distance = distance_bucket(len(held_out_reasons(h, held, rows)))
        for key, error in sorted(h.errors.items()):
            figure = {"ms_per_token": "ms_per_token", "itl_ms": "ms_per_token"}.get(key, key)
            if figure in FIGURES:
                found.append(Residual(row.index, row.source, figure, regime, distance, error))
    return found


def _quantiles(errors: Sequence[float], level: float) -> tuple[float, float, float]:
    """(low, median, high): the split-conformal ranks floor((n + 1) level) and
    ceil((n + 1) (1 - level)) of the n sorted ``errors`` (level 0.1: p10 and p90)."""
    ordered = sorted(errors)
    n = len(ordered)
    low = ordered[max(1, math.floor((n + 1) * level)) - 1]
    high = ordered[min(n, math.ceil((n + 1) * (1 - level))) - 1]
    middle = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    return low, middle, high


def _enough(members: Sequence[Residual]) -> bool:
    return (
        len(members) >= MIN_CELL_RESIDUALS and len({r.source for r in members}) >= MIN_CELL_SOURCES
    )


def _cell(
    members: Sequence[Residual], pools: Sequence[Sequence[Residual]], level: float
) -> dict[str, Any]:
    """One cell: its own quantiles, or where it is too small (``_enough``) the first of
    ``pools`` (its regime's, then its figure's over every regime) that is not, widened to
    every error the cell holds."""
    chosen, pooled = members, ""
    for name, pool in zip(("regime", "figure"), pools, strict=True):
        if _enough(chosen) or not pool:
            break
        chosen, pooled = pool, name
    low, middle, high = _quantiles([r.error for r in chosen], level) if chosen else (0.0, 0.0, 0.0)
    if pooled and members:
        # The borrowed band also spans every error the small cell itself holds.
        low = min(low, *(r.error for r in members))
        high = max(high, *(r.error for r in members))
    return {
        "low": round(low, 4),
        "median": round(middle, 4),
        "high": round(high, 4),
        "level": level,
        "residuals": len(members),
        "sources": len({r.source for r in members}),
        "pooled": pooled,
        "held_to_nearer": False,
    }


def _regime_cells(
    pool: Sequence[Residual], figure_pool: Sequence[Residual], level: float
) -> dict[str, dict[str, Any]]:
    """One figure's cells of one regime by distance, each at least as wide as the nearer."""
    row: dict[str, dict[str, Any]] = {}
    nearer: dict[str, Any] | None = None
    for distance in DISTANCES:
        members = [r for r in pool if r.distance == distance]
        cell = _cell(members, (pool, figure_pool), level)
        if nearer is not None and (nearer["low"] < cell["low"] or nearer["high"] > cell["high"]):
            cell["low"] = min(cell["low"], nearer["low"])
            cell["high"] = max(cell["high"], nearer["high"])
            cell["held_to_nearer"] = True
        row[distance] = nearer = cell
    return row


def _inside(table: dict[str, Any], residual: Residual) -> bool:
    cell = table[residual.figure][residual.regime][residual.distance]
    return bool(cell["low"] <= residual.error <= cell["high"])


def _holds(found: Sequence[Residual], regime: str, level: float) -> bool:
    """Whether ``level`` holds ``TARGET`` of ``regime``'s errors, each source's against the
    cells built without it, in the regime and in each of its distances with enough errors."""
    pool = [r for r in found if r.regime == regime]
    outcomes: list[tuple[str, bool]] = []
    for source in sorted({r.source for r in pool}):
        kept = [r for r in pool if r.source != source]
        if not kept:
            continue
        table = {
            figure: {
                regime: _regime_cells(
                    [r for r in kept if r.figure == figure],
                    [r for r in found if r.figure == figure and r.source != source],
                    level,
                )
            }
            for figure in FIGURES
        }
        outcomes += [(r.distance, _inside(table, r)) for r in pool if r.source == source]
    groups = [[ok for _, ok in outcomes]]
    for distance in DISTANCES:
        members = [ok for d, ok in outcomes if d == distance]
        if len(members) >= MIN_CELL_RESIDUALS:
            groups.append(members)
    return all(sum(group) >= TARGET * len(group) for group in groups if group)


def level_of(found: Sequence[Residual], regime: str) -> float:
    """The narrowest ``LEVELS`` entry that holds ``regime`` leave-one-source-out (``_holds``);
    the widest where none does."""
    for level in LEVELS:
        if _holds(found, regime, level):
            return level
    return LEVELS[-1]


def cells(found: Sequence[Residual]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """figure -> regime -> distance -> cell (``_cell``) at its regime's level (``level_of``),
    each distance at least as wide as the nearer ones of its regime."""
    levels = {regime: level_of(found, regime) for regime in REGIMES}
    return {
        figure: {
            regime: _regime_cells(
                [r for r in found if r.figure == figure and r.regime == regime],
                [r for r in found if r.figure == figure],
                levels[regime],
            )
            for regime in REGIMES
        }
        for figure in FIGURES
    }


def document(found: Sequence[Residual], rows: Sequence[pf.Row], generated: str) -> dict[str, Any]:
    """The table's JSON form with its provenance."""
    return {
        "format": 1,
        "generator": GENERATOR,
        "generated": generated,
        "data": (
            "benchmarks/measurements/rows.csv (sources in benchmarks/measurements/sources.json)"
        ),
        "method": (
            "leave-one-source-out errors ln(measured / predicted) of the engine profiles; per "
            "figure, load regime and extrapolation distance the split-conformal p10 and p90 "
            f"ranks and the median; a cell of fewer than {MIN_CELL_RESIDUALS} errors or "
            f"{MIN_CELL_SOURCES} sources takes its regime's over every distance; a farther "
            "distance is never narrower than a nearer one"
        ),
        "rows": len(rows),
        "residuals": len(found),
        "sources": sorted({row.source for row in rows}),
        "cells": cells(found),
    }


def table_without(found: Sequence[Residual], source: str) -> dict[str, Any]:
    """The table as it would be built without ``source``'s errors (the validation's fold)."""
    kept = [r for r in found if r.source != source]
    return {"generated": "", "generator": GENERATOR, "rows": 0, "sources": [], "cells": cells(kept)}


def build() -> dict[str, Any]:
    """The table from today's data and profiles, dated today (UTC)."""
    rows, _ = pf.load_rows()
    held = pf.leave_one_source_out(rows)
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    return document(residuals(held, rows), rows, today)


def stale(shipped: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """The top-level keys on which ``shipped`` differs from ``fresh`` (the date aside)."""
    return sorted(
        key
        for key in set(shipped) | set(fresh)
        if key != "generated" and shipped.get(key) != fresh.get(key)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    fresh = build()
    if args.check:
        differ = stale(json.loads(TABLE.read_text(encoding="utf-8")), fresh)
        print(
            f"{TABLE.relative_to(ROOT)}: "
            + (f"stale ({', '.join(differ)})" if differ else "up to date")
        )
        return 1 if differ else 0
    TABLE.write_text(json.dumps(fresh, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {TABLE.relative_to(ROOT)}: {fresh['residuals']} errors of {fresh['rows']} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
