"""Adaptive search: the knee (closed loop) or the sustainable rate (open loop) without a full
sweep, by bracketing then bisection.

The rule, for a level axis ``x`` (concurrency, or request rate) from ``low`` to ``high``:

1. **Bracket**: run ``low``, then double (``2x``, capped at ``high``) while levels pass.
   The first level that fails brackets the answer between the last passing level (*good*)
   and it (*bad*).
2. **Bisect**: run the geometric midpoint of good and bad (rounded for concurrency); a passing
   midpoint becomes good, a failing one bad. Stop when ``bad / good <= 1 + resolution``
   (default 25 %) or, for concurrency, when no whole level lies between them.
3. The answer is *good*; none when ``low`` itself fails. With no failure up to ``high``, the
   answer is ``high`` (the range did not contain the limit).

A level passes the *knee* search when the knee rule (:class:`~.engine.KneeRule`) does not trip
against the current good level, its predecessor in concurrency; it passes the *max-rate*
search when it is sustainable (:mod:`.open_loop`). Since every new level lies between good and
bad, a finished search's levels give the same knee under :func:`~.engine.find_knee` as the
search itself, and the answer is within one doubling of a full doubling sweep's.

:func:`next_level` replays the levels run so far (in run order) and names the next one; it is
pure, so the deploy-time benchmark plans each step from the levels in its state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._clock import now
from .engine import (
    BenchmarkResult,
    KneeRule,
    LevelResult,
    Progress,
    find_knee,
    level_requests,
    progress_line,
    run_level,
    summarize_level,
    trip_reason,
)
from .goodput import GoodputSlo
from .invokers import AsyncInvoker, Invoker
from .open_loop import RateRunner, open_loop_settings
from .payload import PayloadSpec
from .samples import RequestSample

SEARCHES = ("knee", "max-rate")
"""Accepted search kinds."""
DEFAULT_RESOLUTION = 0.25


@dataclass(frozen=True)
class SearchRule:
    """What to search for and where (see the module docstring)."""

    kind: str
    """``knee`` (closed loop, over concurrency) or ``max-rate`` (open loop, over rates)."""
    low: float
    """The first level."""
    high: float
    """The highest level the bracket may reach."""
    resolution: float = DEFAULT_RESOLUTION
    """Bisection stops when bad / good <= 1 + this. Default 0.25."""

    def __post_init__(self) -> None:
        if self.kind not in SEARCHES:
            raise ValueError(f"kind={self.kind!r}: use one of {', '.join(SEARCHES)}")
        if not 0 < self.low <= self.high:
            raise ValueError(f"low={self.low}, high={self.high}: need 0 < low <= high")
        whole = float(self.low).is_integer() and float(self.high).is_integer()
        if self.kind == "knee" and not whole:
            raise ValueError("a knee search runs whole concurrencies: low and high are integers")
        if not self.resolution > 0:
            raise ValueError(f"resolution={self.resolution}: must be positive")

    @property
    def integer(self) -> bool:
        """Whether levels are whole numbers (concurrency)."""
        return self.kind == "knee"

    def describe(self) -> str:
        """The rule in words, as stated in results."""
        axis = "concurrency" if self.integer else "request rate"
        verdict = (
            "the knee rule does not trip against the last passing level"
            if self.integer
            else "the level is sustainable"
        )
        return (
            f"bracket: run {axis} {self.low:g}, then double up to {self.high:g} while levels "
            f"pass ({verdict}); bisect: run the geometric midpoint of the last passing and the "
            f"first failing level until they are within {self.resolution:.0%}"
            + (" or adjacent" if self.integer else "")
            + "; the answer is the last passing level"
        )


@dataclass
class SearchState:
    """Where a search stands after the levels run so far."""

    good: LevelResult | None
    bad: LevelResult | None
    verdicts: list[tuple[float, bool]]
    """Each level run, in order, with whether it passed."""
    next: float | None
    """The next level to run; ``None`` when the search is over."""


Judge = Callable[[LevelResult, LevelResult | None], bool]
"""Whether a level passes, given the current good level below it."""


def axis(rule: SearchRule, level: LevelResult) -> float:
    """A level's position on the searched axis."""
    if rule.integer:
        return float(level.concurrency)
    assert level.target_rate_per_s is not None
    return level.target_rate_per_s


def knee_judge(knee_rule: KneeRule) -> Judge:
    """Passes when ``knee_rule`` does not trip against the good level."""
    return lambda level, good: trip_reason(knee_rule, level, good) is None


def sustainable_judge(level: LevelResult, good: LevelResult | None) -> bool:
    """Passes when the open-loop level is sustainable."""
    return bool(level.sustainable)


def next_level(rule: SearchRule, history: Sequence[LevelResult], judge: Judge) -> SearchState:
    """Replay ``history`` (levels in run order) under ``rule``; name the next level."""
    good: LevelResult | None = None
    bad: LevelResult | None = None
    verdicts: list[tuple[float, bool]] = []
    for level in history:
        passed = judge(level, good)
        verdicts.append((axis(rule, level), passed))
        if passed and (good is None or axis(rule, level) > axis(rule, good)):
            good = level
        elif not passed and (bad is None or axis(rule, level) < axis(rule, bad)):
            bad = level
    state = SearchState(good, bad, verdicts, None)
    if not history:
        state.next = rule.low
    elif good is None:
        state.next = None  # the lowest level fails: nothing below to find
    elif bad is None:
        x = axis(rule, good)
        state.next = None if x >= rule.high else min(2 * x, rule.high)
    else:
        low, high = axis(rule, good), axis(rule, bad)
        mid = math.sqrt(low * high)
        if rule.integer:
            mid = float(min(max(round(mid), low + 1), high - 1))
        else:
            mid = float(f"{mid:.3g}")  # a readable rate
        done = high / low <= 1 + rule.resolution or (rule.integer and high - low <= 1)
        state.next = None if done else mid
    done_levels = {x for x, _ in verdicts}
    if state.next is not None and state.next in done_levels:
        state.next = None  # nothing new to learn (guards against a loop)
    return state


def search_section(
    rule: SearchRule, state: SearchState, requests: int, judge_rule: str
) -> dict[str, Any]:
    """The ``search`` section of results."""

    def shown(x: float | None) -> float | int | None:
        return int(x) if x is not None and rule.integer else x

    return {
        "kind": rule.kind,
        "rule": rule.describe(),
        "pass_rule": judge_rule,
        "low": rule.low,
        "high": rule.high,
        "resolution": rule.resolution,
        "levels_run": [shown(x) for x, _ in state.verdicts],
        "passed": [ok for _, ok in state.verdicts],
        "found": shown(axis(rule, state.good)) if state.good is not None else None,
        "first_failing": shown(axis(rule, state.bad)) if state.bad is not None else None,
        "requests": requests,
    }


def search_knee(
    invoker: Invoker,
    spec: PayloadSpec,
    rule: SearchRule,
    *,
    knee_rule: KneeRule | None = None,
    requests_per_level: int | None = None,
    duration_s: float | None = None,
    slo: GoodputSlo | None = None,
    price_per_hour: float | None = None,
    target: dict[str, Any] | None = None,
    keep_samples: bool = False,
    progress: Progress | None = None,
    s3_client: Any = None,
    warmup_requests: int = 1,
) -> BenchmarkResult:
    """Find the closed-loop knee by bracketing and bisection (see the module docstring).

    Levels are sized as in :func:`~.engine.sweep`. ``search.requests`` counts the measured
    requests (the warm-up is not counted)."""
    if rule.kind != "knee":
        raise ValueError("search_knee needs a SearchRule of kind 'knee'")
    knee_rule = knee_rule or KneeRule()
    judge = knee_judge(knee_rule)
    factory = spec.build(s3_client)
    started = now()
    if warmup_requests > 0:
        run_level(invoker, factory, 1, requests=warmup_requests)
    levels: list[LevelResult] = []
    kept: list[RequestSample] = []
    spent = 0
    while (state := next_level(rule, levels, judge)).next is not None:
        concurrency = int(state.next)
        count = requests_per_level
        if count is None and duration_s is None:
            count = level_requests(concurrency)
        if progress is not None:
            what = f"{count} requests" if count is not None else f"{duration_s:g} s"
            progress(f"search: concurrency {concurrency}: {what} ...")
        samples = run_level(
            invoker, factory, concurrency, requests=count, duration_s=duration_s, first_index=spent
        )
        spent += len(samples)
        if keep_samples:
            kept.extend(samples)
        level = summarize_level(samples, concurrency, slo)
        levels.append(level)
        if progress is not None:
            progress(progress_line(level))
    ordered = sorted(levels, key=lambda lv: lv.concurrency)
    return BenchmarkResult(
        payload=spec.describe(),
        levels=ordered,
        knee=find_knee(ordered, knee_rule),
        target=dict(target or {}),
        slo_ms_per_token=knee_rule.slo_ms_per_token,
        price_per_hour=price_per_hour,
        started_at=started,
        finished_at=now(),
        samples=kept if keep_samples else None,
        goodput=slo.to_dict() if slo is not None and slo.stated else None,
        search=search_section(rule, state, spent, knee_rule.describe()),
    )


def search_max_rate(
    invoker: AsyncInvoker,
    spec: PayloadSpec,
    rule: SearchRule,
    *,
    arrival: str = "poisson",
    seed: int = 0,
    max_concurrency: int | None = None,
    slo: GoodputSlo | None = None,
    requests_per_level: int | None = None,
    duration_s: float | None = None,
    price_per_hour: float | None = None,
    target: dict[str, Any] | None = None,
    keep_samples: bool = False,
    progress: Progress | None = None,
    s3_client: Any = None,
    warmup_requests: int = 1,
) -> BenchmarkResult:
    """Find the highest sustainable request rate by bracketing and bisection (open loop)."""
    if rule.kind != "max-rate":
        raise ValueError("search_max_rate needs a SearchRule of kind 'max-rate'")
    runner = RateRunner.warmed_up(
        invoker,
        spec,
        s3_client=s3_client,
        warmup_requests=warmup_requests,
        arrival=arrival,
        seed=seed,
        max_concurrency=max_concurrency,
        slo=slo,
        requests_per_level=requests_per_level,
        duration_s=duration_s,
        keep_samples=keep_samples,
        progress=progress,
    )
    levels: list[LevelResult] = []
    while (state := next_level(rule, levels, sustainable_judge)).next is not None:
        levels.append(runner(state.next))
    ordered = sorted(levels, key=lambda lv: lv.target_rate_per_s or 0.0)
    rule_text = open_loop_settings(arrival, seed, max_concurrency)["sustainable_rule"]
    return runner.result(
        spec,
        ordered,
        target=target,
        price_per_hour=price_per_hour,
        search=search_section(rule, state, runner.spent, rule_text),
    )
