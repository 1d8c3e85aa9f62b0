"""One copy of a model served by an engine profile, simulated: its memory gives the KV tokens,
its profile the scheduling policy (``selection``), its ``CopyModel`` the step costs."""

from __future__ import annotations

from ..engine_profiles import EngineProfile
from ..performance import CopyModel, profile_limits
from .costs import StepCosts
from .limits import BatchSettings
from .load import Load
from .loop import SimulationResult, simulate
from .policy import SchedulingPolicy
from .selection import kv_tokens_of, policy_for


def copy_policy(
    model: CopyModel,
    profile: EngineProfile,
    *,
    batch: BatchSettings | None = None,
    max_batch_size: int | None = None,
    max_concurrent_requests: int | None = None,
) -> SchedulingPolicy:
    """A fresh policy of ``profile`` over the KV tokens one copy of ``model``'s engine allocates
    (the memory ``performance.profile_limits`` gives the closed form: the engine's share,
    ``Batching.kv_cache_memory``, less the weights, a speculative draft's included), bounded by
    the deployment's ``batch`` settings (default: the profile's, with ``max_batch_size`` as the
    request cap; ``policy_for`` states the options)."""
    if batch is None:
        batch = BatchSettings.of_profile(profile, max_sequences=max_batch_size)
    _, memory = profile_limits(model, profile, batch=batch)
    return policy_for(
        profile,
        kv_tokens_of(model, memory.kv_free_bytes),
        model.workload,
        batch=batch,
        max_concurrent_requests=max_concurrent_requests,
    )


def simulate_copy(
    model: CopyModel,
    profile: EngineProfile,
    load: Load,
    *,
    batch: BatchSettings | None = None,
    max_batch_size: int | None = None,
    max_concurrent_requests: int | None = None,
) -> SimulationResult:
    """Simulate ``load`` of ``model.workload`` on one copy (``copy_policy``)."""
    policy = copy_policy(
        model,
        profile,
        batch=batch,
        max_batch_size=max_batch_size,
        max_concurrent_requests=max_concurrent_requests,
    )
    return simulate(policy, StepCosts(model), model.workload, load)
