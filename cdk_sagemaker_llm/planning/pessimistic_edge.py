"""The pessimistic edge the default risk (``Risk.PESSIMISTIC``) sizes the autoscaling ceiling
at: the one place that says which band's edge is used.

What runs at the peak is sized at the median; only the ceiling (``max_instance_count``) pays
for the band. Its edge is:

- after a calibration of the very accelerator (a band with a ``basis``,
  ``planning.calibrated_band``): that band's edge, the calibration's own residual plus the
  run-to-run noise of a benchmark;
- otherwise the conformal band (``planning.conformal_band``, as ``predict`` prints it) of the
  scaling target's load regime and the prediction's extrapolation distance: the slower of its
  p90 ms/token factor and the inverse of its p10 tokens/s factor. These are the held-out
  (leave-one-source-out) errors, not the engine profile's slowest in-sample residual
  (``Band.pessimistic_slowdown``), which ``Risk.WORST_CASE`` keeps.
"""

from __future__ import annotations

from dataclasses import dataclass

from .conformal_band import conformal_bands, distance_bucket
from .engine_profiles import Band

__all__ = ["PessimisticEdge", "pessimistic_edge"]


@dataclass(frozen=True)
class PessimisticEdge:
    """The factor on the model's times (divisor of its tokens/s) at the ceiling's edge."""

    slowdown: float
    """Factor on the model's point prediction; never below the band's median."""
    basis: str
    """Where the factor comes from, in words."""

    def relative_to(self, band: Band) -> float:
        """The factor against the median the peak's instances are sized at (at least 1)."""
        return max(1.0, self.slowdown / band.median_slowdown)


def pessimistic_edge(band: Band, regime: str, reasons: int) -> PessimisticEdge:
    """The edge of a prediction whose ``band`` is the engine profile's or a calibration's,
    at a scaling target in load ``regime`` (``conformal_band.REGIMES``) with ``reasons``
    extrapolation reasons (see the module docstring)."""
    if band.basis is not None:
        return PessimisticEdge(
            max(band.median_slowdown, band.pessimistic_slowdown),
            f"the calibrated band's edge, {band.basis}",
        )
    conformal = conformal_bands().band(regime, reasons)
    ms_p90, tokens_p10 = conformal.ms_per_token[1], conformal.tokens_per_s[0]
    return PessimisticEdge(
        max(band.median_slowdown, ms_p90, 1 / tokens_p10),
        f"the conformal band's p90 ({regime}, {distance_bucket(reasons)} extrapolation "
        f"reasons: ms/token x{ms_p90:.2f}, tokens/s x{tokens_p10:.2f}, held out "
        "leave-one-source-out)",
    )
