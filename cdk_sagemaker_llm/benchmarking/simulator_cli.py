"""The loopback simulator on the command line: its options (one per ``SimulatorConfig`` field,
shared by ``cdk-sagemaker-llm simulate``) and serving on 127.0.0.1 until interrupted. Run as
``python -m cdk_sagemaker_llm.benchmarking.simulator_cli``; it prints its URL."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import sys
from typing import Any

from ..errors import ValidationError
from .simulator import Simulator
from .simulator_config import ROUTINGS, SimulatorConfig

_OPTION_HELP = {
    "response_format": "container whose inputs-API answers are served: lmi (jsonlines stream, "
    "one object) or tgi (server-sent events, a one-element list); both serve the messages API",
    "max_batch": "requests decoded together; more wait in the queue",
    "step_base_s": "seconds one decode step takes with an empty batch",
    "step_per_sequence_s": "seconds added to a decode step per sequence in the batch",
    "prefill_per_input_token_s": "seconds added to the step a request joins, per input token",
    "max_queue": "waiting requests beyond which new ones get ThrottlingException (HTTP 429); "
    "default: no limit",
    "invocation_timeout_s": "seconds after arrival at which an unfinished request fails "
    "(SageMaker's limit is 60)",
    "model_error_every": "fail every N-th invocation with ModelError (0: never)",
    "default_max_new_tokens": "output tokens when a request sets no max_new_tokens / max_tokens",
    "instances": "servers behind the endpoint, each with its own batch, queue and prefix cache",
    "routing": "least_outstanding, random or prefix_aware (SageMaker's RoutingStrategy)",
    "prefix_length": "prefix_aware: body bytes that pick the instance (PrefixLength)",
    "concurrency_threshold": "prefix_aware: requests in flight on the chosen instance beyond "
    "which a request goes to the least outstanding one (ConcurrencyThreshold)",
    "prefix_cache_blocks": "blocks each instance's prefix cache holds (0: no prefix cache)",
    "prefix_block_tokens": "prompt tokens of one cached block",
    "routing_seed": "seed of random routing and of least_outstanding's tie-breaks",
}


def add_arguments(parser: argparse.ArgumentParser, *, default_port: int = 0) -> None:
    """The simulator's options (``--port`` and one per :class:`SimulatorConfig` field),
    shared by ``python -m ...simulator_cli`` and ``cdk-sagemaker-llm simulate``."""
    parser.add_argument(
        "--port",
        type=int,
        default=default_port,
        help=f"port on 127.0.0.1 to listen on; 0 picks a free one (default {default_port})",
    )
    defaults = SimulatorConfig()
    for item in _cli_fields():
        value = getattr(defaults, item.name)
        flags = ["--" + item.name.replace("_", "-")]
        extra: dict[str, Any] = {}
        if item.name == "response_format":
            flags.append("--container")
            extra["choices"] = ("lmi", "tgi")
        if item.name == "routing":
            extra["choices"] = ROUTINGS
        kind = float if isinstance(value, float) else str if isinstance(value, str) else int
        parser.add_argument(
            *flags,
            type=kind,
            default=value,
            dest=item.name,
            help=_OPTION_HELP[item.name] + ("" if value is None else f" (default {value})"),
            **extra,
        )


def _cli_fields() -> list[dataclasses.Field[Any]]:
    """The config fields that are options (the engine simulation is built from a model's)."""
    return [item for item in dataclasses.fields(SimulatorConfig) if item.name != "engine"]


def config_from_arguments(args: argparse.Namespace) -> tuple[SimulatorConfig, int]:
    """The :class:`SimulatorConfig` and port that :func:`add_arguments`'s options name."""
    values = {item.name: getattr(args, item.name) for item in _cli_fields()}
    if not 0 <= args.port <= 65535:
        raise ValidationError("--port", args.port, "is not a TCP port", "pass 0 to 65535")
    try:
        return SimulatorConfig(**values), args.port
    except ValidationError as error:  # a field's flag, as written on the command line
        flag = "--" + error.prop.replace("_", "-")
        raise ValidationError(flag, error.value, error.problem, error.fix) from None


def serve_until_interrupted(config: SimulatorConfig, port: int) -> int:
    """Serve on 127.0.0.1 until interrupted (Ctrl-C or SIGTERM); prints the URL on the first
    line of stdout once listening. Returns the exit code."""
    import signal

    simulator = Simulator(config, port=port)

    async def run() -> None:
        try:
            await simulator.serve()
        except OSError as error:  # the port is taken
            print(f"error: cannot listen on 127.0.0.1:{port}: {error.strerror}", file=sys.stderr)
            raise SystemExit(2) from None
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        print(simulator.endpoint_url, flush=True)  # after the handler: SIGTERM now stops cleanly
        await stop.wait()
        await simulator.aclose()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Serve a simulator on 127.0.0.1 until interrupted; prints its URL on the first line."""
    parser = argparse.ArgumentParser(
        description="A loopback SageMaker Runtime server that behaves like a "
        "continuous-batching LLM server."
    )
    add_arguments(parser)
    try:
        config, port = config_from_arguments(parser.parse_args(argv))
    except ValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return serve_until_interrupted(config, port)


if __name__ == "__main__":
    sys.exit(main())
