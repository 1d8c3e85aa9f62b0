"""``cdk-sagemaker-llm benchmark``: concurrency or request-rate sweeps, or an adaptive search,
against an endpoint or inference component."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..benchmarking.arrivals import ARRIVALS, Arrival
from ..benchmarking.benchmark_load import (
    DEFAULT_SEARCH_CAP,
    OPEN_SEARCH_MAX_ERROR_RATE,
    BenchmarkLoad,
)
from ..benchmarking.engine import BenchmarkResult, KneeRule
from ..benchmarking.exports import EXPORTS, FILE_NAMES, export_files
from ..benchmarking.goodput import DEFAULT_FRACTION, GoodputSlo
from ..benchmarking.invokers import AsyncInvoker, BotoInvoker, Invoker
from ..benchmarking.openai_target import ROUTES, TARGETS, OpenAIInvoker
from ..benchmarking.payload import FORMATS, PayloadFormat, PayloadSpec, RequestProtocol
from ..benchmarking.pricing import BenchmarkPricing
from ..benchmarking.progress import LiveProgress
from ..benchmarking.region import resolve_region
from ..benchmarking.report import summary_lines
from ..benchmarking.run import run_benchmark
from ..benchmarking.search import DEFAULT_RESOLUTION, SEARCHES
from ..errors import ValidationError
from . import workload_options
from .aws_environment import aws_environment_problem


def _concurrency_list(text: str) -> list[int]:
    try:
        values = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected integers like 1,2,4,8") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: concurrencies must be at least 1")
    return sorted(set(values))


def _rate_list(text: str) -> list[float]:
    try:
        values = [float(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected rates like 1,2,4.5") from None
    if not values or min(values) <= 0 or max(values) > 100_000:
        raise argparse.ArgumentTypeError(f"{text!r}: rates are requests/s above 0")
    return sorted(set(values))


def _export_list(text: str) -> list[str]:
    values = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [value for value in values if value not in EXPORTS]
    if not values or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: formats are {', '.join(EXPORTS)}")
    return list(dict.fromkeys(values))


def export_paths(out: str, formats: list[str]) -> dict[str, Path]:
    """Where ``--export`` writes each format: beside ``--out``, named after its stem."""
    path = Path(out)
    return {kind: path.with_name(f"{path.stem}.{FILE_NAMES[kind]}") for kind in formats}


def output_problem(flag: str, out: str | None) -> str | None:
    """Why the file ``out`` given as ``flag`` cannot be written (its folder missing or not
    writable, or a folder by that name), or None: checked before the work that fills it."""
    if not out:
        return None
    path = Path(out)
    folder = path.parent
    if path.is_dir():
        return f"{flag} {out}: is a folder; name a file in it, e.g. {path / 'results.json'}"
    if not folder.is_dir():
        return (
            f"{flag} {out}: the folder {folder} does not exist; create it (mkdir -p {folder}) "
            "or name a file in an existing folder"
        )
    if not os.access(folder, os.W_OK):
        return f"{flag} {out}: the folder {folder} is not writable; name a file in one that is"
    return None


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be positive")
        if value == math.inf:
            raise argparse.ArgumentTypeError(f"{text!r}: must be finite")
        return value

    return parse


def _add_open_loop_and_search(parser: argparse.ArgumentParser) -> None:
    """Open-loop rates, goodput SLOs and adaptive search (see ``benchmarking.open_loop``)."""
    group = parser.add_argument_group("open loop, goodput and search")
    group.add_argument(
        "--request-rate",
        type=_rate_list,
        metavar="R1,R2,...",
        help="open loop: send at these requests/s instead of keeping N in flight",
    )
    group.add_argument(
        "--arrival", choices=ARRIVALS, help="default poisson; gamma: with --burstiness"
    )
    group.add_argument("--seed", type=int, help="poisson or gamma arrivals' seed; default 0")
    group.add_argument(
        "--burstiness", type=_positive(float),
        help="gamma arrivals: the gaps' shape (1 = Poisson, below 1 burstier, above more "
        "regular; vLLM bench serve's --burstiness); default 1",
    )  # fmt: skip
    group.add_argument(
        "--ramp-up-s", type=_positive(float), metavar="S",
        help="open loop: the rate rises linearly from 0 to each level's rate over S seconds",
    )  # fmt: skip
    group.add_argument(
        "--max-concurrency", type=_positive(int), help="open loop: cap requests in flight"
    )
    group.add_argument(
        "--slo-ms-per-token", type=_positive(float), help="goodput SLO: end-to-end ms/token"
    )
    group.add_argument("--slo-ttft-ms", type=_positive(float), help="goodput SLO: TTFT (stream)")
    group.add_argument(
        "--sustainable-fraction",
        type=_positive(float),
        help="open loop: a rate is sustainable while goodput >= this x the offered rate; "
        f"default {DEFAULT_FRACTION}",
    )
    group.add_argument(
        "--search",
        choices=SEARCHES,
        help="knee: bracket and bisect the --concurrency range (closed loop); max-rate: the "
        "--request-rate range (open loop), instead of running every level",
    )
    group.add_argument(
        "--search-resolution", type=_positive(float),
        help=f"bisection stops when the bracket is within this ratio; default {DEFAULT_RESOLUTION}",
    )  # fmt: skip
    group.add_argument(
        "--search-cap", type=_positive(int), metavar="N",
        help="--search knee without --concurrency: the highest level it may double to; default "
        f"{DEFAULT_SEARCH_CAP} (it also stops where the rule trips or the error rate exceeds "
        f"{OPEN_SEARCH_MAX_ERROR_RATE:.0%}%)",
    )  # fmt: skip
    group.add_argument(
        "--expect-knee", type=_positive(int), metavar="N",
        help="--search knee: the expected knee (e.g. `plan`'s prediction); the search brackets "
        "around it and widens only where the measurement disagrees",
    )  # fmt: skip
    group.add_argument(
        "--expect-rate", type=_positive(float), metavar="R",
        help="--search max-rate: the expected sustainable rate (requests/s), bracketed likewise",
    )  # fmt: skip


def _target_error(args: argparse.Namespace) -> str | None:
    """Why the target flags do not go together, or None."""
    if args.target == "sagemaker":
        for flag, value in (("--base-url", args.base_url), ("--model", args.model),
                            ("--api-key", args.api_key)):  # fmt: skip
            if value is not None:
                return f"{flag} applies to --target openai"
        if not args.endpoint_name:
            return "--target sagemaker needs --endpoint-name"
        if args.response_format == "completions":
            return "--format completions is an OpenAI route: give --target openai --base-url"
        return None
    if not args.base_url:
        return "--target openai needs --base-url (e.g. http://127.0.0.1:8000/v1)"
    sagemaker_only = (
        ("--endpoint-name", args.endpoint_name),
        ("--inference-component", args.inference_component),
        ("--region", args.region),
        ("--endpoint-url", args.endpoint_url),
    )
    for flag, value in sagemaker_only:
        if value is not None:
            return f"{flag} applies to --target sagemaker; an OpenAI target is --base-url"
    if args.response_format not in ("auto", "messages", "completions"):
        return "--target openai takes --format messages (chat completions) or completions"
    if args.client != "async":
        return "--target openai runs on the asyncio client (drop --client threads)"
    return None


def _mode_error(args: argparse.Namespace) -> str | None:
    """Why the mode flags do not go together, or None (the values themselves are checked by the
    ``BenchmarkLoad`` factories)."""
    for check in (_target_error, _search_error, _open_loop_error):
        problem = check(args)
        if problem is not None:
            return problem
    return None


def _search_error(args: argparse.Namespace) -> str | None:
    """Why the search and price flags do not go together, or None."""
    if args.request_rate is not None and args.concurrency is not None:
        return "give --concurrency (closed loop) or --request-rate (open loop), not both"
    if args.search_resolution is not None and args.search is None:
        return "--search-resolution applies to a search: give --search"
    if args.search_cap is not None and (args.search != "knee" or args.concurrency is not None):
        return "--search-cap caps --search knee without --concurrency (the range it doubles in)"
    if args.expect_knee is not None and args.search != "knee":
        return "--expect-knee starts a knee search: give --search knee"
    if args.expect_rate is not None and args.search != "max-rate":
        return "--expect-rate starts a max-rate search: give --search max-rate"
    if args.discount is not None and args.price_per_hour is None and not args.instance_type:
        return "--discount applies to a price: give --price-per-hour or --instance-type"
    if args.instance_count is not None and not args.instance_type:
        return "--instance-count counts instances of --instance-type: give --instance-type"
    if args.price_basis is not None and args.price_per_hour is None:
        return "--price-basis says what --price-per-hour is: give --price-per-hour"
    return None


def _open_loop_error(args: argparse.Namespace) -> str | None:
    """Why the open-loop flags do not go with the mode, or None."""
    if args.request_rate is None:
        if args.search == "max-rate":
            return "--search max-rate searches the --request-rate range: give --request-rate"
        for flag, value in (
            ("--max-concurrency", args.max_concurrency),
            ("--arrival", args.arrival),
            ("--seed", args.seed),
            ("--sustainable-fraction", args.sustainable_fraction),
            ("--burstiness", args.burstiness),
            ("--ramp-up-s", args.ramp_up_s),
        ):
            if value is not None:
                return f"{flag} applies to open-loop levels: give --request-rate"
        return None
    problems = (
        (args.max_error_rate is not None,
         "--max-error-rate is the closed-loop knee rule's: an open-loop level's failed "
         "requests already count against its goodput and the sustainable rate; drop it, or "
         "give --concurrency"),
        (args.search == "knee",
         "--search knee searches the --concurrency range: give --concurrency"),
        (args.arrival == "constant" and args.seed is not None,
         "--seed seeds poisson arrivals: drop it with --arrival constant"),
        (args.burstiness is not None and args.arrival != "gamma",
         "--burstiness shapes gamma arrivals: give --arrival gamma"),
        (args.client != "async", "open-loop levels need the asyncio client (--client async)"),
    )  # fmt: skip
    return next((message for failed, message in problems if failed), None)


LOAD_FLAGS = {
    "levels": "--concurrency",
    "rates": "--request-rate",
    "speedups": "--replay-speedup",
    "max_concurrency": "--max-concurrency",
    "requests_per_level": "--requests-per-level",
    "resolution": "--search-resolution",
}
"""The flag that sets each ``BenchmarkLoad`` factory argument an error can name."""


def _flagged(build: Callable[[], BenchmarkLoad], args: argparse.Namespace) -> BenchmarkLoad:
    """``build()``, its ``BenchmarkLoad`` errors (``BenchmarkLoad.concurrency(
    requests_per_level)``) naming the flag that set the argument instead."""
    try:
        return build()
    except ValidationError as error:
        owner, _, rest = str(error.prop).partition("(")
        argument = rest.partition(")")[0]
        open_loop = owner.endswith(("request_rates", "max_rate_search"))
        given_range = "--request-rate" if open_loop else "--concurrency"
        flags = {
            **LOAD_FLAGS,
            "expected": "--expect-rate" if open_loop else "--expect-knee",
            "low": given_range,
            "high": given_range if open_loop or args.concurrency else "--search-cap",
        }
        flag = flags.get(argument) if owner.startswith("BenchmarkLoad.") else None
        if flag is None:
            raise
        raise ValidationError(flag, error.value, error.problem, error.fix) from None


def _load(args: argparse.Namespace) -> BenchmarkLoad:
    """The load the flags ask for: a concurrency sweep, a rate sweep, or a search."""
    slo = GoodputSlo(
        args.slo_ms_per_token, args.slo_ttft_ms, args.sustainable_fraction or DEFAULT_FRACTION
    )
    resolution = args.search_resolution or DEFAULT_RESOLUTION
    if args.request_rate is None:
        levels = args.concurrency or [1, 2, 4, 8]
        closed_loop: dict[str, Any] = {
            "requests_per_level": args.requests_per_level,
            "knee_rule": KneeRule(
                min_gain_per_doubling=args.min_gain_per_doubling,
                slo_ms_per_token=args.latency_slo_ms_per_token,
                max_error_rate=DEFAULT_MAX_ERROR_RATE
                if args.max_error_rate is None
                else args.max_error_rate,
            ),
            "slo": slo if slo.stated else None,
        }
        if args.search == "knee" and args.concurrency is None:  # no range: double up to a cap
            return BenchmarkLoad.knee_search(
                high=None if args.search_cap is None else max(args.search_cap, 2),
                resolution=resolution, expected=args.expect_knee, **closed_loop,
            )  # fmt: skip
        if args.search == "knee":
            return BenchmarkLoad.knee_search(
                low=levels[0], high=levels[-1], resolution=resolution, expected=args.expect_knee,
                **closed_loop,
            )  # fmt: skip
        return BenchmarkLoad.concurrency(levels, **closed_loop)
    open_loop: dict[str, Any] = {
        "arrival": _arrival(args),
        "max_concurrency": args.max_concurrency,
        "requests_per_level": args.requests_per_level,
        "slo": slo,
    }
    rates = args.request_rate
    if args.search == "max-rate":
        return BenchmarkLoad.max_rate_search(
            low=rates[0], high=rates[-1], resolution=resolution, expected=args.expect_rate,
            **open_loop,
        )  # fmt: skip
    return BenchmarkLoad.request_rates(rates, **open_loop)


def _arrival(args: argparse.Namespace) -> Arrival:
    """The arrival process the flags ask for."""
    ramp = args.ramp_up_s or 0.0
    if args.arrival == "constant":
        return Arrival.constant(ramp_up_s=ramp)
    if args.arrival == "gamma":
        return Arrival.gamma(args.burstiness or 1.0, args.seed or 0, ramp_up_s=ramp)
    return Arrival.poisson(args.seed or 0, ramp_up_s=ramp)


DEFAULT_MAX_ERROR_RATE = 0.05
"""``--max-error-rate``'s default: the 5 % ``LlmService``'s deploy-time benchmark allows
(``SERVICE_MAX_ERROR_RATE``)."""


def _error_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a share of requests from 0 to 1, e.g. 0.05 for 5 %"
        ) from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a share of requests is from 0 to 1 (0.05 for 5 %; 1 allows any)"
        )
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return value


def register(subparsers: Any) -> None:
    """Add the ``benchmark`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "benchmark",
        help="sweep concurrency levels or request rates against an endpoint; write results JSON",
        description="Closed-loop concurrency sweep against a SageMaker endpoint (or one of its "
        "inference components) with a stated payload: at each level exactly N requests are in "
        "flight. Reports latency percentiles, ms/token, throughput, errors by kind, the knee "
        "and cost per 1M output tokens. With --request-rate, an open-loop sweep instead "
        "(seeded Poisson or constant arrivals): achieved rate, schedule lag, backlog growth, "
        "goodput against SLOs and the sustainable rate. --search finds the knee or the "
        "sustainable rate by bracketing and bisection. Progress goes to stderr (on a terminal, "
        "live within each level: requests done, errors, elapsed).",
    )
    parser.add_argument(
        "--target",
        choices=TARGETS,
        default="sagemaker",
        help="sagemaker: SageMaker Runtime (default); openai: an OpenAI-compatible server at "
        "--base-url (chat completions with --format messages, the default there, or "
        "--format completions)",
    )
    parser.add_argument("--base-url", help="--target openai: e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", help="--target openai: the body's model (vLLM checks it)")
    parser.add_argument(
        "--api-key", help="--target openai: sent as a bearer token; default OPENAI_API_KEY"
    )
    parser.add_argument("--endpoint-name", help="--target sagemaker (required there)")
    parser.add_argument("--inference-component", help="inference component to invoke")
    parser.add_argument(
        "--region",
        help="default: AWS_REGION, else AWS_DEFAULT_REGION, else the profile's region (as the "
        "AWS CLI reads them)",
    )
    parser.add_argument(
        "--endpoint-url",
        help="any SageMaker-Runtime-compatible server (e.g. the loopback simulator)",
    )
    parser.add_argument(
        "--concurrency", type=_concurrency_list, help="closed-loop levels; default 1,2,4,8"
    )
    parser.add_argument("--input-tokens", type=_positive_int, help="default 256")
    parser.add_argument("--output-tokens", type=_positive_int, help="default 128")
    parser.add_argument("--prompts", help="JSONL prompts file (path or s3://) instead of synthetic")
    parser.add_argument(
        "--requests-per-level",
        type=_positive_int,
        help="requests per level (default max(4 x concurrency, 16) unless --duration-per-level)",
    )
    parser.add_argument("--duration-per-level", type=_positive(float), help="seconds per level")
    parser.add_argument(
        "--stream",
        action="store_true",
        help='InvokeEndpointWithResponseStream with "stream": true in the body (TTFT, ITL)',
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        dest="response_format",
        help="request schema: the inputs API (auto, lmi, tgi) or OpenAI chat completions "
        "(messages); default auto",
    )
    parser.add_argument(
        "--latency-slo-ms-per-token", type=_positive(float), help="p50 ms/token limit"
    )
    parser.add_argument(
        "--min-gain-per-doubling",
        type=float,
        default=0.10,
        help="knee rule: throughput gain per doubling of concurrency; default 0.10",
    )
    parser.add_argument(
        "--max-error-rate",
        type=_error_rate,
        metavar="SHARE",
        help="knee rule: a level where more than this share of requests failed is past the "
        "knee and never the max throughput within the SLO (closed loop); default "
        f"{DEFAULT_MAX_ERROR_RATE:g} (5 %%, as LlmService's deploy-time benchmark); 1 allows any",
    )
    parser.add_argument(
        "--price-per-hour", type=float, help="your price per hour of what is measured, for cost"
    )
    parser.add_argument("--price-basis", help="what --price-per-hour is; default 'given'")
    parser.add_argument(
        "--instance-type",
        help="the instance type measured: recorded in the results' deployment section (calibrate "
        "reads it) and, without --price-per-hour, priced from the library's us-east-1 list",
    )
    parser.add_argument(
        "--instance-count",
        type=_positive_int,
        help="with --instance-type: instances serving the load (one copy each), priced and "
        "recorded as the copies calibrate divides the load by; default 1",
    )
    parser.add_argument(
        "--discount", type=float, help="savings-plan discount, e.g. 0.3 for 30 %%; default none"
    )
    parser.add_argument(
        "--client",
        choices=("async", "threads"),
        default="async",
        help="asyncio raw-HTTP client (default) or a boto3 thread pool",
    )
    parser.add_argument("--keep-samples", action="store_true", help="raw samples in results")
    parser.add_argument("--out", required=True, help="results JSON file")
    parser.add_argument(
        "--export",
        type=_export_list,
        metavar="FORMAT[,FORMAT]",
        help="also write beside --out (named after its stem): csv (one row per level, every "
        "distribution flattened: STEM.levels.csv), jsonl (one line per request: "
        "STEM.requests.jsonl), chart (STEM.chart.svg), markdown (STEM.report.md)",
    )
    _add_open_loop_and_search(parser)
    workload_options.add_arguments(parser, _positive_int)
    parser.set_defaults(handler=run)


def _spec(args: argparse.Namespace) -> PayloadSpec:
    """The payload: the workload sent by the protocol (an OpenAI target: chat completions by
    default, the body's ``model`` when given)."""
    fmt = args.response_format
    if args.target == "openai" and fmt == "auto":
        fmt = "messages"
    spec = PayloadSpec.of(
        workload_options.workload(args),
        RequestProtocol(PayloadFormat(fmt), args.stream, args.prefix_aware_id),
        prompts=args.prompts,
    )
    if args.model:
        spec = dataclasses.replace(spec, parameters={"model": args.model})
    return spec


def _invoker(args: argparse.Namespace) -> Invoker:
    if args.target == "openai":
        return OpenAIInvoker(args.base_url, api_key=args.api_key)
    region = resolve_region(args.region)
    if args.client == "threads":
        return BotoInvoker(
            args.endpoint_name,
            inference_component=args.inference_component,
            region=region,
            endpoint_url=args.endpoint_url,
        )
    return AsyncInvoker(
        args.endpoint_name,
        inference_component=args.inference_component,
        region=region,
        endpoint_url=args.endpoint_url,
    )


def _pricing(args: argparse.Namespace) -> BenchmarkPricing | None:
    """The price the flags state: given, from the library's list, or none."""
    discount = args.discount or 0.0
    if args.price_per_hour is not None:
        return BenchmarkPricing.per_hour(
            args.price_per_hour, discount=discount, basis=args.price_basis or "given"
        )
    if args.instance_type:
        return BenchmarkPricing.from_price_list(discount=discount)
    return None


def _price(
    args: argparse.Namespace, pricing: BenchmarkPricing | None, region: str | None
) -> tuple[float | None, str | None]:
    """The undiscounted price per hour and its basis: given, or from the list (of
    ``--instance-count`` instances, region-marked)."""
    if pricing is None or pricing.price_list is None:
        return (None, None) if pricing is None else (pricing.price_per_hour, pricing.basis)
    hourly = pricing.price_list.price_per_hour(args.instance_type)
    if hourly is None:
        raise ValueError(f"no price for {args.instance_type}: pass --price-per-hour")
    return hourly * (args.instance_count or 1), pricing.price_list.basis(region)


def run(args: argparse.Namespace) -> int:
    """Run the sweep, write ``--out``; exit 0, or 2 on bad input."""
    problem = (
        workload_options.problem(args)
        or output_problem("--out", args.out)
        or (None if args.replay_speedup else _mode_error(args))
        or (aws_environment_problem(args.region) if args.target == "sagemaker" else None)
    )
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        load = _flagged(lambda: workload_options.replay_load(args) or _load(args), args)
        if load.slo is not None:
            load.slo.check_measurable(args.stream, "--slo-ttft-ms", "add --stream, or drop it")
        spec = _spec(args)
        pricing = _pricing(args)
        invoker = _invoker(args)
        price, basis = _price(args, pricing, getattr(invoker, "region", args.region))
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    exports = args.export or []
    live = LiveProgress(sys.stderr)
    progress = live.line
    if isinstance(invoker, AsyncInvoker | BotoInvoker):
        invoker.on_sample = live.record

    target = (
        {
            "kind": "openai",
            "base_url": args.base_url,
            "route": ROUTES[spec.response_format],
            "model": args.model,
            "client": args.client,
        }
        if args.target == "openai"
        else {
            "endpoint_name": args.endpoint_name,
            "inference_component": args.inference_component,
            "region": getattr(invoker, "region", args.region),
            "endpoint_url": args.endpoint_url,
            "client": args.client,
        }
    )
    try:
        result = run_benchmark(
            invoker,
            spec,
            load,
            duration_s=args.duration_per_level,
            price_per_hour=price,
            price_basis=basis,  # every cost is stated with its basis and discount
            discount=pricing.discount if pricing is not None else 0.0,
            target={key: value for key, value in target.items() if value is not None},
            keep_samples=args.keep_samples or "jsonl" in exports,
            progress=progress,
        )
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    samples = result.samples
    if not args.keep_samples:
        result.samples = None  # kept for the per-request export only
    document = result.to_dict()
    if args.instance_type:  # what calibrate reads the measured hardware from
        document["deployment"] = {"instance_type": args.instance_type}
        if args.instance_count is not None:  # the copies the load was spread over
            document["run"] = {"copies": args.instance_count}
    written = _write_outputs(args.out, document, export_files(result, exports, samples),
                             exports, progress)  # fmt: skip
    for line in summary_lines(result):
        progress(line)
    if not written:
        return 2
    progress(f"results in {args.out}")
    failed = _every_request_failed(result)
    if failed is not None:
        print(f"error: {failed}", file=sys.stderr)
        return 1
    return 0


def _write_outputs(
    out: str, document: dict[str, Any], files: dict[str, bytes], exports: list[str],
    progress: Any,
) -> bool:  # fmt: skip
    """Write the results to ``out`` and the exports beside it; False (said on stderr) when
    they cannot be written (the folder checked before the run went away)."""
    try:
        Path(out).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        for kind, path in export_paths(out, exports).items():
            path.write_bytes(files[FILE_NAMES[kind]])
            progress(f"{kind}: {path}")
    except OSError as error:
        print(f"error: --out {out}: cannot write it ({error}); the figures follow", file=sys.stderr)
        return False
    return True


def _every_request_failed(result: BenchmarkResult) -> str | None:
    """Why the run measured nothing (every request of every level failed, so the knee and the
    throughput are empty figures), or None. The first failure of each kind is printed above
    (``report.error_lines``)."""
    if not result.levels or any(level.errors < level.requests for level in result.levels):
        return None
    requests = sum(level.requests for level in result.levels)
    codes = {
        error.get("code")
        for level in result.levels
        for error in (level.first_errors or {}).values()
    }
    hint = (
        ": the answers are not in the format asked; pass --format auto (LMI and TGI answers "
        "detected) or the endpoint's own"
        if "ResponseFormatError" in codes
        else ": see the first error of each kind above"
    )
    return f"every request failed ({requests} of {requests}), so the results measure nothing{hint}"
