"""What each single-request row implies for a decode step's fixed cost, under a profile's model.

A row measured at one request in flight gives its end-to-end ms/token, which the closed form
splits into the prompt's prefill (spread over the output tokens), the step's weight and KV
reads, the host's per-sequence cost and the step's fixed cost (overhead and all-reduces). With
the model's own prefill and reads taken as given, what is left is the fixed cost the row
implies: a term the model lacks shows as an implied cost that moves with something the model
holds fixed (the prompt's length, the layers), which one fitted constant cannot follow.

Usage: ``python benchmarks/implied_step_cost.py [--profile tgi-1] [--precision fp16]``
(benchmarks/README.md, "PagedAttention V1's occupancy in TGI 1.0-1.1").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import profile_fitting as pf

from cdk_sagemaker_llm.planning.efficiency import efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile


@dataclass(frozen=True)
class ImpliedCost:
    """One single-request row: the model's parts of its ms/token and the fixed cost left."""

    row: pf.Row
    prefill_per_token_ms: float
    """The model's prefill of the prompt over the output tokens."""
    reads_ms: float
    """The model's weight and KV reads of one step at one sequence."""
    implied_ms: float
    """Measured ms/token less the model's prefill share, reads and host cost."""
    modelled_ms: float
    """The model's fixed cost of one step (overhead and all-reduces)."""


def implied_costs(rows: Sequence[pf.Row], profile_name: str, precision: str) -> list[ImpliedCost]:
    """The single-request closed-loop rows of ``profile_name`` at ``precision`` with a
    measured ms/token, each with the step cost it implies."""
    profile = engine_profile(profile_name)
    efficiency = efficiency_of(profile)
    found = []
    for row in rows:
        if (
            row.profile != profile_name
            or row.concurrency != 1
            or row.static_batch
            or row.ms_per_token is None
            or row.precision.value != precision
        ):
            continue
        model = row.model(profile, efficiency)
        prefill = model.prefill_s() * 1000 / row.output_tokens
        reads = model.memory_time_s(1) * 1000
        host = model.host_s(1) * 1000
        fixed = (model.overhead_s() + model.all_reduce_s(1)) * 1000
        found.append(
            ImpliedCost(row, prefill, reads, row.ms_per_token - prefill - reads - host, fixed)
        )
    return sorted(
        found,
        key=lambda c: (
            c.row.source,
            c.row.instance_type.name,
            c.row.model_name,
            c.row.input_tokens,
        ),
    )


def render(costs: Sequence[ImpliedCost]) -> str:
    """One Markdown table row per single-request row."""
    lines = [
        "| source | instance | TP | model | tokens in/out | measured ms/token | prefill / "
        "output token | reads | implied step cost | modelled |",
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for c in costs:
        row = c.row
        lines.append(
            f"| {row.source} | {row.instance_type.name} | {row.tensor_parallel_degree} | "
            f"{row.model_name} | {row.input_tokens}/{row.output_tokens} | "
            f"{row.ms_per_token:.1f} | {c.prefill_per_token_ms:.1f} | {c.reads_ms:.1f} | "
            f"{c.implied_ms:.1f} | {c.modelled_ms:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="tgi-1", help="engine profile (default tgi-1)")
    parser.add_argument("--precision", default="fp16", help="rows of this precision (fp16)")
    args = parser.parse_args(argv)
    rows, _ = pf.load_rows()
    costs = implied_costs(rows, args.profile, args.precision)
    if not costs:
        sys.stderr.write(f"no single-request {args.precision} rows of {args.profile}\n")
        return 1
    sys.stdout.write(render(costs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
