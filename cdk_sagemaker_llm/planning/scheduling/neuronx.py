"""NeuronX serving (LMI's NeuronX backend, transformers-neuronx / NxD Inference): the model is
compiled ahead of time for fixed shapes, so every decode pass runs at the compiled batch size
whatever the number of live sequences (empty slots are padding), and a prompt is encoded alone
at the smallest compiled context length (bucket) that holds it, while the batch waits (AWS Neuron
docs, NxD Inference "Bucketing": context-encoding buckets are powers of two from 128 up to the
maximum context length by default; LMI configurations: ``option.max_rolling_batch_size`` is
compiled into the model)."""

from __future__ import annotations

from dataclasses import dataclass

from .costs import StepCosts
from .policy import SchedulingPolicy
from .state import SchedulerState, Step

SMALLEST_CONTEXT_BUCKET = 128
"""NxD Inference's smallest default context-encoding bucket (Neuron docs, "Bucketing")."""


def context_bucket(tokens: int) -> int:
    """The compiled context length a prompt of ``tokens`` tokens is padded to."""
    bucket = SMALLEST_CONTEXT_BUCKET
    while bucket < tokens:
        bucket *= 2
    return bucket


@dataclass
class StaticBatchSlots(SchedulingPolicy):
    """NeuronX: a compiled batch of ``batch_size`` slots; prompts encoded one at a time."""

    kv_tokens: int
    batch_size: int
    pads_decode: bool = True

    def plan(self, state: SchedulerState) -> Step:
        """One waiting prompt into a free slot, else a decode pass of every slot."""
        if state.waiting and len(state.running) < self.batch_size:
            sequence = state.waiting.popleft()
            self.start(sequence, state)
            return Step(prefills=((sequence, sequence.prompt_left),))
        return Step(decodes=tuple(state.running))

    def forward_s(self, costs: StepCosts, step: Step) -> float:
        """A pass at the compiled shapes: the prompt padded to its bucket, the decode at the
        compiled batch size."""
        if step.prefills:
            _, tokens = step.prefills[0]
            seconds = costs.prefill_s(context_bucket(tokens))
        else:
            live = len(step.decodes)
            mean = sum(s.context for s in step.decodes) / max(1, live)
            seconds = costs.decode_s(self.batch_size, round(mean * self.batch_size))
        return seconds * costs.model.slowdown

    def describe(self) -> str:
        """The policy in one line."""
        return (
            f"NeuronX static shapes: decode at the compiled batch of {self.batch_size}, prompts "
            f"encoded one at a time padded to power-of-two buckets from {SMALLEST_CONTEXT_BUCKET} "
            "(Neuron NxD Inference bucketing; LMI max_rolling_batch_size)"
        )
