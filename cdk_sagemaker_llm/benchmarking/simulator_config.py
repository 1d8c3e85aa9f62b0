"""How the loopback simulator behaves (``SimulatorConfig``): its container, the step law's
timings, queueing, faults, instances and routing, the prefix cache, or the engine simulation
it serves a model with. The behaviour itself is described in ``simulator``'s docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ValidationError

if TYPE_CHECKING:  # only a simulator that serves a model needs it (see ``simulator``)
    from .simulated_engine import EngineSimulation


@dataclass(frozen=True)
class SimulatorConfig:
    """Behaviour of the simulated LLM server.

    Defaults give about 5-9 ms per token: fast tests, yet far above loopback overheads.
    """

    response_format: str = "lmi"
    """``"lmi"`` or ``"tgi"``: the container whose inputs-API formats are served (both serve
    the messages API). Default lmi."""
    max_batch: int = 8
    """Requests decoded together; more queue. Default 8."""
    step_base_s: float = 0.005
    """Duration of one decode step with an empty batch. Default 5 ms."""
    step_per_sequence_s: float = 0.0005
    """Added to a decode step per sequence in the batch. Default 0.5 ms."""
    prefill_per_input_token_s: float = 0.00001
    """Added to the step at which a request joins, per input token. Default 10 µs."""
    max_queue: int | None = None
    """Waiting requests beyond which new ones are throttled (HTTP 429). Default: no limit."""
    invocation_timeout_s: float = 60.0
    """Requests unfinished this long after arrival fail (SageMaker's limit). Default 60 s; with
    an engine simulation, seconds on its clock (``time_scale`` x this in wall time)."""
    model_error_every: int = 0
    """Fail every N-th invocation with ``ModelError`` (original status 500); 0 never."""
    default_max_new_tokens: int = 64
    """Output tokens when the payload sets no ``max_new_tokens``. Default 64."""
    instances: int = 1
    """Servers behind the endpoint (each its own batch, queue and prefix cache). Default 1."""
    routing: str = "least_outstanding"
    """``least_outstanding``, ``random`` or ``prefix_aware`` (see the module docstring)."""
    prefix_length: int = 1024
    """``prefix_aware``: body bytes that pick the instance (``PrefixLength``, 1024 to 65536)."""
    concurrency_threshold: int = 64
    """``prefix_aware``: requests in flight on the chosen instance beyond which a request goes
    to the least outstanding one (``ConcurrencyThreshold``, 1 to 1024)."""
    prefix_cache_blocks: int = 0
    """Blocks each instance's prefix cache holds; 0: no prefix cache. Default 0."""
    prefix_block_tokens: int = 16
    """Prompt tokens (words) of one cached block. Default 16 (vLLM's block size)."""
    routing_seed: int = 0
    """Seed of ``random`` routing and of ``least_outstanding``'s tie-breaks."""
    engine: EngineSimulation | None = None
    """Serve a model: each instance runs this engine simulation (the profile's scheduling
    policy over the step-cost model, ``simulated_engine``) instead of the step law above
    (``max_batch`` and the ``step_*`` / ``prefill_*`` fields then do not apply). None: the
    step law, which keeps protocol tests fast."""

    def __post_init__(self) -> None:
        if self.routing not in ROUTINGS:
            raise ValidationError(
                "routing", self.routing, "is not a routing", f"use one of {', '.join(ROUTINGS)}"
            )
        for name, least, most in _RANGES:
            value = getattr(self, name)
            if value is None and name == "max_queue":
                continue
            if not least <= value <= most:
                within = f"at least {least:g}" if most == math.inf else f"{least:g} to {most:g}"
                raise ValidationError(name, value, f"must be {within}", f"pass {within}")


_RANGES: tuple[tuple[str, float, float], ...] = (
    ("max_batch", 1, math.inf),
    ("step_base_s", 0, math.inf),
    ("step_per_sequence_s", 0, math.inf),
    ("prefill_per_input_token_s", 0, math.inf),
    ("max_queue", 0, math.inf),
    ("invocation_timeout_s", 1e-3, math.inf),
    ("model_error_every", 0, math.inf),
    ("default_max_new_tokens", 1, math.inf),
    ("instances", 1, math.inf),
    ("prefix_length", 1024, 65536),
    ("concurrency_threshold", 1, 1024),
    ("prefix_cache_blocks", 0, math.inf),
    ("prefix_block_tokens", 1, math.inf),
)
"""Each numeric field's accepted range (a batch of 0 would queue every request forever)."""


ROUTINGS = ("least_outstanding", "random", "prefix_aware")
