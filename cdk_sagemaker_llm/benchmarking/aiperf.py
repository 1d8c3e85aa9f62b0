"""SageMaker AI benchmark jobs (NVIDIA AIPerf, managed) in this library's terms: the workload
specification a job runs, and its output read back as this engine's levels, so the same
``results.json`` (knee, gates, attributes, calibration, ``report``) comes out whichever engine
ran the load.

Sources: the SageMaker AI developer guide, "Benchmark generative AI inference endpoints" and
"Find the maximum concurrency an endpoint can serve under an SLA" (the inline workload
specification ``{"benchmark": {"type": "aiperf"}, "parameters": {...}}`` with
``prompt_input_tokens_mean`` / ``_stddev``, ``output_tokens_mean`` / ``_stddev``,
``streaming``, ``concurrency`` (a list runs each level) and ``request_count``; the job's output is
an ``output.tar.gz`` under its ``S3OutputLocation``, one ``concurrency_{N}/`` directory per
level); botocore 1.44.5's SageMaker model (``CreateAIWorkloadConfig``, ``CreateAIBenchmarkJob``,
``DescribeAIBenchmarkJob``, ``StopAIBenchmarkJob``); and AIPerf's "Working with Profile Export
Files" (``profile_export.jsonl``: one record per request with ``metadata.request_start_ns`` /
``request_end_ns``, ``metrics.time_to_first_token`` (ms) and ``output_sequence_length``, and
``error``; ``profile_export_aiperf.json``: per metric ``unit``, ``avg`` and ``p1``..``p99``).

Mapping: where a level's ``profile_export.jsonl`` is in the output, each record becomes a
:class:`~.samples.RequestSample` and the level is summarized exactly as the Lambda workers' are
(:func:`~.engine.summarize_level`: percentiles of ms/token, TTFT, TPOT over requests). Otherwise
the aggregate ``profile_export_aiperf.json`` is mapped metric by metric (its ``source`` says
so): latency and TTFT percentiles as they are, AIPerf's inter-token latency as TPOT,
throughput from ``output_token_throughput`` and ``request_throughput``, and p50/p90 ms/token as
the ratio of the latency percentile to the mean output length (an approximation: AIPerf does not
export per-request ms/token).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from collections.abc import Mapping, Sequence
from typing import Any

from .engine import LevelResult, summarize_level
from .samples import ERROR_KINDS, RequestSample

MANAGED_ENGINE = "sagemaker-benchmark-job"
"""The deploy-time run's ``Engine`` when a SageMaker AI benchmark job runs the load (absent:
the Lambda workers)."""
LEVEL_DIRECTORY = re.compile(r"(?:^|/)concurrency_(\d+)/")
AGGREGATE = "profile_export_aiperf.json"
RECORDS = "profile_export.jsonl"
POLL_TIMEOUT_S = 300
"""The poll Lambda's timeout: a poll invoked before a Delete stops the workflow may still create
the job up to this long after the stop (a stopped execution does not end its running task)."""
MAX_MEMBER_BYTES = 64 * 1024 * 1024
"""A member of the output archive larger than this is not read (a Lambda's memory)."""


def workload_spec(
    *,
    input_tokens: int,
    output_tokens: int,
    streaming: bool,
    concurrencies: Sequence[int],
    request_count: int,
    tokenizer: str | None = None,
    tooling_version: str | None = None,
) -> dict[str, Any]:
    """The inline AIPerf specification of a closed-loop sweep: synthetic prompts of exactly
    ``input_tokens`` (stddev 0) asking for ``output_tokens``, ``request_count`` requests at each
    of ``concurrencies`` (AIPerf's ``--concurrency``: that many requests in flight)."""
    parameters: dict[str, Any] = {
        "prompt_input_tokens_mean": input_tokens,
        "prompt_input_tokens_stddev": 0,
        "output_tokens_mean": output_tokens,
        "output_tokens_stddev": 0,
        "streaming": streaming,
        "concurrency": list(concurrencies),
        "request_count": request_count,
        "random_seed": 0,
    }
    if tokenizer is not None:
        parameters["tokenizer"] = tokenizer
    spec: dict[str, Any] = {"benchmark": {"type": "aiperf"}, "parameters": parameters}
    if tooling_version is not None:
        spec["tooling"] = {"api_standard": "openai", "version": tooling_version}
    return spec


def _value(metrics: Mapping[str, Any], name: str) -> float | None:
    metric = metrics.get(name)
    value = metric.get("value") if isinstance(metric, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def error_kind(code: Any, kind: Any = "") -> str:
    """This engine's error kind of an AIPerf error (HTTP status and exception type)."""
    text = str(kind or "").lower()
    if code == 429 or "throttl" in text:
        return "throttling"
    if code in (408, 504) or "timeout" in text:
        return "timeout"
    if code == 424 or (isinstance(code, int) and code >= 500):
        return "model_error"
    return "other"


def sample_of(record: Mapping[str, Any]) -> RequestSample | None:
    """A request sample of one ``profile_export.jsonl`` record (None for a cancelled one or a
    record without times)."""
    metadata = record.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("was_cancelled"):
        return None
    start_ns, end_ns = metadata.get("request_start_ns"), metadata.get("request_end_ns")
    if not isinstance(start_ns, int) or not isinstance(end_ns, int):
        return None
    start, end = start_ns / 1e9, end_ns / 1e9
    sample = RequestSample(start=start, end=end, request_id=metadata.get("x_request_id"))
    error = record.get("error")
    if isinstance(error, Mapping):
        sample.error = error_kind(error.get("code"), error.get("type"))
        sample.error_code = str(error.get("type") or error.get("code") or "error")
        sample.error_message = str(error.get("message") or "")[:300]
        return sample
    metrics = record.get("metrics") if isinstance(record.get("metrics"), Mapping) else {}
    assert isinstance(metrics, Mapping)
    tokens = _value(metrics, "output_sequence_length") or _value(metrics, "output_token_count")
    sample.output_tokens = int(tokens or 0)
    ttft = _value(metrics, "time_to_first_token")
    if ttft is not None:
        sample.first_token = start + ttft / 1000.0
        sample.last_token = end
        sample.stream_tokens = sample.output_tokens
    return sample


def _stat(data: Mapping[str, Any], metric: str, stat: str, scale: float = 1.0) -> float | None:
    entry = data.get(metric)
    value = entry.get(stat) if isinstance(entry, Mapping) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return float(value) * scale


def level_of_aggregate(data: Mapping[str, Any], concurrency: int) -> LevelResult:
    """A level from AIPerf's aggregate ``profile_export_aiperf.json`` (see the module doc)."""
    ok = int(_stat(data, "request_count", "avg") or 0)
    errors = int(_stat(data, "error_request_count", "avg") or 0)
    by_kind = dict.fromkeys(ERROR_KINDS, 0)
    for entry in data.get("error_summary") or []:
        if isinstance(entry, Mapping) and isinstance(entry.get("error_details"), Mapping):
            details = entry["error_details"]
            kind = error_kind(details.get("code"), details.get("type"))
            by_kind[kind] += int(entry.get("count") or 0)
    errors = max(errors, sum(by_kind.values()))
    by_kind["other"] += errors - sum(by_kind.values())
    requests = ok + errors
    mean_tokens = _stat(data, "output_sequence_length", "avg")
    ms = 1.0 / 1000.0

    def per_token(stat: str) -> float | None:
        latency = _stat(data, "request_latency", stat)
        return latency / mean_tokens if latency is not None and mean_tokens else None

    return LevelResult(
        concurrency=concurrency,
        requests=requests,
        errors=errors,
        errors_by_kind=by_kind,
        error_rate=errors / requests if requests else 0.0,
        duration_s=_stat(data, "benchmark_duration", "avg") or 0.0,
        p50_latency_s=_stat(data, "request_latency", "p50", ms),
        p90_latency_s=_stat(data, "request_latency", "p90", ms),
        p99_latency_s=_stat(data, "request_latency", "p99", ms),
        p50_ms_per_token=per_token("p50"),
        p90_ms_per_token=per_token("p90"),
        output_tokens=int(_stat(data, "total_osl", "avg") or 0),
        output_tokens_per_s=_stat(data, "output_token_throughput", "avg") or 0.0,
        requests_per_s=_stat(data, "request_throughput", "avg") or 0.0,
        p50_ttft_s=_stat(data, "time_to_first_token", "p50", ms),
        p90_ttft_s=_stat(data, "time_to_first_token", "p90", ms),
        p99_ttft_s=_stat(data, "time_to_first_token", "p99", ms),
        p50_tpot_s=_stat(data, "inter_token_latency", "p50", ms),
        p90_tpot_s=_stat(data, "inter_token_latency", "p90", ms),
        p99_tpot_s=_stat(data, "inter_token_latency", "p99", ms),
    )


def levels_of_archive(archive: bytes) -> list[tuple[LevelResult, str]]:
    """Every level of a benchmark job's ``output.tar.gz``: ``(level, source)``, source being
    ``profile_export.jsonl`` (per-request records) or ``profile_export_aiperf.json``
    (aggregates); sorted by concurrency."""
    found: dict[int, dict[str, bytes]] = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        for member in tar.getmembers():
            match = LEVEL_DIRECTORY.search(member.name)
            name = member.name.rsplit("/", 1)[-1]
            if not member.isfile() or match is None or name not in (AGGREGATE, RECORDS):
                continue
            if member.size > MAX_MEMBER_BYTES:
                continue
            handle = tar.extractfile(member)
            if handle is not None:
                found.setdefault(int(match.group(1)), {})[name] = handle.read()
    levels: list[tuple[LevelResult, str]] = []
    for concurrency in sorted(found):
        files = found[concurrency]
        if RECORDS in files:
            samples = [
                sample
                for line in files[RECORDS].decode("utf-8").splitlines()
                if line.strip()
                for sample in [sample_of(json.loads(line))]
                if sample is not None
            ]
            if samples:
                for sample in samples:
                    sample.concurrency = concurrency
                levels.append((summarize_level(samples, concurrency), RECORDS))
                continue
        if AGGREGATE in files:
            aggregate = json.loads(files[AGGREGATE])
            levels.append((level_of_aggregate(aggregate, concurrency), AGGREGATE))
    return levels
