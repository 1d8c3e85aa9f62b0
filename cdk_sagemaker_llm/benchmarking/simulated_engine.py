"""The engine behind the loopback simulator when it serves a model: one copy scheduled by the
engine profile's policy (``planning.scheduling``: the same policies and step-cost model that
``predict --simulate-scheduler`` and the capacity search run), each forward pass slept in real
time (``time_scale`` x its simulated seconds), so simulate -> benchmark -> calibrate ->
recommend is one consistent loop.

The engine keeps a virtual clock: the simulated seconds its passes took, with idle time mapped
from the wall clock. A request's virtual arrival, first token and end (``TruthRecord``'s
``virtual_*`` fields) are what the simulation says, whatever the CPU load made the wall clock
do, so a test compares them with the prediction without timing anything."""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..errors import ValidationError
from ..planning.engine_profiles import EngineProfile
from ..planning.performance import CopyModel, Layout, check_kv_cache_precision, profile_model
from ..planning.scheduling.copy import copy_policy
from ..planning.scheduling.costs import StepCosts
from ..planning.scheduling.policy import SchedulingPolicy
from ..planning.scheduling.state import SchedulerState, Sequence, SimRequest, Step
from ..planning.workload import Workload
from ._clock import now


@dataclass(frozen=True)
class EngineSimulation:
    """What a simulated server runs: one copy of ``model`` scheduled by ``profile``'s policy,
    each pass slept ``time_scale`` x its simulated time. Build with :meth:`of`."""

    model: CopyModel
    """The copy's step-cost model (``planning.performance.profile_model``)."""
    profile: EngineProfile
    """The engine profile whose batching fields choose the policy."""
    time_scale: float = 1.0
    """Real seconds per simulated second (1: real time; 0.1: ten times faster)."""
    max_batch_size: int | None = None
    """The request cap per copy instead of the profile's."""
    max_concurrent_requests: int | None = None
    """TGI's ``MAX_CONCURRENT_REQUESTS`` (requests held beyond it get 429); default 128."""

    def __post_init__(self) -> None:
        if not self.time_scale > 0:
            raise ValidationError(
                "time_scale", self.time_scale, "must be positive", "pass e.g. 1 (real time)"
            )

    @staticmethod
    def of(
        spec: ModelSpec,
        instance_type: InstanceType,
        profile: EngineProfile,
        workload: Workload,
        *,
        tensor_parallel_degree: int = 1,
        precision: Precision = Precision.FP16,
        time_scale: float = 1.0,
        max_batch_size: int | None = None,
        max_concurrent_requests: int | None = None,
        kv_cache: KvCachePrecision = KvCachePrecision.AUTO,
    ) -> EngineSimulation:
        """One copy of ``spec`` at ``tensor_parallel_degree`` on ``instance_type`` served by
        ``profile``; ``workload`` sizes its KV cache and token budgets, as for a prediction,
        with the KV cache stored at ``kv_cache`` (FP8 on an accelerator without FP8 is a
        ValidationError naming ``kv_cache_precision``)."""
        check_kv_cache_precision(
            instance_type,
            kv_cache,
            "serve it with the activation precision's KV cache (auto) or on g6, g6e or p5",
        )
        layout = Layout(instance_type, tensor_parallel_degree, 1)
        model = profile_model(spec, layout, precision, workload, profile, kv_cache=kv_cache)
        return EngineSimulation(model, profile, time_scale, max_batch_size, max_concurrent_requests)

    def policy(self) -> SchedulingPolicy:
        """A fresh scheduling policy for one copy (``planning.scheduling.copy.copy_policy``)."""
        return copy_policy(
            self.model,
            self.profile,
            max_batch_size=self.max_batch_size,
            max_concurrent_requests=self.max_concurrent_requests,
        )

    def describe(self) -> str:
        """The model, the layout and the policy in one line."""
        model = self.model
        return (
            f"{model.spec.name} on {model.instance_type.name} at TP{model.tensor_parallel_degree}"
            f" ({self.profile.name}): {self.policy().describe()}; x{self.time_scale:g} real time"
        )


class EngineClock:
    """One instance's engine in real time: the policy's queue and batch, and the virtual clock
    its passes advance. The server admits requests, asks for the next pass, sleeps it, and
    completes it."""

    def __init__(self, engine: EngineSimulation) -> None:
        self.engine = engine
        self.policy = engine.policy()
        self.costs = StepCosts(engine.model)
        self.state = SchedulerState(kv_tokens=self.policy.kv_tokens)
        self._virtual = 0.0
        """Virtual seconds at the end of the last pass (or at the arrival that woke it)."""
        self._wall = now()
        """Wall-clock time at ``_virtual``."""
        self._pass_s: float | None = None
        """Simulated seconds of the pass in progress (None: idle)."""
        self._admitted = 0

    @property
    def idle(self) -> bool:
        """Whether the engine holds no request."""
        return not self.state.waiting and not self.state.running

    def virtual_now(self) -> float:
        """Virtual seconds now: the wall time since the last pass ended, scaled, and never past
        the end of the pass in progress."""
        elapsed = (now() - self._wall) / self.engine.time_scale
        if self._pass_s is not None:
            elapsed = min(elapsed, self._pass_s)
        return self._virtual + elapsed

    def refuses(self) -> bool:
        """Whether the engine refuses one more request now (TGI's ``max_concurrent_requests``)."""
        return self.policy.refuses(len(self.state.waiting) + len(self.state.running))

    def admit(
        self, input_tokens: int, output_tokens: int, cached_tokens: int, arrival: float
    ) -> Sequence:
        """Queue a request that arrived at virtual time ``arrival`` (``virtual_now`` then);
        ``cached_tokens`` of its prompt are in the prefix cache. An idle engine starts its
        next pass at that arrival."""
        if self.idle and self._pass_s is None:
            self._virtual, self._wall = arrival, now()
        key = ("cached", self._admitted) if cached_tokens else None
        request = SimRequest(
            self._admitted, arrival, input_tokens, output_tokens, key, cached_tokens
        )
        self._admitted += 1
        if key is not None:
            self.state.cached_prefixes.add(key)
        sequence = Sequence(request, input_tokens)
        self.state.waiting.append(sequence)
        return sequence

    def drop(self, sequence: Sequence) -> None:
        """Forget a sequence (its invocation timed out or was refused)."""
        if sequence in self.state.running:
            self.state.running.remove(sequence)
        elif sequence in self.state.waiting:
            self.state.waiting.remove(sequence)

    def next_pass(self) -> tuple[Step, float] | None:
        """The policy's next pass and its simulated seconds; None when it has nothing to run
        (idle, or requests waiting that its limits can never hold: ``unschedulable``)."""
        step = self.policy.plan(self.state)
        if step.empty:
            return None
        self._pass_s = self.policy.forward_s(self.costs, step)
        return step, self._pass_s

    def unschedulable(self) -> list[Sequence]:
        """With nothing running and no pass planned, the waiting requests the policy declined:
        they can never be scheduled (a prompt beyond its token budget); removed."""
        if self.state.running:
            return []
        stuck = list(self.state.waiting)
        self.state.waiting.clear()
        return stuck

    def complete(self, step: Step) -> tuple[float, list[Sequence]]:
        """Apply the pass just slept: returns its virtual end and the sequences that produced a
        token in it (finished ones leave the batch), as ``planning.scheduling.loop`` does."""
        assert self._pass_s is not None
        self._virtual += self._pass_s
        self._wall = now()
        self._pass_s = None
        end = self._virtual
        produced: list[Sequence] = []
        for sequence, chunk in step.prefills:
            sequence.advance(chunk, end)
            if sequence.prompt_left == 0:
                produced.append(sequence)
                if self.policy.prefix_caching:
                    self.state.cached_prefixes.update(sequence.request.cached_keys)
        for sequence in step.decodes:
            sequence.advance(0, end)
            produced.append(sequence)
        for sequence in [s for s in self.state.running if s.done]:
            self.state.running.remove(sequence)
            sequence.finished_s = end
        return end, produced
