"""One benchmark in one process (the CLI's): a :class:`~.load.BenchmarkLoad` run against an
endpoint, returning the results schema every mode shares.

The pieces, as vLLM's benchmark tooling keeps them apart: the payload (``PayloadSpec``: what
each request carries), the level runner (closed loop, :class:`~.engine.ClosedLoopRunner`, or
open loop, :class:`~.open_loop.RateRunner`: how one level's requests are sent and measured),
and which levels run (every level of a sweep, or those a search names from the levels so far,
:func:`~.search.run_search`).
"""

from __future__ import annotations

from typing import Any

from .benchmark_load import BenchmarkLoad
from .engine import BenchmarkResult, ClosedLoopRunner, LevelRunner, Progress
from .invokers import Invoker
from .open_loop import SUSTAINABLE_RULE, RateRunner
from .payload import PayloadSpec
from .replay import TraceReplayRunner, trace_of
from .search import Judge, knee_judge, run_search, search_section, sustainable_judge


def run_benchmark(
    invoker: Invoker,
    spec: PayloadSpec,
    load: BenchmarkLoad,
    *,
    duration_s: float | None = None,
    price_per_hour: float | None = None,
    price_basis: str | None = None,
    discount: float = 0.0,
    target: dict[str, Any] | None = None,
    keep_samples: bool = False,
    progress: Progress | None = None,
    s3_client: Any = None,
    warmup_requests: int = 1,
    raise_with: str | None = None,
) -> BenchmarkResult:
    """Run ``load`` with ``spec``'s requests through ``invoker``.

    :param duration_s: without the load's ``requests_per_level``, each level lasts this long
        (open loop: sends rate x this many requests); default the load's default count.
    :param price_per_hour: of what is measured, for the cost per 1M output tokens, less
        ``discount``, stated with ``price_basis``; default no cost.
    :param target: what was measured, as stated in the results.
    :param keep_samples: keep every request's raw sample in the results.
    :param progress: receives one line per level (and one before it starts).
    :param s3_client: reads an ``s3://`` prompts file.
    :param warmup_requests: unmeasured requests first (credentials, code paths, the server).
    :param raise_with: what raises a knee or sustainable rate that is only a lower bound (no
        level failed), as stated in the results; default the CLI's flag (``load.raise_with``).
    """
    raise_with = raise_with or load.raise_with
    common: dict[str, Any] = {
        "requests_per_level": load.requests_per_level,
        "duration_s": duration_s,
        "keep_samples": keep_samples,
        "progress": progress,
    }
    runner: LevelRunner
    if load.replay:
        runner = TraceReplayRunner.warmed_up(
            invoker, spec, s3_client=s3_client, warmup_requests=warmup_requests,
            trace=trace_of(spec), max_concurrency=load.max_concurrency, slo=load.goodput_slo,
            **common,
        )  # fmt: skip
        judge: Judge = sustainable_judge
        pass_rule = SUSTAINABLE_RULE
    elif load.open_loop:
        runner = RateRunner.warmed_up(
            invoker, spec, s3_client=s3_client, warmup_requests=warmup_requests,
            arrival=load.arrival, max_concurrency=load.max_concurrency, slo=load.goodput_slo,
            raise_with=raise_with, **common,
        )  # fmt: skip
        judge = sustainable_judge
        pass_rule = SUSTAINABLE_RULE
    else:
        runner = ClosedLoopRunner.warmed_up(
            invoker, spec, s3_client=s3_client, warmup_requests=warmup_requests,
            knee_rule=load.knee_rule, slo=load.slo, raise_with=raise_with, **common,
        )  # fmt: skip
        judge = knee_judge(load.knee_rule)
        pass_rule = load.knee_rule.describe()
    rule = load.search_rule
    searched = None
    if rule is None:
        levels = [runner(level) for level in load.levels]
    else:
        levels, state = run_search(rule, runner, judge)
        searched = search_section(rule, state, runner.spent, pass_rule, raise_with)
    return runner.result(
        spec,
        levels,
        target=dict(target or {}),
        price_per_hour=price_per_hour,
        price_basis=price_basis,
        discount=discount,
        search=searched,
    )
