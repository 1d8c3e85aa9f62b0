"""``cdk-sagemaker-llm size``: does a model fit on an instance type, and how many sequences."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import PRESETS, ModelSpec, Precision
from ..errors import ValidationError
from ..planning.sizing import size


def register(subparsers: Any) -> None:
    """Add the ``size`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "size",
        help="size a model on an instance type (fit, KV cache, concurrency, parallelism)",
        description="Size a model on a SageMaker instance type with the library's formulas: "
        "weights, KV cache per token, concurrent sequences, recommended tensor-parallel degree.",
    )
    parser.add_argument(
        "--model",
        required=True,
        help=f"a preset ({', '.join(sorted(PRESETS))}) or a well-known Hugging Face id",
    )
    parser.add_argument("--instance-type", required=True, help="e.g. ml.g5.12xlarge")
    parser.add_argument("--tensor-parallel-degree", type=int, help="default: recommended")
    parser.add_argument(
        "--dtype", default="fp16", help="fp32, fp16, bf16, fp8, int8 or int4 (AWQ); default fp16"
    )
    parser.add_argument(
        "--max-total-tokens",
        type=int,
        help="prompt + output tokens per sequence; default the model's context capped at 4096",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=run)


def _spec(name: str) -> ModelSpec:
    found = ModelSpec.from_hugging_face_id(name)
    return found if found is not None else ModelSpec.preset(name)


def run(args: argparse.Namespace) -> int:
    """Print the sizing report; exit 0 when the model fits, 1 when not, 2 on bad input."""
    try:
        report = size(
            _spec(args.model),
            InstanceType.of(args.instance_type),
            tensor_parallel_degree=args.tensor_parallel_degree,
            precision=Precision.of(args.dtype),
            max_total_tokens=args.max_total_tokens,
        )
    except ValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    data = report.to_dict()
    if args.format == "json":
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        width = max(len(key) for key in data if key != "reasoning")
        for key, value in data.items():
            if key != "reasoning":
                print(f"{key:<{width}}  {value}")
        print("reasoning:")
        for line in report.reasoning:
            print(f"  - {line}")
    return 0 if report.fits else 1
