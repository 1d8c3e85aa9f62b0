"""What every engine's scheduling policy provides to the event loop (``loop.simulate``): whether
it refuses a request at the door, the forward pass it runs next, and what that pass costs."""

from __future__ import annotations

from abc import ABC, abstractmethod

from .costs import StepCosts
from .state import SchedulerState, Sequence, Step


class SchedulingPolicy(ABC):
    """One engine's continuous-batching policy (a subclass per engine: ``tgi``, ``vllm``,
    ``trtllm``, ``neuronx``). A policy keeps the engine's own scheduler state between passes
    (TGI's steps since the last prefill), so one instance serves one simulation."""

    kv_tokens: int
    """KV-cache tokens the copy holds."""
    prefix_caching: bool = False
    """Whether a prompt's cached prefix skips its prefill."""
    kv_on_demand: bool = False
    """Whether KV blocks are allocated as sequences grow (vLLM), not reserved up front."""
    pads_decode: bool = False
    """Whether a decode pass runs at a compiled batch size whatever the live sequences."""

    def coasted(self, passes: int) -> None:  # noqa: B027 (most engines keep no such count)
        """The loop ran ``passes`` more decode passes of an unchanged batch at once (TGI counts
        them towards ``max_waiting_tokens``)."""

    def coast_limit(self, state: SchedulerState) -> tuple[int | None, bool]:
        """After a decode-only pass: how many more the batch runs unchanged whatever happens
        (None: until a sequence finishes or the KV cache runs out), and whether an arrival
        could change that. With requests waiting, the policy declined them for a limit only a
        finishing sequence lifts (batch size, KV reservation, token budget); with none, the
        next arrival joins."""
        return None, not state.waiting

    def refuses(self, in_flight: int) -> bool:
        """Whether a request arriving with ``in_flight`` already held is refused (HTTP 429)."""
        return False

    @abstractmethod
    def plan(self, state: SchedulerState) -> Step:
        """The next forward pass: admit from ``state.waiting`` into ``state.running`` (or
        preempt back) as the engine does, and say what the pass computes (empty: idle)."""

    def forward_s(self, costs: StepCosts, step: Step) -> float:
        """Seconds the pass takes (the step-cost model's; NeuronX pads it)."""
        return costs.forward_s(step)

    @abstractmethod
    def describe(self) -> str:
        """The policy and its limits in one line, with the source of each rule."""

    def start(self, sequence: Sequence, state: SchedulerState) -> None:
        """A sequence enters the batch: with prefix caching, its cached prefix counts as
        prefilled (never the whole prompt: the last token is always computed, as vLLM does)."""
        request = sequence.request
        if (
            self.prefix_caching
            and sequence.prefilled == 0
            and request.prefix_key is not None
            and request.prefix_key in state.cached_prefixes
        ):
            sequence.prefilled = min(request.prefix_tokens, sequence.prompt_tokens - 1)
        state.running.append(sequence)
