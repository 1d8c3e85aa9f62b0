"""The benchmark engine: concurrency sweeps, per-level summaries, the knee, cost.

Building blocks, usable one by one (a deploy-time benchmark runs levels in separate Lambda
invocations and merges the raw samples of parallel workers):

* :func:`run_level` — closed-loop load at one concurrency, returns raw :class:`RequestSample`.
* :func:`summarize_level` — a :class:`LevelResult` computed from raw samples (percentiles are
  always taken over the merged raw samples, never averaged across workers).
* :func:`find_knee` — the knee under a stated :class:`KneeRule`.
* :class:`ClosedLoopRunner` — levels one after another, and their :class:`BenchmarkResult`
  (``to_json()``); ``benchmarking.run.run_benchmark`` runs a whole load with it.

Formulas (domain reference): ms/token = end-to-end latency / output tokens; output tokens/s =
successful output tokens / level wall time; cost per 1M output tokens =
price per hour / (tokens/s x 3600 / 10^6).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Self

from ..planning.knee import Knee, KneeRule, LevelFigures
from ..planning.knee import trip_reason as knee_trip_reason
from ._clock import now
from .distributions import level_distributions, sorted_percentile
from .goodput import GoodputSlo, goodput
from .invokers import Invoker
from .payload import InvocationRequest, PayloadSpec, RequestFactory
from .samples import ERROR_KINDS, RequestSample

Progress = Callable[[str], None]
"""Receives one-line progress messages."""


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of ``values`` by linear interpolation between ranks.

    The same definition as NumPy's default; ``None`` for no values.
    """
    if not values:
        return None
    return sorted_percentile(sorted(values), q)


class _Feeder:
    """Thread-safe supplier of a level's requests: a count, a deadline, or both."""

    def __init__(
        self,
        factory: Callable[[int], InvocationRequest],
        requests: int | None,
        deadline: float | None,
        first_index: int,
        on_issue: Callable[[int], None] | None,
    ) -> None:
        self._factory = factory
        self._requests = requests
        self._deadline = deadline
        self._issued = 0
        self._first_index = first_index
        self._lock = threading.Lock()
        self._on_issue = on_issue

    @property
    def issued(self) -> int:
        return self._issued

    def __call__(self) -> InvocationRequest | None:
        with self._lock:
            if self._requests is not None and self._issued >= self._requests:
                return None
            if self._deadline is not None and now() >= self._deadline:
                return None
            index = self._first_index + self._issued
            self._issued += 1
        if self._on_issue is not None:
            self._on_issue(self._issued)
        return self._factory(index)


def run_level(
    invoker: Invoker,
    spec: PayloadSpec | Callable[[int], InvocationRequest],
    concurrency: int,
    *,
    requests: int | None = None,
    duration_s: float | None = None,
    first_index: int = 0,
    on_issue: Callable[[int], None] | None = None,
) -> list[RequestSample]:
    """Keep exactly ``concurrency`` requests in flight for ``requests`` requests and/or
    ``duration_s`` seconds (whichever ends first); return every request's raw sample.

    ``spec`` is a :class:`PayloadSpec` or a request factory (``spec.build()``, built once and
    reused across levels). With a duration, requests in flight at the deadline complete and
    are counted. ``first_index`` offsets the prompt rotation (e.g. per worker).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency={concurrency}: must be at least 1")
    if requests is None and duration_s is None:
        raise ValueError("give requests= or duration_s= (or both)")
    factory = spec.build() if isinstance(spec, PayloadSpec) else spec
    deadline = None if duration_s is None else now() + duration_s
    feeder = _Feeder(factory, requests, deadline, first_index, on_issue)
    samples = invoker.invoke_many(feeder, concurrency)
    for sample in samples:
        sample.concurrency = concurrency
    samples.sort(key=lambda s: s.start)
    return samples


@dataclass
class LevelResult:
    """Summary of one concurrency level, computed from raw samples."""

    concurrency: int
    requests: int
    errors: int
    errors_by_kind: dict[str, int]
    error_rate: float
    duration_s: float
    p50_latency_s: float | None
    p90_latency_s: float | None
    p99_latency_s: float | None
    p50_ms_per_token: float | None
    p90_ms_per_token: float | None
    output_tokens: int
    output_tokens_per_s: float
    requests_per_s: float
    p50_ttft_s: float | None = None
    p90_ttft_s: float | None = None
    p99_ttft_s: float | None = None
    p50_itl_s: float | None = None
    p90_itl_s: float | None = None
    p50_tpot_s: float | None = None
    """Time per output token after the first, (latency - TTFT) / (tokens - 1): vLLM's TPOT,
    aiperf's inter-token latency (streaming only)."""
    p90_tpot_s: float | None = None
    p99_tpot_s: float | None = None
    good_requests: int | None = None
    """Requests that met every SLO (see :mod:`.goodput`); set when SLOs are stated."""
    goodput_requests_per_s: float | None = None
    goodput_tokens_per_s: float | None = None
    target_rate_per_s: float | None = None
    """Open loop: the offered request rate (see :mod:`.open_loop`)."""
    achieved_rate_per_s: float | None = None
    """Open loop: the rate the requests were actually sent at, (n - 1) / send span."""
    p50_schedule_lag_s: float | None = None
    """Open loop: how late requests were sent against their schedule."""
    p99_schedule_lag_s: float | None = None
    backlog_growth_per_s: float | None = None
    """Open loop: growth of the requests due but unfinished over the level's second half."""
    backlog_growing: bool | None = None
    sustainable: bool | None = None
    """Open loop: goodput kept up with the offered rate and the backlog did not grow."""
    distributions: dict[str, Any] | None = None
    """Full distributions (p1 ... p99.9, mean, std, min, max) of TTFT, ITL, TPOT and
    end-to-end latency, by metric (see :mod:`.distributions` for the definitions)."""
    first_errors: dict[str, dict[str, Any]] | None = None
    """The first failed request of each error kind (``code``, ``status``, ``message``), so
    that a level whose requests fail says why; None when none failed."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; fields not measured in this mode (streaming, SLOs, open loop)
        are left out."""
        data = asdict(self)
        for key in _OPTIONAL_FIELDS:
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LevelResult:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


_OPTIONAL_FIELDS = (
    "p50_ttft_s", "p90_ttft_s", "p99_ttft_s", "p50_itl_s", "p90_itl_s", "p50_tpot_s",
    "p90_tpot_s", "p99_tpot_s", "good_requests", "goodput_requests_per_s",
    "goodput_tokens_per_s", "target_rate_per_s", "achieved_rate_per_s", "p50_schedule_lag_s",
    "p99_schedule_lag_s", "backlog_growth_per_s", "backlog_growing", "sustainable",
    "distributions", "first_errors",
)  # fmt: skip


def first_errors(samples: Iterable[RequestSample]) -> dict[str, dict[str, Any]] | None:
    """The earliest failed request of each error kind: its code, HTTP status and message."""
    found: dict[str, dict[str, Any]] = {}
    for sample in sorted(samples, key=lambda s: s.start):
        if sample.error is not None and sample.error not in found:
            found[sample.error] = {
                "code": sample.error_code,
                "status": sample.error_status,
                "message": sample.error_message,
            }
    return dict(sorted(found.items())) or None


def summarize_level(
    samples: Iterable[RequestSample], concurrency: int | None = None, slo: GoodputSlo | None = None
) -> LevelResult:
    """Summarize the raw samples of one level (possibly merged from several workers).

    Latency percentiles are over successful requests; throughput is successful output tokens
    (and requests) over the level's wall time, from the first request's start to the last
    one's end. With ``slo`` stating objectives, goodput over the same wall time.
    """
    items = list(samples)
    if not items:
        raise ValueError("no samples to summarize")
    if concurrency is None:
        concurrency = max(s.concurrency for s in items)
    ok = [s for s in items if s.ok]
    errors_by_kind = {kind: 0 for kind in ERROR_KINDS}
    for sample in items:
        if sample.error is not None:
            errors_by_kind[sample.error] = errors_by_kind.get(sample.error, 0) + 1
    duration = max(s.end for s in items) - min(s.start for s in items)
    latencies = [s.latency_s for s in ok]
    per_token = [v for v in (s.ms_per_token for s in ok) if v is not None]
    ttfts = [v for v in (s.ttft_s for s in ok) if v is not None]
    itls = [v for v in (s.itl_s for s in ok) if v is not None]
    tpots = [v for v in (s.tpot_s for s in ok) if v is not None]
    tokens = sum(s.output_tokens for s in ok)
    errors = len(items) - len(ok)
    result = LevelResult(
        first_errors=first_errors(items),
        concurrency=concurrency,
        requests=len(items),
        errors=errors,
        errors_by_kind=errors_by_kind,
        error_rate=errors / len(items),
        duration_s=duration,
        p50_latency_s=percentile(latencies, 50),
        p90_latency_s=percentile(latencies, 90),
        p99_latency_s=percentile(latencies, 99),
        p50_ms_per_token=percentile(per_token, 50),
        p90_ms_per_token=percentile(per_token, 90),
        output_tokens=tokens,
        output_tokens_per_s=tokens / duration if duration > 0 else 0.0,
        requests_per_s=len(ok) / duration if duration > 0 else 0.0,
        p50_ttft_s=percentile(ttfts, 50),
        p90_ttft_s=percentile(ttfts, 90),
        p99_ttft_s=percentile(ttfts, 99),
        p50_itl_s=percentile(itls, 50),
        p90_itl_s=percentile(itls, 90),
        p50_tpot_s=percentile(tpots, 50),
        p90_tpot_s=percentile(tpots, 90),
        p99_tpot_s=percentile(tpots, 99),
        distributions=level_distributions(items) or None,
    )
    if slo is not None and slo.stated:
        for key, value in goodput(items, slo, duration).items():
            setattr(result, key, value)
    return result


def level_figures(level: LevelResult) -> LevelFigures:
    """What the knee rule reads of a measured level."""
    ttft = None if level.p50_ttft_s is None else level.p50_ttft_s * 1000
    return LevelFigures(
        level.concurrency,
        level.output_tokens_per_s,
        level.p50_ms_per_token,
        ttft,
        level.error_rate,
    )


def trip_reason(rule: KneeRule, level: LevelResult, previous: LevelResult | None) -> str | None:
    """Why ``level`` trips ``rule`` against ``previous`` (``planning.knee.trip_reason``, the
    rule predictions use too), or ``None``."""
    before = None if previous is None else level_figures(previous)
    return knee_trip_reason(rule, level_figures(level), before)


def find_knee(
    levels: Sequence[LevelResult], rule: KneeRule | None = None, *, raise_with: str | None = None
) -> Knee:
    """The knee of ``levels`` under ``rule`` (see :class:`KneeRule`); when no level trips the
    rule, a lower bound (``at_least``) naming ``raise_with``, what raises it."""
    rule = rule or KneeRule()
    ordered = sorted(levels, key=lambda level: level.concurrency)
    previous: LevelResult | None = None
    for level in ordered:
        reason = trip_reason(rule, level, previous)
        if reason is not None:
            return Knee(
                concurrency=previous.concurrency if previous else None,
                rule=rule.describe(),
                tripped_at=level.concurrency,
                reason=reason,
            )
        previous = level
    if previous is None:
        return Knee(None, rule.describe())
    return Knee(previous.concurrency, rule.describe(), at_least=True, raise_with=raise_with)


def cost_per_million_tokens(price_per_hour: float, tokens_per_s: float) -> float | None:
    """Price per hour / (tokens/s x 3600 / 10^6); ``None`` at zero throughput."""
    if tokens_per_s <= 0:
        return None
    return price_per_hour / (tokens_per_s * 3600 / 1e6)


@dataclass
class BenchmarkResult:
    """A whole sweep: the stated payload, every level, the knee, the best throughput, cost."""

    payload: dict[str, Any]
    levels: list[LevelResult]
    knee: Knee
    target: dict[str, Any] = field(default_factory=dict)
    """What was measured: endpoint name, inference component, region or URL, client."""
    slo_ms_per_token: float | None = None
    max_error_rate: float | None = None
    """The share of a level's requests that may fail for it to count as within the SLO (the
    knee rule's ``max_error_rate``): a level failing more is never the max throughput within
    the SLO. None: any share."""
    price_per_hour: float | None = None
    price_basis: str | None = None
    """What ``price_per_hour`` is (region, on-demand or given, date), stated next to every cost."""
    discount: float = 0.0
    """Savings-plan discount off ``price_per_hour`` applied to the costs (0 to below 1)."""
    started_at: float = 0.0
    finished_at: float = 0.0
    samples: list[RequestSample] | None = None
    """Raw samples of every level, when kept."""
    mode: str = "concurrency"
    """``concurrency`` (closed loop: levels keep N in flight) or ``rate`` (open loop: levels
    send at a request rate, see :mod:`.open_loop`)."""
    open_loop: dict[str, Any] | None = None
    """Open loop: the arrival process, its seed, the concurrency cap, the backlog rule."""
    goodput: dict[str, Any] | None = None
    """With SLOs: the objectives, the sustainable fraction and the sustainable rate."""
    search: dict[str, Any] | None = None
    """Adaptive search: the rule, the levels run in order with their verdicts, the requests
    spent and what was found (see :mod:`.search`)."""

    @property
    def knee_level(self) -> LevelResult | None:
        """The level at the knee."""
        return next((lv for lv in self.levels if lv.concurrency == self.knee.concurrency), None)

    @property
    def max_throughput_level(self) -> LevelResult | None:
        """The level with the most output tokens/s whose p50 ms/token is within the SLO and
        whose error rate is within ``max_error_rate``."""
        eligible = [
            level
            for level in self.levels
            if level.output_tokens_per_s > 0
            and (self.max_error_rate is None or level.error_rate <= self.max_error_rate)
            and (
                self.slo_ms_per_token is None
                or (
                    level.p50_ms_per_token is not None
                    and level.p50_ms_per_token <= self.slo_ms_per_token
                )
            )
        ]
        return max(eligible, key=lambda level: level.output_tokens_per_s, default=None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``results.json`` schema)."""
        best = self.max_throughput_level
        knee_level = self.knee_level
        data: dict[str, Any] = {
            "mode": self.mode,
            "target": self.target,
            "payload": self.payload,
            "levels": [level.to_dict() for level in self.levels],
            "knee": self.knee.to_dict(),
            "slo_ms_per_token": self.slo_ms_per_token,
            **({} if self.max_error_rate is None else {"max_error_rate": self.max_error_rate}),
            "max_throughput_within_slo": None
            if best is None
            else {
                "concurrency": best.concurrency,
                "output_tokens_per_s": best.output_tokens_per_s,
                "p50_ms_per_token": best.p50_ms_per_token,
            },
            "knee_p50_ms_per_token": knee_level.p50_ms_per_token if knee_level else None,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }
        if self.price_per_hour is not None:
            price = self.price_per_hour * (1 - self.discount)
            data["cost"] = {
                "price_per_hour": self.price_per_hour,
                "price_basis": self.price_basis or "given",
                "discount": self.discount,
                "effective_price_per_hour": price,
                "formula": "effective_price_per_hour / (output_tokens_per_s * 3600 / 1e6)",
                "per_1m_output_tokens_at_knee": cost_per_million_tokens(
                    price, knee_level.output_tokens_per_s
                )
                if knee_level
                else None,
                "per_1m_output_tokens_at_max_throughput": cost_per_million_tokens(
                    price, best.output_tokens_per_s
                )
                if best
                else None,
            }
        for key in ("open_loop", "goodput", "search"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.samples is not None:
            data["samples"] = [sample.to_dict() for sample in self.samples]
        return data

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchmarkResult:
        """Read back :meth:`to_dict` output (derived fields are recomputed)."""
        cost = data.get("cost") or {}
        samples = data.get("samples")
        return cls(
            payload=data["payload"],
            levels=[LevelResult.from_dict(level) for level in data["levels"]],
            knee=Knee(**data["knee"]),
            target=data.get("target", {}),
            slo_ms_per_token=data.get("slo_ms_per_token"),
            max_error_rate=data.get("max_error_rate"),
            price_per_hour=cost.get("price_per_hour"),
            price_basis=cost.get("price_basis"),
            discount=cost.get("discount", 0.0),
            started_at=data.get("started_at", 0.0),
            finished_at=data.get("finished_at", 0.0),
            samples=None if samples is None else [RequestSample.from_dict(s) for s in samples],
            mode=data.get("mode", "concurrency"),
            open_loop=data.get("open_loop"),
            goodput=data.get("goodput"),
            search=data.get("search"),
        )


class LevelRunner:
    """Runs the levels of one benchmark one after another with one request factory: numbers
    requests across levels (the prompt rotation continues), counts the requests spent and keeps
    the raw samples when asked. :class:`ClosedLoopRunner` and the open-loop ``RateRunner`` run
    one level each; a sweep or a search (``benchmarking.run``) decides which levels."""

    def __init__(
        self,
        invoker: Invoker,
        factory: Callable[[int], InvocationRequest],
        *,
        slo: GoodputSlo | None = None,
        requests_per_level: int | None = None,
        duration_s: float | None = None,
        keep_samples: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self.invoker = invoker
        self.factory = factory
        self.slo = slo
        self.requests_per_level = requests_per_level
        self.duration_s = duration_s
        self.keep_samples = keep_samples
        self.progress = progress
        self.spent = 0
        """Requests measured so far (the warm-up is not counted)."""
        self.kept: list[RequestSample] = []
        self.started_at = now()

    @classmethod
    def warmed_up(
        cls,
        invoker: Invoker,
        spec: PayloadSpec,
        *,
        s3_client: Any = None,
        warmup_requests: int = 1,
        **settings: Any,
    ) -> Self:
        """A runner for ``spec``'s requests after ``warmup_requests`` unmeasured ones
        (credentials, code paths, the server); it records when the run started."""
        factory: RequestFactory = spec.build(s3_client)
        started_at = now()
        runner = cls(invoker, factory, **settings)
        if warmup_requests > 0:
            runner._say(f"warm-up: {warmup_requests} requests ...")
            run_level(invoker, factory, 1, requests=warmup_requests)
        runner.started_at = started_at
        return runner

    def _say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    def _measured(self, samples: list[RequestSample], level: LevelResult) -> LevelResult:
        """Count a level's samples (keep them when asked) and report its figures."""
        self.spent += len(samples)
        if self.keep_samples:
            self.kept.extend(samples)
        self._say(progress_line(level))
        return level

    def __call__(self, level: float) -> LevelResult:
        """Run and summarize one level."""
        raise NotImplementedError

    def result(
        self, spec: PayloadSpec, levels: list[LevelResult], **fields: Any
    ) -> BenchmarkResult:
        """The results of ``levels`` run by this runner; ``fields``: the mode's own (knee,
        goodput ...) and the run's (price, target, search)."""
        return BenchmarkResult(
            payload=spec.describe(),
            levels=levels,
            started_at=self.started_at,
            finished_at=now(),
            samples=self.kept if self.keep_samples else None,
            **fields,
        )


class ClosedLoopRunner(LevelRunner):
    """Closed-loop levels: exactly ``concurrency`` requests in flight (:func:`run_level`).

    A level sends ``requests_per_level`` requests, else runs ``duration_s`` seconds, else
    sends ``max(4 x concurrency, 16)`` requests; ``slo`` adds each level's goodput."""

    def __init__(
        self,
        invoker: Invoker,
        factory: Callable[[int], InvocationRequest],
        *,
        knee_rule: KneeRule | None = None,
        raise_with: str | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(invoker, factory, **settings)
        self.knee_rule = knee_rule or KneeRule()
        self.raise_with = raise_with
        """What raises a knee that is only a lower bound (named in the results)."""

    def __call__(self, level: float) -> LevelResult:
        concurrency = int(level)
        count = self.requests_per_level
        if count is None and self.duration_s is None:
            count = level_requests(concurrency)
        what = f"{count} requests" if count is not None else f"{self.duration_s:g} s"
        self._say(f"concurrency {concurrency}: {what} ...")
        samples = run_level(
            self.invoker,
            self.factory,
            concurrency,
            requests=count,
            duration_s=self.duration_s,
            first_index=self.spent,
        )
        return self._measured(samples, summarize_level(samples, concurrency, self.slo))

    def result(
        self, spec: PayloadSpec, levels: list[LevelResult], **fields: Any
    ) -> BenchmarkResult:
        """Closed-loop results: the levels by concurrency, their knee under the rule."""
        ordered = sorted(levels, key=lambda lv: lv.concurrency)
        return super().result(
            spec,
            ordered,
            knee=find_knee(ordered, self.knee_rule, raise_with=self.raise_with),
            slo_ms_per_token=self.knee_rule.slo_ms_per_token,
            max_error_rate=self.knee_rule.max_error_rate,
            goodput=self.slo.to_dict() if self.slo is not None and self.slo.stated else None,
            **fields,
        )


def level_requests(concurrency: int) -> int:
    """Requests of a closed-loop level without a stated count: ``max(4 x concurrency, 16)``."""
    return max(4 * concurrency, 16)


def _fmt(value: float | None, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}"


def progress_line(level: LevelResult) -> str:
    """One line of a level's figures."""
    name = (
        f"concurrency {level.concurrency}"
        if level.target_rate_per_s is None
        else f"rate {level.target_rate_per_s:g}/s (achieved {_fmt(level.achieved_rate_per_s, 1, 2)}"
        f", lag p50 {_fmt(level.p50_schedule_lag_s, 1000)} ms p99 "
        f"{_fmt(level.p99_schedule_lag_s, 1000)} ms, peak in flight {level.concurrency})"
    )
    line = (
        f"{name}: {level.requests} requests, {level.errors} errors, "
        f"p50 {_fmt(level.p50_latency_s, 1, 3)} s, p99 {_fmt(level.p99_latency_s, 1, 3)} s, "
        f"{_fmt(level.p50_ms_per_token)} ms/token, {_fmt(level.output_tokens_per_s)} tokens/s"
    )
    if level.p50_ttft_s is not None:
        line += f", TTFT p50 {_fmt(level.p50_ttft_s, 1000)} ms"
    if level.good_requests is not None:
        line += f", goodput {_fmt(level.goodput_requests_per_s, 1, 2)} req/s"
    if level.sustainable is not None:
        line += ", sustainable" if level.sustainable else ", UNSUSTAINABLE"
        if level.backlog_growing:
            line += " (backlog growing)"
    return line
