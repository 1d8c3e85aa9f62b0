"""Benchmarking LLM endpoints on SageMaker: closed-loop and open-loop (request-rate) levels,
goodput, adaptive search, invokers, reports, loopback simulator.

Plain Python over boto3/botocore and the standard library, with no dependency on aws_cdk,
so a Lambda function can ship this package as is.
"""

from .arrivals import ARRIVALS, schedule
from .engine import (
    BenchmarkResult,
    Knee,
    KneeRule,
    LevelResult,
    cost_per_million_tokens,
    find_knee,
    percentile,
    run_level,
    summarize_level,
    sweep,
)
from .goodput import Slo
from .invokers import AsyncInvoker, BotoInvoker, Invoker
from .open_loop import rate_sweep, run_rate_level, summarize_rate_level, sustainable_rate
from .payload import InvocationRequest, PayloadSpec, synthetic_prompt
from .samples import ERROR_KINDS, RequestSample
from .search import SearchRule, search_knee, search_max_rate

__all__ = [
    "ARRIVALS",
    "ERROR_KINDS",
    "AsyncInvoker",
    "BenchmarkResult",
    "BotoInvoker",
    "InvocationRequest",
    "Invoker",
    "Knee",
    "KneeRule",
    "LevelResult",
    "PayloadSpec",
    "RequestSample",
    "SearchRule",
    "Slo",
    "cost_per_million_tokens",
    "find_knee",
    "percentile",
    "rate_sweep",
    "run_level",
    "run_rate_level",
    "schedule",
    "search_knee",
    "search_max_rate",
    "summarize_level",
    "summarize_rate_level",
    "sustainable_rate",
    "sweep",
    "synthetic_prompt",
]
