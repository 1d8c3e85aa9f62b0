"""What one forward pass of a planned ``Step`` costs, read from the performance model's step law
(``CopyModel.step_s`` for the decoding sequences, ``CopyModel.prefill_tokens_s`` for each prompt
chunk): the simulation and the closed form share one step-cost model."""

from __future__ import annotations

from ..performance import CopyModel
from .state import Step

CONTEXT_GRANULE = 16
"""Decode steps are memoized per batch size and mean context rounded to this many tokens (vLLM's
default KV block size, ``--block-size 16``, vLLM engine arguments), which keeps a long
simulation's cost down without changing a step by more than the KV reads of 8 tokens."""


class StepCosts:
    """Seconds of forward passes of one model copy (``CopyModel``; its ``slowdown`` applies)."""

    def __init__(self, model: CopyModel) -> None:
        self.model = model
        self._decode: dict[tuple[int, int], float] = {}
        self._prefill: dict[tuple[int, int], float] = {}
        self._overhead = model.overhead_s()

    def decode_s(self, batch: int, context_sum: int) -> float:
        """One decode step of ``batch`` sequences whose KV caches hold ``context_sum`` tokens."""
        if batch == 0:
            return 0.0
        granule = round(context_sum / batch / CONTEXT_GRANULE)
        key = (batch, granule)
        cached = self._decode.get(key)
        if cached is None:
            cached = self.model.step_s(batch, max(1, granule * CONTEXT_GRANULE))
            self._decode[key] = cached
        return cached

    def prefill_s(self, tokens: int, prior: int = 0) -> float:
        """One forward pass prefilling ``tokens`` prompt tokens after ``prior`` cached ones
        (memoized: a closed loop prefills the same chunks over and over)."""
        key = (tokens, prior)
        cached = self._prefill.get(key)
        if cached is None:
            cached = self._prefill[key] = self.model.prefill_tokens_s(tokens, prior)
        return cached

    def forward_s(self, step: Step) -> float:
        """One forward pass of ``step``: its decodes and its prompt chunks run in one pass, so
        the per-pass overhead is paid once, not once per part."""
        decodes = step.decodes
        total = self.decode_s(len(decodes), sum(s.prefilled + s.decoded for s in decodes))
        parts = 1 if decodes else 0
        for sequence, tokens in step.prefills:
            total += self.prefill_s(tokens, sequence.prefilled)
            parts += 1
        total -= self._overhead * max(0, parts - 1)
        return total * self.model.slowdown
