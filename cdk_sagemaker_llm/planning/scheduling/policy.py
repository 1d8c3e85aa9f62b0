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
