"""Benchmarking LLM endpoints on SageMaker: the load (``BenchmarkLoad``: closed-loop and
open-loop levels, adaptive search), goodput, invokers, ``run_benchmark``, reports, loopback
simulator.

Plain Python over boto3/botocore and the standard library, with no dependency on aws_cdk,
so a Lambda function can ship this package as is.
"""

from .arrivals import ARRIVALS, Arrival, schedule
from .benchmark_load import BenchmarkLoad
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
)
from .goodput import GoodputSlo
from .invokers import AsyncInvoker, BotoInvoker, Invoker
from .open_loop import run_rate_level, summarize_rate_level, sustainable_rate
from .payload import (
    InvocationRequest,
    PayloadFormat,
    PayloadSpec,
    RequestProtocol,
    synthetic_prompt,
)
from .run import run_benchmark
from .samples import ERROR_KINDS, RequestSample
from .search import SearchRule

__all__ = [
    "ARRIVALS",
    "ERROR_KINDS",
    "Arrival",
    "AsyncInvoker",
    "BenchmarkLoad",
    "BenchmarkResult",
    "BotoInvoker",
    "GoodputSlo",
    "InvocationRequest",
    "Invoker",
    "Knee",
    "KneeRule",
    "LevelResult",
    "PayloadFormat",
    "PayloadSpec",
    "RequestProtocol",
    "RequestSample",
    "SearchRule",
    "cost_per_million_tokens",
    "find_knee",
    "percentile",
    "run_benchmark",
    "run_level",
    "run_rate_level",
    "schedule",
    "summarize_level",
    "summarize_rate_level",
    "sustainable_rate",
    "synthetic_prompt",
]
