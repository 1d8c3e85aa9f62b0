"""Open-loop arrival schedules: when each request of a request-rate level is sent.

Two processes, each an :class:`Arrival` built by a factory, reproducible:

* ``Arrival.constant()``: one request every ``1 / rate`` seconds.
* ``Arrival.poisson(seed=0)``: exponentially distributed gaps (a Poisson process, the arrival
  model of vLLM's ``bench serve`` and aiperf's request-rate mode), *conditioned on the level's
  count*: the ``n - 1`` gaps are drawn, then scaled so the schedule's own rate ``(n - 1) / (last
  - first)`` is exactly the target. Given the number of arrivals in an interval, the arrival
  times of a Poisson process are uniform order statistics, so the scaled gaps keep the process's
  burstiness while a finite level's rate stays the stated one (an unconditioned draw of 100
  requests misses its rate by about 10 % at one standard deviation). The *achieved* rate then
  measures only how well the client kept to the schedule.

A level split across ``parts`` workers gives each worker its own seeded share whose union is
the level's process: independent Poisson processes of rate ``rate / parts`` superpose to a
Poisson process of ``rate``; constant shares are interleaved by an offset of ``part / rate``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ValidationError
from ..prop_types import typed_factory, typed_props

ARRIVALS = ("poisson", "constant")
"""The arrival processes, by name (the CLI's ``--arrival``, the deploy-time run's ``Arrival``)."""
MAX_SEED = 2**31 - 1


@typed_props
@dataclass(frozen=True)
class Arrival:
    """How an open-loop level's requests arrive: ``Arrival.poisson(seed=0)`` or
    ``Arrival.constant()`` (see the module docstring)."""

    __synth_decision__ = "The arrival schedule is drawn"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    kind: str
    """The process's name, one of ``ARRIVALS``."""
    seed: int = 0
    """The seed of the random gaps (0 for constant arrivals, which draw none)."""

    def __post_init__(self) -> None:
        if self.kind not in ARRIVALS:
            raise ValidationError(
                "Arrival(kind)", self.kind, "not an arrival process",
                "use Arrival.poisson(seed=...) or Arrival.constant()",
            )  # fmt: skip
        if not 0 <= self.seed <= MAX_SEED:
            raise ValidationError(
                f"Arrival.{self.kind}(seed)", self.seed, f"a seed is 0 to {MAX_SEED}",
                "pass e.g. seed=0",
            )  # fmt: skip

    @staticmethod
    @typed_factory
    def poisson(seed: int = 0) -> Arrival:
        """Exponential gaps (a Poisson process, as vLLM's ``bench serve``), scaled so that each
        level's own rate is exactly its target; ``seed`` makes the schedule reproducible
        (default 0)."""
        return Arrival("poisson", seed)

    @staticmethod
    @typed_factory
    def constant() -> Arrival:
        """One request every ``1 / rate`` seconds."""
        return Arrival("constant")

    def schedule(self, rate: float, requests: int) -> list[float]:
        """Send offsets of one level (see :func:`schedule`)."""
        return schedule(rate, requests, arrival=self.kind, seed=self.seed)

    def share(self, rate: float, requests: int, part: int, parts: int) -> list[float]:
        """Send offsets of worker ``part`` of ``parts`` sharing one level (see :func:`share`)."""
        return share(rate, requests, part, parts, arrival=self.kind, seed=self.seed)


def schedule(rate: float, requests: int, *, arrival: str = "poisson", seed: int = 0) -> list[float]:
    """Send offsets (seconds from the level's start, the first at 0) of ``requests`` requests
    arriving at ``rate`` requests/s by ``arrival`` (see the module docstring)."""
    if not rate > 0:
        raise ValueError(f"rate={rate}: must be positive")
    if requests < 1:
        raise ValueError(f"requests={requests}: must be at least 1")
    if arrival not in ARRIVALS:
        raise ValueError(f"arrival={arrival!r}: use one of {', '.join(ARRIVALS)}")
    if arrival == "constant" or requests == 1:
        return [index / rate for index in range(requests)]
    rng = random.Random(seed)
    gaps = [rng.expovariate(1.0) for _ in range(requests - 1)]
    scale = (requests - 1) / rate / sum(gaps)
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap * scale)
    return offsets


def share(
    rate: float,
    requests: int,
    part: int,
    parts: int,
    *,
    arrival: str = "poisson",
    seed: int = 0,
) -> list[float]:
    """Offsets of worker ``part`` of ``parts`` sharing one level (see the module docstring).

    Shares differ by at most one request; a poisson share has its own seed ``seed + part``."""
    if not 0 <= part < parts:
        raise ValueError(f"part={part}: must be 0 to {parts - 1}")
    count = requests // parts + (1 if part < requests % parts else 0)
    if count == 0:
        return []
    if arrival == "constant":
        return [(part + index * parts) / rate for index in range(count)]
    return schedule(rate / parts, count, arrival=arrival, seed=seed + part)


def achieved_rate(sends: Sequence[float]) -> float | None:
    """Requests/s of actual send times: ``(n - 1) / (last - first)``; ``None`` below two."""
    if len(sends) < 2:
        return None
    span = max(sends) - min(sends)
    return (len(sends) - 1) / span if span > 0 else None
