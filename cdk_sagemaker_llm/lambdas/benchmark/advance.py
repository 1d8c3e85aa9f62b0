"""One step of the sweep (the workflow's ``Advance``): aggregate the level the workers just ran
(from their raw samples in S3), then plan the next level (the sweep's next, or the search's,
from the levels measured so far), or finish: write the results, apply the gate, signal the
wait condition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...benchmarking import LevelResult
from ...benchmarking.search import knee_judge, next_level, sustainable_judge
from ..runtime_support import Budget, Put, truncate
from .results import aggregate_level, build_result, figures_of, write_results
from .run_config import (
    MAX_WORKERS,
    check_level,
    check_run,
    knee_rule_of,
    level_of,
    search_rule,
    workers_of,
)
from .run_names import EventError, explain, field, integer
from .signal import caught_cause, gate_failures, measured_words, report_error, signal_outcome

START_LEAD_S = 10.0
"""Workers of a level are told to start this long after the level is planned: time for Step
Functions to start every Map iteration and for the Lambdas to start (cold starts included)."""
MAX_RUN_LEVELS = 32
"""Levels a run may measure: a sweep's (at most ``MAX_LEVELS``) or a search's."""


def plan_level(
    run: Mapping[str, Any], level: Any, now: float, lead_s: float = START_LEAD_S
) -> dict[str, Any]:
    """The Map items of one level: one per worker, all with the same start time."""
    workers = workers_of(run, level)
    start_at = round(now + lead_s, 3)
    return {
        "Pending": {"Level": level, "Workers": workers, "StartAt": start_at},
        "Slices": [
            {"Level": level, "Workers": workers, "Worker": index, "StartAt": start_at}
            for index in range(workers)
        ],
    }


def next_planned(run: Mapping[str, Any], levels: Sequence[Mapping[str, Any]]) -> Any:
    """The next level to run: the sweep's next, or the search's (``None``: done)."""
    rule = search_rule(run)
    if rule is None:
        done = {level_of(record) for record in levels}
        listed = run["Rates"] if run["Mode"] == "rate" else run["Concurrencies"]
        return next((level for level in listed if level not in done), None)
    measured = [LevelResult.from_dict(dict(r["Level"])) for r in levels if r.get("Level")]
    judge = knee_judge(knee_rule_of(run)) if rule.kind == "knee" else sustainable_judge
    found = next_level(rule, measured, judge).next
    if found is None:
        return None
    return int(found) if rule.integer else found


def check_levels(levels: Any, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The records of the levels already run (they travel in the workflow's state)."""
    if levels is None:
        return []
    if not isinstance(levels, list) or len(levels) > MAX_RUN_LEVELS:
        raise EventError(f"state.Levels: expected a list of at most {MAX_RUN_LEVELS} records")
    for index, record in enumerate(levels):
        where = f"state.Levels[{index}]"
        distribution = field(record, "Distribution", where)
        key = "rate" if run["Mode"] == "rate" else "concurrency"
        try:
            check_level(
                field(distribution, key, f"{where}.Distribution"),
                run,
                f"{where}.Distribution.{key}",
            )
        except EventError as error:
            raise EventError(f"{where}: level is not a level of this run ({error})") from error
        summary = record.get("Level")
        if summary is not None:
            try:
                LevelResult.from_dict(dict(summary))
            except (KeyError, TypeError, ValueError, AttributeError) as error:
                raise EventError(
                    f"{where}.Level: not a level summary ({explain(error)})"
                ) from error
    return [dict(record) for record in levels]


def advance_step(
    state: Mapping[str, Any],
    *,
    s3: Any,
    put: Put,
    now: float,
    lead_s: float = START_LEAD_S,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """One step of the sweep (see the module doc); returns the next state (``Done`` ends it).

    S3 calls and the signal are retried within ``budget`` (default: no limit); out of time, it
    raises, and the workflow's catch signals FAILURE with the reason."""
    budget = budget or Budget()
    run = check_run(field(state, "Run", "state"))
    levels = check_levels(state.get("Levels"), run)
    failure = None
    pending = state.get("Pending")
    if pending:
        levels, failure = _measured(pending, run, levels, s3, budget)
    upcoming = None if failure else next_planned(run, levels)
    if upcoming is not None and now >= run["Deadline"]:
        failure = (
            f"the search ran out of time before level {upcoming}"
            if run["Search"]
            else f"the sweep ran out of time before levels {remaining_levels(run, levels)}"
        )
    if failure is not None or upcoming is None:
        return finish(run, levels, s3=s3, put=put, now=now, budget=budget, failure=failure)
    return {
        "Run": run,
        "Levels": levels,
        "Done": False,
        **plan_level(run, upcoming, now, lead_s),
    }


def _measured(
    pending: Any,
    run: Mapping[str, Any],
    levels: list[dict[str, Any]],
    s3: Any,
    budget: Budget,
) -> tuple[list[dict[str, Any]], str | None]:
    """The levels with the pending one's record (aggregated from its workers' samples), and
    why the sweep must stop there (no request sent, every request failed) or None."""
    level = check_level(field(pending, "Level", "state.Pending"), run, "state.Pending.Level")
    workers = integer(
        field(pending, "Workers", "state.Pending"), "state.Pending.Workers", 1, MAX_WORKERS
    )
    if workers != workers_of(run, level):
        raise EventError(
            f"state.Pending.Workers: level {level} runs on "
            f"{workers_of(run, level)} workers, not {workers}"
        )
    if len(levels) >= MAX_RUN_LEVELS:
        raise EventError(f"state.Levels: a run measures at most {MAX_RUN_LEVELS} levels")
    _, record = aggregate_level(s3, run, level, workers, budget)
    levels = [r for r in levels if level_of(r) != level] + [record]
    summary = record["Level"]
    if summary is None:
        return levels, f"level {level} sent no request before the sweep's deadline"
    if summary["errors"] == summary["requests"]:
        return levels, f"every request of level {level} failed ({record['FirstError']})"
    return levels, None


def remaining_levels(run: Mapping[str, Any], levels: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The sweep's levels not run yet."""
    done = {level_of(record) for record in levels}
    listed = run["Rates"] if run["Mode"] == "rate" else run["Concurrencies"]
    return [level for level in listed if level not in done]


def finish(
    run: Mapping[str, Any],
    levels: Sequence[Mapping[str, Any]],
    *,
    s3: Any,
    put: Put,
    now: float,
    failure: str | None = None,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """Write ``results.json`` and ``chart.svg``, apply the gate, signal the wait condition."""
    budget = budget or Budget()
    result = build_result(run, levels, now)
    figures = figures_of(run, result)
    failures = ([failure] if failure else []) + gate_failures(run, result)
    write_results(run, levels, result, figures, failures, s3=s3, budget=budget)
    outcome = signal_outcome(run, figures, failures, put=put, budget=budget)
    return {"Run": dict(run), "Levels": list(levels), "Done": True, "Outcome": outcome}


def report_failure(
    state: Mapping[str, Any],
    *,
    s3: Any,
    put: Put,
    now: float,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """The workflow's catch (a worker or a step broke): signal FAILURE with the caught error
    and, when levels were measured before it, their figures, with ``results.json`` written for
    them, so a broken sweep still reports what it measured. Only the levels' summaries (in the
    state) and one write: not the exports, which read every sample back, as the broken step
    may have been doing when it ran out of time. Best effort: a state whose levels cannot be
    read, or results that cannot be written, still signals the error
    (``signal.report_error``)."""
    budget = budget or Budget()
    return report_error(
        state, put=put, budget=budget, measured=_measured_before(state, s3, now, budget)
    )


def _measured_before(state: Mapping[str, Any], s3: Any, now: float, budget: Budget) -> str:
    """The figures of the levels a broken sweep measured, in words ('' when none)."""
    try:
        run = check_run(field(state, "Run", "state"))
        levels = check_levels(state.get("Levels"), run)
        if not any(record.get("Level") for record in levels):
            return ""
        result = build_result(run, levels, now)
        figures = figures_of(run, result)
    except Exception:  # untrusted state, or nothing to show: the error alone is signalled
        return ""
    failure = f"the sweep broke before it ended: {truncate(caught_cause(state), 2000)}"
    try:
        write_results(run, levels, result, figures, [failure], s3=s3, budget=budget, exports=False)
    except Exception as error:
        written = f" (results.json not written: {truncate(explain(error), 150)})"
        return measured_words(figures, results=False) + written
    return measured_words(figures)
