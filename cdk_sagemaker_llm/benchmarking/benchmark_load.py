"""The load a benchmark applies, as one value built by a factory: closed-loop concurrency levels,
open-loop request rates, or an adaptive search over either axis.

::

    BenchmarkLoad.concurrency([1, 2, 4, 8, 16, 32])
    BenchmarkLoad.request_rates([1, 2, 4, 8], arrival=Arrival.poisson(seed=0))
    BenchmarkLoad.knee_search(low=1, high=256)
    BenchmarkLoad.max_rate_search(low=1, high=64, slo=GoodputSlo(ttft_ms=500))
    BenchmarkLoad.trace_replay(speedups=[1, 2, 4])   # with Workload.trace(...)

Each factory takes only what applies to its load (an arrival process only with rates, a knee
rule only with concurrency) and validates its own arguments, so a combination that means
nothing cannot be written. The same value drives the CLI (``run_benchmark``) and the
deploy-time ``EndpointBenchmark``, whose Lambda workers share these limits.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ValidationError, check_range, is_token
from ..prop_types import typed_factory, typed_props
from .arrivals import Arrival
from .engine import KneeRule
from .goodput import DEFAULT_FRACTION, GoodputSlo
from .search import DEFAULT_RESOLUTION, SearchRule

MAX_LEVELS = 16
"""Levels of a sweep."""
MAX_CONCURRENCY = 4096
"""Requests in flight at one level."""
MAX_RATE = 100_000.0
"""Requests/s of one level."""
MAX_REQUESTS = 100_000
"""Requests of one level."""
DEFAULT_CONCURRENCIES = (1, 2, 4, 8, 16, 32)
DEFAULT_SEARCH_CAP = 1024
"""The highest level a knee search given no range may reach (``high`` omitted)."""
OPEN_SEARCH_MAX_ERROR_RATE = 0.05
"""A knee search given no range also stops where the error rate rises above this (unless its
knee rule states its own ``max_error_rate``)."""


@typed_props
@dataclass(frozen=True)
class BenchmarkLoad:
    """The load of a benchmark (see the module docstring); build one with a factory."""

    open_loop: bool
    """True for request rates (sent on schedule whatever the endpoint does), False for
    concurrency levels (each client sends its next request when its last one ends)."""
    levels: tuple[float, ...]
    """The levels of a sweep in increasing order (concurrencies or requests/s), or the
    ``(low, high)`` range of a search."""
    search: str | None = None
    """``knee`` or ``max-rate`` for an adaptive search of the ``levels`` range; None: a sweep."""
    resolution: float = DEFAULT_RESOLUTION
    """A search's bisection stops when its bracket is within this ratio."""
    arrival: Arrival | None = None
    """Open loop: how requests arrive."""
    max_concurrency: int | None = None
    """Open loop: the most requests in flight (a request due beyond it waits); None: no cap."""
    requests_per_level: int | None = None
    """Requests of each level; None: 4 x the concurrency (at least 16), or, open loop, the
    rate x 10 s (at least 32)."""
    slo: GoodputSlo | None = None
    """Goodput objectives; None: no goodput (closed loop), or every successful request is good
    and 95 % of the offered rate is sustainable (open loop)."""
    knee_rule: KneeRule = field(default_factory=KneeRule)
    """Closed loop: when more concurrency stops paying off."""
    replay: bool = False
    """Open loop: the levels are speedups of a trace replayed at its own timestamps
    (``trace_replay``); ``arrival`` is then None."""
    expected: float | None = None
    """A search's expected answer (a prediction): it brackets around it instead of doubling
    from the bottom of its range; None: no prediction."""
    open_ended: bool = False
    """A knee search given no range: it doubles from ``low`` up to the cap ``levels[-1]``."""

    @staticmethod
    @typed_factory
    def concurrency(
        levels: Sequence[int] = DEFAULT_CONCURRENCIES,
        *,
        requests_per_level: int | None = None,
        knee_rule: KneeRule | None = None,
        slo: GoodputSlo | None = None,
    ) -> BenchmarkLoad:
        """Closed loop: at each level exactly that many requests in flight.

        :param levels: increasing concurrencies (1 to 16 levels, each 1 to 4096); default 1, 2,
            4, 8, 16, 32.
        :param requests_per_level: at least the highest level (so every level reaches its
            concurrency), at most 100,000; default 4 x the level (at least 16).
        :param knee_rule: when more concurrency stops paying off; default ``KneeRule()``
            (throughput gain per doubling below 10 %).
        :param slo: objectives (ms/token, TTFT) of each level's goodput; default none.
        """
        owner = "BenchmarkLoad.concurrency"
        return _closed_loop(
            owner,
            _concurrencies(f"{owner}(levels)", levels),
            requests_per_level=requests_per_level,
            knee_rule=knee_rule,
            slo=slo,
        )

    @staticmethod
    @typed_factory
    def request_rates(
        rates: Sequence[float],
        *,
        arrival: Arrival | None = None,
        max_concurrency: int | None = None,
        requests_per_level: int | None = None,
        slo: GoodputSlo | None = None,
    ) -> BenchmarkLoad:
        """Open loop: each level sends at its rate whether or not the endpoint keeps up, and
        reports the achieved rate, schedule lag, backlog growth, goodput and whether the rate
        is sustainable.

        :param rates: increasing requests/s (1 to 16 levels, each above 0 and at most 100,000).
        :param arrival: how requests arrive; default ``Arrival.poisson(seed=0)``.
        :param max_concurrency: cap on requests in flight, 1 to 4096 (a request due beyond it
            waits, and shows as schedule lag); default none.
        :param requests_per_level: 2 to 100,000; default the rate x 10 s (at least 32).
        :param slo: goodput objectives and the sustainable fraction; default none (every
            successful request is good; 95 % of the offered rate is sustainable).
        """
        owner = "BenchmarkLoad.request_rates"
        return _open_loop(
            owner,
            _rates(f"{owner}(rates)", rates),
            arrival=arrival,
            max_concurrency=max_concurrency,
            requests_per_level=requests_per_level,
            slo=slo,
        )

    @staticmethod
    @typed_factory
    def knee_search(
        *,
        low: int = 1,
        high: int | None = None,
        resolution: float = DEFAULT_RESOLUTION,
        requests_per_level: int | None = None,
        knee_rule: KneeRule | None = None,
        slo: GoodputSlo | None = None,
        expected: int | None = None,
    ) -> BenchmarkLoad:
        """Closed loop: find the knee between concurrencies ``low`` and ``high`` by bracketing
        (doubling from ``low`` while levels pass the knee rule, or around ``expected``) and
        bisection, instead of running every level (``benchmarking.search``). When no level
        trips the rule, the result is a lower bound (``knee.at_least``), never a knee.

        :param low: the first level; default 1.
        :param high: the highest level the bracket may reach (above ``low``, at most 4096);
            default: no range, a cap of 1,024 (``DEFAULT_SEARCH_CAP``): the search doubles
            until the rule trips, the error rate rises above 5 % (unless ``knee_rule`` states
            its own limit) or the cap is reached.
        :param expected: the expected knee (e.g. the performance model's prediction), within
            the range: the search runs it and a level on either side, and widens only when the
            measurement disagrees; default none (double from ``low``).
        :param resolution: bisection stops when the bracket is within this ratio (0.01 to 10);
            default 0.25.
        :param requests_per_level: at least ``high``, at most 100,000; default 4 x the level
            (at least 16).
        :param knee_rule: the rule a level must pass; default ``KneeRule()``.
        :param slo: objectives (ms/token, TTFT) of each level's goodput; default none.
        """
        owner = "BenchmarkLoad.knee_search"
        open_ended = high is None
        if open_ended:
            high = max(DEFAULT_SEARCH_CAP, 2 * low)
            rule = knee_rule or KneeRule()
            if rule.max_error_rate is None:
                knee_rule = replace(rule, max_error_rate=OPEN_SEARCH_MAX_ERROR_RATE)
        levels = _range(owner, low, high, _concurrencies)
        load = _closed_loop(
            owner,
            levels,
            requests_per_level=requests_per_level,
            knee_rule=knee_rule,
            slo=slo,
        )
        return replace(
            load,
            search="knee",
            resolution=_resolution(owner, resolution),
            expected=_expected(owner, expected, levels, whole=True),
            open_ended=open_ended,
        )

    @staticmethod
    @typed_factory
    def max_rate_search(
        *,
        low: float,
        high: float,
        resolution: float = DEFAULT_RESOLUTION,
        arrival: Arrival | None = None,
        max_concurrency: int | None = None,
        requests_per_level: int | None = None,
        slo: GoodputSlo | None = None,
        expected: float | None = None,
    ) -> BenchmarkLoad:
        """Open loop: find the highest sustainable rate between ``low`` and ``high``
        requests/s by bracketing and bisection (``benchmarking.search``). When every level is
        sustainable, the result is a lower bound (``goodput.sustainable_rate_at_least``).

        :param expected: the expected sustainable rate, within the range: the search brackets
            around it and widens only when the measurement disagrees; default none.

        :param low: the first rate (requests/s, above 0).
        :param high: the highest rate the bracket may reach (above ``low``, at most 100,000).
        :param resolution: bisection stops when the bracket is within this ratio (0.01 to 10);
            default 0.25.
        :param arrival: how requests arrive; default ``Arrival.poisson(seed=0)``.
        :param max_concurrency: cap on requests in flight, 1 to 4096; default none.
        :param requests_per_level: 2 to 100,000; default the rate x 10 s (at least 32).
        :param slo: what a good request meets and the fraction of the offered rate goodput
            must reach; default none (every successful request, 95 %).
        """
        owner = "BenchmarkLoad.max_rate_search"
        levels = _range(owner, low, high, _rates)
        load = _open_loop(
            owner,
            levels,
            arrival=arrival,
            max_concurrency=max_concurrency,
            requests_per_level=requests_per_level,
            slo=slo,
        )
        return replace(
            load,
            search="max-rate",
            resolution=_resolution(owner, resolution),
            expected=_expected(owner, expected, levels, whole=False),
        )

    @staticmethod
    @typed_factory
    def trace_replay(
        speedups: Sequence[float] = (1.0,),
        *,
        max_concurrency: int | None = None,
        slo: GoodputSlo | None = None,
    ) -> BenchmarkLoad:
        """Open loop: each level replays a trace workload (``Workload.trace``) at its own
        timestamps, the gaps divided by the level's speedup (``benchmarking.replay``); its
        offered rate is the trace's rate x the speedup. The results are those of request
        rates (achieved rate, lag, backlog, goodput, sustainable).

        :param speedups: increasing speedups (1 to 16 levels, each above 0 and at most
            100,000); default ``[1]`` (the trace as recorded).
        :param max_concurrency: cap on requests in flight, 1 to 4096; default none.
        :param slo: goodput objectives and the sustainable fraction; default none.
        """
        owner = "BenchmarkLoad.trace_replay"
        checked = _rates(f"{owner}(speedups)", speedups)
        check_range(
            f"{owner}(max_concurrency)", max_concurrency, minimum=1, maximum=MAX_CONCURRENCY
        )
        return BenchmarkLoad(
            open_loop=True,
            levels=tuple(checked),
            max_concurrency=max_concurrency,
            slo=slo,
            replay=True,
        )

    @property
    def highest(self) -> float:
        """The highest level the load may run."""
        return self.levels[-1]

    @property
    def search_rule(self) -> SearchRule | None:
        """A search's rule over its range; None for a sweep."""
        if self.search is None:
            return None
        return SearchRule(
            self.search, self.levels[0], self.levels[-1], self.resolution, self.expected
        )

    @property
    def raise_with(self) -> str:
        """What raises a result that is only a lower bound, as the CLI's flags name it."""
        if self.open_ended:
            return "--search-cap (the highest level a search given no range may reach)"
        if self.open_loop:
            return "--request-rate (a higher top rate)"
        return "--concurrency (a higher top level)"

    @property
    def goodput_slo(self) -> GoodputSlo:
        """The objectives each level's goodput is judged by (open loop: the defaults when none
        are given)."""
        return self.slo or GoodputSlo()


# ----- the factories' checks -----------------------------------------------------------------


def _concurrencies(prop: str, levels: Sequence[int]) -> list[int]:
    """Increasing whole levels of 1 to ``MAX_CONCURRENCY``, 1 to ``MAX_LEVELS`` of them."""
    checked = list(levels)
    if not 1 <= len(checked) <= MAX_LEVELS:
        raise ValidationError(
            prop, checked, f"a sweep has 1 to {MAX_LEVELS} levels", "pass e.g. [1, 2, 4, 8, 16, 32]"
        )
    for index, level in enumerate(checked):
        if is_token(level) or not isinstance(level, int) or isinstance(level, bool):
            raise ValidationError(
                f"{prop}[{index}]", level, "a level is a whole number known at synth time",
                "pass literal integers, e.g. [1, 2, 4, 8]",
            )  # fmt: skip
        if not 1 <= level <= MAX_CONCURRENCY:
            raise ValidationError(
                f"{prop}[{index}]", level,
                f"a level is 1 to {MAX_CONCURRENCY} concurrent requests",
                "use positive levels within that range",
            )  # fmt: skip
    _increasing(prop, checked)
    return checked


def _rates(prop: str, rates: Sequence[float]) -> list[float]:
    """Increasing rates above 0 and at most ``MAX_RATE``, 1 to ``MAX_LEVELS`` of them."""
    checked = list(rates)
    if not 1 <= len(checked) <= MAX_LEVELS:
        raise ValidationError(
            prop, checked, f"a sweep has 1 to {MAX_LEVELS} levels",
            "pass e.g. [1, 2, 4, 8] (requests/s)",
        )  # fmt: skip
    for index, rate in enumerate(checked):
        if is_token(rate) or not 0 < rate <= MAX_RATE:
            raise ValidationError(
                f"{prop}[{index}]",
                rate,
                f"a rate is a number of requests/s above 0 and at most {MAX_RATE:g}, known at "
                "synth time",
                "pass literal positive numbers, e.g. [1, 2, 4, 8]",
            )
    _increasing(prop, checked)
    return [float(rate) for rate in checked]


def _increasing(prop: str, levels: list[float] | list[int]) -> None:
    for before, after in itertools.pairwise(levels):
        if after <= before:
            raise ValidationError(
                prop, levels, f"levels must increase ({after:g} follows {before:g})",
                f"sort them and drop repeats: {sorted(set(levels))}",
            )  # fmt: skip


def _range(
    owner: str, low: Any, high: Any, check: Callable[[str, Sequence[Any]], list[Any]]
) -> tuple[Any, Any]:
    """A search's ``(low, high)``: each a valid level, ``low`` below ``high``."""
    (checked_low,) = check(f"{owner}(low)", [low])
    (checked_high,) = check(f"{owner}(high)", [high])
    if checked_high <= checked_low:
        raise ValidationError(
            f"{owner}(high)", high, f"a search needs a range: high must be above low ({low:g})",
            f"pass high above {low:g}, e.g. {2 * low:g} or more",
        )  # fmt: skip
    return checked_low, checked_high


def _expected(
    owner: str, expected: float | None, levels: tuple[Any, Any], *, whole: bool
) -> float | None:
    """A search's expected answer: within its range (a whole level for concurrency)."""
    if expected is None:
        return None
    prop = f"{owner}(expected)"
    fractional = whole and (not isinstance(expected, int) or isinstance(expected, bool))
    if is_token(expected) or fractional:
        raise ValidationError(
            prop, expected, "the expected answer is a number known at synth time"
            + (" (a whole concurrency)" if whole else ""),
            "pass a literal, e.g. the performance model's predicted knee rounded",
        )  # fmt: skip
    low, high = levels
    if not low <= expected <= high:
        raise ValidationError(
            prop, expected, f"the expected answer must lie in the search's range {low:g}-{high:g}",
            "widen the range (low/high) or pass an expectation within it",
        )  # fmt: skip
    return float(expected)


def _resolution(owner: str, resolution: float) -> float:
    check_range(f"{owner}(resolution)", resolution, minimum=0.01, maximum=10)
    return resolution


def _closed_loop(
    owner: str,
    levels: Sequence[int],
    *,
    requests_per_level: int | None,
    knee_rule: KneeRule | None,
    slo: GoodputSlo | None,
) -> BenchmarkLoad:
    highest = levels[-1]
    check_range(
        f"{owner}(requests_per_level)",
        requests_per_level,
        minimum=highest,
        maximum=MAX_REQUESTS,
        fix=f"send at least {highest} requests per level (the highest concurrency), so every "
        "level reaches its concurrency, or omit it for 4 x each level",
    )
    return BenchmarkLoad(
        open_loop=False,
        levels=tuple(levels),
        requests_per_level=requests_per_level,
        slo=_closed_loop_slo(owner, slo),
        knee_rule=knee_rule or KneeRule(),
    )


def _closed_loop_slo(owner: str, slo: GoodputSlo | None) -> GoodputSlo | None:
    """A closed-loop load reports goodput against stated objectives; it has no sustainable
    rate, so a fraction other than the default would be ignored."""
    if slo is None:
        return None
    if not slo.stated:
        raise ValidationError(
            f"{owner}(slo)", slo, "a closed-loop load reports goodput against objectives, and "
            "this SLO states none",
            "give ms_per_token and/or ttft_ms, or drop slo",
        )  # fmt: skip
    if slo.fraction != DEFAULT_FRACTION:
        raise ValidationError(
            f"{owner}(slo).fraction", slo.fraction,
            "the sustainable fraction judges request rates; a closed-loop load has none",
            "drop fraction, or use BenchmarkLoad.request_rates / max_rate_search",
        )  # fmt: skip
    return slo


def _open_loop(
    owner: str,
    rates: Sequence[float],
    *,
    arrival: Arrival | None,
    max_concurrency: int | None,
    requests_per_level: int | None,
    slo: GoodputSlo | None,
) -> BenchmarkLoad:
    check_range(f"{owner}(max_concurrency)", max_concurrency, minimum=1, maximum=MAX_CONCURRENCY)
    check_range(
        f"{owner}(requests_per_level)",
        requests_per_level,
        minimum=2,
        maximum=MAX_REQUESTS,
        fix="send at least 2 requests per level (a rate needs two sends), or omit it for 10 s "
        "at each rate (at least 32)",
    )
    return BenchmarkLoad(
        open_loop=True,
        levels=tuple(rates),
        arrival=arrival or Arrival.poisson(),
        max_concurrency=max_concurrency,
        requests_per_level=requests_per_level,
        slo=slo,
    )
