"""A prediction (``performance.predict``) whose levels and knee come from the scheduler
simulation rather than the closed form: the same layout, band, limits and assumptions, with
each level's figures simulated under closed-loop clients spread over the copies as the load
balancer spreads them, and the knee by the doubling rule over simulated levels."""

from __future__ import annotations

from dataclasses import replace

from ...catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..efficiency import Efficiency
from ..engine_profiles import engine_profile
from ..knee import ERRORS, THROUGHPUT, Knee, KneeRule
from ..performance import (
    KNEE_MIN_GAIN_PER_DOUBLING,
    LevelPrediction,
    Prediction,
    banded_levels,
    profile_limits,
    profile_model,
)
from .capacity import CopySimulation
from .copy import copy_policy


def with_simulated_levels(
    prediction: Prediction,
    spec: ModelSpec,
    precision: Precision = Precision.FP16,
    *,
    efficiency: Efficiency | None = None,
    max_batch_size: int | None = None,
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
) -> Prediction:
    """``prediction`` (of ``spec`` at ``precision``, with a calibration's ``efficiency`` if it
    had one, its KV cache stored at ``kv_cache``) with simulated levels and knee."""
    profile = engine_profile(prediction.engine)
    layout, workload = prediction.layout, prediction.workload
    model = profile_model(spec, layout, precision, workload, profile, efficiency, kv_cache=kv_cache)
    limits, _ = profile_limits(model, profile, max_batch_size)
    simulation = CopySimulation(model, profile, max_batch_size)
    copies = layout.copies
    knee = simulation.knee(limits.max_concurrency)
    levels = banded_levels(
        [_level(simulation, copies, level.concurrency) for level in prediction.levels],
        copies,
        knee.clients,
        len(prediction.extrapolation),
    )
    notes = [
        "levels and knee simulated (planning.scheduling): "
        + copy_policy(model, profile, max_batch_size=max_batch_size).describe()
        + "; closed-loop clients, the first round and the drain left out"
    ]
    for level in prediction.levels:
        refused = _refused(simulation, copies, level.concurrency)
        if refused:
            notes.append(f"at {level.concurrency} in flight the engine refuses {refused} (429)")
    return replace(
        prediction,
        levels=levels,
        knee=_knee(simulation, knee.clients, limits.max_concurrency, copies),
        assumptions=[*prediction.assumptions, *notes],
    )


def _knee(simulation: CopySimulation, clients: int, most: int, copies: int) -> Knee:
    """The simulated knee as a ``Knee`` of the whole layout: the rule, the level that tripped
    it (the next doubling, where the throughput gained too little or the engine refused
    requests) and why, in words."""
    rule = KneeRule(min_gain_per_doubling=KNEE_MIN_GAIN_PER_DOUBLING)
    limit = f"{most} per copy is the most the copy's limits allow"
    if clients >= most:
        return Knee(
            clients * copies, rule.describe(), detail=f"per copy: {limit}; x {copies} copies"
        )
    tripped = min(clients * 2, most)
    refused = simulation.level(tripped).result.rejected
    reason = ERRORS if refused else THROUGHPUT
    why = (
        f"the engine refuses requests at {tripped}"
        if refused
        else f"simulated throughput gains less than {rule.min_gain_per_doubling:.0%} per "
        f"doubling past {clients}"
    )
    return Knee(
        clients * copies,
        rule.describe(),
        tripped * copies,
        reason,
        detail=f"per copy: {why}; x {copies} copies",
    )


def load_balancer_shares(copies: int, concurrency: int) -> list[tuple[int, int]]:
    """(clients per copy, copies with that many): the load balancer's even share."""
    base, extra = divmod(concurrency, copies)
    return [(c, n) for c, n in ((base + 1, extra), (base, copies - extra)) if c and n]


def _level(simulation: CopySimulation, copies: int, concurrency: int) -> LevelPrediction:
    tokens = 0.0
    worst = (0.0, 0.0, 0.0)
    for clients, count in load_balancer_shares(copies, concurrency):
        level = simulation.level(clients)
        tokens += level.tokens_per_s * count
        e2e = level.result.mean("e2e_s") * 1000
        worst = max(worst, (level.ms_per_token, level.ttft_ms, e2e))
    ms, ttft, e2e = worst
    return LevelPrediction(
        concurrency=concurrency,
        ms_per_token=ms,
        ttft_ms=ttft,
        e2e_ms=e2e,
        tokens_per_s=tokens,
        requests_per_s=tokens / simulation.model.workload.output_tokens,
    )


def _refused(simulation: CopySimulation, copies: int, concurrency: int) -> int:
    return sum(
        simulation.level(clients).result.rejected * count
        for clients, count in load_balancer_shares(copies, concurrency)
    )
