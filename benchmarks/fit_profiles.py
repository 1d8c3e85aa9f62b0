"""Fit the engine profiles to the published measurements and store the fit in the profile files.

    python benchmarks/fit_profiles.py          # rewrite planning/engine_profiles/*.json
    python benchmarks/fit_profiles.py --check  # exit 1 when they differ from a fresh fit

For every profile with rows in ``benchmarks/measurements/rows.csv`` (the row's engine and version
choose the profile: ``engine_profiles.row_profile_name``):

1. the efficiencies and overheads (``profile_fitting.FITTED_PARAMETERS``) are fitted to all its
   rows: least squares on ln(measured / predicted) of ms/token, inter-token latency, TTFT and
   tokens/s, by coordinate descent on fixed grids starting from the profile's hand-set
   ``prior``; a profile with fewer than ``MIN_ROWS_TO_FIT`` rows keeps its prior, and a
   parameter no row of the profile can identify (``profile_fitting.IDENTIFIED_BY``: bandwidth
   efficiency and per-step overheads need single-request latency rows, the TP terms a sweep
   over TP degrees) keeps its prior too, listed under ``kept_at_prior`` with the reason;
   a fit no leave-one-source-out fold can repeat (leaving one of the profile's sources out
   leaves fewer than ``MIN_ROWS_TO_FIT`` rows) is not shipped: the profile keeps its prior,
   which is what its held-out residuals measure, every parameter listed under
   ``kept_at_prior``, ``fitted`` null (its band is widened as an unfitted engine);
2. the residual quantiles the prediction band comes from are leave-one-source-out: each
   source's rows are predicted by the profile fitted without that source;
3. the fitted range (GPUs, TP degrees, model sizes, prompt lengths, sources) is stored, so a
   prediction outside it says it extrapolates and widens its band.

Sources in ``profile_fitting.VALIDATION_ONLY_SOURCES`` are left out of every fit (each with its
reason, printed): ``model_validation.py`` scores the profiles on them.

The held-out source of issue 17 (the AWS ML Blog JumpStart benchmark post, January 2024) is
never read: ``profile_fitting.load_rows`` refuses a row that cites it. Deterministic: the same
rows give byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_fitting as pf

from cdk_sagemaker_llm.planning.efficiency import Efficiency
from cdk_sagemaker_llm.planning.engine_profiles import (
    PROFILE_NAMES,
    EngineProfile,
    engine_profile,
)

PROFILE_DIR = (
    Path(__file__).resolve().parent.parent / "cdk_sagemaker_llm" / "planning" / "engine_profiles"
)


RESIDUALS_SOURCE = (
    "leave-one-source-out residuals ln(measured / predicted) of "
    "benchmarks/measurements/rows.csv (benchmarks/fit_profiles.py)"
)


UNCHECKED_RESIDUALS_SOURCE = (
    "leave-one-source-out residuals ln(measured / predicted) of the profile's prior on its rows "
    "of benchmarks/measurements/rows.csv (benchmarks/fit_profiles.py); too few rows to "
    "cross-validate a fit, so the prior is kept and widened as not fitted"
)


def _residuals_document(
    own_held: list[pf.HeldOutPrediction], source: str, held: list[pf.HeldOutPrediction]
) -> dict:
    """A profile's held-out residuals as its JSON stores them: its own rows' residuals, or the
    pooled residuals of the fitted profiles where its own are too few (``pooled``)."""
    residuals = pf.residuals_of(own_held, source, [h for h in held if h.fitted])
    document: dict = {
        "ms_per_token": residuals.ms_per_token.to_dict(),
        "tokens_per_s": residuals.tokens_per_s.to_dict(),
        "rows": residuals.rows,
        "source": source,
    }
    if residuals.pooled:
        document["pooled"] = list(residuals.pooled)
        document["pooled_source"] = residuals.pooled_source
    return document


def fitted_document(
    name: str, rows: list[pf.Row], held: list[pf.HeldOutPrediction], bounded: bool = False
) -> dict:
    """The profile's JSON document with the fit of ``rows`` (``bounded``: within the physical
    ceilings) and the residuals of ``held``."""
    path = PROFILE_DIR / f"{name}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    profile = engine_profile(name)
    own = [row for row in rows if row.profile == name]
    efficiency, trained, fitted = pf.fit(own, profile, bounded)
    own_held = [h for h in held if h.row.profile == name]
    # A fit no fold could repeat without one of its sources is not cross-validated: the
    # residuals below would measure the prior, not it. Ship the prior they measure.
    unchecked = fitted and not all(h.fitted for h in own_held)
    if unchecked:
        efficiency, trained, fitted = pf.prior_efficiency(profile), pf.prior_profile(profile), False
    if "prior_kernels" not in document:
        document["prior_kernels"] = document["kernels"]
    document["kernels"] = _fitted_kernels(document["prior_kernels"], trained, own, fitted)
    document["efficiency"] = {
        "memory_bandwidth": efficiency.memory_bandwidth,
        "decode_compute": efficiency.decode_compute,
        "prefill_compute": efficiency.prefill_compute,
    }
    if "kv_reread_share" in document["prior"]:
        document["efficiency"]["kv_reread_share"] = round(efficiency.kv_reread_share, 2)
    document["overhead"] = {
        "base_ms": efficiency.step_overhead_ms,
        "per_layer_ms": efficiency.per_layer_ms,
        "per_layer_per_extra_rank_ms": round(efficiency.per_layer_per_extra_rank_ms, 4),
        "per_extra_rank_ms": efficiency.per_extra_rank_ms,
        "all_reduce_scale": efficiency.all_reduce_scale,
        "per_sequence_ms": efficiency.per_sequence_ms,
        **(
            {"rank_cost_over_nvlink": efficiency.rank_cost_over_nvlink}
            if "rank_cost_over_nvlink" in document["prior"]
            else {}
        ),
        "per_sequence_source": _per_sequence_source(document["prior"], efficiency, own),
    }
    if "per_layer_source" in document["prior"]:
        document["overhead"]["per_layer_source"] = _per_layer_source(
            document["prior"], efficiency, own
        )
    document.pop("physical_bounds", None)
    if fitted:
        document["physical_bounds"] = _bounds_document(own, efficiency)
    _, kept = pf.identified(own, profile)
    document.pop("kept_at_prior", None)
    if fitted and kept:
        document["kept_at_prior"] = kept
    if unchecked:
        document["kept_at_prior"] = {
            parameter: f"kept at the prior: leaving one of its {len({r.source for r in own})} "
            f"sources out leaves fewer than {pf.MIN_ROWS_TO_FIT} rows, so no fit of its "
            f"{len(own)} rows can be cross-validated"
            for parameter in pf.FITTED_PARAMETERS
        }
        document["residuals"] = _residuals_document(own_held, UNCHECKED_RESIDUALS_SOURCE, held)
        document["fitted"] = None
    elif fitted and own_held:
        document["residuals"] = _residuals_document(own_held, RESIDUALS_SOURCE, held)
        covered = pf.fitted_range(own)
        document["fitted"] = {
            "by": "benchmarks/fit_profiles.py",
            "rows": covered.rows,
            "sources": list(covered.sources),
            "gpus": list(covered.gpus),
            "tensor_parallel_degrees": list(covered.tensor_parallel_degrees),
            "parameters_billion": list(covered.parameters_billion),
            "input_tokens": list(covered.input_tokens),
        }
    else:
        ms, tokens = pf.residual_quantiles(held)
        fitted_names = sorted({h.row.profile for h in held})
        document["residuals"] = {
            "ms_per_token": ms.to_dict(),
            "tokens_per_s": tokens.to_dict(),
            "rows": len(held),
            "source": "no measurements of this engine: the pooled leave-one-source-out "
            f"residuals of the fitted profiles ({', '.join(fitted_names)}); every prediction "
            "with this profile is widened as extrapolated (engine not fitted)",
        }
        document["fitted"] = None
    return document


def _bounds_document(own: list[pf.Row], efficiency: Efficiency) -> dict:
    """Each efficiency's physical ceiling on the profile's rows (``pf.physical_bounds``), and
    where the fit went past it (``pf.exceeded_bounds``): there the model is missing a term."""
    exceeded = pf.exceeded_bounds(own, efficiency)
    return {
        name: {
            "ceiling": bound.value,
            "set_by": bound.gpu,
            "source": bound.source,
            "fitted": getattr(efficiency, name),
        }
        | ({"exceeded": exceeded[name]} if name in exceeded else {})
        for name, bound in pf.physical_bounds(own).items()
    }


def _fitted_kernels(
    priors: dict, trained: EngineProfile, own: list[pf.Row], fitted: bool
) -> dict[str, dict]:
    """Each quantized kernel's JSON: its prior, with the speeds the fit moved and where they
    now come from (the rows they were fitted to, then the prior's reason)."""
    kernels: dict[str, dict] = {}
    for kernel_name, prior in priors.items():
        kernel = trained.kernels[kernel_name]
        count = sum(row.precision.value == kernel_name for row in own)

        def moved(prior_value: str, reason: str, name: str = kernel_name, n: int = count) -> str:
            return (
                f"fitted to {n} {name} rows of benchmarks/measurements/rows.csv "
                f"(benchmarks/fit_profiles.py); prior {prior_value}: {reason}"
            )

        kernels[kernel_name] = dict(prior)
        if fitted and kernel.weight_read != prior["weight_read"]:
            kernels[kernel_name] |= {
                "weight_read": kernel.weight_read,
                "compute": kernel.compute,
                "source": moved(f"{prior['weight_read']}", prior["source"]),
            }
        if fitted and kernel.compute != prior["compute"]:
            kernels[kernel_name] |= {
                "compute": kernel.compute,
                "compute_source": moved(f"{prior['compute']:g}", prior["compute_source"]),
            }
        if fitted and kernel.per_layer_ms != prior.get("per_layer_ms", 0.0):
            kernels[kernel_name] |= {
                "per_layer_ms": kernel.per_layer_ms,
                "per_layer_source": moved(
                    f"{prior['per_layer_ms']:g} ms", prior["per_layer_source"]
                ),
            }
    return kernels


def _per_layer_source(prior: dict, efficiency: Efficiency, own: list[pf.Row]) -> str:
    """Why the step costs per layer: the prior's reason, and the fit's value when it moved."""
    if efficiency.per_layer_ms == prior["per_layer_ms"]:
        return str(prior["per_layer_source"])
    return (
        f"fitted to {len(own)} rows of benchmarks/measurements/rows.csv "
        f"(benchmarks/fit_profiles.py); prior {prior['per_layer_ms']:g} ms: "
        f"{prior['per_layer_source']}"
    )


def _per_sequence_source(prior: dict, efficiency: Efficiency, own: list[pf.Row]) -> str:
    """Where the host per-sequence cost comes from: the prior's citation, or the fit and it."""
    if efficiency.per_sequence_ms == prior["per_sequence_ms"]:
        return str(prior["per_sequence_source"])
    return (
        f"fitted to {len(own)} rows of benchmarks/measurements/rows.csv "
        f"(benchmarks/fit_profiles.py); prior {prior['per_sequence_ms']:g} ms: "
        f"{prior['per_sequence_source']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument(
        "--bounded",
        action="store_true",
        help="fit each efficiency within its physical ceiling (not shipped: benchmarks/README.md)",
    )
    args = parser.parse_args(argv)
    rows, skipped = pf.load_rows()
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    for source, why in pf.VALIDATION_ONLY_SOURCES.items():
        print(f"not fitted to {source}: {why}", file=sys.stderr)
    rows = [row for row in rows if pf.trains(row)]
    held = pf.leave_one_source_out(
        rows,
        progress=lambda text: print(text, file=sys.stderr, flush=True),
        bounded=args.bounded,
    )
    different = []
    for name in PROFILE_NAMES:
        document = fitted_document(name, rows, held, args.bounded)
        text = json.dumps(document, indent=2) + "\n"
        path = PROFILE_DIR / f"{name}.json"
        if path.read_text(encoding="utf-8") != text:
            different.append(name)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    print(("differ: " if args.check else "rewrote: ") + (", ".join(different) or "none"))
    return 1 if args.check and different else 0


if __name__ == "__main__":
    sys.exit(main())
