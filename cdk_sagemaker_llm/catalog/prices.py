"""On-demand prices of SageMaker hosting instances, as dated, sourced, overridable data."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ..errors import ValidationError
from ..prop_types import trusted, typed_props
from .instance_types import InstanceType
from .registries import check_region


@typed_props
@dataclass(frozen=True)
class PriceList:
    """On-demand USD prices per instance-hour of SageMaker real-time inference in one region.

    Prices change and differ per region: every list states its region, when it was read and
    where from, and every cost computed from it carries :meth:`basis`. Pass your own
    (``PriceList(as_of=..., source=..., region=..., prices={...})``), override a few entries
    of the default (``DEFAULT_PRICE_LIST.with_prices({"ml.g5.xlarge": 1.2}, region=...)``),
    or apply a savings-plan discount (``DEFAULT_PRICE_LIST.with_discount(0.3)``).
    """

    __synth_decision__ = "The price list ranks the layouts and prices the plan"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    as_of: str
    """When the prices were read (ISO date)."""
    source: str
    """Where the prices come from."""
    region: str
    """The region the prices apply to."""
    prices: Mapping[str, float] = field(default_factory=dict)
    """USD per instance-hour, by instance type name (``ml.g5.xlarge``)."""
    currency: str = "USD"
    """The currency of ``prices``."""
    discount: float = 0.0
    """Your savings-plan (or negotiated) discount off ``prices``, applied to every cost, 0 to
    below 1; default none."""
    savings_plan_1y_discount: float = 0.25
    """Discount of a 1-year, no-upfront SageMaker AI Savings Plan that ``recommend
    --price-basis savings-plan-1y`` applies on top of ``discount``. Default 0.25, an assumed flat
    rate: AWS publishes only "up to 64%" (SageMaker AI Savings Plans page, the 3-year
    all-upfront ceiling) and the 1-year rate differs per instance; published guides put it at
    20-40% for inference instances. Pass the rate your Savings Plans page shows."""

    def __post_init__(self) -> None:
        for name, price in self.prices.items():
            if (
                not isinstance(price, int | float)
                or isinstance(price, bool)
                or not 0 <= price < math.inf
            ):
                raise ValidationError(
                    f"prices[{name!r}]",
                    price,
                    "must be a non-negative, finite number",
                    "fix the price (USD per instance-hour)",
                )
        check_discount("savings_plan_1y_discount", self.savings_plan_1y_discount)
        object.__setattr__(self, "prices", MappingProxyType(dict(sorted(self.prices.items()))))
        check_discount("discount", self.discount)
        check_region("PriceList.region", self.region)

    def __repr__(self) -> str:
        """Short: a signature's default (``help(LlmService)``) shows no whole price list."""
        discount = f", discount={self.discount:g}" if self.discount else ""
        return (
            f"PriceList(region={self.region!r}, as_of={self.as_of!r}, "
            f"{len(self.prices)} prices{discount})"
        )

    def price_per_hour(self, instance_type: InstanceType | str) -> float | None:
        """Price per hour of one instance after :attr:`discount`, or None when the list has
        no price for the type."""
        name = instance_type.name if isinstance(instance_type, InstanceType) else instance_type
        price = self.prices.get(name)
        return None if price is None else price * (1 - self.discount)

    def with_discount(self, discount: float) -> PriceList:
        """A copy with a savings-plan discount (e.g. 0.3 for 30 %) off every price."""
        return replace(self, discount=discount)

    def basis(self, region: str | None = None) -> str:
        """Short statement of what the prices are, for every figure computed from them; when
        ``region`` (where the resources run) differs from the list's, it says so."""
        text = f"{self.region} on-demand {self.currency}, as of {self.as_of}"
        if self.discount:
            text += f", less {self.discount:.0%} discount"
        if region and region != self.region:
            text += f"; resources in {region}, where prices differ: pass that region's prices"
        return text

    def with_prices(
        self,
        prices: Mapping[str, float],
        *,
        as_of: str | None = None,
        source: str | None = None,
        region: str | None = None,
    ) -> PriceList:
        """A copy with ``prices`` added or replaced (and optionally a new date/source/region)."""
        return PriceList(
            as_of=as_of or self.as_of,
            source=source or self.source,
            region=region or self.region,
            prices={**self.prices, **prices},
            currency=self.currency,
            discount=self.discount,
            savings_plan_1y_discount=self.savings_plan_1y_discount,
        )

    def describe(self) -> str:
        """One line naming the list's region, date, discount and source."""
        discount = f", less {self.discount:.0%} discount" if self.discount else ""
        return (
            f"on-demand {self.currency} prices, {self.region}, as of {self.as_of}{discount} "
            f"({self.source})"
        )


def check_discount(prop: str, discount: float) -> None:
    """Raise ValidationError unless ``discount`` is a fraction in [0, 1)."""
    if not isinstance(discount, int | float) or isinstance(discount, bool) or not 0 <= discount < 1:
        raise ValidationError(
            prop, discount, "must be a fraction from 0 to below 1", "pass e.g. 0.3 for 30 % off"
        )


DEFAULT_PRICE_LIST = trusted(PriceList)(  # dated list prices: no run-time type check
    as_of="2025-09-01",
    source=(
        "Amazon SageMaker AI pricing page, real-time inference on-demand list prices, "
        "approximate: override with your own PriceList"
    ),
    region="us-east-1",
    prices={
        "ml.g5.xlarge": 1.408,
        "ml.g5.2xlarge": 1.515,
        "ml.g5.4xlarge": 2.03,
        "ml.g5.8xlarge": 3.06,
        "ml.g5.12xlarge": 7.09,
        "ml.g5.16xlarge": 5.12,
        "ml.g5.24xlarge": 10.18,
        "ml.g5.48xlarge": 20.36,
        "ml.g6.xlarge": 1.1267,
        "ml.g6.2xlarge": 1.222,
        "ml.g6.4xlarge": 1.654,
        "ml.g6.8xlarge": 2.518,
        "ml.g6.12xlarge": 5.752,
        "ml.g6.16xlarge": 4.246,
        "ml.g6.24xlarge": 8.344,
        "ml.g6.48xlarge": 16.688,
        "ml.g6e.xlarge": 2.6054,
        "ml.g6e.2xlarge": 2.8026,
        "ml.g6e.4xlarge": 3.7553,
        "ml.g6e.8xlarge": 5.6607,
        "ml.g6e.12xlarge": 13.1158,
        "ml.g6e.16xlarge": 9.47,
        "ml.g6e.24xlarge": 18.832,
        "ml.g6e.48xlarge": 37.664,
        "ml.p4d.24xlarge": 25.2513,
        "ml.p4de.24xlarge": 31.5641,
        "ml.p5.48xlarge": 63.296,
        "ml.inf2.xlarge": 0.99,
        "ml.inf2.8xlarge": 2.36,
        "ml.inf2.24xlarge": 7.79,
        "ml.inf2.48xlarge": 15.58,
        "ml.trn1.2xlarge": 1.54,
        "ml.trn1.32xlarge": 24.73,
    },
)
"""The library's default prices: us-east-1 on-demand, for the catalog's instance types whose
price was read; the others are flagged in ``UNPRICED``."""

_NOT_READ = (
    "no SageMaker real-time inference price in the sources read for DEFAULT_PRICE_LIST (2025-09-01)"
)
_NEWER = (
    "launched after DEFAULT_PRICE_LIST was read (2025-09-01); its SageMaker price was not in the "
    "sources read"
)
UNPRICED: Mapping[str, str] = MappingProxyType(
    {
        **{f"ml.g4dn.{size}": _NOT_READ for size in ("xlarge", "2xlarge", "4xlarge")},
        **{f"ml.g4dn.{size}": _NOT_READ for size in ("8xlarge", "12xlarge", "16xlarge")},
        **{f"ml.g7.{size}": _NEWER for size in ("2xlarge", "4xlarge", "8xlarge")},
        **{f"ml.g7.{size}": _NEWER for size in ("12xlarge", "24xlarge", "48xlarge")},
        **{f"ml.g7e.{size}": _NEWER for size in ("2xlarge", "4xlarge", "8xlarge")},
        **{f"ml.g7e.{size}": _NEWER for size in ("12xlarge", "24xlarge", "48xlarge")},
        "ml.p5.4xlarge": _NOT_READ,
        "ml.p5e.48xlarge": _NOT_READ,
        "ml.p5en.48xlarge": _NOT_READ,
        "ml.p6-b200.48xlarge": _NOT_READ,
        "ml.p6-b300.48xlarge": _NEWER,
        "ml.p6e-gb200.36xlarge": _NEWER,
        "ml.trn1n.32xlarge": _NOT_READ,
        "ml.trn2.48xlarge": _NOT_READ,
    }
)
"""The catalog's instance types ``DEFAULT_PRICE_LIST`` has no price for, and why (a price is
read from a dated public source, never estimated): cost figures for them say the price is
unknown, ``recommend`` ranks them after every priced option and never calls one the cheapest,
until you add their prices with ``PriceList.with_prices``."""
