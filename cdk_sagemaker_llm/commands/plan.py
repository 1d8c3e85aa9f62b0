"""``cdk-sagemaker-llm plan``: what a synthesized cloud assembly deploys, for PR review."""

from __future__ import annotations

import argparse
import math
import sys
from datetime import date
from typing import Any

from ..catalog.instance_types import CATALOG, closest_instance_types
from ..catalog.prices import DEFAULT_PRICE_LIST, PriceList, check_discount
from ..errors import ValidationError
from ..review import MonthlyAssumption, build_plan, render_json, render_markdown
from ..review.budget import DEFAULT_PEAK_HOURS_PER_DAY
from ..review.deploy_plan import Plan


def register(subparsers: Any) -> None:
    """Add the ``plan`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="describe the endpoints, components, scaling, cost and sizing of a cloud assembly",
        description="Read a synthesized cloud assembly (cdk synth's output) and print, per "
        "endpoint and component: instances, copies, image and container caching, scaling "
        "policies with detection time, optimization jobs, benchmarks, cost and sizing; then the "
        "monthly cost under the stated traffic and the endpoint-usage quotas the deploy needs.",
    )
    parser.add_argument(
        "assembly_dir", nargs="?", default="cdk.out", help="the assembly directory; default cdk.out"
    )
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    parser.add_argument(
        "--peak-hours-per-day",
        type=float,
        default=DEFAULT_PEAK_HOURS_PER_DAY,
        metavar="HOURS",
        help="hours of each day the endpoints run at their maximum, for the monthly cost (the "
        f"rest at the minimum; 730 hours a month); default {DEFAULT_PEAK_HOURS_PER_DAY:g}",
    )
    add_price_arguments(parser)
    parser.set_defaults(handler=run)


def _price(text: str) -> tuple[str, float]:
    name, _, value = text.partition("=")
    try:
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected TYPE=USD, e.g. ml.g5.2xlarge=1.7"
        ) from None


def add_price_arguments(parser: argparse.ArgumentParser) -> None:
    """``--price TYPE=USD`` (repeatable), ``--price-region`` and ``--discount``."""
    parser.add_argument(
        "--price",
        type=_price,
        action="append",
        default=[],
        metavar="TYPE=USD",
        help="your own price per instance-hour (repeatable); default the library's us-east-1 "
        "on-demand list",
    )
    parser.add_argument("--price-region", help="the region your --price values are for")
    parser.add_argument(
        "--discount", type=float, default=0.0, help="savings-plan discount, e.g. 0.3 for 30 %%"
    )


def price_list(args: argparse.Namespace) -> PriceList:
    """The library's price list with the user's prices and discount applied; for another
    ``--price-region``, only the user's prices (the library's are us-east-1's). A bad price or
    discount is a ValidationError naming its flag."""
    given = dict(args.price)
    for name, price in given.items():
        if not 0 <= price < math.inf:
            raise ValidationError(
                "--price",
                f"{name}={price:g}",
                "must be a non-negative, finite USD amount per instance-hour",
                "pass e.g. --price ml.g5.2xlarge=1.7",
            )
    check_discount("--discount", args.discount)
    region = args.price_region or DEFAULT_PRICE_LIST.region
    if region != DEFAULT_PRICE_LIST.region:
        try:
            prices = PriceList(
                as_of=date.today().isoformat(),
                source="given on the command line",
                region=region,
                prices=given,
            )
        except ValidationError as error:  # the region, as the flag names it
            prop = "--price-region" if "region" in error.prop else "--price"
            raise ValidationError(prop, error.value, error.problem, error.fix) from None
    elif given:
        prices = DEFAULT_PRICE_LIST.with_prices(
            given, source=f"given on the command line, else {DEFAULT_PRICE_LIST.source}"
        )
    else:
        prices = DEFAULT_PRICE_LIST
    return prices.with_discount(args.discount)


def _check_priced_types(given: dict[str, float], plan: Plan) -> None:
    """Each ``--price`` names an instance type the catalog or the assembly knows: a typo
    (``ml.g5.2xlrge``) would price nothing and leave the type it meant at the list's price."""
    used = {
        variant.instance_type
        for stack in plan.stacks
        for endpoint in stack.endpoints
        for variant in endpoint.variants
    }
    for name, price in given.items():
        if name in CATALOG or name in used:
            continue
        close = closest_instance_types(name, also=used)
        raise ValidationError(
            "--price",
            f"{name}={price:g}",
            "names an instance type neither the catalog nor the assembly's endpoints use",
            f"did you mean {' or '.join(close)}?" if close else "pass ml.<family>.<size>=USD",
        )


def run(args: argparse.Namespace) -> int:
    """Print the plan; exit 2 when the assembly cannot be read."""
    try:
        assumption = MonthlyAssumption(args.peak_hours_per_day)
        plan = build_plan(args.assembly_dir, prices=price_list(args))
        _check_priced_types(dict(args.price), plan)
    except ValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    render = render_json if args.format == "json" else render_markdown
    sys.stdout.write(render(plan, assumption))
    return 0
