"""``cdk-sagemaker-llm size``: does a model fit on an instance type, how many sequences its KV
cache holds, and which tensor-parallel layout serves the most (sizes in decimal GB)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..catalog.instance_types import InstanceType
from ..errors import ValidationError
from ..planning.engine_profiles import PROFILE_NAMES, EngineProfile, profile_on
from ..planning.sizing import size
from .model_options import (
    add_engine_memory_share_argument,
    add_model_arguments,
    catalog_instance_type,
    check_tensor_parallel_degree,
    configured_engine,
    flag_error,
    model_spec,
    precision,
)
from .predict import engine_of


def register(subparsers: Any) -> None:
    """Add the ``size`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "size",
        help="size a model on an instance type (fit, KV cache, concurrency, parallelism)",
        description="Size a model on a SageMaker instance type with the library's formulas: "
        "weights, KV cache per token, concurrent sequences, and the tensor-parallel degree "
        "whose layout serves the most tokens/s within 100 ms/token (performance model with the "
        "--engine profile, as predict and recommend). "
        "Sizes are decimal GB (10^9 bytes). Exit 0 when the model serves at the degree, "
        "1 when it does not fit or its heads do not shard, 2 on bad input.",
    )
    add_model_arguments(parser)
    parser.add_argument("--instance-type", required=True, help="e.g. ml.g5.12xlarge")
    parser.add_argument("--tensor-parallel-degree", type=int, help="default: recommended")
    parser.add_argument(
        "--max-total-tokens",
        type=int,
        help="prompt + output tokens per sequence; default the model's context capped at 4096",
    )
    parser.add_argument(
        "--engine",
        help="the container that will serve, FAMILY[:VERSION] with a release the container "
        "catalog lists (e.g. tgi:3.3.6; FAMILY alone: release unknown), or an engine profile "
        f"(any case: {', '.join(PROFILE_NAMES)}): its profile ranks the layouts; default "
        "lmi-vllm-v1 (lmi-neuronx on Inferentia/Trainium), as predict and recommend",
    )
    add_engine_memory_share_argument(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=run)


def _engine(args: argparse.Namespace, instance_type: InstanceType) -> EngineProfile | None:
    """``--engine`` (or a JumpStart ``--model``'s image) as a profile (``predict``'s reading of
    the flag), allocating ``--engine-memory-share`` of the memory; None: the default."""
    engine = configured_engine(args.engine_memory_share, engine_of(args), instance_type.is_neuron)
    return None if engine is None else profile_on(engine, instance_type, "--engine")


def run(args: argparse.Namespace) -> int:
    """Print the sizing report; exit 0 when the model serves, 1 when not, 2 on bad input."""
    try:
        instance_type = catalog_instance_type("--instance-type", args.instance_type)
        if instance_type.accelerator is not None and instance_type.accelerators_known:
            check_tensor_parallel_degree(instance_type, args.tensor_parallel_degree)
        engine = _engine(args, instance_type)
        report = size(
            model_spec(args),
            instance_type,
            tensor_parallel_degree=args.tensor_parallel_degree,
            precision=precision(args),
            max_total_tokens=args.max_total_tokens,
            engine=engine,
        )
    except ValidationError as error:
        print(f"error: {flag_error(error, args, {'precision': '--dtype'})}", file=sys.stderr)
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
    return 0 if report.serves else 1
