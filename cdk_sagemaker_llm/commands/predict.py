"""``cdk-sagemaker-llm predict``: per-token latency, TTFT and throughput of a layout at several
concurrencies, from the performance model (optionally calibrated by a benchmark)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..errors import ValidationError
from ..planning.calibrated_band import with_calibrated_bands
from ..planning.calibration import AppliedCalibration, Calibration, EngineRelease
from ..planning.calibration_fit import calibrate, deployment_of
from ..planning.engine_profiles import EngineProfile, parse_engine, profile_on
from ..planning.optimizations import Optimization
from ..planning.performance import (
    INVOCATION_TIMEOUT_S,
    Layout,
    MeasuredEfficiency,
    Prediction,
    Workload,
    predict,
)
from ..planning.scheduling.prediction import with_simulated_levels
from ..planning.sizing import recommended_tensor_parallel_degree
from .calibrate import (
    add_calibration_arguments,
    benchmarked_engine,
    calibration_of,
    merge_flags,
    model_of_results,
)
from .model_options import (
    WORKLOAD_FLAGS,
    add_engine_memory_share_argument,
    add_kv_cache_precision_argument,
    add_max_batch_size_argument,
    add_model_arguments,
    catalog_instance_type,
    check_tensor_parallel_degree,
    configured_engine,
    flag_error,
    int_list,
    jumpstart_engine,
    kv_cache_precision,
    model_spec,
    precision,
)


def register(subparsers: Any) -> None:
    """Add the ``predict`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "predict",
        help="predict ms/token, TTFT and tokens/s of a layout at several concurrencies",
        description="Predict a deployment's per-token latency, time to first token and "
        "throughput from first principles (memory bandwidth, FLOPS, interconnect, KV cache, "
        "60 s timeout). Concurrency is for the whole deployment (instances x copies). Pass a "
        "calibration file (`cdk-sagemaker-llm calibrate`) with --calibration to use measured "
        "efficiency factors; a benchmark's results.json there is fitted to the deployment it "
        "states, which the flags may complete but not contradict (as in calibrate).",
    )
    add_model_arguments(parser)
    parser.add_argument("--instance-type", required=True, help="e.g. ml.p4d.24xlarge")
    parser.add_argument(
        "--tensor-parallel-degree", type=int, help="accelerators per copy; default: recommended"
    )
    parser.add_argument(
        "--copies", type=int, help="copies per instance; default: every accelerator used"
    )
    parser.add_argument("--instance-count", type=int, default=1, help="default 1")
    parser.add_argument("--input-tokens", type=int, required=True)
    parser.add_argument("--output-tokens", type=int, required=True)
    parser.add_argument(
        "--concurrency", type=int_list, required=True, help="whole deployment, e.g. 1,2,4,8,16"
    )
    add_max_batch_size_argument(parser)
    parser.add_argument(
        "--optimization",
        help="predict the model served optimized: awq, fp8 or speculative-decoding (an EAGLE "
        "head); the assumptions name the optimization job it needs",
    )
    add_kv_cache_precision_argument(parser)
    add_engine_memory_share_argument(parser)
    add_calibration_arguments(parser)
    parser.add_argument(
        "--simulate-scheduler",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time each level and the knee with a discrete-event simulation of the engine's "
        "scheduler (prefill stalls, token budgets, request caps, queueing: "
        "planning.scheduling) instead of the closed form; slower (about 0.1-1 s per level). "
        "Default: on where the --calibration was fitted through the simulation (its notes say "
        "so), off otherwise",
    )
    parser.add_argument("--format", choices=("json", "markdown"), default="markdown")
    parser.set_defaults(handler=run)


def engine_choice(text: str | None) -> EngineRelease | EngineProfile | None:
    """``--engine``: an engine profile name (``tgi-1``, ``lmi-vllm-v1`` ...) or the container
    ``FAMILY[:VERSION]`` (which also chooses the profile), as ``planning.engine_profiles.
    parse_engine`` reads them; None when not given."""
    if text is None:
        return None
    parsed = parse_engine(text)
    if isinstance(parsed, EngineProfile):
        return parsed
    family, version = parsed
    return EngineRelease(family.value, version)


def engine_of(args: argparse.Namespace) -> EngineRelease | EngineProfile | None:
    """``--engine`` (``engine_choice``), else a JumpStart ``--model``'s serving image
    (``model_options.jumpstart_engine``), else None (the default profile)."""
    if args.engine is not None:
        return engine_choice(str(args.engine))
    return jumpstart_engine(args)


PREDICT_MISMATCH_FIX = (
    "predict the benchmarked layout, pass results of this one, or calibrate them "
    "(`cdk-sagemaker-llm calibrate RESULTS --out calibration.json`) and pass that file, which "
    "transfers to other layouts"
)
"""The fix for a flag that contradicts a results file's deployment."""


def _calibration(
    path: str | None,
    engine: EngineRelease | EngineProfile | None,
    spec: ModelSpec,
    layout: Layout,
    args: argparse.Namespace,
) -> MeasuredEfficiency | None:
    """The ``--calibration`` file applied to this target (``Calibration.applied_to``); a
    benchmark's results.json (the earlier form of the flag) is fitted to the deployment it
    states, which the flags may fill but not contradict (``calibrate``'s check)."""
    if path is None:
        return None
    # A profile name says nothing about the calibrated release; it is checked as a profile.
    profile = engine if isinstance(engine, EngineProfile) else None
    release = engine if isinstance(engine, EngineRelease) else None
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValidationError(
            "--calibration",
            path,
            f"cannot be read: {error}",
            "pass the file `cdk-sagemaker-llm calibrate --out` wrote",
        ) from error
    if isinstance(document, dict) and "levels" in document and "format" not in document:
        calibration = _fitted(document, path, release, spec, layout, args)
    else:
        calibration = calibration_of(document, path)
    if profile is not None:
        calibration.check_profile(profile)
    return calibration.applied_to(spec, layout.instance_type, engine=release)


def _fitted(
    document: dict[str, Any],
    path: str,
    release: EngineRelease | None,
    spec: ModelSpec,
    layout: Layout,
    args: argparse.Namespace,
) -> Calibration:
    """A results document fitted to the deployment it states (its engine's memory share and
    KV cache precision too, where a deploy-time benchmark wrote them), gaps filled by the
    target."""
    dtype = precision(args)
    stated = deployment_of(document)
    model: str | None = spec.name
    if "model" in stated and _same_model(stated, spec):
        model = None  # another name of this model (a Hugging Face id for a preset)
    stated_dtype = stated.get("precision")
    same_dtype = stated_dtype is not None and _precision_of(stated_dtype) is dtype
    merged = merge_flags(
        document,
        path,
        model=model,
        instance_type=layout.instance_type.name,
        tensor_parallel_degree=args.tensor_parallel_degree,
        engine=release,
        dtype=None if same_dtype else args.dtype,
        fix=PREDICT_MISMATCH_FIX,
    )
    degree = merged["tensor_parallel_degree"] or layout.tensor_parallel_degree
    check_tensor_parallel_degree(layout.instance_type, degree)
    copies = merged["copies"] or layout.copies
    fitted = Layout(layout.instance_type, int(degree), 1, int(copies))
    return calibrate(
        document,
        spec,
        fitted,
        dtype,
        source=Path(path).name,
        engine=benchmarked_engine(merged, layout.instance_type, None, path)
        if merged["engine"] is not None
        else None,
        kv_cache_precision=merged["kv_cache_precision"] or kv_cache_precision(args),
    )


def _same_model(stated: dict[str, Any], spec: ModelSpec) -> bool:
    try:
        return model_of_results(stated, str(stated["model"])).name == spec.name
    except ValidationError:
        return False


def _precision_of(name: object) -> Precision | None:
    try:
        return Precision.of(str(name))
    except ValidationError:
        return None


def _calibrated_engine(applied: MeasuredEfficiency) -> EngineRelease | None:
    """The engine an applied calibration measured (None when it does not say)."""
    return applied.calibration.engine if isinstance(applied, AppliedCalibration) else None


def run(args: argparse.Namespace) -> int:
    """Print the prediction; exit 0, or 2 on bad input."""
    try:
        spec = model_spec(args)
        dtype = precision(args)
        instance_type = catalog_instance_type("--instance-type", args.instance_type)
        workload = Workload(args.input_tokens, args.output_tokens)
        kv_cache = kv_cache_precision(args)
        check_tensor_parallel_degree(instance_type, args.tensor_parallel_degree)
        engine = engine_of(args)
        degree = args.tensor_parallel_degree or recommended_tensor_parallel_degree(
            spec,
            instance_type,
            max_total_tokens=workload.total_tokens,
            precision=dtype,
            engine=profile_on(
                configured_engine(args.engine_memory_share, engine, instance_type.is_neuron),
                instance_type,
                "--engine",
            ),
        )
        if degree is None:
            raise ValidationError(
                "--instance-type",
                instance_type.name,
                f"{spec.name} fits at no tensor-parallel degree there",
                "use a larger instance type or quantization (--dtype int4)",
            )
        copies = (
            max(1, instance_type.accelerator_devices // degree)
            if args.copies is None
            else args.copies
        )
        layout = Layout(instance_type, degree, copies, args.instance_count)
        calibration = _calibration(args.calibration, engine, spec, layout, args)
        if engine is None and calibration is not None:
            engine = _calibrated_engine(calibration)  # assumed (its notes say so): its profile
        engine = configured_engine(args.engine_memory_share, engine, instance_type.is_neuron)
        prediction = predict(
            spec,
            layout,
            workload,
            args.concurrency,
            precision=dtype,
            calibration=calibration,
            max_batch_size=args.max_batch_size,
            engine=engine,
            optimization=Optimization.of(args.optimization) if args.optimization else None,
            kv_cache_precision=kv_cache,
        )
        simulated = _simulates(calibration, args)
        if simulated:
            prediction = _simulated(prediction, spec, dtype, kv_cache, calibration, args)
        if isinstance(calibration, AppliedCalibration):
            release = engine if isinstance(engine, EngineRelease) else None
            prediction = with_calibrated_bands(
                prediction, calibration, spec, dtype, release, kv_cache, simulated=simulated
            )
    except ValidationError as error:
        print(f"error: {_flag_error(error, args)}", file=sys.stderr)
        return 2
    for note in getattr(calibration, "warnings", []):
        print(f"warning: {note}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(prediction.to_dict(), indent=2))
    else:
        sys.stdout.write(render_markdown(spec.name, prediction))
    return 0


def _simulates(calibration: MeasuredEfficiency | None, args: argparse.Namespace) -> bool:
    """Whether the levels are timed through the scheduler simulation: as ``--simulate-scheduler``
    says, or by default where the calibration's factors were fitted through it (the closed
    form times them otherwise; an optimized model is not simulated)."""
    if args.simulate_scheduler is not None:
        return bool(args.simulate_scheduler)
    fitted = isinstance(calibration, AppliedCalibration) and (
        calibration.calibration.simulated_rms_error is not None
    )
    return fitted and not args.optimization


def _simulated(
    prediction: Prediction,
    spec: ModelSpec,
    dtype: Precision,
    kv_cache: KvCachePrecision,
    calibration: MeasuredEfficiency | None,
    args: argparse.Namespace,
) -> Prediction:
    """``--simulate-scheduler``: the prediction's levels and knee from the simulation."""
    if args.optimization:
        raise ValidationError(
            "--simulate-scheduler",
            True,
            f"does not simulate an optimized model (--optimization {args.optimization})",
            "drop one of the two flags",
        )
    simulated = with_simulated_levels(
        prediction,
        spec,
        dtype,
        efficiency=calibration.efficiency if calibration is not None else None,
        max_batch_size=args.max_batch_size,
        kv_cache=kv_cache,
    )
    if args.simulate_scheduler is not None:
        return simulated
    why = (
        "simulated because the calibration's factors were fitted through the scheduler "
        "simulation; --no-simulate-scheduler times the levels in closed form"
    )
    return replace(simulated, assumptions=[*simulated.assumptions, why])


def _flag_error(error: ValidationError, args: argparse.Namespace) -> ValidationError:
    """``error`` naming the flag to change; a layout that does not fit names the degree the
    user gave (or the instance type), with the layout in the problem."""
    if error.prop == "layout":
        flag = "--tensor-parallel-degree" if args.tensor_parallel_degree else "--instance-type"
        value = args.tensor_parallel_degree or args.instance_type
        return ValidationError(flag, value, f"{error.value}: {error.problem}", error.fix)
    aliases = {"copies_per_instance": "--copies", "precision": "--dtype"}
    return flag_error(error, args, {**aliases, "workload": WORKLOAD_FLAGS})


def render_markdown(model: str, prediction: Prediction) -> str:
    """The prediction as a Markdown table with its bands, knee, limit and assumptions."""
    layout, workload = prediction.layout, prediction.workload
    calibrated = prediction.calibrated_band is not None
    lines = [
        f"### Predicted: {model} on {layout.describe()}",
        "",
        f"{workload.input_tokens} input + {workload.output_tokens} output tokens per request; "
        "concurrency for the whole deployment.",
        "",
        "| concurrency | regime | ms/token | ms/token p10-p90 | TTFT ms | tokens/s "
        "| tokens/s p10-p90 | requests/s |"
        + (" calibrated ms/token p10-p90 | calibrated tokens/s p10-p90 |" if calibrated else ""),
        "|---:|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if calibrated else ""),
    ]
    for level in prediction.levels:
        regime = level.regime or "-"
        if level.times_out:
            regime += f", past the {INVOCATION_TIMEOUT_S:g} s timeout"
        line = (
            f"| {level.concurrency} | {regime} | {level.ms_per_token:.1f} | "
            f"{_range(level.ms_per_token_band, '.1f')} | {level.ttft_ms:.0f} | "
            f"{level.tokens_per_s:.0f} | {_range(level.tokens_per_s_band, '.0f')} | "
            f"{level.requests_per_s:.2f} |"
        )
        if calibrated:
            line += (
                f" {_range(level.calibrated_ms_per_token_band, '.1f')} | "
                f"{_range(level.calibrated_tokens_per_s_band, '.0f')} |"
            )
        lines.append(line)
    lines += ["", *_band_lines(prediction)]
    late = [str(level.concurrency) for level in prediction.levels if level.times_out]
    if late:
        lines += [
            "",
            f"**Past the {INVOCATION_TIMEOUT_S:g} s invocation timeout** at concurrency "
            f"{', '.join(late)}: one request takes longer than SageMaker allows an invocation, "
            "so those requests fail; the figures are what the copy would do, not what clients "
            "receive.",
        ]
    lines += [
        "",
        f"**Knee:** {prediction.knee.concurrency} ({prediction.knee.detail})",
        f"**Max concurrency:** {prediction.max_concurrency} ({prediction.max_concurrency_reason})",
        "",
        "Assumptions:",
        *(f"- {line}" for line in prediction.assumptions),
        "",
    ]
    return "\n".join(lines)


def _range(band: tuple[float, float] | None, spec: str) -> str:
    """``low-high`` of a band, or ``-`` where the level has none."""
    return "-" if band is None else f"{band[0]:{spec}}-{band[1]:{spec}}"


def _band_lines(prediction: Prediction) -> list[str]:
    """Where the bands come from: the conformal band's distance, the calibrated band's basis
    (or why no level is narrowed), and the engine profile's residuals sizing takes its
    factors from (their median, their slowest for ``Risk.WORST_CASE``)."""
    reasons = prediction.extrapolation
    lines = [
        f"**Band (p10-p90):** conformal, by load regime and {len(reasons)} extrapolation "
        "reasons" + (f" ({'; '.join(reasons)})" if reasons else "") + "."
    ]
    calibrated = prediction.calibrated_band
    if calibrated is not None:
        if calibrated.basis is not None:
            lines.append(f"**Calibrated band:** {calibrated.describe()}")
        else:
            lines.append(
                "**Calibrated band:** no level narrower than the engine profile's: "
                + "; ".join(calibrated.reasons[-1:])
            )
    if prediction.band is not None:
        lines.append(
            f"**Engine:** {prediction.engine}; **sizing factors:** {prediction.band.describe()}"
        )
    return lines
