"""Benchmarking LLM endpoints on SageMaker: engine, invokers, reports, loopback simulator.

Plain Python over boto3/botocore and the standard library, with no dependency on aws_cdk,
so a Lambda function can ship this package as is.
"""

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
from .invokers import AsyncInvoker, BotoInvoker, Invoker
from .payload import InvocationRequest, PayloadSpec, synthetic_prompt
from .samples import ERROR_KINDS, RequestSample

__all__ = [
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
    "cost_per_million_tokens",
    "find_knee",
    "percentile",
    "run_level",
    "summarize_level",
    "sweep",
    "synthetic_prompt",
]
