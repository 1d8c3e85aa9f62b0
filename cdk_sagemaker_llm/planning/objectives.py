"""What a deployment must meet: the latency SLO (``Slo``) and the traffic it serves
(``Traffic``), the two questions every ``recommend`` and ``LlmService`` decision answers."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ValidationError
from ..prop_types import typed_props


@typed_props
@dataclass(frozen=True)
class Slo:
    """The latency a deployment must meet: a per-token limit, a time-to-first-token limit, or
    both (at least one). ``Slo(max_ttft_ms=2000)`` is a TTFT-only SLO."""

    __synth_decision__ = "The SLO ranks the layouts (LlmService, recommend)"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    max_ms_per_token: float = math.inf
    """Per-token latency limit (end-to-end latency / output tokens), ms. Default: none
    (``math.inf``; then ``max_ttft_ms`` is required)."""
    max_ttft_ms: float | None = None
    """Time-to-first-token limit, ms. Default: none."""

    def __post_init__(self) -> None:
        if self.max_ms_per_token == math.inf and self.max_ttft_ms is None:
            raise ValidationError(  # what no bound means, in words (not None)
                "max_ms_per_token / max_ttft_ms",
                "no per-token limit, no TTFT limit",
                "an SLO needs at least one bound",
                "pass Slo(max_ms_per_token=100), Slo(max_ttft_ms=2000) or both",
            )
        if not self.max_ms_per_token > 0:  # NaN too
            raise ValidationError(
                "max_ms_per_token",
                self.max_ms_per_token,
                "must be positive",
                "pass e.g. 100, or omit it for a TTFT-only SLO",
            )
        if self.max_ttft_ms is not None and not 0 < self.max_ttft_ms < math.inf:
            raise ValidationError(
                "max_ttft_ms", self.max_ttft_ms, "must be positive", "pass e.g. 2000, or omit it"
            )

    @property
    def limits_ms_per_token(self) -> bool:
        """False for a TTFT-only SLO."""
        return self.max_ms_per_token != math.inf

    def describe(self) -> str:
        """E.g. ``<= 100 ms/token, TTFT <= 2000 ms`` or ``TTFT <= 2000 ms``."""
        parts = []
        if self.limits_ms_per_token:
            parts.append(f"<= {self.max_ms_per_token:g} ms/token")
        if self.max_ttft_ms is not None:
            parts.append(f"TTFT <= {self.max_ttft_ms:g} ms")
        return ", ".join(parts)


@dataclass(frozen=True)
class Traffic:
    """Expected traffic: exactly one of a request rate or a concurrency."""

    requests_per_second: float | None = None
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if (self.requests_per_second is None) == (self.concurrency is None):
            raise ValidationError(
                "traffic",
                {"requests_per_second": self.requests_per_second, "concurrency": self.concurrency},
                "give exactly one of requests_per_second and concurrency",
                "pass Traffic(requests_per_second=5) or Traffic(concurrency=32)",
            )
        if self.requests_per_second is not None and not 0 < self.requests_per_second < math.inf:
            raise ValidationError(
                "requests_per_second",
                self.requests_per_second,
                "must be a positive, finite rate",
                "pass e.g. 5",
            )
        if self.concurrency is not None and (
            not isinstance(self.concurrency, int)
            or isinstance(self.concurrency, bool)
            or self.concurrency < 1
        ):
            raise ValidationError(
                "concurrency", self.concurrency, "must be a positive integer", "pass e.g. 32"
            )

    def describe(self) -> str:
        """E.g. ``5 requests/s`` or ``32 concurrent requests``."""
        if self.requests_per_second is not None:
            return f"{self.requests_per_second:g} requests/s"
        return f"{self.concurrency} concurrent requests"
