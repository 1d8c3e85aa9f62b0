"""``cdk-sagemaker-llm benchmark``: a concurrency sweep against an endpoint or component."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..benchmarking.engine import KneeRule, sweep
from ..benchmarking.invokers import AsyncInvoker, BotoInvoker, Invoker
from ..benchmarking.payload import FORMATS, PayloadSpec
from ..benchmarking.progress import LiveProgress
from .aws_environment import aws_environment_problem


def _concurrency_list(text: str) -> list[int]:
    try:
        values = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected integers like 1,2,4,8") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: concurrencies must be at least 1")
    return sorted(set(values))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return value


def register(subparsers: Any) -> None:
    """Add the ``benchmark`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "benchmark",
        help="sweep concurrency levels against an endpoint and write results JSON",
        description="Closed-loop concurrency sweep against a SageMaker endpoint (or one of its "
        "inference components) with a stated payload: at each level exactly N requests are in "
        "flight. Reports latency percentiles, ms/token, throughput, errors by kind, the knee "
        "and cost per 1M output tokens. Progress goes to stderr (on a terminal, live within each "
        "level: requests done, errors, elapsed).",
    )
    parser.add_argument("--endpoint-name", required=True)
    parser.add_argument("--inference-component", help="inference component to invoke")
    parser.add_argument("--region", help="default: the usual AWS configuration chain")
    parser.add_argument(
        "--endpoint-url",
        help="any SageMaker-Runtime-compatible server (e.g. the loopback simulator)",
    )
    parser.add_argument(
        "--concurrency", type=_concurrency_list, default=[1, 2, 4, 8], help="default 1,2,4,8"
    )
    parser.add_argument("--input-tokens", type=_positive_int, default=256, help="default 256")
    parser.add_argument("--output-tokens", type=_positive_int, default=128, help="default 128")
    parser.add_argument("--prompts", help="JSONL prompts file (path or s3://) instead of synthetic")
    parser.add_argument(
        "--requests-per-level",
        type=_positive_int,
        help="requests per level (default max(4 x concurrency, 16) unless --duration-per-level)",
    )
    parser.add_argument("--duration-per-level", type=float, help="seconds per level")
    parser.add_argument("--stream", action="store_true", help="InvokeEndpointWithResponseStream")
    parser.add_argument("--format", choices=FORMATS, default="auto", dest="response_format")
    parser.add_argument("--latency-slo-ms-per-token", type=float, help="p50 ms/token limit")
    parser.add_argument(
        "--min-gain-per-doubling",
        type=float,
        default=0.10,
        help="knee rule: throughput gain per doubling of concurrency; default 0.10",
    )
    parser.add_argument("--price-per-hour", type=float, help="instance price, for cost per 1M")
    parser.add_argument(
        "--client",
        choices=("async", "threads"),
        default="async",
        help="asyncio raw-HTTP client (default) or a boto3 thread pool",
    )
    parser.add_argument("--keep-samples", action="store_true", help="raw samples in results")
    parser.add_argument("--out", required=True, help="results JSON file")
    parser.set_defaults(handler=run)


def _invoker(args: argparse.Namespace) -> Invoker:
    if args.client == "threads":
        return BotoInvoker(
            args.endpoint_name,
            inference_component=args.inference_component,
            region=args.region,
            endpoint_url=args.endpoint_url,
        )
    return AsyncInvoker(
        args.endpoint_name,
        inference_component=args.inference_component,
        region=args.region,
        endpoint_url=args.endpoint_url,
    )


def run(args: argparse.Namespace) -> int:
    """Run the sweep, write ``--out``; exit 0, or 2 on bad input."""
    problem = aws_environment_problem(args.region)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        spec = PayloadSpec(
            input_tokens=args.input_tokens,
            output_tokens=args.output_tokens,
            stream=args.stream,
            response_format=args.response_format,
            prompts=args.prompts,
        )
        invoker = _invoker(args)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    live = LiveProgress(sys.stderr)
    progress = live.line
    if isinstance(invoker, AsyncInvoker | BotoInvoker):
        invoker.on_sample = live.record

    target = {
        "endpoint_name": args.endpoint_name,
        "inference_component": args.inference_component,
        "region": getattr(invoker, "region", args.region),
        "endpoint_url": args.endpoint_url,
        "client": args.client,
    }
    try:
        result = sweep(
            invoker,
            spec,
            args.concurrency,
            requests_per_level=args.requests_per_level,
            duration_s=args.duration_per_level,
            rule=KneeRule(
                min_gain_per_doubling=args.min_gain_per_doubling,
                slo_ms_per_token=args.latency_slo_ms_per_token,
            ),
            price_per_hour=args.price_per_hour,
            target={key: value for key, value in target.items() if value is not None},
            keep_samples=args.keep_samples,
            progress=progress,
        )
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    Path(args.out).write_text(result.to_json() + "\n", encoding="utf-8")
    knee = result.knee
    progress(f"knee: concurrency {knee.concurrency} ({knee.rule}); results in {args.out}")
    return 0
