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
:func:`run_search` runs a search level by level in one process (the CLI).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .engine import KneeRule, LevelResult, trip_reason

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
    expected: float | None = None
    """Where the answer is expected (a prediction): the search brackets around it instead of
    doubling from ``low`` (see :func:`next_level`). None: double from ``low``."""

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
        if self.expected is not None and not self.low <= self.expected <= self.high:
            raise ValueError(
                f"expected={self.expected}: must lie in the range {self.low:g} to {self.high:g}"
            )

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
        bisect = (
            f"bisect: run the geometric midpoint of the last passing and the first failing "
            f"level until they are within {self.resolution:.0%}"
            + (" or adjacent" if self.integer else "")
            + "; the answer is the last passing level"
        )
        if self.expected is not None:
            below = (
                "; the expected level passes only against a level below it, so one step below "
                "is run too"
                if self.integer
                else ""
            )
            return (
                f"bracket around the expected {axis} {self.expected:g}: run it and a level "
                f"sqrt(2) x above it, widening by doublings (up to {self.high:g}, down to "
                f"{self.low:g}) only while the measurement disagrees ({verdict}, judged in "
                f"increasing order){below}; {bisect}"
            )
        return (
            f"bracket: run {axis} {self.low:g}, then double up to {self.high:g} while levels "
            f"pass ({verdict}); {bisect}"
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
    """Replay ``history`` (levels in run order) under ``rule``; name the next level (from an
    expected value when the rule has one, see :func:`_next_from_expected`)."""
    if rule.expected is not None:
        return _next_from_expected(rule, history, judge)
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


NEAR_STEP = math.sqrt(2)
"""The first step away from an expected level (then doublings)."""


def _next_from_expected(
    rule: SearchRule, history: Sequence[LevelResult], judge: Judge
) -> SearchState:
    """The search around ``rule.expected``.

    Levels are judged in increasing order, as :func:`~.engine.find_knee` judges a sweep:
    each against the last passing level below it; *good* is the last pass before the first
    failure, *bad* that failure. The next level, in order of need:

    1. none run: the expected level;
    2. the lowest level fails: a step below it (none below ``low``: the search is over);
    3. nothing failed yet: a step above the highest level (none above ``high``: a bound);
    4. a knee's *good* is the lowest level run (it passed against nothing): a step below it,
       so that it is judged against a level below;
    5. otherwise bisect *good* and *bad* as the doubling search does.

    A step from the expected level is ``sqrt(2)``, further steps double: a right prediction
    costs the expected level, one level on either side and at most one bisection.
    """
    assert rule.expected is not None
    ordered = sorted(history, key=lambda level: axis(rule, level))
    good, bad, judged = _judge_in_order(rule, ordered, judge)
    verdicts = [(axis(rule, level), judged[axis(rule, level)]) for level in history]
    state = SearchState(good, bad, verdicts, None)
    xs = [axis(rule, level) for level in ordered]
    expected = float(round(rule.expected)) if rule.integer else rule.expected

    def step(x: float, up: bool) -> float | None:
        return _step(rule, expected, x, up)

    if not history:
        state.next = expected
    elif good is None:
        state.next = step(xs[0], up=False)
    elif bad is None and xs[-1] < rule.high:
        state.next = step(xs[-1], up=True)
    elif rule.integer and axis(rule, good) == xs[0] and xs[0] > rule.low:
        state.next = step(xs[0], up=False)
    elif bad is None:
        state.next = None
    else:
        low, high = axis(rule, good), axis(rule, bad)
        done = high / low <= 1 + rule.resolution or (rule.integer and high - low <= 1)
        mid = math.sqrt(low * high)
        if rule.integer:
            mid = float(min(max(round(mid), low + 1), high - 1))
        else:
            mid = float(f"{mid:.3g}")
        state.next = None if done else mid
    if state.next is not None and state.next in judged:
        state.next = None  # nothing new to learn (guards against a loop)
    return state


def _judge_in_order(
    rule: SearchRule, ordered: Sequence[LevelResult], judge: Judge
) -> tuple[LevelResult | None, LevelResult | None, dict[float, bool]]:
    """Levels judged in increasing order, each against the last passing one below it: the
    last pass before the first failure, that failure, and each level's verdict."""
    good: LevelResult | None = None
    bad: LevelResult | None = None
    judged: dict[float, bool] = {}
    for level in ordered:
        passed = judge(level, good)
        judged[axis(rule, level)] = passed and bad is None
        if bad is not None:
            continue
        if passed:
            good = level
        else:
            bad = level
    return good, bad, judged


def _step(rule: SearchRule, expected: float, x: float, up: bool) -> float | None:
    """One step from ``x``: sqrt(2) from the expected level, else a doubling (or halving),
    within the range; None at its edge."""
    if (up and x >= rule.high) or (not up and x <= rule.low):
        return None
    factor = NEAR_STEP if x == expected else 2.0
    y = x * factor if up else x / factor
    y = min(y, rule.high) if up else max(y, rule.low)
    if rule.integer:
        return float(max(round(y), x + 1) if up else min(round(y), x - 1))
    return float(f"{y:.3g}")


def search_section(
    rule: SearchRule,
    state: SearchState,
    requests: int,
    judge_rule: str,
    raise_with: str | None = None,
) -> dict[str, Any]:
    """The ``search`` section of results. When no level failed, ``found`` is only a lower
    bound: ``at_least`` is true and ``raise_with`` names what raises the range."""

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
        "at_least": state.good is not None and state.bad is None,
        "raise_with": raise_with if state.good is not None and state.bad is None else None,
        "requests": requests,
        **({"expected": shown(rule.expected)} if rule.expected is not None else {}),
    }


def run_search(
    rule: SearchRule, run: Callable[[float], LevelResult], judge: Judge
) -> tuple[list[LevelResult], SearchState]:
    """Run the levels ``rule`` names, one at a time (``run``), until the search is over;
    returns them in run order and the search's final state."""
    levels: list[LevelResult] = []
    while (state := next_level(rule, levels, judge)).next is not None:
        levels.append(run(int(state.next) if rule.integer else state.next))
    return levels, state
