"""Open-loop arrival schedules: when each request of a request-rate level is sent.

Three processes, each an :class:`Arrival` built by a factory, reproducible:

* ``Arrival.constant()``: one request every ``1 / rate`` seconds.
* ``Arrival.poisson(seed=0)``: exponentially distributed gaps (a Poisson process, the arrival
  model of vLLM's ``bench serve`` and aiperf's request-rate mode), *conditioned on the level's
  count*: the ``n - 1`` gaps are drawn, then scaled so the schedule's own rate ``(n - 1) / (last
  - first)`` is exactly the target. Given the number of arrivals in an interval, the arrival
  times of a Poisson process are uniform order statistics, so the scaled gaps keep the process's
  burstiness while a finite level's rate stays the stated one (an unconditioned draw of 100
  requests misses its rate by about 10 % at one standard deviation). The *achieved* rate then
  measures only how well the client kept to the schedule.
* ``Arrival.gamma(burstiness=1.0, seed=0)``: gamma-distributed gaps of shape ``burstiness``
  (and mean ``1 / rate``), the arrival model of vLLM ``bench serve --burstiness``: 1 is the
  Poisson process, below 1 burstier (the gaps' coefficient of variation is
  ``1 / sqrt(burstiness)``), above 1 more regular. Conditioned on the count like Poisson.

Any of them takes ``ramp_up_s``: the rate rises linearly from 0 to the target over that many
seconds, then holds. The schedule is the process's own, time-warped so that its expected
count up to ``t`` is the ramp's ``rate x t^2 / (2 x ramp)`` (then ``rate x (t - ramp / 2)``):
the ramp keeps the process's burstiness, and after it the rate is the target.

A level split across ``parts`` workers gives each worker its own seeded share whose union is
the level's process: independent Poisson processes of rate ``rate / parts`` superpose to a
Poisson process of ``rate``; constant shares are interleaved by an offset of ``part / rate``.
Gamma processes do not superpose to a gamma process, and a ramp is one schedule: their shares
deal the level's own schedule out round robin, so the union is exactly the level's schedule.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ValidationError, check_range
from ..prop_types import typed_factory, typed_props

ARRIVALS = ("poisson", "constant", "gamma")
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
    burstiness: float = 1.0
    """Gamma arrivals: the gaps' shape (1 = Poisson; below 1 burstier, above more regular)."""
    ramp_up_s: float = 0.0
    """Seconds over which the rate rises linearly from 0 to the target; 0: no ramp."""

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
        check_range(
            f"Arrival.{self.kind}(burstiness)", self.burstiness, minimum=0.01, maximum=100,
            fix="pass e.g. burstiness=0.5 (burstier than Poisson) or 2 (more regular)",
        )  # fmt: skip
        if self.kind != "gamma" and self.burstiness != 1.0:
            raise ValidationError(
                f"Arrival.{self.kind}(burstiness)", self.burstiness,
                "only gamma arrivals have a burstiness", "use Arrival.gamma(burstiness=...)",
            )  # fmt: skip
        check_range(
            f"Arrival.{self.kind}(ramp_up_s)", self.ramp_up_s, minimum=0, maximum=86_400,
            fix="pass the seconds the rate takes to reach its target, e.g. ramp_up_s=30",
        )  # fmt: skip

    @property
    def dealt(self) -> bool:
        """Whether worker shares deal out the level's schedule (gamma, or any ramp)."""
        return self.kind == "gamma" or self.ramp_up_s > 0

    def describe(self) -> str:
        """The process in words, as results state it."""
        text = {
            "poisson": f"poisson (seed {self.seed})",
            "constant": "constant",
            "gamma": f"gamma, burstiness {self.burstiness:g} (seed {self.seed})",
        }[self.kind]
        if self.ramp_up_s > 0:
            text += f", linear ramp-up over {self.ramp_up_s:g} s"
        return text

    @staticmethod
    @typed_factory
    def poisson(seed: int = 0, *, ramp_up_s: float = 0.0) -> Arrival:
        """Exponential gaps (a Poisson process, as vLLM's ``bench serve``), scaled so that each
        level's own rate is exactly its target; ``seed`` makes the schedule reproducible
        (default 0); ``ramp_up_s``: a linear ramp-up (default none)."""
        return Arrival("poisson", seed, ramp_up_s=float(ramp_up_s))

    @staticmethod
    @typed_factory
    def constant(*, ramp_up_s: float = 0.0) -> Arrival:
        """One request every ``1 / rate`` seconds (after a linear ramp-up of ``ramp_up_s``)."""
        return Arrival("constant", ramp_up_s=float(ramp_up_s))

    @staticmethod
    @typed_factory
    def gamma(burstiness: float = 1.0, seed: int = 0, *, ramp_up_s: float = 0.0) -> Arrival:
        """Gamma gaps of shape ``burstiness`` (0.01 to 100; 1 = Poisson, below 1 burstier, as
        vLLM ``bench serve --burstiness``), seeded, after a linear ramp-up of ``ramp_up_s``
        seconds (default none)."""
        return Arrival("gamma", seed, float(burstiness), float(ramp_up_s))

    def schedule(self, rate: float, requests: int) -> list[float]:
        """Send offsets of one level (see :func:`schedule`)."""
        offsets = schedule(
            rate, requests, arrival=self.kind, seed=self.seed, burstiness=self.burstiness
        )
        return ramp(offsets, self.ramp_up_s) if self.ramp_up_s > 0 else offsets

    def share(self, rate: float, requests: int, part: int, parts: int) -> list[float]:
        """Send offsets of worker ``part`` of ``parts`` sharing one level (see :func:`share`)."""
        if self.dealt:
            _check_part(part, parts)
            return self.schedule(rate, requests)[part::parts]
        return share(rate, requests, part, parts, arrival=self.kind, seed=self.seed)


def ramp(offsets: Sequence[float], ramp_up_s: float) -> list[float]:
    """Time-warp a constant-rate schedule so its rate rises linearly from 0 over ``ramp_up_s``
    seconds, then holds: an offset ``s`` (the expected count ``rate x s``) moves to the time
    the ramp reaches that expected count, ``sqrt(2 x ramp x s)`` while ``s <= ramp / 2``, then
    ``s + ramp / 2``."""
    half = ramp_up_s / 2
    return [math.sqrt(2 * ramp_up_s * s) if s <= half else s + half for s in offsets]


def schedule(
    rate: float,
    requests: int,
    *,
    arrival: str = "poisson",
    seed: int = 0,
    burstiness: float = 1.0,
) -> list[float]:
    """Send offsets (seconds from the level's start, the first at 0) of ``requests`` requests
    arriving at ``rate`` requests/s by ``arrival`` (see the module docstring; ``burstiness``:
    the gamma gaps' shape)."""
    if not rate > 0:
        raise ValidationError(
            "rate", rate, "must be a positive number of requests/s", "pass e.g. 2.0"
        )
    if requests < 1:
        raise ValidationError("requests", requests, "must be at least 1", "pass e.g. 100")
    if arrival not in ARRIVALS:
        raise ValidationError(
            "arrival", arrival, "is no arrival process", f"use one of {', '.join(ARRIVALS)}"
        )
    if arrival == "constant" or requests == 1:
        return [index / rate for index in range(requests)]
    rng = random.Random(seed)
    if arrival == "gamma":
        gaps = [rng.gammavariate(burstiness, 1.0 / burstiness) for _ in range(requests - 1)]
    else:
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
    _check_part(part, parts)
    count = requests // parts + (1 if part < requests % parts else 0)
    if count == 0:
        return []
    if arrival == "constant":
        return [(part + index * parts) / rate for index in range(count)]
    return schedule(rate / parts, count, arrival=arrival, seed=seed + part)


def _check_part(part: int, parts: int) -> None:
    if not 0 <= part < parts:
        raise ValidationError(
            "part", part, f"must be 0 to {parts - 1}", f"pass a part below {parts}"
        )


def achieved_rate(sends: Sequence[float]) -> float | None:
    """Requests/s of actual send times: ``(n - 1) / (last - first)``; ``None`` below two."""
    if len(sends) < 2:
        return None
    span = max(sends) - min(sends)
    return (len(sends) - 1) / span if span > 0 else None
