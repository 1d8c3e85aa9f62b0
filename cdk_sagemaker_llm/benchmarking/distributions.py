"""Full latency distributions of a level: p1 to p99.9, mean, standard deviation, min and max of
TTFT, inter-token latency, TPOT and end-to-end latency, with the peer tools' definitions.

Definitions (seconds; over a level's successful requests):

* ``ttft_s``: first token's arrival - request sent. AIPerf's ``time_to_first_token`` and
  vLLM ``bench serve``'s TTFT are the same measure.
* ``tpot_s``: (end-to-end latency - TTFT) / (output tokens - 1), one value per request with at
  least 2 output tokens. vLLM's TPOT; AIPerf's ``inter_token_latency`` (AIPerf calls this
  per-request mean ITL).
* ``itl_s``: every gap between consecutive token events, pooled over all requests (one value
  per gap, so long answers weigh more). vLLM's ITL (its ``itls``, one value per streamed chunk
  after the first). Ours is per token event of the container's stream: a chunk carrying
  several tokens is several events at one arrival time (gaps of 0), where vLLM counts one
  chunk. Recorded by the CLI; the deploy-time benchmark's workers do not ship every gap, so
  its results leave ``itl_s`` out and keep ``itl_per_request_s``.
* ``itl_per_request_s``: (last token - first token) / (token events - 1), one per request:
  the mean gap of each request (this library's ``p50_itl_s``). Unlike TPOT it leaves out the
  time after the last token (the end of the stream).
* ``e2e_latency_s``: last byte of the response - request sent. vLLM's E2EL, AIPerf's
  ``request_latency``.

Statistics, as both tools compute them with NumPy: percentiles by linear interpolation between
ranks (``numpy.percentile``'s default), ``std`` the population standard deviation
(``numpy.std``, ddof 0). vLLM ``bench serve`` reports mean, median, std and the percentiles
asked for with ``--metric-percentiles`` (default 99); AIPerf reports avg, min, max, p1, p5,
p10, p25, p50, p75, p90, p95, p99 and std; p99.9 is ours. Sources: AIPerf "Metrics Reference"
(https://docs.nvidia.com/aiperf/v0.13.0/reference/ai-perf-metrics-reference.md) and vLLM's
``vllm.benchmarks.serve`` (``BenchmarkMetrics``, ``calculate_metrics``;
https://docs.vllm.ai/en/v0.13.0/api/vllm/benchmarks/serve/).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from .samples import RequestSample

PERCENTILES = (1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9)
"""The percentiles of every distribution."""
METRICS = ("ttft_s", "itl_s", "itl_per_request_s", "tpot_s", "e2e_latency_s")
"""The distributions of a level, in the order reports show them."""
DIGITS = 7
"""Decimal places kept (0.1 µs for seconds): results stay small in the deploy-time workflow's
state, which carries every level's summary."""


def percentile_key(q: float) -> str:
    """``p1`` ... ``p99.9``: the key of a percentile in a distribution."""
    return f"p{q:g}"


def sorted_percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of sorted values, by linear interpolation between ranks
    (NumPy's default)."""
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def distribution(values: Iterable[float]) -> dict[str, float | int] | None:
    """``count``, ``mean``, ``std`` (population), ``min``, ``max`` and ``p1`` ... ``p99.9`` of
    ``values``; None for none."""
    ordered = sorted(values)
    if not ordered:
        return None
    count = len(ordered)
    mean = math.fsum(ordered) / count
    variance = math.fsum((value - mean) ** 2 for value in ordered) / count
    stats: dict[str, float | int] = {
        "count": count,
        "mean": round(mean, DIGITS),
        "std": round(math.sqrt(variance), DIGITS),
        "min": round(float(ordered[0]), DIGITS),
        "max": round(float(ordered[-1]), DIGITS),
    }
    for q in PERCENTILES:
        stats[percentile_key(q)] = round(sorted_percentile(ordered, q), DIGITS)
    return stats


def level_distributions(samples: Iterable[RequestSample]) -> dict[str, dict[str, Any]]:
    """The distributions of a level's successful requests (see the module docstring); a metric
    the level did not measure (no stream: no TTFT, ITL or TPOT) is left out."""
    ok = [sample for sample in samples if sample.ok]
    gaps: list[float] = []
    for sample in ok:
        if sample.itl_gaps_s:
            gaps.extend(sample.itl_gaps_s)
    series: dict[str, list[float]] = {
        "ttft_s": [v for v in (s.ttft_s for s in ok) if v is not None],
        "itl_s": gaps,
        "itl_per_request_s": [v for v in (s.itl_s for s in ok) if v is not None],
        "tpot_s": [v for v in (s.tpot_s for s in ok) if v is not None],
        "e2e_latency_s": [s.latency_s for s in ok],
    }
    out: dict[str, dict[str, Any]] = {}
    for name in METRICS:
        stats = distribution(series[name])
        if stats is not None:
            out[name] = stats
    return out
