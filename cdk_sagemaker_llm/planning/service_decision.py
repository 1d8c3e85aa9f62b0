"""What ``decide`` settled on: the layout, the serving settings the engine needs, the scaling
bounds, the predictions, and where each value came from (``Choice``, ``ChoiceSource``). The
``ServiceDecision`` is recorded as template metadata (``to_metadata``). No aws_cdk here."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..catalog.instance_types import CATALOG, InstanceType
from ..catalog.model_specs import Precision
from ..errors import ValidationError
from ..prop_types import typed_props
from .optimizations import JobEstimate, Optimization
from .performance import Layout
from .recommend import Option, Recommendation

TGI_DEFAULT_PREFILL_TOKENS = 4096
"""TGI's default ``MAX_BATCH_PREFILL_TOKENS``; a longer prompt needs it raised."""


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
class ServingSettings:
    """The engine settings that make the container serve as the decision assumed."""

    tgi: bool
    tensor_parallel_degree: int
    max_batch_size: int
    """Requests one copy batches (LMI ``OPTION_MAX_ROLLING_BATCH_SIZE``)."""
    max_model_len: int
    """Longest sequence served (input + output tokens): the workload's longest request."""
    max_input_tokens: int
    precision: Precision
    mean_tokens: int | None = None
    """Mean input + output tokens per request, what TGI's batch budget counts; None:
    ``max_model_len`` (every request alike, or a ``max_model_len`` given)."""

    @property
    def max_batch_total_tokens(self) -> int:
        """TGI's ``MAX_BATCH_TOTAL_TOKENS``: TGI bounds its batch by tokens, batch x mean
        tokens per request (what the KV cache was checked to hold), and at least one longest
        sequence."""
        per_request = self.max_model_len if self.mean_tokens is None else self.mean_tokens
        return max(self.max_model_len, self.max_batch_size * per_request)

    @property
    def max_batch_prefill_tokens(self) -> int:
        """TGI's ``MAX_BATCH_PREFILL_TOKENS``: one prefill step takes at least a whole prompt
        and at most the batch's tokens."""
        total = self.max_batch_total_tokens
        return max(self.max_input_tokens, min(TGI_DEFAULT_PREFILL_TOKENS, total))


@dataclass(frozen=True)
class ScalingBounds:
    """Copy autoscaling: the copies and instances the traffic needs, and the target per copy."""

    min_copies: int
    max_copies: int
    min_instances: int
    max_instances: int
    target_concurrency_per_copy: float
    """The predicted (or overridden) knee per copy; with a benchmark, the construct holds the
    measured knee instead."""
    benchmark: bool = False
    """The target is the deploy-time benchmark's measured knee."""


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

    def to_metadata(self) -> dict[str, Any]:
        """The ``predicted`` entry of the template metadata (figures rounded)."""
        return {
            "concurrency": self.concurrency,
            "concurrency_per_copy": self.concurrency_per_copy,
            "knee_concurrency_per_copy": self.knee_concurrency_per_copy,
            "ms_per_token": round(self.ms_per_token, 2),
            "ttft_ms": round(self.ttft_ms, 1),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "requests_per_s": round(self.requests_per_s, 3),
        }


@dataclass(frozen=True)
class DecisionWarning:
    """An override the model predicts will hurt, naming the prop (an annotation at synth)."""

    prop: str
    message: str


@typed_props
@dataclass(frozen=True)
class ServiceDecision:
    """What an ``LlmService`` deploys and why: decided by ``decide``, rendered by the
    construct, recorded as template metadata, read back by ``plan``."""

    goal: Mapping[str, Any]
    """model, precision, workload, slo, traffic, candidates, prices, calibration (in words)."""
    layout: Layout
    """Instance type, tensor-parallel degree, copies per instance and instances at the peak."""
    serving: ServingSettings
    """The serving settings rendered into the container (batch limit, longest sequence)."""
    scaling: ScalingBounds
    """The copy and instance bounds autoscaling keeps."""
    min_memory_per_copy_mib: int
    """Host memory each copy reserves, MiB."""
    choices: Mapping[str, Choice]
    """Every decided value and its source (the metadata's ``choices``)."""
    predicted: Prediction
    """The performance model's figures for the layout at the traffic."""
    price_per_hour: float | None
    """Price per hour of the layout at its most instances; None when unpriced."""
    cost_per_million_tokens: float | None
    """Cost per 1M output tokens at the peak traffic; None when unpriced."""
    reasoning: tuple[str, ...]
    """Why this layout, one line each."""
    alternatives: tuple[str, ...]
    """The next-best layouts, described."""
    rejected: tuple[str, ...]
    """Layouts rejected, with why (the first few)."""
    rejected_count: int
    """How many layouts were rejected in all."""
    warnings: tuple[DecisionWarning, ...] = ()
    """Overrides the model predicts break the SLO, and other warnings."""
    calibration_notes: tuple[str, ...] = ()
    """What of the calibration did not transfer to this model, engine or hardware, and what was
    assumed (``AppliedCalibration.warnings`` on the chosen instance type; synth warnings)."""
    calibration_change: str | None = None
    """The uncalibrated decision beside this one: what the calibration changed (None:
    uncalibrated)."""
    optimization: Optimization | None = None
    """The optimization the served option applies to the model (``SearchSpace.optimizations``;
    ``LlmService`` creates its job and serves the job's output); None: the model as given."""
    job: JobEstimate | None = None
    """The optimization job that optimization needs, with its expected time and cost."""
    option: Option | None = field(default=None, compare=False, repr=False)
    """The recommendation's option served (None when read back from metadata)."""
    recommendation: Recommendation | None = field(default=None, compare=False, repr=False)
    """Every option and rejection (None when read back from metadata)."""

    def to_metadata(self) -> dict[str, Any]:
        """The JSON-ready record under ``template_metadata.SERVICE`` (``calibration_notes``
        and ``calibration_change`` only when calibrated)."""
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
            "warnings": [warning.message for warning in self.warnings],
            **(
                {
                    "calibration_notes": list(self.calibration_notes),
                    "calibration_change": self.calibration_change,
                }
                if self.calibration_change is not None
                else {}
            ),
            **(
                {"optimization": _optimization_metadata(self.optimization, self.job)}
                if self.optimization is not None
                else {}
            ),
            "sources": list(self.predicted.sources),
        }

    @staticmethod
    def from_metadata(data: Mapping[str, Any]) -> ServiceDecision:
        """The decision an ``LlmService`` recorded (``plan`` reads it from cdk.out); values
        the record lacks read as 0 or empty."""
        choices = {
            name: Choice(entry.get("value"), ChoiceSource(entry["source"]))
            for name, entry in (data.get("choices") or {}).items()
            if isinstance(entry, Mapping)
        }

        def value(name: str, default: Any = 0) -> Any:
            found = choices.get(name)
            return default if found is None or found.value is None else found.value

        name = str(value("instance_type", ""))
        instance = CATALOG.get(name) or InstanceType(name)
        degree = int(value("tensor_parallel_degree", 1))
        per_instance = int(value("copies_per_instance", 1))
        predicted = data.get("predicted") or {}
        concurrency = int(predicted.get("concurrency") or 0)
        per_copy = int(predicted.get("concurrency_per_copy") or 0)
        precision = _precision(data.get("precision"))
        model_len = int(value("max_model_len", 0))
        return ServiceDecision(
            goal={key: data[key] for key in GOAL_KEYS if key in data},
            layout=Layout(
                instance,
                degree,
                per_instance,
                max(1, math.ceil(concurrency / max(1, per_copy * per_instance))),
            ),
            serving=ServingSettings(
                tgi=False,
                tensor_parallel_degree=degree,
                max_batch_size=int(value("max_batch_size", 0)),
                max_model_len=model_len,
                max_input_tokens=model_len,
                precision=precision,
            ),
            scaling=ScalingBounds(
                min_copies=int(value("min_copies")),
                max_copies=int(value("max_copies")),
                min_instances=int(value("min_instances")),
                max_instances=int(value("max_instances")),
                target_concurrency_per_copy=float(value("target_concurrency_per_copy")),
                benchmark=(
                    "target_concurrency_per_copy" in choices
                    and choices["target_concurrency_per_copy"].source is ChoiceSource.BENCHMARK
                ),
            ),
            min_memory_per_copy_mib=int(value("min_memory_per_copy_mib")),
            choices=choices,
            predicted=Prediction(
                concurrency=concurrency,
                concurrency_per_copy=per_copy,
                knee_concurrency_per_copy=int(predicted.get("knee_concurrency_per_copy") or 0),
                ms_per_token=float(predicted.get("ms_per_token") or 0),
                ttft_ms=float(predicted.get("ttft_ms") or 0),
                tokens_per_s=float(predicted.get("tokens_per_s") or 0),
                requests_per_s=float(predicted.get("requests_per_s") or 0),
                sources=tuple(str(s) for s in data.get("sources") or ()),
            ),
            price_per_hour=data.get("price_per_hour"),
            cost_per_million_tokens=data.get("cost_per_million_tokens"),
            reasoning=tuple(str(line) for line in data.get("reasoning") or ()),
            alternatives=tuple(str(line) for line in data.get("alternatives") or ()),
            rejected=tuple(str(line) for line in data.get("rejected") or ()),
            rejected_count=int(data.get("rejected_count") or len(data.get("rejected") or ())),
            warnings=tuple(DecisionWarning("", str(w)) for w in data.get("warnings") or ()),
            calibration_notes=tuple(str(line) for line in data.get("calibration_notes") or ()),
            calibration_change=None
            if data.get("calibration_change") is None
            else str(data["calibration_change"]),
            **_optimization_from_metadata(data.get("optimization")),
        )


def _optimization_metadata(optimization: Optimization, job: JobEstimate | None) -> dict[str, Any]:
    """The ``optimization`` entry of the metadata: what it serves and the job it needs."""
    return {
        "name": optimization.name,
        "serves": optimization.describe(),
        "job": None if job is None else job.to_dict(),
    }


def _optimization_from_metadata(entry: Any) -> dict[str, Any]:
    """``optimization`` and ``job`` read back from the metadata's entry (none when absent or
    not understood)."""
    if not isinstance(entry, Mapping):
        return {}
    try:
        optimization = Optimization.of(str(entry.get("name")))
    except ValidationError:
        return {}
    job = entry.get("job")
    estimate = None
    if isinstance(job, Mapping):
        estimate = JobEstimate(
            technique=str(job.get("technique", "")),
            hours=job.get("hours"),
            cost=job.get("cost"),
            basis=str(job.get("basis", "")),
        )
    return {"optimization": optimization, "job": estimate}


GOAL_KEYS = (
    "model",
    "precision",
    "workload",
    "slo",
    "traffic",
    "candidates",
    "prices",
    "calibration",
)
"""The keys of ``ServiceDecision.goal``, in the metadata's order."""


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _precision(value: Any) -> Precision:
    try:
        return Precision(value)
    except ValueError:
        return Precision.FP16
