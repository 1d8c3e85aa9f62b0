"""The scheduler simulation against the closed form on the published measurements
(``benchmarks/measurements/rows.csv``): for every continuous-batching row at or above
``--min-concurrency`` in flight, ms/token and tokens/s by each, with the shipped profiles'
efficiencies (fitted to these rows: in sample, so this compares the two scheduling models over
the same step costs, it does not validate either out of sample; ``model_validation.py`` does).

    .venv/bin/python benchmarks/simulation_accuracy.py --min-concurrency 16
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_fitting as pf

from cdk_sagemaker_llm.errors import ValidationError
from cdk_sagemaker_llm.planning.efficiency import efficiency_of
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile
from cdk_sagemaker_llm.planning.scheduling.copy import simulate_copy
from cdk_sagemaker_llm.planning.scheduling.load import ClosedLoop


def _errors(rows: list[pf.Row]) -> dict[str, dict[str, list[float]]]:
    """ln(measured / predicted) per figure, for the closed form and the simulation."""
    found: dict[str, dict[str, list[float]]] = {
        "closed": {"ms_per_token": [], "tokens_per_s": []},
        "simulated": {"ms_per_token": [], "tokens_per_s": []},
    }
    for row in rows:
        profile = row.as_run(engine_profile(row.profile))
        model = row.model(profile)
        closed = pf.predict_row(row, profile, efficiency_of(profile))
        try:
            result = simulate_copy(
                model, profile, ClosedLoop(row.concurrency, rounds=4), batch=row.batch
            )
        except ValidationError:
            continue
        simulated = (result.mean("ms_per_token"), result.tokens_per_s)
        for name, measured, c_value, s_value in (
            ("ms_per_token", row.ms_per_token, closed.ms_per_token, simulated[0]),
            ("tokens_per_s", row.tokens_per_s, closed.tokens_per_s, simulated[1]),
        ):
            if measured is None or not s_value or math.isnan(s_value):
                continue
            found["closed"][name].append(math.log(measured / c_value))
            found["simulated"][name].append(math.log(measured / s_value))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--min-concurrency", type=int, default=16)
    args = parser.parse_args()
    rows, _ = pf.load_rows()
    chosen = [r for r in rows if not r.static_batch and r.concurrency >= args.min_concurrency]
    found = _errors(chosen)
    print(f"{len(chosen)} rows at >= {args.min_concurrency} in flight (continuous batching)")
    print("| model | figure | rows | median abs error | p90 abs error |")
    print("|---|---|---:|---:|---:|")
    for kind, figures in found.items():
        for name, values in figures.items():
            if not values:
                continue
            errors = [abs(math.exp(-v) - 1) for v in values]  # |predicted / measured - 1|
            p90 = statistics.quantiles(errors, n=10, method="inclusive")[-1]
            print(
                f"| {kind} | {name} | {len(values)} | {statistics.median(errors):.1%} | {p90:.1%} |"
            )


if __name__ == "__main__":
    main()
