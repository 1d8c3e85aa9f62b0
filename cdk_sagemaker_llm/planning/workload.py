"""What the requests look like: the one description the planner predicts for, the CLI and the
deploy-time benchmark send, and the benchmark's Lambda workers rebuild.

How the requests travel (the container's request schema, streaming or not) is the benchmark's
``RequestProtocol`` (``benchmarking.payload``), not part of the workload: the same workload is
served and predicted the same whichever schema carries it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ValidationError
from ..prop_types import typed_props


@typed_props
@dataclass(frozen=True)
class Workload:
    """Every request alike: ``input_tokens`` prompt tokens in, ``output_tokens`` generated out.

    ::

        Workload(input_tokens=512, output_tokens=256)
    """

    __synth_decision__ = "The workload sizes the requests and the performance prediction"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    input_tokens: int
    """Prompt tokens of each request (a benchmark sends synthetic prompts of this length)."""
    output_tokens: int
    """Generated tokens of each request (a benchmark asks for this many: ``max_new_tokens``,
    or ``max_tokens`` for chat completions)."""

    def __post_init__(self) -> None:
        for prop in ("input_tokens", "output_tokens"):
            value = getattr(self, prop)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(prop, value, "must be a positive integer", "pass e.g. 512")

    @property
    def total_tokens(self) -> int:
        """Input + output tokens: the KV cache one sequence reaches."""
        return self.input_tokens + self.output_tokens

    @property
    def mean_context(self) -> float:
        """Mean context length while decoding: input + half the output."""
        return self.input_tokens + self.output_tokens / 2

    def describe(self) -> str:
        """E.g. ``512 in / 256 out tokens``."""
        return f"{self.input_tokens} in / {self.output_tokens} out tokens"
