"""The p10-p90 band a sized option quotes for its predicted figures: the band that holds out
of sample, not the engine profile's residuals the option was sized with.

An option's figures are predicted at the peak (``Option.predicted``: its in-flight requests
per copy). Their band is:

- on a layout a calibration narrows (a ``Band`` with a ``basis``,
  ``planning.calibrated_band``): that band, the calibration's own residual plus the run-to-run
  noise of a benchmark, widened with the distance from what was measured;
- otherwise the conformal band (``planning.conformal_band``) of the level's load regime
  against the median's knee and the prediction's extrapolation distance: the held-out
  (leave-one-source-out) errors, per regime and distance, that ``predict`` prints per level and
  ``benchmarks/model_validation.py`` scores (>= 80 % coverage in every regime).

Both are factors on the model's point prediction, and an option's figures are that prediction
times the factor it was sized at (the engine profile's median residual, say x0.85): the band
is quoted against the option's figures, so its factors are divided by that centre (ms/token;
multiplied for tokens/s). A measured layout's figures are the measurement's, its centre 1.

The engine profile's cross-validated residuals (``engine_profiles.Band``) still set the
factor the peak is sized at (their median) and ``Risk.WORST_CASE``'s edge (their slowest);
at saturation their p10-p90 held fewer of the published measurements than the conformal band
does, so an option never quotes them as its band.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .conformal_band import conformal_bands
from .engine_profiles import Band

__all__ = ["OptionBand", "option_band"]


@dataclass(frozen=True)
class OptionBand:
    """The p10-p90 factors on an option's predicted ms/token and tokens/s, and their source."""

    ms_per_token: tuple[float, float]
    """(p10, p90) factors on the option's predicted ms/token."""
    tokens_per_s: tuple[float, float]
    """(p10, p90) factors on the option's predicted tokens/s at a fixed concurrency (a
    traffic of requests/s fixes the tokens/s: a slower copy holds more in flight instead)."""
    centre: float
    """The factor on the model's times the option's figures were predicted at (its sizing
    median; 1 on a measured layout): the band's own factors are against the model's point
    prediction, these against the option's figures."""
    source: str
    """``conformal`` (held-out errors by regime and distance) or ``calibrated``."""
    regime: str | None
    """The predicted level's load regime (``conformal_band.REGIMES``); None: calibrated."""
    extrapolation: tuple[str, ...]
    """Each way the prediction leaves what its engine profile was fitted on."""
    basis: str
    """Where the factors come from, in words."""

    def ms_range(self, ms_per_token: float) -> tuple[float, float]:
        """(p10, p90) of the option's predicted ``ms_per_token``."""
        return ms_per_token * self.ms_per_token[0], ms_per_token * self.ms_per_token[1]

    def describe(self, ms_per_token: float) -> str:
        """One line: the range of the predicted ``ms_per_token``. (Its tokens/s factors hold at
        a fixed concurrency; a traffic of requests/s fixes the tokens/s instead, and a slower
        copy holds more in flight.)"""
        low, high = self.ms_range(ms_per_token)
        return f"p10-p90 of ms/token at the peak: {low:.1f}-{high:.1f} ({self.basis})"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``recommend --format json``'s ``band``)."""
        return {
            "source": self.source,
            "regime": self.regime,
            "ms_per_token_factors": [round(f, 3) for f in self.ms_per_token],
            "tokens_per_s_factors": [round(f, 3) for f in self.tokens_per_s],
            "centre": round(self.centre, 3),
            "extrapolation": list(self.extrapolation),
            "basis": self.basis,
        }


def option_band(
    sizing: Band, regime: str, extrapolation: tuple[str, ...], centre: float
) -> OptionBand:
    """The band of an option sized with ``sizing`` (the engine profile's or a calibration's
    band) whose predicted level is in load ``regime`` with ``extrapolation`` reasons, its
    figures predicted at ``centre`` times the model's (see the module docstring)."""
    if sizing.basis is not None:
        ms, tokens = sizing.ms_per_token, sizing.tokens_per_s
        source, basis = "calibrated", sizing.basis
        regime_of: str | None = None
    else:
        conformal = conformal_bands().band(regime, len(extrapolation))
        ms, tokens = conformal.ms_per_token, conformal.tokens_per_s
        source, regime_of = "conformal", regime
        basis = f"the conformal band, {conformal.describe()}; held out leave-one-source-out"
    if centre != 1:
        basis += (
            f"; its factors are on the model's point prediction, the option's times are that "
            f"x{centre:.2f}"
        )
    return OptionBand(
        (ms[0] / centre, ms[1] / centre),
        (tokens[0] * centre, tokens[1] * centre),
        centre,
        source,
        regime_of,
        extrapolation,
        basis,
    )
