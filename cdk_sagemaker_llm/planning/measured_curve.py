"""A measured copy: the levels a benchmark measured on one layout, per copy, and what they say
about a copy's capacity within an SLO and its knee.

Once the exact layout has been measured, the measurement decides and the model only transfers
it: ``recommend`` (and so ``LlmService``) sizes a calibrated layout from its ``MeasuredCurve``
where the calibration measured that very layout at a workload close to the asked one
(``Calibration.measured_curve_for``), and from the fitted model elsewhere.

- **Capacity within an SLO** (``MeasuredCurve.capacity_within``): at the concurrency where the
  measured ms/token (and TTFT, where the SLO limits it) reaches the limit, interpolated
  linearly in concurrency between the busiest level within it and the first level over it
  (ms/token grows about linearly with the decode batch), with the rate by Little's law
  (concurrency / (ms/token x output tokens)). A coarse sweep (1 and 10 in flight) proves only
  its lower level sufficient; taking that level as the capacity would call a copy that serves
  6 in flight within the SLO a copy that serves 1. ``benchmarks/sizing_replay.py`` scores the
  library against the same rule.
- **The knee** (``MeasuredCurve.knee``): the benchmark's rule (``planning.knee``: ``KneeRule``
  with ``performance.KNEE_MIN_GAIN_PER_DOUBLING``, the rule ``performance.copy_knee`` applies
  to predicted levels) walked over the measured levels.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .knee import SLO, TTFT, Knee, KneeRule, LevelFigures, trip_reason
from .performance import KNEE_MIN_GAIN_PER_DOUBLING, Workload

__all__ = [
    "WORKLOAD_TOLERANCE",
    "CopyCapacity",
    "MeasuredCurve",
    "MeasuredPoint",
    "measured_copies",
    "measured_level",
]

WORKLOAD_TOLERANCE = 0.10
"""How far (relative) the asked input and output tokens may be from the measured ones for the
measured curve to decide: ms/token at a given load moves with the context (KV reads per step)
and with the output length (the prefill's share of each token) by at most about that
fraction times their share of a request's time, a few percent, the order of a benchmark's own
run-to-run noise (``calibrated_band.RUN_TO_RUN_NOISE``). Farther, the fitted model transfers
the measurement with the calibrated band widened for the distance."""


@dataclass(frozen=True)
class MeasuredPoint:
    """One measured level of one copy."""

    concurrency: float
    """In-flight requests per copy (the level's concurrency / copies measured)."""
    ms_per_token: float
    """p50 end-to-end latency / output tokens, ms."""
    tokens_per_s: float
    """Output tokens/s of one copy."""
    ttft_ms: float | None = None
    """p50 time to first token, ms; None where the level did not stream."""

    def breaks(self, max_ms_per_token: float, max_ttft_ms: float | None) -> bool:
        """True when this level misses the SLO (a TTFT limit with no TTFT measured: unknown,
        so it is not taken as met)."""
        if self.ms_per_token > max_ms_per_token:
            return True
        return max_ttft_ms is not None and (self.ttft_ms is None or self.ttft_ms > max_ttft_ms)


@dataclass(frozen=True)
class CopyCapacity:
    """What one measured copy serves within an SLO (see the module docstring)."""

    concurrency: float
    """In-flight requests per copy where the SLO is reached (interpolated)."""
    at_slo: float
    """Requests/s at ``concurrency`` (Little's law at the SLO's figures): the capacity."""
    proven: float
    """Requests/s at the busiest measured level within the SLO: what is proven sufficient."""
    beyond: float
    """Requests/s at the first measured level over the SLO: more than the copy serves."""


@dataclass(frozen=True)
class MeasuredCurve:
    """The measured levels of one copy at one workload, lowest concurrency first."""

    points: tuple[MeasuredPoint, ...]
    input_tokens: int
    """Prompt tokens of the measured requests."""
    output_tokens: int
    """Generated tokens of the measured requests."""

    @staticmethod
    def of(points: Sequence[MeasuredPoint], workload: Workload) -> MeasuredCurve:
        """The curve of ``points`` (any order) measured at ``workload``."""
        ordered = tuple(sorted(points, key=lambda point: point.concurrency))
        return MeasuredCurve(ordered, workload.input_tokens, workload.output_tokens)

    @property
    def highest(self) -> float:
        """The busiest measured concurrency per copy."""
        return self.points[-1].concurrency

    def distance_from(self, workload: Workload) -> str | None:
        """Why ``workload`` is too far from the measured one for the curve to decide
        (``WORKLOAD_TOLERANCE``); None when it is close."""
        far = [
            f"{wanted} {name} tokens against {measured} measured"
            for name, measured, wanted in (
                ("input", self.input_tokens, workload.input_tokens),
                ("output", self.output_tokens, workload.output_tokens),
            )
            if abs(wanted - measured) > WORKLOAD_TOLERANCE * measured
        ]
        if not far:
            return None
        return f"{'; '.join(far)} (more than {WORKLOAD_TOLERANCE:.0%} away)"

    def levels_around(
        self, max_ms_per_token: float, max_ttft_ms: float | None = None
    ) -> tuple[MeasuredPoint, MeasuredPoint] | None:
        """The two measured levels the SLO falls between: the busiest within it (most
        tokens/s) and the least loaded one that breaks it; None unless both exist (else the
        SLO does not bind within the measured levels)."""
        within = [p for p in self.points if not p.breaks(max_ms_per_token, max_ttft_ms)]
        above = [p for p in self.points if p.breaks(max_ms_per_token, max_ttft_ms)]
        if not within or not above:
            return None
        return max(within, key=lambda p: p.tokens_per_s), min(above, key=lambda p: p.concurrency)

    def capacity_within(
        self, max_ms_per_token: float, max_ttft_ms: float | None = None
    ) -> CopyCapacity | None:
        """The copy's capacity within the SLO (``CopyCapacity``), interpolated between the
        ``levels_around`` it; None where the SLO does not bind within the measured levels."""
        around = self.levels_around(max_ms_per_token, max_ttft_ms)
        if around is None:
            return None
        best, broken = around
        proven = best.tokens_per_s / self.output_tokens
        beyond = broken.tokens_per_s / self.output_tokens
        share = _share_to_limit(best, broken, max_ms_per_token, max_ttft_ms)
        if share is None:  # not a rising curve: no interpolation
            return CopyCapacity(best.concurrency, proven, proven, beyond)
        concurrency = best.concurrency + share * (broken.concurrency - best.concurrency)
        ms = best.ms_per_token + share * (broken.ms_per_token - best.ms_per_token)
        at_slo = concurrency * 1000 / (ms * self.output_tokens)
        return CopyCapacity(concurrency, max(proven, min(at_slo, beyond)), proven, beyond)

    def at(self, concurrency: float) -> MeasuredPoint:
        """The copy at ``concurrency`` per copy within the measured range, interpolated
        linearly between the two measured levels around it; below the lowest level, that
        level's latencies at the concurrency's share of its throughput (a lighter load is no
        slower)."""
        points = self.points
        if concurrency <= points[0].concurrency:
            low = points[0]
            scale = concurrency / low.concurrency
            tokens = low.tokens_per_s * scale
            return MeasuredPoint(concurrency, low.ms_per_token, tokens, low.ttft_ms)
        for low, high in itertools.pairwise(points):
            if concurrency <= high.concurrency:
                share = (concurrency - low.concurrency) / (high.concurrency - low.concurrency)
                ttft = (
                    None
                    if low.ttft_ms is None or high.ttft_ms is None
                    else low.ttft_ms + share * (high.ttft_ms - low.ttft_ms)
                )
                return MeasuredPoint(
                    concurrency,
                    low.ms_per_token + share * (high.ms_per_token - low.ms_per_token),
                    low.tokens_per_s + share * (high.tokens_per_s - low.tokens_per_s),
                    ttft,
                )
        raise ValueError(f"{concurrency} per copy is beyond the measured {self.highest:g}")

    def requests_per_s(self, concurrency: float) -> float:
        """Requests/s of one copy at ``concurrency`` per copy, by the rule of
        ``capacity_within``: Little's law at the interpolated ms/token (``at``), within the
        measured rates of the two levels around it; below the lowest level, its rate scaled
        down with the concurrency."""
        points, out = self.points, self.output_tokens
        if concurrency <= points[0].concurrency:
            return self.at(concurrency).tokens_per_s / out
        little = concurrency * 1000 / (self.at(concurrency).ms_per_token * out)
        for low, high in itertools.pairwise(points):
            if concurrency <= high.concurrency:
                return max(low.tokens_per_s / out, min(little, high.tokens_per_s / out))
        raise ValueError(f"{concurrency} per copy is beyond the measured {self.highest:g}")

    def knee(self, max_ms_per_token: float | None, max_ttft_ms: float | None = None) -> Knee:
        """The measured knee under the one knee rule (see the module docstring)."""
        limited = max_ms_per_token is not None and math.isfinite(max_ms_per_token)
        rule = KneeRule(
            KNEE_MIN_GAIN_PER_DOUBLING, max_ms_per_token if limited else None, None, max_ttft_ms
        )
        previous: LevelFigures | None = None
        for point in self.points:
            figures = LevelFigures(
                point.concurrency, point.tokens_per_s, point.ms_per_token, point.ttft_ms
            )
            reason = trip_reason(rule, figures, previous)
            if reason is not None:
                return Knee(
                    None if previous is None else math.floor(previous.concurrency),
                    rule.describe(),
                    tripped_at=math.ceil(point.concurrency),
                    reason=reason,
                )
            previous = figures
        return Knee(math.floor(self.highest), rule.describe(), at_least=True)

    def scaling_target(self, capacity: CopyCapacity, knee: Knee) -> float:
        """In-flight requests per copy to size and scale at: the measured knee where
        throughput stopped growing first, else (the SLO stopped the walk) the copy's capacity
        within the SLO (``capacity.concurrency``, down to a hundredth: autoscaling holds an
        average over its period, so a fraction is meaningful, and rounding it down to a whole
        request would size a copy that serves 1.5 within the SLO as one that serves 1)."""
        within = max(1.0, math.floor(capacity.concurrency * 100) / 100)
        if knee.reason in (SLO, TTFT) or knee.concurrency is None:
            return within
        return max(1.0, min(float(knee.concurrency), within))

    def to_dict(self) -> dict[str, Any]:
        """The calibration file's ``measured`` section: the workload and, per copy, each
        level's concurrency, ms/token, tokens/s and TTFT (ms; null where not streamed)."""
        return {
            "per_copy": True,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "points": [
                {
                    "concurrency": round(p.concurrency, 6),
                    "ms_per_token": round(p.ms_per_token, 6),
                    "tokens_per_s": round(p.tokens_per_s, 6),
                    "ttft_ms": None if p.ttft_ms is None else round(p.ttft_ms, 6),
                }
                for p in self.points
            ],
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> MeasuredCurve:
        """Read ``to_dict``'s form (a KeyError, TypeError or ValueError when malformed, which
        ``Calibration.from_dict`` reports naming the file)."""
        points = [
            MeasuredPoint(
                float(p["concurrency"]),
                float(p["ms_per_token"]),
                float(p["tokens_per_s"]),
                None if p.get("ttft_ms") is None else float(p["ttft_ms"]),
            )
            for p in data["points"]
        ]
        if len(points) < 2 or any(
            not (p.concurrency > 0 and p.ms_per_token > 0 and p.tokens_per_s > 0) for p in points
        ):
            raise ValueError("measured.points: at least two levels with positive figures")
        return MeasuredCurve.of(
            points, Workload(int(data["input_tokens"]), int(data["output_tokens"]))
        )


def _share_to_limit(
    within: MeasuredPoint, broken: MeasuredPoint, max_ms: float, max_ttft_ms: float | None
) -> float | None:
    """How far (0-1) from ``within`` to ``broken`` the first limit is reached, linearly in
    each figure the SLO limits; None when the curve does not rise between them."""
    if broken.concurrency <= within.concurrency:
        return None
    shares = []
    if broken.ms_per_token > max_ms:
        if broken.ms_per_token <= within.ms_per_token:
            return None
        shares.append((max_ms - within.ms_per_token) / (broken.ms_per_token - within.ms_per_token))
    if max_ttft_ms is not None and broken.ttft_ms is not None and broken.ttft_ms > max_ttft_ms:
        assert within.ttft_ms is not None  # a level within a TTFT limit measured TTFT
        if broken.ttft_ms <= within.ttft_ms:
            return None
        shares.append((max_ttft_ms - within.ttft_ms) / (broken.ttft_ms - within.ttft_ms))
    return min(shares) if shares else None


def measured_copies(
    curve: MeasuredCurve,
    target: float,
    *,
    requests_per_s: float | None,
    concurrency: int | None,
    slowdown: float = 1.0,
) -> int:
    """The copies a traffic (a rate, or a concurrency) takes at ``target`` in flight per copy,
    each serving the measured rate there (/ ``slowdown``: an edge of the band)."""
    if concurrency is not None:
        return max(1, math.ceil(concurrency * slowdown / target))
    assert requests_per_s is not None
    return max(1, math.ceil(requests_per_s * slowdown / curve.requests_per_s(target)))


def measured_level(
    curve: MeasuredCurve,
    copies: int,
    target: float,
    *,
    requests_per_s: float | None,
    concurrency: int | None,
) -> tuple[float, MeasuredPoint]:
    """The in-flight requests per copy a traffic puts on ``copies`` copies (a rate: where the
    measured rate per copy carries its share, found by bisection up to ``target``; a
    concurrency: its even share), and the measured copy there."""
    if concurrency is not None:
        per_copy = concurrency / copies
        return per_copy, curve.at(min(per_copy, curve.highest))
    assert requests_per_s is not None
    share = requests_per_s / copies
    low, high = 0.0, float(target)
    for _ in range(60):
        middle = (low + high) / 2
        if curve.requests_per_s(middle) >= share:
            high = middle
        else:
            low = middle
    return high, curve.at(high)
