"""What an ``LlmService`` records of its decision, exactly as the template metadata holds it
(``template_metadata.SERVICE``), and what ``cdk-sagemaker-llm plan`` reads back: the goal in
words, each choice with its source, the predicted figures and their sources, the price, the
reasoning, the alternatives, the rejections, the warnings, what the calibration changed and the
optimization served. ``ServiceDecision.to_record()`` writes it; ``DecisionRecord.from_metadata``
reads it from a synthesized template. No aws_cdk here."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .optimizations import JobEstimate

GOAL_KEYS = (
    "model",
    "precision",
    "kv_cache_precision",
    "workload",
    "slo",
    "traffic",
    "candidates",
    "prices",
    "calibration",
)
"""The keys of a decision's goal (model, precision, the KV cache's precision where it is not
``auto``, workload, SLO, traffic, candidates, prices, calibration, each in words), in the
metadata's order."""


class ChoiceSource(Enum):
    """Where a decision's value came from (its metadata's ``source``)."""

    RECOMMENDED = "recommended"
    """The performance model's option."""
    DERIVED = "derived"
    """Computed from other choices."""
    OVERRIDE = "override"
    """The user's prop."""
    BENCHMARK = "benchmark"
    """Measured at deploy time (the benchmark's knee)."""


@dataclass(frozen=True)
class Choice:
    """A value the decision settled on and where it came from (``ChoiceSource``)."""

    value: Any
    source: ChoiceSource


@dataclass(frozen=True)
class Prediction:
    """The performance model's figures at the peak, and where its inputs come from."""

    concurrency: int
    concurrency_per_copy: int
    knee_concurrency_per_copy: int
    ms_per_token: float
    ttft_ms: float
    tokens_per_s: float
    requests_per_s: float
    sources: tuple[str, ...] = ()
    """The facts and constants behind the figures, each with its source."""
    ms_per_token_p10_p90: tuple[float, float] | None = None
    """The p10-p90 of ``ms_per_token`` the decision quotes (``planning.option_band``: the
    conformal band of the peak's load regime, or a calibration's); None: not recorded."""

    def to_metadata(self) -> dict[str, Any]:
        """The ``predicted`` entry of the template metadata (figures rounded)."""
        band = self.ms_per_token_p10_p90
        return {
            "concurrency": self.concurrency,
            "concurrency_per_copy": self.concurrency_per_copy,
            "knee_concurrency_per_copy": self.knee_concurrency_per_copy,
            "ms_per_token": round(self.ms_per_token, 2),
            "ms_per_token_p10_p90": None if band is None else [round(v, 2) for v in band],
            "ttft_ms": round(self.ttft_ms, 1),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "requests_per_s": round(self.requests_per_s, 3),
        }

    @staticmethod
    def from_metadata(entry: Mapping[str, Any], sources: Sequence[Any]) -> Prediction:
        """The figures of a ``predicted`` entry (a figure it lacks reads as 0) and the
        metadata's ``sources``."""
        return Prediction(
            concurrency=int(entry.get("concurrency") or 0),
            concurrency_per_copy=int(entry.get("concurrency_per_copy") or 0),
            knee_concurrency_per_copy=int(entry.get("knee_concurrency_per_copy") or 0),
            ms_per_token=float(entry.get("ms_per_token") or 0),
            ttft_ms=float(entry.get("ttft_ms") or 0),
            tokens_per_s=float(entry.get("tokens_per_s") or 0),
            requests_per_s=float(entry.get("requests_per_s") or 0),
            sources=tuple(str(source) for source in sources),
            ms_per_token_p10_p90=_pair(entry.get("ms_per_token_p10_p90")),
        )


def _pair(value: Any) -> tuple[float, float] | None:
    """A ``[low, high]`` of the metadata as a pair (None where it is absent or malformed: a
    template of an earlier release)."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    low, high = value
    return float(low), float(high)


@dataclass(frozen=True)
class RecordedOptimization:
    """The ``optimization`` entry: the optimization served, in words, and its job's estimate."""

    name: str
    """``Optimization.name`` (e.g. ``awq``)."""
    serves: str
    """``Optimization.describe()``: what it serves."""
    job: JobEstimate | None
    """The optimization job's expected time and cost (None: not recorded)."""

    def to_metadata(self) -> dict[str, Any]:
        """The JSON-ready entry."""
        return {
            "name": self.name,
            "serves": self.serves,
            "job": None if self.job is None else self.job.to_dict(),
        }

    @staticmethod
    def from_metadata(entry: Any) -> RecordedOptimization | None:
        """The entry read back; None when absent or not a mapping."""
        if not isinstance(entry, Mapping):
            return None
        job = entry.get("job")
        estimate = None
        if isinstance(job, Mapping):
            estimate = JobEstimate(
                technique=str(job.get("technique", "")),
                hours=job.get("hours"),
                cost=job.get("cost"),
                basis=str(job.get("basis", "")),
            )
        return RecordedOptimization(
            name=str(entry.get("name")), serves=str(entry.get("serves", "")), job=estimate
        )


@dataclass(frozen=True)
class DecisionRecord:
    """A service decision as recorded in the template: what ``plan`` shows a reviewer."""

    goal: Mapping[str, Any]
    """The ``GOAL_KEYS`` entries present, in words."""
    choices: Mapping[str, Choice]
    """Every decided value and its source."""
    predicted: Prediction
    """The figures at the peak (rounded as recorded) and their sources."""
    price_per_hour: float | None
    """Price per hour of the layout at the peak; None when unpriced."""
    cost_per_million_tokens: float | None
    """Cost per 1M output tokens at the peak; None when unpriced."""
    reasoning: tuple[str, ...]
    """Why this layout, one line each."""
    alternatives: tuple[str, ...]
    """The next-best layouts, described."""
    rejected: tuple[str, ...]
    """The first rejections, with why."""
    rejected_count: int
    """How many layouts were rejected in all."""
    warnings: tuple[str, ...]
    """The decision's warnings, their messages."""
    calibration_notes: tuple[str, ...] = ()
    """What of the calibration did not transfer (recorded only when calibrated)."""
    calibration_change: str | None = None
    """What the calibration changed against the uncalibrated decision (None: uncalibrated)."""
    optimization: RecordedOptimization | None = None
    """The optimization served (None: the model as given)."""

    def chosen(self, name: str) -> Any:
        """The value of the choice ``name``; None when the record lacks it or it is null."""
        found = self.choices.get(name)
        return None if found is None else found.value

    def hourly(self) -> dict[str, dict[str, float | int]] | None:
        """Instances and $/h at the minimum, expected at the peak (the median's instances) and
        at the autoscaling ceiling (the band's pessimistic edge), from the option's price at
        the peak; None where the option is unpriced."""
        count = self.instances_at_peak
        if self.price_per_hour is None:
            return None
        unit = self.price_per_hour / count
        figures = {}
        for name, instances in (
            ("minimum", self._whole("min_instances")),
            ("expected_at_peak", count),
            ("ceiling", self._whole("max_instances")),
        ):
            figures[name] = {"instances": instances, "price_per_hour": round(unit * instances, 4)}
        return figures

    def _whole(self, name: str) -> int:
        """A whole-number choice of the record (0 where it lacks one)."""
        value = self.chosen(name)
        return 0 if value is None else int(value)

    @property
    def instances_at_peak(self) -> int:
        """The instances expected at the peak, at least 1: the record keeps the bounds, not
        the count at the peak, so it follows from the predicted requests in flight, per copy
        and the copies per instance."""
        per_copy = self.predicted.concurrency_per_copy
        copies = self.chosen("copies_per_instance")
        per_instance = per_copy * (1 if copies is None else int(copies))
        return max(1, math.ceil(self.predicted.concurrency / max(1, per_instance)))

    def to_metadata(self) -> dict[str, Any]:
        """The JSON-ready record under ``template_metadata.SERVICE`` (``calibration_notes``
        and ``calibration_change`` only when calibrated, ``optimization`` only when one is
        served)."""
        return {
            **self.goal,
            "choices": {
                name: {"value": choice.value, "source": choice.source.value}
                for name, choice in sorted(self.choices.items())
            },
            "predicted": self.predicted.to_metadata(),
            "price_per_hour": _rounded(self.price_per_hour, 4),
            "cost_per_million_tokens": _rounded(self.cost_per_million_tokens, 4),
            "reasoning": list(self.reasoning),
            "alternatives": list(self.alternatives),
            "rejected": list(self.rejected),
            "rejected_count": self.rejected_count,
            "warnings": list(self.warnings),
            **(
                {
                    "calibration_notes": list(self.calibration_notes),
                    "calibration_change": self.calibration_change,
                }
                if self.calibration_change is not None
                else {}
            ),
            **(
                {"optimization": self.optimization.to_metadata()}
                if self.optimization is not None
                else {}
            ),
            "sources": list(self.predicted.sources),
        }

    @staticmethod
    def from_metadata(data: Mapping[str, Any]) -> DecisionRecord:
        """The record an ``LlmService`` wrote (``plan`` reads it from cdk.out); a list it
        lacks reads as empty, a figure as 0."""
        choices = {
            name: Choice(entry.get("value"), ChoiceSource(entry["source"]))
            for name, entry in (data.get("choices") or {}).items()
            if isinstance(entry, Mapping)
        }
        return DecisionRecord(
            goal={key: data[key] for key in GOAL_KEYS if key in data},
            choices=choices,
            predicted=Prediction.from_metadata(
                data.get("predicted") or {}, data.get("sources") or ()
            ),
            price_per_hour=data.get("price_per_hour"),
            cost_per_million_tokens=data.get("cost_per_million_tokens"),
            reasoning=_lines(data.get("reasoning")),
            alternatives=_lines(data.get("alternatives")),
            rejected=_lines(data.get("rejected")),
            rejected_count=int(data.get("rejected_count") or len(data.get("rejected") or ())),
            warnings=_lines(data.get("warnings")),
            calibration_notes=_lines(data.get("calibration_notes")),
            calibration_change=None
            if data.get("calibration_change") is None
            else str(data["calibration_change"]),
            optimization=RecordedOptimization.from_metadata(data.get("optimization")),
        )


def _lines(value: Any) -> tuple[str, ...]:
    return tuple(str(line) for line in value or ())


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
