"""The event loop: requests arrive (closed-loop clients, Poisson arrivals or a burst), the engine's
policy plans each forward pass, the step-cost model times it, and every request's time to first
token, per-token latency and end-to-end latency are recorded; the figures leave out the warm-up
and the drain, except a burst's, whose figures are the whole run (``SimulationResult``)."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from ..workload import Workload
from .costs import StepCosts
from .load import Burst, ClosedLoop, Load, PoissonArrivals, request_of
from .policy import SchedulingPolicy
from .state import SchedulerState, Sequence, SimRequest, Step

MAX_PASSES = 2_000_000
"""Forward passes one simulation may run before it stops (a guard, never reached by a load
the simulation is asked for: 400 requests of 2,000 tokens take ~10^5 passes)."""


@dataclass(frozen=True)
class RequestOutcome:
    """One served request's figures, seconds."""

    arrival_s: float
    ttft_s: float
    e2e_s: float
    output_tokens: int
    preemptions: int
    longest_gap_s: float = 0.0
    """The longest wait between two of its tokens."""

    @property
    def ms_per_token(self) -> float:
        """End-to-end latency / output tokens, ms (the library's ms/token)."""
        return self.e2e_s / self.output_tokens * 1000

    @property
    def inter_token_ms(self) -> float:
        """Mean time between tokens after the first, ms."""
        return (self.e2e_s - self.ttft_s) / max(1, self.output_tokens - 1) * 1000


@dataclass(frozen=True)
class SimulationResult:
    """What a simulated load measured in its steady window (``window_s``)."""

    outcomes: tuple[RequestOutcome, ...]
    """Requests that arrived and finished within the window."""
    rejected: int
    """Requests the engine refused (HTTP 429)."""
    unserved: int
    """Requests the engine could never schedule (a prompt its limits cannot hold)."""
    window_s: tuple[float, float]
    tokens_in_window: float
    """Output tokens generated within the window."""
    finished_in_window: int
    """Requests that finished within the window (whenever they arrived)."""
    passes: int
    preemptions: int

    @property
    def tokens_per_s(self) -> float:
        """Output tokens/s over the window."""
        start, end = self.window_s
        return self.tokens_in_window / (end - start) if end > start else 0.0

    @property
    def requests_per_s(self) -> float:
        """Requests finished per second over the window."""
        start, end = self.window_s
        return self.finished_in_window / (end - start) if end > start else 0.0

    def percentile(self, metric: str, q: float) -> float:
        """The ``q`` quantile (0-1, nearest rank) of a ``RequestOutcome`` figure (``ttft_s``,
        ``e2e_s``, ``ms_per_token``, ``inter_token_ms``); NaN when no request was served."""
        values = sorted(getattr(o, metric) for o in self.outcomes)
        if not values:
            return math.nan
        return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]

    def mean(self, metric: str) -> float:
        """The mean of a ``RequestOutcome`` figure; NaN when no request was served."""
        values = [getattr(o, metric) for o in self.outcomes]
        return sum(values) / len(values) if values else math.nan

    def mean_tpot_ms(self) -> float:
        """The mean time per output token after the first, ms, as ``vllm bench serve`` reports
        it ("Mean TPOT"): each request's (end-to-end latency - TTFT) / (output tokens - 1),
        averaged over the requests that generated more than one token (vLLM
        ``benchmarks/serve.py`` ``calculate_metrics``), so a request's wait in the queue is in
        its TTFT, not here, and a short request weighs as much as a long one (unlike "Mean
        ITL", which pools every gap between tokens); NaN when no request qualifies."""
        values = [o.inter_token_ms for o in self.outcomes if o.output_tokens > 1]
        return sum(values) / len(values) if values else math.nan


class _SteadyMean:
    """The running mean of the steady requests' ms/token and its standard error (Welford)."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self._squares = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self._squares += delta * (value - self.mean)

    def relative_error(self) -> float:
        """Standard error of the mean / the mean (infinity below two values)."""
        if self.count < 2 or self.mean <= 0:
            return math.inf
        return math.sqrt(self._squares / (self.count - 1) / self.count) / self.mean


class _Arrivals:
    """Pending arrivals in time order, and the closed loop's next requests."""

    def __init__(self, workload: Workload, load: Load, ramp_s: float) -> None:
        self.workload = workload
        self.load = load
        self.heap: list[tuple[float, int, SimRequest]] = []
        self.sent = 0
        self.last_send = 0.0
        self.steady = _SteadyMean()
        self.first_round: list[float] = []
        """When each first-round request finished (the steady window starts after the last)."""
        self.settled_s: float | None = None
        """When the steady mean was known well enough: no client sends again, the window ends."""
        if isinstance(load, ClosedLoop):  # clients start spread over one request's time
            for client in range(load.clients):
                self.send(client * ramp_s / load.clients, client)
        elif isinstance(load, Burst):
            for _ in range(load.requests):
                self.send(0.0)
        else:
            for time in load.arrival_times():
                self.send(time)

    def send(self, now: float, client: int = -1) -> None:
        request = request_of(self.workload, self.sent, now, client)
        heapq.heappush(self.heap, (now, self.sent, request))
        self.sent += 1
        self.last_send = now

    def next_arrival(self) -> float:
        """When the next request arrives (infinity: none pending)."""
        return self.heap[0][0] if self.heap else math.inf

    def due(self, now: float) -> list[SimRequest]:
        requests = []
        while self.heap and self.heap[0][0] <= now:
            requests.append(heapq.heappop(self.heap)[2])
        return requests

    def finished(self, sequence: Sequence, now: float) -> None:
        """A closed-loop client sends its next request when its last one ends, until its
        rounds are sent or the steady mean is known well enough (``ClosedLoop.steady_error``)."""
        load = self.load
        if not isinstance(load, ClosedLoop) or self.settled_s is not None:
            return
        if self.sent >= load.clients * load.rounds:
            return
        request = sequence.request
        if request.index < load.clients:
            self.first_round.append(now)
        elif (
            load.steady_error is not None
            and len(self.first_round) == load.clients
            and request.arrival_s >= self.first_round[-1]
        ):
            self.steady.add((now - request.arrival_s) / request.output_tokens)
            if (
                self.steady.count >= load.clients
                and self.steady.relative_error() <= load.steady_error
            ):
                self.settled_s = now
                return
        self.send(now, request.client)

    def window(self, finishes: list[tuple[float, SimRequest]]) -> tuple[float, float]:
        """The steady window: closed loop, from the end of the first round to the last send
        (after it the clients drain); Poisson, from the tenth of the arrivals to the last; a
        burst, the whole run, from the send to the last answer (what an offline benchmark
        times)."""
        load = self.load
        if isinstance(load, Burst):
            return 0.0, max((t for t, _ in finishes), default=0.0)
        if isinstance(load, PoissonArrivals):
            times = load.arrival_times()
            return times[len(times) // 10], times[-1]
        first_round = [t for t, r in finishes if r.index < load.clients]
        start = max(first_round) if first_round else 0.0
        end = self.last_send if self.settled_s is None else self.settled_s
        return start, max(start, end)


def simulate(
    policy: SchedulingPolicy, costs: StepCosts, workload: Workload, load: Load
) -> SimulationResult:
    """Run ``load`` of ``workload`` through one copy scheduled by ``policy`` and timed by
    ``costs`` (deterministic: Poisson arrivals are seeded). Closed-loop clients start spread
    over the time one request takes alone, as a benchmark's clients drift apart, rather than
    all at once in lockstep."""
    state = SchedulerState(kv_tokens=policy.kv_tokens)
    alone = costs.prefill_s(workload.input_tokens) + workload.output_tokens * costs.decode_s(
        1, round(workload.mean_context)
    )
    arrivals = _Arrivals(workload, load, alone)
    now = 0.0
    tokens: list[tuple[float, int]] = [(0.0, 0)]
    finishes: list[tuple[float, SimRequest]] = []
    served: list[Sequence] = []
    rejected = passes = 0
    while passes < MAX_PASSES:
        for request in arrivals.due(now):
            if policy.refuses(len(state.waiting) + len(state.running)):
                rejected += 1
                continue
            state.waiting.append(Sequence(request, request.input_tokens))
        step = policy.plan(state)
        if step.empty:
            if not arrivals.heap:
                break
            now = max(now, arrivals.heap[0][0])
            continue
        now += policy.forward_s(costs, step)
        passes += 1
        produced = 0
        for sequence, chunk in step.prefills:
            sequence.advance(chunk, now)
            if sequence.prompt_left == 0:
                produced += 1
                if policy.prefix_caching:
                    state.cached_prefixes.update(sequence.request.cached_keys)
        finishing = False
        for sequence in step.decodes:
            sequence.decode(now)
            finishing = finishing or sequence.generated >= sequence.request.output_tokens
        produced += len(step.decodes)
        tokens.append((now, tokens[-1][1] + produced))
        if step.decodes and not step.prefills:
            now, coasted = _coast(policy, costs, state, now, arrivals.next_arrival())
            passes += coasted
            tokens.append((now, tokens[-1][1] + coasted * len(state.running)))
        finishing = finishing or any(s.done for s, _ in step.prefills)
        for sequence in [s for s in state.running if s.done] if finishing else ():
            state.running.remove(sequence)
            sequence.finished_s = now
            served.append(sequence)
            finishes.append((now, sequence.request))
            arrivals.finished(sequence, now)
    start, end = arrivals.window(finishes)
    return SimulationResult(
        outcomes=tuple(_outcome(s) for s in served if _within(s, start, end)),
        rejected=rejected,
        unserved=len(state.waiting) + len(state.running),
        window_s=(start, end),
        tokens_in_window=_tokens_at(tokens, end) - _tokens_at(tokens, start),
        finished_in_window=sum(1 for t, _ in finishes if start < t <= end),
        passes=passes,
        preemptions=sum(s.preemptions for s in served),
    )


def _coast(
    policy: SchedulingPolicy,
    costs: StepCosts,
    state: SchedulerState,
    now: float,
    next_arrival: float,
) -> tuple[float, int]:
    """Run the decode passes that follow while nothing can change the batch (none finishing,
    the KV cache not running out, nothing the policy waits for: ``coast_limit``) in one go:
    each is the same batch one token longer, so they are timed at their middle context.
    Returns the new time and the passes run."""
    running = state.running
    batch = len(running)
    passes = min(s.request.output_tokens - s.generated for s in running) - 1
    if policy.kv_on_demand:
        passes = min(passes, (state.kv_tokens - state.kv_used()) // batch)
    limit, arrivals_matter = policy.coast_limit(state)
    if limit is not None:
        passes = min(passes, limit)
    context = sum(s.context for s in running)
    each = policy.forward_s(costs, Step(decodes=tuple(running)))
    if arrivals_matter and next_arrival < math.inf:
        passes = min(passes, int((next_arrival - now) / each))
    if passes < 1:
        return now, 0
    middle = costs.decode_s(batch, context + batch * passes // 2) * costs.model.slowdown
    each = each if policy.pads_decode else middle
    end = now + passes * each
    for sequence in running:
        sequence.generated += passes
        sequence.decoded += passes
        sequence.longest_gap_s = max(sequence.longest_gap_s, each)
        sequence.last_token_s = end
    policy.coasted(passes)
    return end, passes


def _within(sequence: Sequence, start: float, end: float) -> bool:
    finished = sequence.finished_s
    return start <= sequence.request.arrival_s and finished is not None and finished <= end


def _outcome(sequence: Sequence) -> RequestOutcome:
    arrival = sequence.request.arrival_s
    assert sequence.first_token_s is not None and sequence.finished_s is not None
    return RequestOutcome(
        arrival_s=arrival,
        ttft_s=sequence.first_token_s - arrival,
        e2e_s=sequence.finished_s - arrival,
        output_tokens=sequence.request.output_tokens,
        preemptions=sequence.preemptions,
        longest_gap_s=sequence.longest_gap_s,
    )


def _tokens_at(tokens: list[tuple[float, int]], when: float) -> float:
    """Output tokens generated by ``when`` (the passes are in time order; tokens of coasted
    passes spread evenly over their span)."""
    low, high = 0, len(tokens) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if tokens[middle][0] <= when:
            low = middle
        else:
            high = middle - 1
    time, count = tokens[low]
    if low + 1 < len(tokens) and tokens[low + 1][0] > time:
        later, more = tokens[low + 1]
        return count + (more - count) * (when - time) / (later - time)
    return count
