"""The ``benchmark`` command's workload flags: shared prefixes, multi-turn conversations, a
trace (replayed at its timestamps with ``--replay-speedup``) and the ``PrefixAwareId`` header."""

from __future__ import annotations

import argparse
from typing import Any

from ..benchmarking.benchmark_load import BenchmarkLoad
from ..benchmarking.goodput import DEFAULT_FRACTION, GoodputSlo
from ..planning.workload import DEFAULT_TRACE_BLOCK_TOKENS, Workload

DEFAULT_INPUT_TOKENS = 256
DEFAULT_OUTPUT_TOKENS = 128

_SHARED = ("shared_prefixes", "prefix_tokens", "requests_per_prefix")
_TURNS = ("conversations", "turns", "turn_tokens")


def _speedups(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected numbers, e.g. 1,2,4") from None


def add_arguments(parser: argparse.ArgumentParser, positive_int: Any) -> None:
    """Add the workload flags to ``benchmark``."""
    group = parser.add_argument_group(
        "workloads (default: every request alike, --input-tokens / --output-tokens)"
    )
    group.add_argument(
        "--shared-prefixes", type=positive_int, help="shared-prefix workload: distinct prefixes"
    )
    group.add_argument("--prefix-tokens", type=positive_int, help="tokens of each prefix")
    group.add_argument(
        "--requests-per-prefix", type=positive_int, help="requests sharing each prefix"
    )
    group.add_argument(
        "--suffix-tokens", type=positive_int, help="unique tokens after the prefix; default 32"
    )
    group.add_argument(
        "--conversations", type=positive_int, help="multi-turn workload: conversations"
    )
    group.add_argument("--turns", type=positive_int, help="turns of each conversation")
    group.add_argument("--turn-tokens", type=positive_int, help="new user tokens of each turn")
    group.add_argument(
        "--system-tokens", type=int, help="multi-turn: shared system prompt tokens; default 0"
    )
    group.add_argument(
        "--trace",
        help="JSONL trace (Mooncake format: timestamp ms, input_length, output_length, "
        "hash_ids): each request's own tokens",
    )
    group.add_argument(
        "--trace-block-tokens",
        type=positive_int,
        help=f"tokens of one trace hash_ids block; default {DEFAULT_TRACE_BLOCK_TOKENS}",
    )
    group.add_argument(
        "--replay-speedup",
        type=_speedups,
        help="replay --trace at its timestamps, open loop, one level per speedup (e.g. 1,2,4)",
    )
    group.add_argument(
        "--prefix-aware-id",
        help="send this PrefixAwareId header (prefix-aware routing) with every request",
    )


def problem(args: argparse.Namespace) -> str | None:
    """Why the workload flags do not go together, or None."""
    return _shape_problem(args) or _replay_problem(args)


def _shape_problem(args: argparse.Namespace) -> str | None:
    """Why the shape flags do not go together, or None."""
    shared = [name for name in _SHARED if getattr(args, name) is not None]
    turns = [name for name in _TURNS if getattr(args, name) is not None]
    shapes = [kind for kind, on in (("shared-prefix", shared), ("multi-turn", turns),
                                    ("trace", args.trace)) if on]  # fmt: skip
    incomplete = (
        (shared and len(shared) < len(_SHARED), "a shared-prefix workload needs "
         "--shared-prefixes, --prefix-tokens and --requests-per-prefix"),
        (turns and len(turns) < len(_TURNS),
         "a multi-turn workload needs --conversations, --turns and --turn-tokens"),
        (args.suffix_tokens is not None and not shared,
         "--suffix-tokens applies to a shared-prefix workload: give --shared-prefixes"),
        (args.system_tokens is not None and not turns,
         "--system-tokens applies to a multi-turn workload: give --conversations"),
        (args.trace_block_tokens is not None and not args.trace,
         "--trace-block-tokens applies to --trace"),
        (args.trace and args.output_tokens is not None,
         "a trace sets each request's output tokens: drop --output-tokens"),
    )  # fmt: skip
    if len(shapes) > 1:
        return f"give one workload shape, not {' and '.join(shapes)}"
    found = next((message for wrong, message in incomplete if wrong), None)
    if found is not None:
        return found
    if shapes and args.prompts:
        return f"a {shapes[0]} workload builds its own prompts: drop --prompts"
    if shapes and args.input_tokens is not None:
        return f"a {shapes[0]} workload sets its own input tokens: drop --input-tokens"
    return None


def _replay_problem(args: argparse.Namespace) -> str | None:
    """Why ``--replay-speedup`` does not go with the other flags, or None."""
    if args.replay_speedup is None:
        return None
    if not args.trace:
        return "--replay-speedup replays a trace: give --trace"
    for flag, value in (
        ("--concurrency", args.concurrency), ("--request-rate", args.request_rate),
        ("--search", args.search), ("--requests-per-level", args.requests_per_level),
        ("--duration-per-level", args.duration_per_level), ("--arrival", args.arrival),
        ("--seed", args.seed),
    ):  # fmt: skip
        if value is not None:
            return f"--replay-speedup sends the trace at its timestamps: drop {flag}"
    if args.client != "async":
        return "a replay is open loop: it needs the asyncio client (--client async)"
    return None


def workload(args: argparse.Namespace) -> Workload:
    """The workload the flags describe."""
    output = args.output_tokens or DEFAULT_OUTPUT_TOKENS
    if args.shared_prefixes is not None:
        return Workload.shared_prefix(
            prefixes=args.shared_prefixes,
            prefix_tokens=args.prefix_tokens,
            requests_per_prefix=args.requests_per_prefix,
            suffix_tokens=args.suffix_tokens or 32,
            output_tokens=output,
        )
    if args.conversations is not None:
        return Workload.multi_turn(
            conversations=args.conversations,
            turns=args.turns,
            turn_tokens=args.turn_tokens,
            output_tokens=output,
            system_tokens=args.system_tokens or 0,
        )
    if args.trace:
        return Workload.trace(
            args.trace, block_tokens=args.trace_block_tokens or DEFAULT_TRACE_BLOCK_TOKENS
        )
    return Workload(args.input_tokens or DEFAULT_INPUT_TOKENS, output)


def replay_load(args: argparse.Namespace) -> BenchmarkLoad | None:
    """The trace replay the flags ask for, or None."""
    if args.replay_speedup is None:
        return None
    slo = GoodputSlo(
        args.slo_ms_per_token, args.slo_ttft_ms, args.sustainable_fraction or DEFAULT_FRACTION
    )
    return BenchmarkLoad.trace_replay(
        args.replay_speedup, max_concurrency=args.max_concurrency, slo=slo
    )
