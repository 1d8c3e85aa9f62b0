"""Open-loop load: requests sent at a rate whether or not the endpoint keeps up.

A closed-loop level (:func:`~.engine.run_level`) sends the next request when one completes,
so a slow endpoint slows its own load. Production traffic does not wait: an open-loop level
sends request ``i`` at its scheduled time (:class:`~.arrivals.Arrival`: Poisson, seeded, or
constant) however many are still in flight, optionally capped by ``max_concurrency`` (a request
due while the cap is reached waits for a slot, and its wait shows as schedule lag, as with
vLLM's ``bench serve --max-concurrency``).

Per level (:func:`summarize_rate_level`), besides the closed-loop figures:

* target and achieved rate: achieved is ``(n - 1) / (last send - first send)``;
* schedule lag (send time - scheduled time), p50 and p99: the client's own fidelity;
* TTFT (first token - send) and TPOT ((latency - TTFT) / (output tokens - 1)), the
  definitions of vLLM's ``bench serve`` and aiperf (aiperf calls the latter inter-token
  latency); ``p50_itl_s`` stays the mean gap between token events of a request;
* the backlog: requests due (scheduled) but not finished, at each scheduled time. Its growth is
  the least-squares slope over the level's second half; a level whose backlog grows faster than
  ``BACKLOG_GROWTH_LIMIT`` x the offered rate is queueing without bound: unsustainable;
* goodput (:mod:`.goodput`) over the sending window ``n / achieved rate``. A level is
  *sustainable* when its goodput is at least the SLO's fraction (default 95 %) of the offered
  rate and its backlog does not grow. Without SLOs every successful request is good.

The sustainable rate of a sweep is the highest rate of the levels that are sustainable from
the lowest level up (the first unsustainable level ends the run of them).
"""

from __future__ import annotations

import asyncio
import bisect
import math
import ssl
from collections.abc import Callable, Sequence
from typing import Any

from ._clock import now
from .arrivals import Arrival, achieved_rate
from .engine import (
    BenchmarkResult,
    Knee,
    LevelResult,
    LevelRunner,
    percentile,
    summarize_level,
)
from .goodput import GoodputSlo, goodput
from .invokers import AsyncInvoker, Invoker, _Connection
from .payload import InvocationRequest, PayloadSpec
from .samples import RequestSample

BACKLOG_GROWTH_LIMIT = 0.10
"""A backlog growing faster than this fraction of the offered rate (requests/s) marks the
level unsustainable: completions fall more than 10 % short of arrivals."""

DEFAULT_LEVEL_SECONDS = 10.0
"""Without a stated count or duration, an open-loop level sends ``rate`` x this many requests
(at least ``MIN_LEVEL_REQUESTS``)."""
MIN_LEVEL_REQUESTS = 32


def level_requests(
    rate: float, requests: int | None = None, duration_s: float | None = None
) -> int:
    """Requests of an open-loop level: the stated count, else ``rate x duration_s``, else
    ``rate x 10 s``; at least 32 unless a count is stated."""
    if requests is not None:
        return requests
    seconds = DEFAULT_LEVEL_SECONDS if duration_s is None else duration_s
    return max(MIN_LEVEL_REQUESTS, math.ceil(rate * seconds))


def run_rate_level(
    invoker: AsyncInvoker,
    spec: PayloadSpec | Callable[[int], InvocationRequest],
    offsets: Sequence[float],
    *,
    max_concurrency: int | None = None,
    first_index: int = 0,
    start_at: float | None = None,
    deadline: float | None = None,
) -> list[RequestSample]:
    """Send request ``first_index + i`` at ``start_at + offsets[i]`` (default start: now),
    open loop; return every request's raw sample with its ``scheduled`` time.

    Requests scheduled at or after ``deadline`` are not sent. Needs the asyncio client: a
    thread per request in flight would make the client, not the endpoint, the bottleneck.
    """
    if not isinstance(invoker, AsyncInvoker):
        raise ValueError("open-loop levels need the asyncio client (AsyncInvoker)")
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"max_concurrency={max_concurrency}: must be at least 1")
    factory = spec.build() if isinstance(spec, PayloadSpec) else spec
    t0 = now() if start_at is None else start_at
    plan = [
        (t0 + offset, factory(first_index + index))
        for index, offset in enumerate(offsets)
        if deadline is None or t0 + offset < deadline
    ]
    samples = asyncio.run(_drive(invoker, plan, max_concurrency))
    samples.sort(key=lambda s: s.scheduled or s.start)
    return samples


async def _drive(
    invoker: AsyncInvoker,
    plan: Sequence[tuple[float, InvocationRequest]],
    max_concurrency: int | None,
) -> list[RequestSample]:
    """Start each request at its time on a pooled keep-alive connection (a new one when
    none is idle); requests beyond ``max_concurrency`` wait for a slot in order."""
    ssl_context = ssl.create_default_context() if invoker._tls else None
    idle: list[_Connection] = []
    samples: list[RequestSample] = []
    slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def send(scheduled: float, request: InvocationRequest) -> None:
        if slots is not None:
            await slots.acquire()
        try:
            connection = idle.pop() if idle else None
            sample, connection = await invoker._send(request, connection, ssl_context)
            sample.scheduled = scheduled
            samples.append(sample)
            if connection is not None:
                idle.append(connection)
        finally:
            if slots is not None:
                slots.release()

    tasks = []
    try:
        for scheduled, request in plan:
            delay = scheduled - now()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send(scheduled, request)))
        await asyncio.gather(*tasks)
    finally:
        for connection in idle:
            connection.close()
    return samples


def backlog(samples: Sequence[RequestSample]) -> list[tuple[float, int]]:
    """``(scheduled time, requests scheduled earlier and not finished by then)`` for each
    request of an open-loop level, in schedule order."""
    ordered = sorted(samples, key=lambda s: s.scheduled if s.scheduled is not None else s.start)
    ends = sorted(s.end for s in ordered)
    points = []
    for index, sample in enumerate(ordered):
        t = sample.scheduled if sample.scheduled is not None else sample.start
        points.append((t, index - bisect.bisect_right(ends, t)))
    return points


def backlog_growth(samples: Sequence[RequestSample]) -> float | None:
    """Least-squares slope (requests/s) of the backlog over the level's second half."""
    points = backlog(samples)
    tail = points[len(points) // 2 :]
    if len(tail) < 3:
        return None
    mean_t = sum(t for t, _ in tail) / len(tail)
    mean_b = sum(b for _, b in tail) / len(tail)
    spread = sum((t - mean_t) ** 2 for t, _ in tail)
    if spread <= 0:
        return None
    return sum((t - mean_t) * (b - mean_b) for t, b in tail) / spread


def peak_in_flight(samples: Sequence[RequestSample]) -> int:
    """The most requests in flight at once (from send and end times)."""
    events = sorted([(s.start, 1) for s in samples] + [(s.end, -1) for s in samples])
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def summarize_rate_level(
    samples: Sequence[RequestSample],
    rate: float,
    slo: GoodputSlo | None = None,
) -> LevelResult:
    """A :class:`LevelResult` of an open-loop level at ``rate`` (see the module docstring).

    ``concurrency`` is the peak number of requests in flight."""
    if not samples:
        raise ValueError("no samples to summarize")
    slo = slo or GoodputSlo()
    level = summarize_level(samples, peak_in_flight(samples))
    lags = [lag for lag in (s.schedule_lag_s for s in samples) if lag is not None]
    achieved = achieved_rate([s.start for s in samples])
    window = len(samples) / (achieved or rate)
    for key, value in goodput(samples, slo, window).items():
        setattr(level, key, value)
    growth = backlog_growth(samples)
    level.target_rate_per_s = rate
    level.achieved_rate_per_s = achieved
    level.p50_schedule_lag_s = percentile(lags, 50)
    level.p99_schedule_lag_s = percentile(lags, 99)
    level.backlog_growth_per_s = growth
    level.backlog_growing = growth is not None and growth > BACKLOG_GROWTH_LIMIT * rate
    # What the schedule itself offered: the rate, or less under a ramp-up (its slow start).
    scheduled = [s.scheduled for s in samples if s.scheduled is not None]
    offered = (
        min(rate, achieved_rate(scheduled) or rate) if len(scheduled) == len(samples) else rate
    )
    level.sustainable = bool(
        not level.backlog_growing
        and level.goodput_requests_per_s is not None
        and level.goodput_requests_per_s >= slo.fraction * offered
    )
    return level


def sustainable_rate(levels: Sequence[LevelResult]) -> float | None:
    """The highest rate of the levels sustainable from the lowest rate up."""
    found = None
    for level in sorted(levels, key=lambda lv: lv.target_rate_per_s or 0.0):
        if not level.sustainable:
            break
        found = level.target_rate_per_s
    return found


SUSTAINABLE_RULE = (
    "goodput >= the sustainable fraction of the offered rate and the backlog does not grow"
)
"""When an open-loop level is sustainable (the max-rate search's pass rule)."""


def open_loop_settings(arrival: Arrival, max_concurrency: int | None) -> dict[str, Any]:
    """The ``open_loop`` section of results: how requests were scheduled and judged."""
    settings: dict[str, Any] = {
        "arrival": arrival.kind,
        "seed": arrival.seed,
        "process": arrival.describe(),
        "max_concurrency": max_concurrency,
        "achieved_rate": "(requests - 1) / (last send - first send)",
        "schedule_lag": "send time - scheduled time",
        "backlog_rule": "unsustainable when the backlog (requests due but unfinished) grows "
        f"faster than {BACKLOG_GROWTH_LIMIT:.0%} of the offered rate over the level's second "
        "half",
        "sustainable_rule": SUSTAINABLE_RULE,
    }
    if arrival.kind == "gamma":
        settings["burstiness"] = arrival.burstiness
    if arrival.ramp_up_s > 0:
        settings["ramp_up_s"] = arrival.ramp_up_s
    return settings


def sustainable_rate_at_least(levels: Sequence[LevelResult]) -> bool:
    """Whether every level was sustainable: the sustainable rate is then only a lower bound
    (the highest rate run), not where the endpoint stops keeping up."""
    return bool(levels) and all(level.sustainable for level in levels)


def goodput_section(
    slo: GoodputSlo, levels: Sequence[LevelResult], raise_with: str | None = None
) -> dict[str, Any]:
    """The ``goodput`` section of an open-loop result: the SLOs and the sustainable rate (with
    ``sustainable_rate_at_least`` when no level failed, and ``raise_with``, what raises it)."""
    section = {**slo.to_dict(), "sustainable_rate_per_s": sustainable_rate(levels)}
    if sustainable_rate_at_least(levels):
        section["sustainable_rate_at_least"] = True
        section["raise_with"] = raise_with
    return section


OPEN_LOOP_KNEE = "open loop: no knee (a closed-loop figure); see goodput.sustainable_rate_per_s"


class RateRunner(LevelRunner):
    """Open-loop levels: each sends on its ``arrival`` schedule at its rate
    (:func:`run_rate_level`), at most ``max_concurrency`` in flight when given.

    A level sends ``requests_per_level`` requests, else ``rate x duration_s``, else
    ``rate x 10 s`` (at least 32); every request counts towards goodput by ``slo`` (default:
    every successful one)."""

    invoker: AsyncInvoker
    slo: GoodputSlo

    def __init__(
        self,
        invoker: Invoker,
        factory: Callable[[int], InvocationRequest],
        *,
        arrival: Arrival | None = None,
        max_concurrency: int | None = None,
        slo: GoodputSlo | None = None,
        raise_with: str | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(invoker, AsyncInvoker):
            raise ValueError("open-loop levels need the asyncio client (AsyncInvoker)")
        super().__init__(invoker, factory, slo=slo or GoodputSlo(), **settings)
        self.arrival = arrival or Arrival.poisson()
        self.max_concurrency = max_concurrency
        self.raise_with = raise_with
        """What raises a sustainable rate that is only a lower bound (named in the results)."""

    def __call__(self, level: float) -> LevelResult:
        rate = level
        count = level_requests(rate, self.requests_per_level, self.duration_s)
        self._say(f"rate {rate:g}/s ({self.arrival.kind}): {count} requests ...")
        samples = run_rate_level(
            self.invoker,
            self.factory,
            self.arrival.schedule(rate, count),
            max_concurrency=self.max_concurrency,
            first_index=self.spent,
        )
        return self._measured(samples, summarize_rate_level(samples, rate, self.slo))

    def result(
        self, spec: PayloadSpec, levels: list[LevelResult], **fields: Any
    ) -> BenchmarkResult:
        """Rate-mode results: the levels by rate, no knee, goodput and the sustainable rate."""
        ordered = sorted(levels, key=lambda lv: lv.target_rate_per_s or 0.0)
        return super().result(
            spec,
            ordered,
            knee=Knee(None, OPEN_LOOP_KNEE),
            slo_ms_per_token=self.slo.ms_per_token,
            mode="rate",
            open_loop=open_loop_settings(self.arrival, self.max_concurrency),
            goodput=goodput_section(self.slo, ordered, self.raise_with),
            **fields,
        )
