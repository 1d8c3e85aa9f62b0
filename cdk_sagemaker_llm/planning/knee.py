"""The knee: where more concurrency stops paying off. One rule serves the performance model's
prediction (``performance.copy_knee``) and the benchmark's measurement
(``benchmarking.engine.find_knee``), so a predicted and a measured knee mean the same thing.

Levels are taken in increasing concurrency. A level *trips* the rule when its error rate
exceeds ``max_error_rate``, its p50 ms/token exceeds ``slo_ms_per_token``, its p50 time to
first token exceeds ``slo_ttft_ms``, or its output throughput gain per doubling of concurrency
over the previous level, ``(tput_i / tput_(i-1)) ** (1 / log2(c_i / c_(i-1))) - 1``, is below
``min_gain_per_doubling`` (domain.md "Latency, throughput and the knee": "throughput gain per
doubling below X%"). A level that serves no tokens gains nothing (it trips); the level after
one that served none gains without bound (it does not). The knee is the last level before the
first that trips.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import check_range
from ..prop_types import typed_props

__all__ = ["Knee", "KneeRule", "LevelFigures", "gain_per_doubling", "trip_reason"]

THROUGHPUT, SLO, TTFT, ERRORS = "throughput", "slo", "ttft", "errors"
"""Why a level trips the rule (``Knee.reason``; the names results.json has always used)."""


@typed_props
@dataclass(frozen=True)
class KneeRule:
    """When more concurrency stops paying off (see the module docstring). The knee is the
    last level before the first level that trips: the highest concurrency that still buys
    throughput within the SLO. A level that trips is already queueing, so it is reported as
    ``tripped_at``, not as the knee.
    """

    min_gain_per_doubling: float = 0.10
    """Minimum relative throughput gain per doubling. Default 10 %."""
    slo_ms_per_token: float | None = None
    """p50 ms/token limit. Default: none."""
    max_error_rate: float | None = None
    """Error rate limit (0-1). Default: none."""
    slo_ttft_ms: float | None = None
    """p50 time-to-first-token limit, ms. Default: none."""

    def __post_init__(self) -> None:
        check_range("min_gain_per_doubling", self.min_gain_per_doubling, minimum=0, maximum=10)
        check_range("slo_ms_per_token", self.slo_ms_per_token, minimum=0.001)
        check_range("max_error_rate", self.max_error_rate, minimum=0, maximum=1)
        check_range("slo_ttft_ms", self.slo_ttft_ms, minimum=0.001)

    def describe(self) -> str:
        """The rule in words, as stated in results."""
        parts = [f"throughput gain per doubling < {self.min_gain_per_doubling:.0%}"]
        if self.slo_ms_per_token is not None:
            parts.append(f"p50 ms/token > {self.slo_ms_per_token:g}")
        if self.slo_ttft_ms is not None:
            parts.append(f"p50 TTFT ms > {self.slo_ttft_ms:g}")
        if self.max_error_rate is not None:
            parts.append(f"error rate > {self.max_error_rate:.1%}")
        return "last level before the first level with " + " or ".join(parts)


@dataclass(frozen=True)
class LevelFigures:
    """What the rule reads of one level, predicted or measured (None: not measured)."""

    concurrency: float
    tokens_per_s: float
    ms_per_token: float | None
    ttft_ms: float | None = None
    error_rate: float = 0.0


def gain_per_doubling(previous: LevelFigures, level: LevelFigures) -> float:
    """Relative throughput gain per doubling of concurrency from ``previous`` to ``level``:
    -1 when ``level`` serves nothing, unbounded when only ``previous`` served nothing."""
    if level.tokens_per_s <= 0:
        return -1.0
    if previous.tokens_per_s <= 0:
        return math.inf
    doublings = math.log2(level.concurrency / previous.concurrency)
    return float((level.tokens_per_s / previous.tokens_per_s) ** (1 / doublings) - 1)


def trip_reason(rule: KneeRule, level: LevelFigures, previous: LevelFigures | None) -> str | None:
    """Why ``level`` trips ``rule`` against ``previous`` (``errors``, ``slo``, ``ttft``,
    ``throughput``), or None. A limit the level has no figure for (no successful request)
    trips it."""
    if rule.max_error_rate is not None and level.error_rate > rule.max_error_rate:
        return ERRORS
    if rule.slo_ms_per_token is not None and (
        level.ms_per_token is None or level.ms_per_token > rule.slo_ms_per_token
    ):
        return SLO
    if rule.slo_ttft_ms is not None and (level.ttft_ms is None or level.ttft_ms > rule.slo_ttft_ms):
        return TTFT
    if previous is not None and gain_per_doubling(previous, level) < rule.min_gain_per_doubling:
        return THROUGHPUT
    return None


@dataclass
class Knee:
    """The knee of a sweep, measured or predicted."""

    concurrency: int | None
    """The knee concurrency; ``None`` when even the lowest level trips the rule."""
    rule: str
    """The rule, in words."""
    tripped_at: int | None = None
    """The first level that tripped the rule (``None``: none did; the knee is the highest)."""
    reason: str | None = None
    """``throughput``, ``slo``, ``ttft`` or ``errors``: why that level tripped."""
    at_least: bool = False
    """No level tripped the rule: the knee is *at least* ``concurrency`` (the highest level
    run), not a measured knee."""
    raise_with: str | None = None
    """With ``at_least``: what raises the bound (a flag or a prop, e.g. ``--search-cap``)."""
    detail: str | None = None
    """A prediction's explanation in words (which limit or effect sets it); None for a
    measurement."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``detail`` only when there is one)."""
        data = asdict(self)
        if self.detail is None:
            del data["detail"]
        return data

    def describe(self) -> str:
        """The knee in words: measured, a lower bound, or none."""
        if self.concurrency is None:
            return f"none: even the lowest level trips the rule ({self.reason})"
        if self.at_least:
            hint = f"; raise it with {self.raise_with}" if self.raise_with else ""
            return (
                f"at least concurrency {self.concurrency} (no level tripped the rule, so the "
                f"knee lies above the highest level run{hint})"
            )
        return (
            f"concurrency {self.concurrency} ({self.reason} rule tripped at concurrency "
            f"{self.tripped_at})"
        )
