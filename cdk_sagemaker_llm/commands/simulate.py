"""``cdk-sagemaker-llm simulate``: the loopback SageMaker Runtime simulator, for trying the
benchmark command and the benchmarking API without an endpoint. With ``--model`` and
``--instance-type`` it serves that model from the engine simulation the planner runs
(``benchmarking.simulated_engine``), so its measurements calibrate to the planner's model."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from ..benchmarking import simulator_cli
from ..benchmarking.simulated_engine import EngineSimulation
from ..benchmarking.simulator_config import SimulatorConfig
from ..catalog.instance_types import InstanceType
from ..errors import ValidationError
from ..planning.engine_profiles import profile_on
from ..planning.sizing import recommended_tensor_parallel_degree
from ..planning.workload import Workload
from .model_options import (
    add_engine_memory_share_argument,
    add_kv_cache_precision_argument,
    add_max_batch_size_argument,
    add_model_arguments,
    check_tensor_parallel_degree,
    configured_engine,
    flag_error,
    kv_cache_precision,
    model_spec,
    precision,
)
from .predict import engine_choice

DEFAULT_PORT = 8080

STEP_LAW_FLAGS = {
    "max_batch": "--max-batch",
    "step_base_s": "--step-base-s",
    "step_per_sequence_s": "--step-per-sequence-s",
    "prefill_per_input_token_s": "--prefill-per-input-token-s",
}
"""The step law's flags (``SimulatorConfig``'s timing fields): an engine simulation
(``--model``) schedules and times the model instead, so they do not apply to it."""

ENGINE_FLAGS = {
    "instance_type": ("--instance-type", None),
    "engine": ("--engine", None),
    "tensor_parallel_degree": ("--tensor-parallel-degree", None),
    "input_tokens": ("--input-tokens", 512),
    "output_tokens": ("--output-tokens", 256),
    "max_batch_size": ("--max-batch-size", None),
    "kv_cache_precision": ("--kv-cache-precision", "auto"),
    "engine_memory_share": ("--engine-memory-share", None),
    "time_scale": ("--time-scale", 1.0),
    "dtype": ("--dtype", "fp16"),
}
"""The engine simulation's flags and their defaults: without ``--model`` the step law serves
and they do not apply."""


def register(subparsers: Any) -> None:
    """Add the ``simulate`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "simulate",
        help="serve a simulated SageMaker endpoint on 127.0.0.1 (for `benchmark --endpoint-url`)",
        description="Serve a loopback SageMaker Runtime server that batches like an LLM "
        "container (InvokeEndpoint and InvokeEndpointWithResponseStream, any endpoint name, "
        "any dummy credentials) on 127.0.0.1 until Ctrl-C. Prints its URL on the first line. "
        "With --model and --instance-type it serves that model as the engine profile "
        "(--engine) schedules it, each forward pass timed by the planner's step-cost model "
        "(the simulation behind `predict --simulate-scheduler`) and slept x --time-scale; "
        "without, each decode step emits one token per request in the batch and lasts "
        "STEP_BASE_S + STEP_PER_SEQUENCE_S x batch. GET /_simulator/truth returns what the "
        "server measured (with a model, also on the engine's virtual clock).",
    )
    simulator_cli.add_arguments(parser, default_port=DEFAULT_PORT)
    engine = parser.add_argument_group(
        "engine simulation", "serve a model from the planner's engine simulation"
    )
    add_model_arguments(parser, engine)
    engine.add_argument("--instance-type", help="with --model: e.g. ml.g5.2xlarge")
    engine.add_argument(
        "--engine",
        help="an engine profile (tgi-1, lmi-vllm-v1 ...) or container FAMILY[:VERSION]; "
        "default lmi-vllm-v1 (lmi-neuronx on Inferentia/Trainium). Pass --container tgi for "
        "a TGI profile's answer formats",
    )
    engine.add_argument(
        "--tensor-parallel-degree", type=int, help="accelerators of the copy; default: recommended"
    )
    engine.add_argument(
        "--input-tokens", type=int, default=512, help="sizes the KV cache and budgets (512)"
    )
    engine.add_argument(
        "--output-tokens", type=int, default=256, help="sizes the KV cache and budgets (256)"
    )
    add_max_batch_size_argument(engine)
    add_kv_cache_precision_argument(engine)
    add_engine_memory_share_argument(engine)
    engine.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="real seconds per simulated second (1: real time; 0.1: ten times faster)",
    )
    # None until given, so that a flag of the other mode is refused only when it was typed.
    parser.set_defaults(handler=run, **dict.fromkeys([*STEP_LAW_FLAGS, *ENGINE_FLAGS]))


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 2 on bad options or when the port is taken."""
    try:
        _check_mode_flags(args)
        config, port = simulator_cli.config_from_arguments(args)
        if args.model or args.parameters is not None:
            config = dataclasses.replace(config, engine=engine_of(args))
    except ValidationError as error:
        print(f"error: {flag_error(error, args)}", file=sys.stderr)
        return 2
    if config.engine is not None:
        print(f"serving {config.engine.describe()}", file=sys.stderr)
    return simulator_cli.serve_until_interrupted(config, port)


def _values(given: dict[str, Any]) -> Any:
    """The value of one flag, or the values of several, as an error shows them."""
    values = list(given.values())
    return values[0] if len(values) == 1 else values


def _check_mode_flags(args: argparse.Namespace) -> None:
    """Refuse the flags of the mode not served (those typed: the defaults are None until
    here), then fill the defaults of the others in ``args``."""
    engine = bool(args.model) or args.parameters is not None
    step_law = {flag: getattr(args, name) for name, flag in STEP_LAW_FLAGS.items()
                if getattr(args, name) is not None}  # fmt: skip
    engine_only = {flag: getattr(args, name) for name, (flag, _) in ENGINE_FLAGS.items()
                   if getattr(args, name) is not None}  # fmt: skip
    if engine and step_law:
        raise ValidationError(
            ", ".join(step_law),
            _values(step_law),
            "the step law's flags do not apply with --model: the engine simulation schedules "
            "and times the model (its request cap is --max-batch-size)",
            "drop them, or drop --model (and its flags) to serve the step law",
        )
    if not engine and engine_only:
        raise ValidationError(
            ", ".join(engine_only),
            _values(engine_only),
            "applies to the engine simulation, which serves only with --model; without it the "
            "step law serves (--max-batch, --step-base-s, ...)",
            "add --model (e.g. --model llama-3-8b --instance-type ml.g5.2xlarge), or drop them",
        )
    defaults = SimulatorConfig()
    for name in STEP_LAW_FLAGS:
        if getattr(args, name) is None:
            setattr(args, name, getattr(defaults, name))
    for name, (_, default) in ENGINE_FLAGS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def engine_of(args: argparse.Namespace) -> EngineSimulation:
    """The engine simulation the model options name."""
    if not args.instance_type:
        raise ValidationError(
            "--instance-type", None, "is required with --model", "pass e.g. ml.g5.2xlarge"
        )
    spec = model_spec(args)
    dtype = precision(args)
    instance_type = InstanceType.of(args.instance_type)
    workload = Workload(args.input_tokens, args.output_tokens)
    check_tensor_parallel_degree(instance_type, args.tensor_parallel_degree)
    engine = configured_engine(
        args.engine_memory_share, engine_choice(args.engine), instance_type.is_neuron
    )
    profile = profile_on(engine, instance_type, "--engine")
    degree = args.tensor_parallel_degree or recommended_tensor_parallel_degree(
        spec,
        instance_type,
        max_total_tokens=workload.total_tokens,
        precision=dtype,
        engine=profile,
    )
    if degree is None:
        raise ValidationError(
            "--instance-type",
            instance_type.name,
            f"{spec.name} fits at no tensor-parallel degree there",
            "use a larger instance type or quantization (--dtype int4)",
        )
    return EngineSimulation.of(
        spec,
        instance_type,
        profile,
        workload,
        tensor_parallel_degree=degree,
        precision=dtype,
        time_scale=args.time_scale,
        max_batch_size=args.max_batch_size,
        kv_cache=kv_cache_precision(args),
    )
