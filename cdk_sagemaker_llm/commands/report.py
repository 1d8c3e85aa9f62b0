"""``cdk-sagemaker-llm report``: chart and table of a benchmark's results JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from ..benchmarking.engine import BenchmarkResult, LevelResult
from ..benchmarking.exports import FILE_NAMES, levels_csv, requests_jsonl
from ..benchmarking.report import render_markdown, render_svg
from ..planning.calibration import CALIBRATION_FORMAT
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


_TOP_LEVEL = ("payload", "levels", "knee")
_LEVEL_FIELDS = tuple(
    field.name
    for field in dataclasses.fields(LevelResult)
    if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
)
"""The fields every level of a results document has (the others are optional)."""


def results_problem(document: Any) -> str | None:
    """What makes ``document`` not a benchmark results document ``report`` can render, in
    words after the file's name, or None."""
    if not isinstance(document, dict):
        return (
            f"is a JSON {type(document).__name__}, not a benchmark results document (an "
            "object with payload, levels and knee)"
        )
    if document.get("format") == CALIBRATION_FORMAT:
        return "is a calibration file (predict/recommend --calibration read it), not results"
    missing = [key for key in _TOP_LEVEL if key not in document]
    if missing:
        return f"is not a benchmark results document: no {', '.join(missing)}"
    levels, knee = document["levels"], document["knee"]
    if not isinstance(levels, list):
        return f"has levels of type {type(levels).__name__}, not a list"
    if not levels:
        return "has no levels (a run that measured nothing has no knee or throughput)"
    for index, level in enumerate(levels):
        if not isinstance(level, dict):
            return f"has levels[{index}] of type {type(level).__name__}, not an object"
        absent = [name for name in _LEVEL_FIELDS if name not in level]
        if absent:
            return f"has levels[{index}] without {', '.join(absent)}"
    if not isinstance(knee, dict):
        return f"has a knee of {json.dumps(knee)}, not an object with concurrency and rule"
    absent = [name for name in ("concurrency", "rule") if name not in knee]
    if absent:
        return f"has a knee without {', '.join(absent)}"
    return None


def _read(path: str) -> BenchmarkResult | str:
    """The results at ``path``, or why they cannot be read (the file named, with the fix)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return f"cannot read {path}: {error}"
    problem = results_problem(document)
    if problem is None:
        try:
            return BenchmarkResult.from_dict(document)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            problem = f"is malformed ({type(error).__name__}: {error})"
    return f"{path} {problem}; pass the results.json `benchmark --out` wrote"


def run(args: argparse.Namespace) -> int:
    """Render the report; exit 0, or 2 when the results cannot be read or an output file
    cannot be written."""
    outputs = (("--chart", args.chart), ("--markdown", args.markdown), ("--csv", args.csv),
               ("--jsonl", args.jsonl))  # fmt: skip
    problem = next(filter(None, (output_problem(flag, out) for flag, out in outputs)), None)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    result = _read(args.results)
    if isinstance(result, str):
        print(f"error: {result}", file=sys.stderr)
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
