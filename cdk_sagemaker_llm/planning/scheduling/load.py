"""The load a simulation applies: closed-loop clients (each sends its next request when the last
ends, as the library's benchmark does), Poisson arrivals at a rate, or a burst sent at once (an
offline benchmark); and each request's tokens,
from the workload's shape (``planning.workload``), so lengths follow the shape's distribution,
not only its means."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ...errors import ValidationError
from ..workload import MultiTurn, SharedPrefix, Trace, Workload
from .state import SimRequest

DEFAULT_ROUNDS = 6
"""Requests each closed-loop client sends: the first round warms the batch up and is left out
of the figures."""
DEFAULT_ARRIVALS = 400
"""Requests of a Poisson run: the first tenth warms up and is left out of the figures."""


@dataclass(frozen=True)
class ClosedLoop:
    """``clients`` clients, each sending ``rounds`` requests one after the other."""

    clients: int
    rounds: int = DEFAULT_ROUNDS
    steady_error: float | None = None
    """Stop sending once the mean ms/token of the requests after the first round is known
    within this relative standard error (e.g. 0.01: +-2 % at ~95 % confidence), after at least
    one full round of them; None: every client sends all its ``rounds``."""

    def __post_init__(self) -> None:
        _positive("ClosedLoop(clients)", self.clients)
        if self.rounds < 2:
            raise ValidationError(
                "ClosedLoop(rounds)", self.rounds, "must be at least 2", "pass e.g. 6"
            )
        if self.steady_error is not None and not 0 < self.steady_error < 1:
            raise ValidationError(
                "ClosedLoop(steady_error)",
                self.steady_error,
                "must be a relative error between 0 and 1",
                "pass e.g. 0.01, or None to run every round",
            )

    def describe(self) -> str:
        """E.g. ``32 closed-loop clients``."""
        return f"{self.clients} closed-loop clients"


@dataclass(frozen=True)
class PoissonArrivals:
    """``requests`` requests arriving as a Poisson process of ``rate_per_s`` (seeded)."""

    rate_per_s: float
    requests: int = DEFAULT_ARRIVALS
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.rate_per_s > 0:
            raise ValidationError(
                "PoissonArrivals(rate_per_s)", self.rate_per_s, "must be positive", "pass e.g. 2"
            )
        _positive("PoissonArrivals(requests)", self.requests)

    def arrival_times(self) -> list[float]:
        """Arrival times, seconds: exponential gaps of mean 1 / rate."""
        rng = random.Random(self.seed)
        now, times = 0.0, []
        for _ in range(self.requests):
            times.append(now)
            now += rng.expovariate(self.rate_per_s)
        return times

    def describe(self) -> str:
        """E.g. ``Poisson arrivals at 2 requests/s``."""
        return f"Poisson arrivals at {self.rate_per_s:g} requests/s"


@dataclass(frozen=True)
class Burst:
    """``requests`` requests all sent at once, the engine draining them: an offline benchmark
    (``vllm bench serve`` at its default request rate ``inf``: "If this is inf, then all the
    requests are sent at time 0", vLLM ``benchmarks/serve.py``, ``--request-rate``). Its
    figures cover every request, from the send to the last answer: the batch filling and
    draining, and the other requests' prefills sharing each request's decode steps, are part
    of what such a benchmark reports."""

    requests: int

    def __post_init__(self) -> None:
        _positive("Burst(requests)", self.requests)

    def describe(self) -> str:
        """E.g. ``a burst of 1000 requests sent at once``."""
        return f"a burst of {self.requests} requests sent at once"


Load = ClosedLoop | PoissonArrivals | Burst
"""A simulated load."""


def _positive(prop: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(prop, value, "must be a positive integer", "pass e.g. 8")


def request_of(workload: Workload, index: int, arrival_s: float, client: int = -1) -> SimRequest:
    """Request ``index`` of ``workload``: its shape's tokens for that index (as the benchmark
    builds it, ``benchmarking.workloads``), the workload's tokens when it has no shape."""
    shape = workload.shape
    output = workload.output_tokens
    if isinstance(shape, SharedPrefix):
        group = index % shape.prefixes
        return SimRequest(
            index,
            arrival_s,
            shape.prefix_tokens + shape.suffix_tokens,
            output,
            ("prefix", group),
            shape.prefix_tokens,
            client,
        )
    if isinstance(shape, MultiTurn):
        return _turn(shape, output, index, arrival_s, client)
    if isinstance(shape, Trace):
        record = shape.records[index % len(shape.records)]
        blocks = record.hash_ids
        return SimRequest(
            index,
            arrival_s,
            record.input_tokens,
            record.output_tokens,
            blocks or None,  # requests whose hash_ids are all equal share their prompt
            min(record.input_tokens, len(blocks) * shape.block_tokens),
            client,
        )
    return SimRequest(index, arrival_s, workload.input_tokens, output, None, 0, client)


def _turn(shape: MultiTurn, output: int, index: int, arrival_s: float, client: int) -> SimRequest:
    """A multi-turn request: its history (the system prompt, earlier turns and answers) is the
    prefix an earlier turn of its conversation left in the cache."""
    conversation = index % shape.conversations
    round_ = index // shape.conversations
    turn = round_ % shape.turns
    session = (round_ // shape.turns) * shape.conversations + conversation
    history = shape.system_tokens + turn * (shape.turn_tokens + output)
    key = ("turn", session, turn - 1) if turn else ("system",)
    leaves = (("turn", session, turn),) if turn else (("system",), ("turn", session, 0))
    return SimRequest(
        index,
        arrival_s,
        history + shape.turn_tokens,
        output,
        key if history else None,
        history,
        client,
        leaves,
    )
