"""A prediction's band once a benchmark has calibrated the model: the measurement replaces the
engine profile's uncertainty where it applies.

On the layout it measured (the same model, accelerator, tensor-parallel degree, precision, KV
cache precision and engine, a workload within 2x of the benchmark's) the band is the
calibration's own fit error plus the run-to-run noise of a benchmark, not the engine profile's
cross-validated residuals: a measured g6e.xlarge is judged by what it measured. Each way the
prediction leaves what was measured (another model, instance size, degree, precision, KV cache
precision, workload or engine release on the same accelerator) widens it by
``TRANSFER_SPREAD`` and is named among its reasons; on another accelerator only the
engine-level per-step overhead transfers (``Calibration.applied_to``), so the band stays the
engine profile's and says why. A calibrated band is never wider than the profile's: where the
distance makes it so, the profile's band is used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from .calibration import AppliedCalibration, EngineRelease
from .engine_profiles import Band
from .performance import Layout, Prediction, Workload

__all__ = [
    "RUN_TO_RUN_NOISE",
    "TRANSFER_SPREAD",
    "calibrated_band",
    "measured_here",
    "with_calibrated_bands",
]

RUN_TO_RUN_NOISE = 0.05
"""Relative spread (one standard deviation) of one benchmark repeated on the same layout: an
assumption (a calibration holds one run, so it cannot measure its own repeatability), of the
order of the few-percent differences between repeated runs of one configuration."""

TRANSFER_SPREAD = 0.10
"""Relative spread (one standard deviation) each way of leaving the measured layout adds on the
same accelerator (another model, instance size, degree, precision, KV cache precision,
workload or release): a judgement, wide enough that two steps away approach the engine
profile's band."""

_P90_Z = 1.2816
"""Standard normal quantile of the 90th percentile: p10-p90 is +-1.28 standard deviations."""

_PESSIMISTIC_Z = 2.0
"""The pessimistic edge of a calibrated band: two standard deviations (about 1 in 44 slower)."""


def calibrated_band(
    band: Band,
    applied: AppliedCalibration | None,
    spec: ModelSpec,
    layout: Layout,
    workload: Workload,
    precision: Precision,
    engine: EngineRelease | None,
    concurrency: Sequence[int] = (),
    kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO,
    *,
    simulated: bool = False,
) -> Band:
    """``band`` (the engine profile's, ``performance.prediction_band``) as the calibration
    ``applied`` to ``spec`` on ``layout`` narrows it (see the module docstring); ``band`` as
    given when there is no calibration, with a reason added when the calibration measured
    another accelerator.

    :param engine: the target's engine release (None: the calibrated one is assumed).
    :param concurrency: the whole deployment's levels the band is for; one outside the
        calibrated range per copy is a step away (empty: not checked, as for a layout).
    :param kv_cache_precision: how the target stores the KV cache; another than the
        calibrated one is a step away.
    :param simulated: whether the prediction timed the levels through the scheduler
        simulation: the calibration's fit error there (``Calibration.fit_error``) sets the band.
    """
    if applied is None:
        return band
    calibration = applied.calibration
    accelerator = layout.instance_type.accelerator
    same_hardware = layout.instance_type.name == calibration.instance_type or (
        accelerator is not None and accelerator.name == calibration.accelerator
    )
    if not same_hardware:
        where = accelerator.name if accelerator else layout.instance_type.name
        return replace(
            band,
            reasons=(
                *band.reasons,
                f"calibrated on {calibration.accelerator or calibration.instance_type}, "
                f"predicting {where}: only the per-step overhead transfers, so the band is the "
                "engine profile's",
            ),
        )
    distances = _distances(
        applied, spec, layout, workload, precision, engine, concurrency, kv_cache_precision
    )
    fit_error = calibration.fit_error(simulated)
    spread = math.sqrt(fit_error**2 + RUN_TO_RUN_NOISE**2 + len(distances) * TRANSFER_SPREAD**2)
    measured = _band_of_spread(spread, distances, calibration.levels, fit_error)
    if measured.pessimistic_slowdown >= band.pessimistic_slowdown:
        return replace(
            band,
            reasons=(
                *band.reasons,
                f"the calibration is {len(distances)} steps from this layout "
                f"({'; '.join(distances)}): no narrower than the engine profile's band",
            ),
        )
    return measured


def _distances(
    applied: AppliedCalibration,
    spec: ModelSpec,
    layout: Layout,
    workload: Workload,
    precision: Precision,
    engine: EngineRelease | None,
    concurrency: Sequence[int],
    kv_cache_precision: KvCachePrecision,
) -> list[str]:
    """Each way the prediction leaves what the calibration measured on its accelerator."""
    calibration = applied.calibration
    found = [
        note.removeprefix("extrapolated: ")
        for note in calibration.coverage_notes(
            spec, layout, workload, precision, concurrency, kv_cache_precision
        )
    ]
    measured = calibration.engine
    if engine is not None and measured is not None and engine != measured:
        found.append(f"calibrated on {measured.describe()}, serving {engine.describe()}")
    return found


def _band_of_spread(spread: float, reasons: list[str], levels: int, rms_error: float) -> Band:
    """A band centred on the calibrated prediction with log-normal ``spread``."""
    wide = math.exp(_P90_Z * spread)
    edge = math.exp(_PESSIMISTIC_Z * spread)
    return Band(
        ms_per_token=(1 / wide, wide),
        tokens_per_s=(1 / wide, wide),
        pessimistic_ms_per_token=edge,
        pessimistic_tokens_per_s=1 / edge,
        median_ms_per_token=1.0,
        median_tokens_per_s=1.0,
        reasons=tuple(reasons),
        rows=levels,
        basis=(
            f"from the calibration ({levels} levels: {rms_error:.0%} rms fit error, "
            f"{RUN_TO_RUN_NOISE:.0%} run-to-run noise"
            + (f", +{TRANSFER_SPREAD:.0%} for each of {len(reasons)} steps away" if reasons else "")
            + ")"
        ),
    )


def measured_here(band: Band) -> bool:
    """Whether ``band`` is a calibration's on the very layout it measured (no step away): the
    measurement then replaces the prediction's pessimistic scaling target."""
    return band.basis is not None and not band.reasons


def with_calibrated_bands(
    prediction: Prediction,
    applied: AppliedCalibration,
    spec: ModelSpec,
    precision: Precision,
    engine: EngineRelease | None,
    kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO,
    *,
    simulated: bool = False,
) -> Prediction:
    """``prediction`` with the calibrated band of each level (``calibrated_band`` at that
    level's concurrency) where it is narrower than the engine profile's, and the band over
    every level (its reasons say why a level is not narrowed) as ``calibrated_band``;
    ``kv_cache_precision``: the KV cache the prediction stores, as ``predict``'s; ``simulated``:
    whether its levels were timed through the scheduler simulation (``calibrated_band``)."""
    band = prediction.band
    if band is None:
        return prediction
    layout, workload = prediction.layout, prediction.workload

    def at(concurrency: Sequence[int]) -> Band:
        return calibrated_band(
            band,
            applied,
            spec,
            layout,
            workload,
            precision,
            engine,
            concurrency,
            kv_cache_precision,
            simulated=simulated,
        )

    levels = []
    for level in prediction.levels:
        narrowed = at([level.concurrency])
        levels.append(level.with_calibrated_band(narrowed) if narrowed.basis else level)
    overall = at([level.concurrency for level in prediction.levels])
    return replace(prediction, levels=levels, calibrated_band=overall)
