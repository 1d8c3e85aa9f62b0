"""What an hour of the measured capacity costs, for a benchmark's cost per 1M output tokens:
derived from a price list, or a price you state; either with a savings-plan discount.

::

    BenchmarkPricing.from_price_list(DEFAULT_PRICE_LIST, discount=0.3)
    BenchmarkPricing.per_hour(7.09, basis="eu-west-1 on-demand")

Every cost is stated with its basis: the list's region and date, or yours.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.prices import DEFAULT_PRICE_LIST, PriceList, check_discount
from ..errors import ValidationError, check_range
from ..prop_types import typed_factory, typed_props


@typed_props
@dataclass(frozen=True)
class BenchmarkPricing:
    """The price of what a benchmark measures (see the module docstring); build one with a
    factory."""

    price_list: PriceList | None
    """Instance prices the price is derived from; None for a stated price."""
    price_per_hour: float | None
    """The stated price, undiscounted; None when derived from ``price_list``."""
    discount: float = 0.0
    """Savings-plan discount, 0 to below 1 (with a price list: replacing the list's own, when
    set)."""
    basis: str = "given"
    """What a stated price is (e.g. ``eu-west-1 on-demand``)."""

    @staticmethod
    @typed_factory
    def from_price_list(
        price_list: PriceList = DEFAULT_PRICE_LIST, *, discount: float = 0.0
    ) -> BenchmarkPricing:
        """Derive the price from ``price_list``'s instance prices (default the library's:
        us-east-1 on-demand, and the results say so) less ``discount`` (0 to below 1; default
        the list's own)."""
        check_discount("BenchmarkPricing.from_price_list(discount)", discount)
        return BenchmarkPricing(price_list=price_list, price_per_hour=None, discount=discount)

    @staticmethod
    @typed_factory
    def per_hour(price: float, *, discount: float = 0.0, basis: str = "given") -> BenchmarkPricing:
        """``price`` USD per hour of what is measured (at least 0), less ``discount`` (0 to below
        1; default none); ``basis`` says what the price is (default ``given``)."""
        check_range("BenchmarkPricing.per_hour(price)", price, minimum=0)
        check_discount("BenchmarkPricing.per_hour(discount)", discount)
        if not basis.strip():
            raise ValidationError(
                "BenchmarkPricing.per_hour(basis)", basis, "every cost states its basis",
                "say what the price is, e.g. 'eu-west-1 on-demand', or omit it ('given')",
            )  # fmt: skip
        return BenchmarkPricing(
            price_list=None, price_per_hour=price, discount=discount, basis=basis
        )

    @property
    def prices(self) -> PriceList | None:
        """The price list with this pricing's discount (the list's own when none is set)."""
        if self.price_list is None or not self.discount:
            return self.price_list
        return self.price_list.with_discount(self.discount)
