"""The ``cdk-sagemaker-llm`` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ._version import __version__
from .commands import COMMAND_MODULES


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="cdk-sagemaker-llm",
        description="Plan, size and benchmark LLM deployments built with cdk-sagemaker-llm.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.commands.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code.

    A reader that stops early (``cdk-sagemaker-llm size ... | head -1``) ends the command
    quietly with exit code 1, as the Python documentation advises for SIGPIPE ("Note on
    SIGPIPE", ``signal`` module): the rest of the output goes to ``os.devnull`` so that the
    interpreter's final flush raises no second ``BrokenPipeError``.
    """
    try:
        try:
            code = _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe raises here, inside the try, not at exit
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return code


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    return int(handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
