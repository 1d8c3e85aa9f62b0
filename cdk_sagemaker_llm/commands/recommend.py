"""``cdk-sagemaker-llm recommend``: the cheapest instance type x TP degree x copies x instance
count that meets a latency SLO at a traffic, from the performance model."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from ..catalog.instance_types import InstanceType
from ..catalog.prices import DEFAULT_PRICE_LIST
from ..errors import ValidationError
from ..planning.decider import decide, no_option_error
from ..planning.optimizations import Optimization
from ..planning.performance import Workload
from ..planning.recommend import (
    Option,
    Recommendation,
    RejectionKind,
    Slo,
    Traffic,
    recommend,
)
from ..planning.service_decision import ServiceDecision
from ..planning.service_options import PriceBasis, Pricing, Risk, SearchSpace, Sizing
from ..planning.service_request import ExpectedTraffic, ServiceRequest, with_minimum
from .calibrate import add_calibration_arguments, load_calibration
from .model_options import (
    WORKLOAD_FLAGS,
    add_engine_memory_share_argument,
    add_kv_cache_precision_argument,
    add_max_batch_size_argument,
    add_model_arguments,
    catalog_instance_type,
    configured_engine,
    flag_error,
    kv_cache_precision,
    model_spec,
    precision,
)
from .predict import engine_of


def register(subparsers: Any) -> None:
    """Add the ``recommend`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "recommend",
        help="recommend the cheapest layout (instance type, TP, copies, count) meeting an SLO",
        description="Search instance type x tensor-parallel degree x copies per instance x "
        "instance count for the layouts that serve the traffic within the SLO (performance "
        "model; Little's law for a request rate), and rank them by price per hour, then by "
        "cost per 1M output tokens. Exit 0 with at least one option, 1 with none, 2 on bad "
        "input.",
    )
    add_model_arguments(parser)
    parser.add_argument("--input-tokens", type=int, required=True)
    parser.add_argument("--output-tokens", type=int, required=True)
    parser.add_argument(
        "--max-ms-per-token",
        type=float,
        help="per-token latency limit (end-to-end latency / output tokens); this, "
        "--max-ttft-ms or both",
    )
    parser.add_argument(
        "--max-ttft-ms", type=float, help="time-to-first-token limit; alone, a TTFT-only SLO"
    )
    traffic = parser.add_mutually_exclusive_group(required=True)
    traffic.add_argument("--requests-per-second", type=float, help="expected request rate")
    traffic.add_argument("--concurrency", type=int, help="expected in-flight requests")
    parser.add_argument(
        "--minimum",
        type=float,
        default=0,
        help="the least traffic, in the unit of --requests-per-second or --concurrency: the "
        "instances it keeps price each option's $/hour at the minimum (as LlmService's "
        "ExpectedTraffic minimum sets its fewest copies); default 0, one copy kept",
    )
    parser.add_argument(
        "--instance-types", help="comma-separated candidates; default every GPU/Neuron type"
    )
    parser.add_argument("--max-instance-count", type=int, default=16, help="default 16")
    parser.add_argument(
        "--region",
        help=f"where the endpoint runs; prices are {DEFAULT_PRICE_LIST.region} list prices "
        "and are marked so elsewhere",
    )
    parser.add_argument(
        "--price-basis",
        choices=[basis.value for basis in PriceBasis],
        default=PriceBasis.ON_DEMAND.value,
    )
    add_max_batch_size_argument(parser)
    add_kv_cache_precision_argument(parser)
    add_engine_memory_share_argument(parser)
    parser.add_argument(
        "--risk",
        choices=[risk.value for risk in Risk],
        default=Risk.PESSIMISTIC.value,
        help="pessimistic (default): the peak's instances at the median, the autoscaling "
        "maximum at the pessimistic edge of each prediction's band (no published measurement "
        "in the validation data would find it too low); median: everything at the median; "
        "worst-case: everything at the pessimistic edge (teams that cannot autoscale)",
    )
    parser.add_argument(
        "--optimizations",
        default="",
        help="also weigh serving the model optimized, comma-separated: awq, fp8, "
        "speculative-decoding; each option names the optimization job it needs",
    )
    add_calibration_arguments(parser)
    parser.add_argument("--top", type=int, default=5, help="options to list; default 5")
    parser.add_argument("--format", choices=("json", "markdown"), default="markdown")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the recommendation; exit 0 with an option, 1 without, 2 on bad input."""
    try:
        if args.max_ms_per_token is None and args.max_ttft_ms is None:
            raise ValidationError(  # what no flag means, in words (not None)
                "--max-ms-per-token / --max-ttft-ms",
                "no per-token limit, no TTFT limit",
                "an SLO needs at least one bound",
                "pass --max-ms-per-token 100, --max-ttft-ms 2000, or both",
            )
        for flag, bound in (
            ("--max-ms-per-token", args.max_ms_per_token),
            ("--max-ttft-ms", args.max_ttft_ms),
        ):
            if bound is not None and math.isinf(bound):
                raise ValidationError(
                    flag, bound, "must be a finite bound", "pass e.g. 100, or omit the flag"
                )
        spec = model_spec(args)
        calibration = load_calibration(args.calibration)
        engine = configured_engine(args.engine_memory_share, engine_of(args), None)
        candidates = _candidates(args.instance_types)
        sizing = Sizing(risk=Risk(args.risk), calibration=calibration, engine=engine)
        expected = _expected_traffic(args)
        result = recommend(
            spec,
            Workload(args.input_tokens, args.output_tokens),
            _slo(args),
            expected.peak,
            search=search_space(args, candidates),
            pricing=pricing(args),
            sizing=sizing,
            top=args.top,
        )
        result = with_minimum(result, expected)
    except ValidationError as error:
        aliases = {
            "traffic.minimum (requests/s)": "--minimum",
            "traffic.minimum (concurrency)": "--minimum",
            "traffic.peak (requests/s)": "--requests-per-second",
            "traffic.peak (concurrency)": "--concurrency",
            "optimization": "--optimizations",
            "instance_type": "--instance-types",
            "precision": "--dtype",
            "workload": WORKLOAD_FLAGS,
            "Pricing.region": "--region",
        }
        print(f"error: {flag_error(error, args, aliases)}", file=sys.stderr)
        return 2
    for line in result.assumptions:
        if line.startswith("calibration: "):
            print(f"warning: {line.removeprefix('calibration: ')}", file=sys.stderr)
    decision = _decision(args, spec, result, sizing, expected)
    fix = None  # without an option: what the rejections call for, as the Markdown's "Fix:"
    if not result.options:
        found = no_option_error(result, args.max_instance_count, precision(args), engine)
        fix = _in_flags(found.fix)
    if args.format == "json":
        data = {**result.to_dict(), "no_option_fix": fix}
        if decision is not None:
            data["decision"] = decision.to_metadata()
        print(json.dumps(data, indent=2))
    else:
        sys.stdout.write(render_markdown(spec.name, result, decision, fix))
    return 0 if result.options else 1


_FLAGS_OF_PROPS = {
    "max_ms_per_token": "--max-ms-per-token",
    "max_ttft_ms": "--max-ttft-ms",
    "max_instance_count": "--max-instance-count",
    "Precision.INT4_AWQ": "--dtype int4",
}
"""The props ``no_option_error``'s advice names, as this command's flags."""


def _in_flags(advice: str) -> str:
    """``advice`` worded for the command line: each prop it names as the flag that sets it."""
    for prop, flag in _FLAGS_OF_PROPS.items():
        advice = advice.replace(prop, flag)
    return advice


def _candidates(text: str | None) -> list[InstanceType] | None:
    """``--instance-types``: the named catalog types (None: every accelerated type)."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ValidationError(
            "--instance-types",
            text,
            "names no instance type",
            "pass a comma-separated list (ml.g5.2xlarge,ml.g6e.xlarge), or leave the flag out "
            "for every GPU/Neuron type",
        )
    return [catalog_instance_type("--instance-types", name) for name in names]


def _slo(args: argparse.Namespace) -> Slo:
    """The SLO the flags ask for (no --max-ms-per-token: a TTFT-only SLO)."""
    return Slo(
        math.inf if args.max_ms_per_token is None else args.max_ms_per_token, args.max_ttft_ms
    )


def search_space(args: argparse.Namespace, candidates: list[InstanceType] | None) -> SearchSpace:
    """The search space the flags ask for (``--instance-types``, ``--max-instance-count``,
    the precision, ``--kv-cache-precision``, ``--optimizations``, ``--max-batch-size``)."""
    return SearchSpace(
        instance_types=candidates,
        max_instance_count=args.max_instance_count,
        precision=precision(args),
        kv_cache_precision=kv_cache_precision(args),
        optimizations=[
            Optimization.of(name) for name in args.optimizations.split(",") if name.strip()
        ],
        max_batch_size=args.max_batch_size,
    )


def pricing(args: argparse.Namespace) -> Pricing:
    """The pricing the flags ask for (``--price-basis``, ``--region``)."""
    return Pricing(basis=PriceBasis(args.price_basis), region=args.region)


def _expected_traffic(args: argparse.Namespace) -> ExpectedTraffic:
    """The peak (``--requests-per-second`` or ``--concurrency``) and ``--minimum``, checked
    as ``LlmService``'s ``ExpectedTraffic`` checks them."""
    peak = Traffic(requests_per_second=args.requests_per_second, concurrency=args.concurrency)
    if peak.requests_per_second is not None:
        return ExpectedTraffic.requests_per_second(peak.requests_per_second, minimum=args.minimum)
    if args.minimum != int(args.minimum):
        raise ValidationError(
            "--minimum", args.minimum, "must be whole with --concurrency", "pass e.g. --minimum 2"
        )
    assert peak.concurrency is not None  # the flags are mutually exclusive and one is required
    return ExpectedTraffic.concurrency(peak.concurrency, minimum=int(args.minimum))


def _decision(
    args: argparse.Namespace,
    spec: Any,
    result: Recommendation,
    sizing: Sizing,
    expected: ExpectedTraffic,
) -> ServiceDecision | None:
    """What ``LlmService`` would deploy from the first option: the same ``ServiceDecision``
    (serving options, scaling bounds and target, sources), from the same search space (on
    that option's instance type), pricing and sizing, with the calibration as it applies to
    that option's hardware under the engine."""
    if not result.options:
        return None
    first = result.options[0].layout.instance_type
    if not first.is_gpu:  # LlmService serves NVIDIA GPU instances only (its instance_types)
        return None
    request = ServiceRequest(
        spec=spec,
        workload=Workload(args.input_tokens, args.output_tokens),
        slo=_slo(args),
        traffic=expected,
        search=search_space(args, [first]),
        pricing=pricing(args),
        sizing=sizing,
    )
    return decide(request, recommendation=result)


def _degree(option: Option) -> str:
    """``TP2``, with the NeuronCores a Neuron layout's degree spans (``TP1 (2 NeuronCores)``):
    the model counts chips, while LMI NeuronX's and TGI-NeuronX's degree counts cores
    (``Accelerator.neuron_cores``)."""
    layout = option.layout
    cores = layout.tensor_parallel_degree * layout.instance_type.tensor_parallel_ranks_per_device
    neuron = layout.instance_type.is_neuron
    return f"TP{layout.tensor_parallel_degree}" + (f" ({cores} NeuronCores)" if neuron else "")


def _not_a_service(option: Option) -> str:
    """Why the first option has no "As an LlmService" section, and how to deploy it."""
    layout = option.layout
    cores = layout.tensor_parallel_degree * layout.instance_type.tensor_parallel_ranks_per_device
    return (
        f"Not as an LlmService: LlmService serves NVIDIA GPU instances, not "
        f"{layout.instance_type.name}. Deploy this layout with `Model` and `Endpoint` "
        f"on a NeuronX image, its tensor-parallel degree {cores} (the NeuronCores "
        f"`LmiOptions(tensor_parallel_degree=...)` counts), compiled for this batch size and "
        "sequence length."
    )


def _served_with(option: Option) -> str:
    """How the table's layout cell names an optimized option: `` with awq`` (the reasoning
    names its job, time and cost); nothing for a model served as given."""
    return "" if option.optimization is None else f" with {option.optimization.name}"


def _money(value: float | None) -> str:
    return "price unknown" if value is None else f"${value:,.2f}"


def _at_minimum(option: Option) -> str:
    """``1 ($2.61/hour)``: the instances the minimum keeps and their price, or ``-``."""
    if option.min_instance_count is None:
        return "-"
    return f"{option.min_instance_count} ({_money(option.min_price_per_hour)}/hour)"


def _p10_p90(option: Option) -> str:
    """The p10-p90 of an option's predicted ms/token (``Option.p10_p90``), or ``-``."""
    if option.p10_p90 is None:
        return "-"
    low, high = option.p10_p90.ms_range(option.predicted.ms_per_token)
    return f"{low:.1f}-{high:.1f}"


def render_markdown(
    model: str,
    result: Recommendation,
    decision: ServiceDecision | None = None,
    fix: str | None = None,
) -> str:
    """The recommendation as Markdown for a pull-request comment; with the first option's
    ``decision``, what LlmService would deploy from it; without an option, the rejections'
    kinds and the ``fix`` their advice makes (``planning.decider.no_option_error``)."""
    lines = [f"### Recommended layouts for {model}", ""]
    if result.options:
        lines += [
            "| # | instances at peak | TP x copies | in flight per copy | ms/token "
            "| ms/token p10-p90 | TTFT ms | tokens/s | minimum (min instances) | $/hour at peak "
            "| $/1M tokens | ceiling (max instances) |",
            "|---:|---|---|---:|---:|---|---:|---:|---|---:|---:|---|",
        ]
        for rank, option in enumerate(result.options, 1):
            layout, level = option.layout, option.predicted
            lines.append(
                f"| {rank} | {layout.instance_count} x {layout.instance_type.name} | "
                f"{_degree(option)} x {layout.copies_per_instance}{_served_with(option)} | "
                f"{option.concurrency_per_copy} | {level.ms_per_token:.1f} | "
                f"{_p10_p90(option)} | {level.ttft_ms:.0f} | {level.tokens_per_s:.0f} | "
                f"{_at_minimum(option)} | "
                f"{_money(option.price_per_hour)} | {_money(option.cost_per_million_tokens)} | "
                f"{option.ceiling} ({_money(option.ceiling_price_per_hour)}/hour) |"
            )
        unpriced = [
            option.layout.instance_type.name
            for option in result.options
            if option.price_per_hour is None
        ]
        if unpriced:
            lines += [
                "",
                f"**Price unknown** for {', '.join(sorted(set(unpriced)))}: no price in the list, "
                "so these options are ranked after every priced option whatever they cost; "
                "check their price before choosing one.",
            ]
        best = result.options[0]
        lines += ["", "<details><summary>Why the first option</summary>", ""]
        lines += [f"- {line}" for line in best.reasoning]
        lines += ["", "</details>"]
        if decision is not None:
            lines += ["", *_decision_lines(decision)]
        elif not best.layout.instance_type.is_gpu:
            lines += ["", _not_a_service(best)]
    else:
        kinds = [
            kind.value for kind in RejectionKind if any(r.kind is kind for r in result.rejected)
        ]
        lines.append(f"**No layout serves this traffic** (rejected: {', '.join(kinds) or 'none'}).")
        if fix is not None:
            lines += ["", f"Fix: {fix}."]
    if result.rejected:
        lines += ["", f"<details><summary>Rejected ({len(result.rejected)})</summary>", ""]
        for rejection in result.rejected:
            degree = (
                f" TP{rejection.tensor_parallel_degree}"
                if rejection.tensor_parallel_degree is not None
                else ""
            )
            lines.append(f"- {rejection.instance_type}{degree}: {rejection.reason}")
        lines += ["", "</details>"]
    lines += ["", "Assumptions:", *(f"- {line}" for line in result.assumptions), ""]
    return "\n".join(lines)


def _decision_lines(decision: ServiceDecision) -> list[str]:
    """What LlmService deploys from the first option: serving options, scaling, sources."""
    serving, scaling = decision.serving, decision.scaling
    return [
        "<details><summary>As an LlmService</summary>",
        "",
        f"- serving: batch limit {serving.max_batch_size} per copy, longest sequence "
        f"{serving.max_model_len} tokens (TGI: {serving.max_batch_total_tokens} batch tokens)",
        f"- scaling: {scaling.min_copies}-{scaling.max_copies} copies on "
        f"{scaling.min_instances}-{scaling.max_instances} instances, target "
        f"{scaling.target_concurrency_per_copy:g} in flight per copy",
        *(f"- source: {line}" for line in decision.predicted.sources),
        *(f"- calibration: {line}" for line in decision.calibration_notes),
        *([f"- calibration {decision.calibration_change}"] if decision.calibration_change else []),
        "",
        "</details>",
    ]
