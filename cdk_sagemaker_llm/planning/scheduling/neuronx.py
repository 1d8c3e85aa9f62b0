"""NeuronX serving (LMI's NeuronX backend, transformers-neuronx / NxD Inference): the model is
compiled ahead of time for fixed shapes, so every decode pass runs at the compiled batch size
whatever the number of live sequences (empty slots are padding), and a prompt is encoded alone,
padded to the next larger compiled context length (AWS Neuron docs, "Running inference on
variable input shapes with bucketing": with Inferentia every input shape is fixed at compile
time and each input is padded to the next largest bucket; LMI configurations:
``option.max_rolling_batch_size`` is compiled into the model). Which buckets a model was
compiled with is the deployment's choice; the simulation assumes powers of two from 128
(``SMALLEST_CONTEXT_BUCKET``), and says so in its description."""

from __future__ import annotations

from dataclasses import dataclass

from .costs import StepCosts
from .policy import SchedulingPolicy
from .state import SchedulerState, Step

SMALLEST_CONTEXT_BUCKET = 128
"""The smallest compiled context length assumed; larger buckets double from it (an assumption:
state your compiled buckets by calibrating)."""


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
            "(assumed buckets; Neuron bucketing app note; LMI max_rolling_batch_size)"
        )
