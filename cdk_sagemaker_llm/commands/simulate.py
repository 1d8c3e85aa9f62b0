"""``cdk-sagemaker-llm simulate``: the loopback SageMaker Runtime simulator, for trying the
benchmark command and the benchmarking API without an endpoint."""

from __future__ import annotations

import argparse
from typing import Any

from ..benchmarking import simulator

DEFAULT_PORT = 8080


def register(subparsers: Any) -> None:
    """Add the ``simulate`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "simulate",
        help="serve a simulated SageMaker endpoint on 127.0.0.1 (for `benchmark --endpoint-url`)",
        description="Serve a loopback SageMaker Runtime server that batches like an LLM "
        "container (InvokeEndpoint and InvokeEndpointWithResponseStream, any endpoint name, "
        "any dummy credentials) on 127.0.0.1 until Ctrl-C. Prints its URL on the first line. "
        "Each decode step emits one token per request in the batch and lasts STEP_BASE_S + "
        "STEP_PER_SEQUENCE_S x batch. GET /_simulator/truth returns what the server measured.",
    )
    simulator.add_arguments(parser, default_port=DEFAULT_PORT)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 2 when the port is taken."""
    config, port = simulator.config_from_arguments(args)
    return simulator.serve_until_interrupted(config, port)
