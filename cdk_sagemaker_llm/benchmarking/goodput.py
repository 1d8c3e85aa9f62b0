"""Goodput: the rate of requests that met every service-level objective.

The definition of vLLM's ``bench serve --goodput`` (after DistServe): a request is *good* when
it succeeded and meets each stated SLO; goodput is good requests (and their output tokens)
per second. The SLOs here are the library's per-token latency (end-to-end latency / output
tokens, as everywhere in its reports) and time to first token (streaming only: a request
without a measured first token cannot meet a TTFT SLO).

The per-second base of a level: for an open-loop level, its sending window, ``requests /
achieved send rate`` (so a level whose every request is good has a goodput equal to its
achieved rate, whatever the latency of its last requests); for a closed-loop level, its wall
time (first start to last end), like its throughput.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ..prop_types import typed_props
from .samples import RequestSample

DEFAULT_FRACTION = 0.95
"""A rate is sustainable while its goodput stays at least this fraction of the offered rate."""


@typed_props
@dataclass(frozen=True)
class GoodputSlo:
    """Service-level objectives a request must meet to count towards goodput."""

    __synth_decision__ = "Goodput's objectives are compiled into the benchmark"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    ms_per_token: float | None = None
    """End-to-end latency / output tokens limit, in ms. Default: not checked."""
    ttft_ms: float | None = None
    """Time-to-first-token limit, in ms (streaming). Default: not checked."""
    fraction: float = DEFAULT_FRACTION
    """Goodput / offered rate at or above which a rate is sustainable. Default 0.95."""

    def __post_init__(self) -> None:
        for name in ("ms_per_token", "ttft_ms"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValidationError(
                    name, value, "an objective must be positive", "pass e.g. 100, or omit it"
                )
        if not 0 < self.fraction <= 1:
            raise ValidationError(
                "fraction", self.fraction, "must be in (0, 1]", "pass e.g. 0.95 (the default)"
            )

    @property
    def stated(self) -> bool:
        """True when at least one objective is set."""
        return self.ms_per_token is not None or self.ttft_ms is not None

    def check_measurable(self, stream: bool, prop: str, fix: str) -> None:
        """Raise ValidationError when an objective cannot be measured: the time to the first
        token is known only on streamed responses (a whole answer arrives at once), so a TTFT
        objective without streaming would count every request as failed."""
        if self.ttft_ms is not None and not stream:
            raise ValidationError(
                prop,
                self.ttft_ms,
                "a TTFT objective needs streamed responses, and this benchmark does not stream: "
                "every request would miss it",
                fix,
            )

    def meets(self, sample: RequestSample) -> bool:
        """True when ``sample`` succeeded and meets every objective."""
        if not sample.ok:
            return False
        if self.ms_per_token is not None:
            per_token = sample.ms_per_token
            if per_token is None or per_token > self.ms_per_token:
                return False
        if self.ttft_ms is not None:
            ttft = sample.ttft_s
            if ttft is None or 1000.0 * ttft > self.ttft_ms:
                return False
        return True

    def describe(self) -> str:
        """The objectives in words."""
        parts = ["succeeded"]
        if self.ms_per_token is not None:
            parts.append(f"ms/token <= {self.ms_per_token:g}")
        if self.ttft_ms is not None:
            parts.append(f"TTFT <= {self.ttft_ms:g} ms")
        return "a request is good when " + " and ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with the rule in words."""
        return {
            "slo_ms_per_token": self.ms_per_token,
            "slo_ttft_ms": self.ttft_ms,
            "sustainable_fraction": self.fraction,
            "rule": self.describe(),
        }


def goodput(samples: Sequence[RequestSample], slo: GoodputSlo, window_s: float) -> dict[str, Any]:
    """``good_requests``, ``goodput_requests_per_s`` and ``goodput_tokens_per_s`` of a level
    whose per-second base is ``window_s`` (see the module docstring)."""
    good = [sample for sample in samples if slo.meets(sample)]
    tokens = sum(sample.output_tokens for sample in good)
    return {
        "good_requests": len(good),
        "goodput_requests_per_s": len(good) / window_s if window_s > 0 else 0.0,
        "goodput_tokens_per_s": tokens / window_s if window_s > 0 else 0.0,
    }
