"""``cdk-sagemaker-llm plan``: what a synthesized cloud assembly deploys, for PR review."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import ValidationError
from ..plan import build_plan, render_json, render_markdown


def register(subparsers: Any) -> None:
    """Add the ``plan`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="describe the endpoints, components, scaling, cost and sizing of a cloud assembly",
        description="Read a synthesized cloud assembly (cdk synth's output) and print, per "
        "endpoint and component: instances, copies, image and container caching, scaling "
        "policies with detection time, optimization jobs, benchmarks, cost and sizing.",
    )
    parser.add_argument(
        "assembly_dir", nargs="?", default="cdk.out", help="the assembly directory; default cdk.out"
    )
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the plan; exit 2 when the assembly cannot be read."""
    try:
        plan = build_plan(args.assembly_dir)
    except ValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(render_json(plan) if args.format == "json" else render_markdown(plan))
    return 0
