"""The signal that ends the wait: the gate applied to the measured figures, then SUCCESS with
the figures as data, or FAILURE with the reasons and the figures; and the workflow's catch,
which signals FAILURE with the caught error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ...benchmarking import BenchmarkResult, LevelResult
from ...benchmarking.open_loop import sustainable_rate
from ..runtime_support import (
    HTTPS_URL,
    MAX_REASON,
    Budget,
    Put,
    send,
    truncate,
    wait_condition_signal,
)
from .run_names import RUN_NAME, EventError

MIN_FAILURES_SHOWN = 200
"""Characters of the failures a FAILURE reason keeps, however long the figures after them."""


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def gate_failures(run: Mapping[str, Any], result: BenchmarkResult) -> list[str]:
    """Why the measured figures fail the gate (empty: they pass, or there is no gate)."""
    gate = run["Gate"]
    failures = []
    lowest = result.levels[0] if result.levels else None
    limit = gate["MaxP50MsPerToken"]
    if limit is not None and lowest is not None:
        measured = lowest.p50_ms_per_token
        if measured is None or measured > limit:
            failures.append(
                f"p50 ms/token at {_level_name(lowest)} is {_fmt(measured)}, "
                f"above the SLO of {limit:g}"
            )
    ttft_limit = gate["MaxP50TtftMs"]
    if ttft_limit is not None and lowest is not None:
        ttft = None if lowest.p50_ttft_s is None else lowest.p50_ttft_s * 1000
        if ttft is None or ttft > ttft_limit:
            failures.append(
                f"p50 TTFT at {_level_name(lowest)} is {_fmt(ttft, 0)} ms, "
                f"above the SLO of {ttft_limit:g} ms"
            )
    failures += _error_rate_failures(gate["MaxErrorRate"], result)
    minimum = gate["MinKneeConcurrency"]
    knee = result.knee
    if minimum is not None and knee.at_least and (knee.concurrency or 0) < minimum:
        failures.append(  # a bound below the minimum proves nothing either way: unknown
            f"knee concurrency is unknown: at least {knee.concurrency} (no level tripped the "
            f"rule), which cannot show it reaches the minimum of {minimum:g}; raise "
            f"{knee.raise_with or 'the highest level'}"
        )
    elif minimum is not None and (knee.concurrency or 0) < minimum:
        failures.append(
            f"knee concurrency is {result.knee.concurrency or 'none'} "
            f"(first level tripping the rule: {result.knee.tripped_at}, {result.knee.reason}), "
            f"below the minimum of {minimum:g}"
        )
    tokens = gate["MinOutputTokensPerS"]
    best = result.max_throughput_level
    if tokens is not None and (best is None or best.output_tokens_per_s < tokens):
        failures.append(
            f"max output throughput is {_fmt(best.output_tokens_per_s if best else 0.0)} tokens/s, "
            f"below the minimum of {tokens:g}"
        )
    rate = gate["MinSustainableRate"]
    if rate is not None:
        found = sustainable_rate(result.levels) if result.mode == "rate" else None
        bounded = bool((result.goodput or {}).get("sustainable_rate_at_least"))
        if bounded and found is not None and found < rate:
            failures.append(
                f"sustainable rate is unknown: at least {found:g} requests/s (every rate run "
                f"was sustainable), which cannot show it reaches the minimum of {rate:g}; raise "
                f"{(result.goodput or {}).get('raise_with') or 'the highest rate'}"
            )
        elif found is None or found < rate:
            failures.append(
                f"sustainable rate is {found if found is not None else 'none'} requests/s, "
                f"below the minimum of {rate:g}"
            )
    peak = peak_failure(run, result)
    return failures + ([peak] if peak else [])


def _error_rate_failures(limit: float | None, result: BenchmarkResult) -> list[str]:
    """The first level the published figures rest on whose error rate is above ``limit``."""
    if limit is None:
        return []
    for level in _published_levels(result):
        if level.error_rate > limit:
            kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(level.errors_by_kind.items()))
            return [
                f"{level.errors} of {level.requests} requests failed at {_level_name(level)} "
                f"({level.error_rate:.1%}{': ' + kinds if kinds else ''}), above the gate's "
                f"{limit:.1%}"
            ]
    return []


def _published_levels(result: BenchmarkResult) -> list[LevelResult]:
    """The levels the attributes rest on: the lowest up to the knee (closed loop) or the
    sustainable rate (open loop); the lowest alone when there is neither."""
    if not result.levels:
        return []
    if result.mode == "rate":
        top = sustainable_rate(result.levels) or 0.0
        chosen = [lv for lv in result.levels if (lv.target_rate_per_s or 0.0) <= top]
    else:
        knee = result.knee_level
        top_concurrency = knee.concurrency if knee is not None else 0
        chosen = [lv for lv in result.levels if lv.concurrency <= top_concurrency]
    return chosen or [result.levels[0]]


def peak_failure(run: Mapping[str, Any], result: BenchmarkResult) -> str | None:
    """Why the capacity measured per copy, at the most copies autoscaling allows, cannot
    serve the gate's peak (``PeakRequestsPerS`` or ``PeakConcurrency`` at ``MaxCopies``), or
    None (it can, or there is no peak gate). A knee that is only a lower bound passes when
    the bound already serves the peak; otherwise the capacity is unknown, and that fails."""
    gate = run["Gate"]
    max_copies = gate.get("MaxCopies")
    if max_copies is None:
        return None
    copies = int(run["Copies"])
    per_copy, measured, bound, unit = _capacity_per_copy(gate, result, copies)
    peak = gate["PeakConcurrency"] or gate["PeakRequestsPerS"]
    capacity = per_copy * max_copies
    if capacity >= peak:
        return None
    figures = (
        f"{measured} x {max_copies} copies (the most autoscaling allows) = {capacity:.3g} "
        f"{unit}, below the peak of {peak:g} {unit}"
    )
    if bound:
        return (
            f"the capacity at the peak is unknown: at least {figures} (no level tripped the "
            f"rule: a lower bound); raise {result.knee.raise_with or 'the highest level'}"
        )
    needed = f"at least {math.ceil(peak / per_copy - 1e-9)} copies" if per_copy > 0 else "more"
    return (
        f"the measured capacity at the most copies cannot serve the peak: {figures}; raise "
        f"the most copies (max_instance_count, or the copy autoscaling's maximum) to {needed}, "
        "choose a bigger instance type, or relax the SLO the knee rule holds"
    )


def _capacity_per_copy(
    gate: Mapping[str, Any], result: BenchmarkResult, copies: int
) -> tuple[float, str, bool, str]:
    """One copy's measured capacity in the peak's unit, the measurement in words, whether it
    is only a lower bound, and the unit."""
    if result.mode == "rate":
        rate = sustainable_rate(result.levels) or 0.0
        per_copy = rate / copies
        words = (
            f"{per_copy:.3g} requests/s per copy (sustainable rate {rate:g} requests/s over "
            f"{copies} copies)"
        )
        bound = bool((result.goodput or {}).get("sustainable_rate_at_least"))
        return per_copy, words, bound, "requests/s"
    knee = result.knee
    level = result.knee_level
    where = (
        f"the knee, concurrency {knee.concurrency} over {copies} copies"
        if level is not None
        else f"no knee: even the lowest level trips the rule ({knee.reason})"
    )
    if gate["PeakConcurrency"] is not None:
        # The autoscaling target's figure: KneeConcurrencyPerCopy (results.figures_of).
        in_flight = max(1, level.concurrency // copies) if level is not None else 0
        words = f"{in_flight} requests in flight per copy ({where})"
        return float(in_flight), words, knee.at_least, "requests in flight"
    rate = level.requests_per_s if level is not None else 0.0
    per_copy = rate / copies
    words = f"{per_copy:.3g} requests/s per copy ({where}: {rate:.3g} requests/s)"
    return per_copy, words, knee.at_least, "requests/s"


def _level_name(level: LevelResult) -> str:
    if level.target_rate_per_s is not None:
        return f"{level.target_rate_per_s:g} requests/s"
    return f"concurrency {level.concurrency}"


def _knee_words(figures: Mapping[str, Any]) -> str:
    if figures.get("KneeAtLeast"):
        return (
            f"at least {figures['KneeConcurrency']} (no level tripped the rule: a lower bound, "
            "not a measured knee)"
        )
    if not figures["KneeFound"]:
        return f"{figures['KneeConcurrency']} (no level met the knee rule: lowest level)"
    return str(figures["KneeConcurrency"])


def measured_words(figures: Mapping[str, Any], *, results: bool = True) -> str:
    """The figures in words, for a signal's reason; ``results``: end with where the results
    are (False: they were not written)."""
    return (
        f"Measured: knee {_knee_words(figures)}"
        f" at {figures['KneeP50MsPerToken']} ms/token p50, max "
        f"{figures['MaxOutputTokensPerSecond']} output tokens/s at concurrency "
        f"{figures['MaxThroughputConcurrency']}, lowest level {figures['LowestLevelP50MsPerToken']}"
        f" ms/token p50"
        + (
            f", sustainable rate {'at least ' if figures.get('SustainableRateAtLeast') else ''}"
            f"{figures['SustainableRequestsPerSecond']} requests/s"
            if figures["SustainableRequestsPerSecond"]
            else ""
        )
        + (
            f", {figures['FailedRequests']} of {figures['Requests']} requests failed"
            if figures.get("FailedRequests")
            else ""
        )
        + (f". Results: {figures['ResultsS3Uri']}" if results else "")
    )


def signal_outcome(
    run: Mapping[str, Any],
    figures: Mapping[str, Any],
    failures: Sequence[str],
    *,
    put: Put,
    budget: Budget,
) -> str:
    """Signal the wait condition: FAILURE with ``failures`` and the figures, else SUCCESS
    with the figures as data; returns the status sent."""
    if failures:
        head, tail = f"Benchmark {run['Name']} failed: ", f". {measured_words(figures)}"
        # The reason is cut to MAX_REASON: cut the list of failures (results.json holds them
        # all), never the measured figures and where the results are.
        room = max(MAX_REASON - len(head) - len(tail), MIN_FAILURES_SHOWN)
        reason = f"{head}{truncate('; '.join(failures), room)}{tail}"
        send(run["HandleUrl"], wait_condition_signal("FAILURE", reason, run["Name"]), put, budget)
        return "FAILURE"
    reason = f"Benchmark {run['Name']} completed. {measured_words(figures)}"
    compact = json.dumps(figures, separators=(",", ":"), sort_keys=True)
    send(
        run["HandleUrl"],
        wait_condition_signal("SUCCESS", reason, run["Name"], compact),
        put,
        budget,
    )
    return "SUCCESS"


def caught_cause(state: Mapping[str, Any]) -> str:
    """The caught error's message, whatever its shape (a Lambda error's type and message)."""
    error = state.get("Error") or {}
    cause = (
        str(error.get("Cause") or error.get("Error") or "unknown error")
        if isinstance(error, Mapping)
        else str(error)
    )
    cause = cause[:65536]
    try:  # Lambda errors arrive as a JSON cause {"errorMessage", "errorType", ...}
        parsed = json.loads(cause)
        if isinstance(parsed, dict) and parsed.get("errorMessage"):
            cause = f"{parsed.get('errorType', 'Error')}: {parsed['errorMessage']}"
    except (ValueError, RecursionError):
        pass
    return cause


def report_error(
    state: Mapping[str, Any], *, put: Put, budget: Budget | None = None, measured: str = ""
) -> dict[str, Any]:
    """The workflow's catch: signal FAILURE with the caught error's message (any error shape),
    followed by ``measured``, the figures of the levels measured before (when there are any).

    Only a state without a usable handle raises (there is no one to signal)."""
    run = state.get("Run") if isinstance(state, Mapping) else None
    handle = run.get("HandleUrl") if isinstance(run, Mapping) else None
    name = run.get("Name", "benchmark") if isinstance(run, Mapping) else "benchmark"
    if not (isinstance(handle, str) and len(handle) <= 2048 and HTTPS_URL.fullmatch(handle)):
        raise EventError("state.Run.HandleUrl: missing or not an https URL, cannot signal")
    name = name if isinstance(name, str) and RUN_NAME.fullmatch(name) else "benchmark"
    assert isinstance(state, Mapping)
    head, tail = f"Benchmark {name} failed: ", (f". {measured}" if measured else "")
    room = max(MAX_REASON - len(head) - len(tail), MIN_FAILURES_SHOWN)
    reason = f"{head}{truncate(caught_cause(state), room)}{tail}"
    send(handle, wait_condition_signal("FAILURE", reason, name), put, budget or Budget())
    return {"Done": True, "Outcome": "FAILURE"}
