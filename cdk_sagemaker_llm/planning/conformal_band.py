"""A prediction's p10-p90 band by its load regime and its extrapolation distance: conformal
quantiles of held-out errors, looked up, never computed here.

``benchmarks/conformal_bands.py`` computes, from the leave-one-source-out errors
ln(measured / predicted) of every published row (``benchmarks/model_validation.py``'s folds),
the edges and median of each cell (load regime x extrapolation distance x figure) with the
split-conformal finite-sample ranks (Vovk et al., "Algorithmic Learning in a Random World",
2005; Angelopoulos and Bates, "A Gentle Introduction to Conformal Prediction", 2021,
section 1) at p10/p90, or at the narrowest wider ranks that hold 80 % of the regime's errors
when each source is left out, and writes them to ``conformal_bands.json`` beside this module,
with its source, date and counts. A cell with too few errors, or errors of too few sources,
holds the quantiles of its regime over every distance (widened to its own errors) and says so;
a farther distance is never narrower than a nearer one of its regime. Planning only reads
the file: a prediction's level is put in its regime (``load_regime``) and its distance is the
number of ways it leaves what its engine profile was fitted on
(``EngineProfile.extrapolation_reasons``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "DISTANCES",
    "FIGURES",
    "REGIMES",
    "TABLE_FILE",
    "ConformalBand",
    "ConformalBands",
    "conformal_bands",
    "distance_bucket",
    "load_regime",
]

REGIMES = ("light", "near the knee", "saturated")
"""Load regimes, read against the knee of one copy (the last concurrency before doubling buys
< 10 % more tokens/s): light at no more than a quarter of the knee, near the knee above that
and up to it, saturated beyond it."""

DISTANCES = ("0", "1", "2+")
"""Extrapolation distances: how many ways a prediction leaves what its engine profile was
fitted on (hardware, TP degree, model size, prompt length, precision, an unfitted engine,
speculative decoding); two or more share a cell."""

FIGURES = ("ms_per_token", "tokens_per_s")
"""The banded figures (inter-token latency counts as ms/token)."""

TABLE_FILE = "conformal_bands.json"


def load_regime(concurrency_per_copy: float, knee_per_copy: float) -> str:
    """The regime (``REGIMES``) of ``concurrency_per_copy`` in-flight requests on a copy whose
    knee is ``knee_per_copy``."""
    if concurrency_per_copy > knee_per_copy:
        return "saturated"
    return "light" if concurrency_per_copy * 4 <= knee_per_copy else "near the knee"


def distance_bucket(reasons: int) -> str:
    """The ``DISTANCES`` cell of a prediction with ``reasons`` extrapolation reasons."""
    return DISTANCES[min(reasons, len(DISTANCES) - 1)]


@dataclass(frozen=True)
class Cell:
    """The band of one (figure, regime, distance) cell of held-out log errors."""

    low: float
    """The lower edge: ln(measured / predicted) at the cell's ``level`` rank."""
    median: float
    high: float
    """The upper edge: at the cell's 1 - ``level`` rank."""
    level: float
    """The tail share left out each side (0.10: p10 and p90), the narrowest that held 80 % of
    the regime's errors leave-one-source-out."""
    residuals: int
    """Held-out errors in the cell itself."""
    sources: int
    """Sources those errors come from."""
    pooled: str
    """Empty, or what the cell's quantiles come from instead of its own too few errors:
    ``regime`` (its regime over every distance) or ``figure`` (every regime)."""
    held_to_nearer: bool
    """A nearer distance of the regime was wider: the cell takes its edges."""

    @staticmethod
    def of(data: dict[str, Any]) -> Cell:
        """A cell from its JSON form."""
        return Cell(
            float(data["low"]),
            float(data["median"]),
            float(data["high"]),
            float(data["level"]),
            int(data["residuals"]),
            int(data["sources"]),
            str(data["pooled"]),
            bool(data["held_to_nearer"]),
        )


@dataclass(frozen=True)
class ConformalBand:
    """The p10-p90 factors on one prediction's figures, and why."""

    regime: str
    distance: str
    ms_per_token: tuple[float, float]
    """(p10, p90) factors on the predicted ms/token."""
    tokens_per_s: tuple[float, float]
    """(p10, p90) factors on the predicted tokens/s."""
    notes: tuple[str, ...]
    """Where the cell's quantiles come from (pooled, held to a nearer distance)."""

    def ms_range(self, value: float) -> tuple[float, float]:
        """(p10, p90) of a predicted ms/token."""
        return value * self.ms_per_token[0], value * self.ms_per_token[1]

    def tokens_range(self, value: float) -> tuple[float, float]:
        """(p10, p90) of a predicted tokens/s."""
        return value * self.tokens_per_s[0], value * self.tokens_per_s[1]

    def describe(self) -> str:
        """One line."""
        return (
            f"{self.regime}, {self.distance} extrapolation reasons: ms/token "
            f"x{self.ms_per_token[0]:.2f}-{self.ms_per_token[1]:.2f}, tokens/s "
            f"x{self.tokens_per_s[0]:.2f}-{self.tokens_per_s[1]:.2f}"
            + (f" ({'; '.join(self.notes)})" if self.notes else "")
        )


@dataclass(frozen=True)
class ConformalBands:
    """The conformal table: cells by figure, regime and distance, with its provenance."""

    cells: dict[tuple[str, str, str], Cell]
    """(figure, regime, distance) -> its quantiles."""
    provenance: str
    """Where the table comes from, in words (generator, data, date, counts)."""

    @staticmethod
    def of(document: dict[str, Any]) -> ConformalBands:
        """The table from its JSON form (``benchmarks/conformal_bands.py`` writes it)."""
        cells = {
            (figure, regime, distance): Cell.of(document["cells"][figure][regime][distance])
            for figure in FIGURES
            for regime in REGIMES
            for distance in DISTANCES
        }
        provenance = (
            f"{document['generator']} on {document['generated']}: held-out errors of "
            f"{document['rows']} rows from {len(document['sources'])} sources"
        )
        return ConformalBands(cells, provenance)

    def band(self, regime: str, reasons: int) -> ConformalBand:
        """The band of a prediction in ``regime`` with ``reasons`` extrapolation reasons."""
        distance = distance_bucket(reasons)
        ms = self.cells[("ms_per_token", regime, distance)]
        tokens = self.cells[("tokens_per_s", regime, distance)]
        notes = []
        for name, cell in (("ms/token", ms), ("tokens/s", tokens)):
            if cell.pooled:
                notes.append(
                    f"{name}: {cell.residuals} held-out errors from {cell.sources} sources in "
                    "this cell, too few: "
                    + (
                        "the regime's over every distance"
                        if cell.pooled == "regime"
                        else "every regime's"
                    )
                )
        held = [
            name for name, cell in (("ms/token", ms), ("tokens/s", tokens)) if cell.held_to_nearer
        ]
        if held:
            notes.append(f"{' and '.join(held)}: as wide as a nearer distance of the regime")
        return ConformalBand(
            regime,
            distance,
            (math.exp(ms.low), math.exp(ms.high)),
            (math.exp(tokens.low), math.exp(tokens.high)),
            tuple(notes),
        )


@cache
def conformal_bands() -> ConformalBands:
    """The shipped table (``conformal_bands.json``)."""
    text = resources.files(__package__).joinpath(TABLE_FILE).read_text(encoding="utf-8")
    return ConformalBands.of(json.loads(text))
