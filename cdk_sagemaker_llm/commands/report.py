"""``cdk-sagemaker-llm report``: chart and table of a benchmark's results JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..benchmarking.engine import BenchmarkResult
from ..benchmarking.exports import FILE_NAMES, levels_csv, requests_jsonl
from ..benchmarking.report import render_markdown, render_svg
from .benchmark import output_problem


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="render benchmark results as an SVG latency-vs-throughput chart and Markdown",
        description="Render results.json of `cdk-sagemaker-llm benchmark`: a latency-versus-"
        "throughput chart (SVG) and a Markdown table. Without --markdown, the table is printed.",
    )
    parser.add_argument("results", help="results JSON written by `benchmark --out`")
    parser.add_argument("--chart", help="write the chart to this .svg file")
    parser.add_argument("--markdown", help="write the Markdown report to this file")
    parser.add_argument(
        "--csv", help="write one row per level (every distribution flattened) to this file"
    )
    parser.add_argument(
        "--jsonl",
        help="write one line per request to this file (results written with --keep-samples)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Render the report; exit 0, or 2 when the results cannot be read or an output file
    cannot be written."""
    for flag, out in (("--chart", args.chart), ("--markdown", args.markdown),
                      ("--csv", args.csv), ("--jsonl", args.jsonl)):  # fmt: skip
        problem = output_problem(flag, out)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    try:
        result = BenchmarkResult.from_dict(
            json.loads(Path(args.results).read_text(encoding="utf-8"))
        )
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"error: cannot read {args.results}: {error}", file=sys.stderr)
        return 2
    markdown = render_markdown(result)
    if args.chart:
        if not args.chart.endswith(".svg"):
            print("error: --chart writes SVG; name the file *.svg", file=sys.stderr)
            return 2
        Path(args.chart).write_text(render_svg(result), encoding="utf-8")
    if args.csv:
        Path(args.csv).write_text(levels_csv(result.levels), encoding="utf-8")
    if args.jsonl:
        if result.samples is None:
            print(
                f"error: {args.results} has no samples: run `benchmark` with --keep-samples "
                "(a run with --export jsonl wrote its per-request file beside the results, "
                f"{Path(args.results).stem}.{FILE_NAMES['jsonl']}, and kept none in them)",
                file=sys.stderr,
            )
            return 2
        Path(args.jsonl).write_text(requests_jsonl(result.samples), encoding="utf-8")
    if args.markdown:
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    else:
        sys.stdout.write(markdown)
    return 0
