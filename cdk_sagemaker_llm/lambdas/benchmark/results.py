"""The results in S3: the workers' raw samples merged per level (percentiles over all samples,
never averaged), the run as the CLI's ``BenchmarkResult``, the figures other resources
consume, and ``results.json`` and ``chart.svg`` written under the run's folder.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ...benchmarking import (
    BenchmarkResult,
    Knee,
    LevelResult,
    RequestSample,
    find_knee,
    summarize_level,
)
from ...benchmarking.exports import CONTENT_TYPES, EXPORTS, FILE_NAMES, export_files
from ...benchmarking.open_loop import (
    OPEN_LOOP_KNEE,
    SUSTAINABLE_RULE,
    goodput_section,
    open_loop_settings,
    summarize_rate_level,
    sustainable_rate,
)
from ...benchmarking.search import knee_judge, next_level, search_section, sustainable_judge
from ..runtime_support import Budget, call_with_retry, error_code
from .run_config import (
    arrival_of,
    deployment_section,
    knee_rule_of,
    level_of,
    payload_of,
    results_key,
    samples_key,
    search_rule,
    slo_of,
    split,
)
from .run_names import EventError, explain, number

RAISE_WITH = "the benchmark load's highest level (BenchmarkLoad levels, or a search's high)"
"""What raises a deploy-time knee or sustainable rate that is only a lower bound."""

START_SKEW_LIMIT_S = 1.0
"""The stated start skew: workers of one level start within this of each other (they all wait
for the common start time; a worker that arrives late is recorded, and so is the skew)."""


def _read_worker(
    s3: Any, run: Mapping[str, Any], level: int, worker: int, budget: Budget
) -> dict[str, Any]:
    key = f"{samples_key(run, level, worker)}.json"
    try:
        body = call_with_retry(s3.get_object, budget, Bucket=run["Bucket"], Key=key)["Body"].read()
    except Exception as error:
        if error_code(error) in ("NoSuchKey", "404", "AccessDenied"):
            # Without s3:ListBucket, S3 answers AccessDenied for a missing key.
            raise EventError(
                f"worker {worker} of level {level} wrote no samples (s3://{run['Bucket']}/{key} "
                f"is missing: {error_code(error)}); it failed or timed out before writing them"
            ) from error
        raise
    try:
        data = json.loads(body)
    except ValueError as error:
        raise EventError(f"s3://{run['Bucket']}/{key}: not JSON ({error})") from error
    if not isinstance(data, dict) or not isinstance(data.get("samples"), list):
        raise EventError(f"s3://{run['Bucket']}/{key}: not a worker's samples")
    return data


def start_skew(first_starts: Sequence[float]) -> float:
    """Spread of the workers' first request starts (0 for one worker)."""
    return max(first_starts) - min(first_starts) if len(first_starts) > 1 else 0.0


def aggregate_level(
    s3: Any, run: Mapping[str, Any], level: Any, workers: int, budget: Budget | None = None
) -> tuple[list[RequestSample], dict[str, Any]]:
    """Merge the raw samples of every worker of ``level``; returns them and the level's record.

    The record holds the summary (percentiles over the merged raw samples, never averages of
    the workers' percentiles) and the distribution: workers, each one's first start, and the
    start skew measured from them against the stated limit.
    """
    merged: list[RequestSample] = []
    first_starts: list[float] = []
    late: list[float] = []
    budget = budget or Budget()
    for worker in range(workers):
        data = _read_worker(s3, run, level, worker, budget)
        try:
            samples = [RequestSample.from_dict(item) for item in data["samples"]]
            late.append(number(data.get("late_s", 0.0), "late_s", 0.0, 1e6))
        except (EventError, KeyError, TypeError, ValueError, AttributeError) as error:
            raise EventError(
                f"worker {worker} of level {level}: malformed samples ({explain(error)})"
            ) from error
        if samples:
            first_starts.append(min(sample.start for sample in samples))
        merged.extend(samples)
    skew = start_skew(first_starts)
    rate = run["Mode"] == "rate"
    in_flight = run["MaxConcurrency"] if rate else level
    distribution = {
        **({"rate": level} if rate else {"concurrency": level}),
        "workers": workers,
        "worker_concurrency": split(in_flight, workers) if in_flight else None,
        "first_start_per_worker": first_starts,
        "late_s_per_worker": late,
        "start_skew_s": skew,
        "start_skew_limit_s": START_SKEW_LIMIT_S,
        "within_skew_limit": skew <= START_SKEW_LIMIT_S,
    }
    record: dict[str, Any] = {"Distribution": distribution, "Level": None, "FirstError": None}
    if merged:
        slo = slo_of(run)
        summary = (
            summarize_rate_level(merged, level, slo)
            if rate
            else summarize_level(merged, level, slo if slo.stated else None)
        )
        record["Level"] = summary.to_dict()
        failed = [s for s in merged if s.error is not None]
        if failed:
            code, _ = Counter(s.error_code or s.error or "" for s in failed).most_common(1)[0]
            example = next(s for s in failed if (s.error_code or s.error or "") == code)
            record["FirstError"] = f"{code}: {example.error_message or ''}".strip()
    return merged, record


def build_result(
    run: Mapping[str, Any], levels: Sequence[Mapping[str, Any]], now: float
) -> BenchmarkResult:
    """The sweep as a :class:`BenchmarkResult` (the CLI's results schema, whatever the mode)."""
    rule = knee_rule_of(run)
    in_run_order = [LevelResult.from_dict(dict(r["Level"])) for r in levels if r.get("Level")]
    rate = run["Mode"] == "rate"
    measured = sorted(
        in_run_order, key=lambda lv: (lv.target_rate_per_s or 0.0) if rate else lv.concurrency
    )
    slo = slo_of(run)
    search = search_rule(run)
    searched = None
    if search is not None:
        judge = knee_judge(rule) if search.kind == "knee" else sustainable_judge
        pass_rule = rule.describe() if search.kind == "knee" else SUSTAINABLE_RULE
        searched = search_section(
            search,
            next_level(search, in_run_order, judge),
            sum(level.requests for level in in_run_order),
            pass_rule,
            RAISE_WITH,
        )
    max_concurrency = run["MaxConcurrency"] or None
    spec = payload_of(run)
    client = (
        "EndpointBenchmark (SageMaker AI benchmark job, AIPerf)"
        if run.get("Managed")
        else "EndpointBenchmark (Lambda workers)"
    )
    target = {"endpoint_name": run["EndpointName"], "client": client}
    if run["InferenceComponentName"]:
        target["inference_component"] = run["InferenceComponentName"]
    knee = Knee(None, OPEN_LOOP_KNEE) if rate else find_knee(measured, rule, raise_with=RAISE_WITH)
    goodput: dict[str, Any] | None
    if rate:
        goodput = goodput_section(slo, measured, RAISE_WITH)
    else:
        goodput = slo.to_dict() if slo.stated else None
    return BenchmarkResult(
        payload=spec.describe(),
        levels=measured,
        knee=knee,
        target=target,
        slo_ms_per_token=slo.ms_per_token if rate else rule.slo_ms_per_token,
        price_per_hour=run["PricePerHour"],
        price_basis=run["PriceSource"] or None,
        started_at=run["StartedAt"],
        finished_at=now,
        mode=run["Mode"],
        open_loop=open_loop_settings(arrival_of(run), max_concurrency) if rate else None,
        goodput=goodput,
        search=searched,
    )


def figures_of(run: Mapping[str, Any], result: BenchmarkResult) -> dict[str, Any]:
    """The attributes other resources consume. When even the lowest level trips the knee
    rule, the knee attributes fall back to the lowest level (``KneeFound`` false); an open-loop
    run has no knee (the same fallback) but a sustainable rate (0: none, or closed loop). When
    no level trips the rule, ``KneeConcurrency`` is only a lower bound: ``KneeAtLeast`` is
    true and ``KneeFound`` false (the same for ``SustainableRateAtLeast``)."""
    lowest = result.levels[0] if result.levels else None
    knee_level = result.knee_level or lowest
    best = result.max_throughput_level
    knee = knee_level.concurrency if knee_level else 0
    return {
        "RunName": run["Name"],
        "KneeFound": result.knee.concurrency is not None and not result.knee.at_least,
        "KneeAtLeast": result.knee.at_least,
        "KneeConcurrency": knee,
        "KneeConcurrencyPerCopy": max(1, knee // run["Copies"]) if knee else 0,
        "KneeP50MsPerToken": round(knee_level.p50_ms_per_token or 0.0, 3) if knee_level else 0,
        "MaxOutputTokensPerSecond": round(best.output_tokens_per_s, 3) if best else 0,
        "MaxThroughputConcurrency": best.concurrency if best else 0,
        "LowestLevelP50MsPerToken": round(lowest.p50_ms_per_token or 0.0, 3) if lowest else 0,
        "SustainableRequestsPerSecond": sustainable_rate(result.levels) or 0
        if result.mode == "rate"
        else 0,
        "SustainableRateAtLeast": bool((result.goodput or {}).get("sustainable_rate_at_least")),
        "FailedRequests": sum(level.errors for level in result.levels),
        "Requests": sum(level.requests for level in result.levels),
        "ResultsS3Uri": f"s3://{run['Bucket']}/{results_key(run, 'results.json')}",
        "ChartS3Uri": f"s3://{run['Bucket']}/{results_key(run, 'chart.svg')}",
    }


def write_results(
    run: Mapping[str, Any],
    levels: Sequence[Mapping[str, Any]],
    result: BenchmarkResult,
    figures: Mapping[str, Any],
    failures: Sequence[str],
    *,
    s3: Any,
    budget: Budget,
    exports: bool = True,
) -> None:
    """``results.json`` (the CLI's schema plus the distribution, the run, the gate, the
    attributes and, when the run states it, the ``deployment`` benchmarked) and, with
    ``exports``, the CLI's exports under the run's folder: ``chart.svg``, ``levels.csv``,
    ``requests.jsonl`` (every worker's samples, read back) and ``report.md``."""
    data = result.to_dict()
    data["distribution"] = [dict(r["Distribution"]) for r in levels]
    data["run"] = {
        "name": run["Name"],
        "worker_capacity": run["WorkerCapacity"],
        "worker_rate_capacity": run["WorkerRateCapacity"] if run["Mode"] == "rate" else None,
        "copies": run["Copies"],
        "price_source": run["PriceSource"] or None,
        "start_skew_limit_s": START_SKEW_LIMIT_S,
    }
    data["gate"] = {"limits": run["Gate"], "passed": not failures, "failures": list(failures)}
    data["attributes"] = dict(figures)
    deployment = deployment_section(run)
    if deployment is not None:
        data["deployment"] = deployment
    call_with_retry(
        s3.put_object,
        budget,
        Bucket=run["Bucket"],
        Key=results_key(run, "results.json"),
        Body=json.dumps(data, indent=2).encode(),
        ContentType="application/json",
    )
    if not exports:
        return
    samples = [
        sample
        for record in levels
        for sample in aggregate_level(
            s3, run, level_of(record), int(record["Distribution"]["workers"]), budget
        )[0]
    ]
    files = export_files(result, EXPORTS, samples)
    for kind in EXPORTS:
        call_with_retry(
            s3.put_object,
            budget,
            Bucket=run["Bucket"],
            Key=results_key(run, FILE_NAMES[kind]),
            Body=files[FILE_NAMES[kind]],
            ContentType=CONTENT_TYPES[kind],
        )
