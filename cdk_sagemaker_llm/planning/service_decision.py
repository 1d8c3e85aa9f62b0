"""What ``decide`` settled on: the layout, the serving settings the engine needs, the scaling
bounds, the predictions, and where each value came from (``Choice``, ``ChoiceSource``, from
``planning.decision_record``). The template metadata records it as a ``DecisionRecord``
(``ServiceDecision.to_record``). No aws_cdk here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..catalog.model_specs import KvCachePrecision, Precision
from ..prop_types import typed_props
from .decision_record import Choice, DecisionRecord, Prediction, RecordedOptimization
from .optimizations import JobEstimate, Optimization
from .performance import Layout
from .recommendation import Option, Recommendation

TGI_DEFAULT_PREFILL_TOKENS = 4096
"""TGI's default ``MAX_BATCH_PREFILL_TOKENS``; a longer prompt needs it raised."""


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
    kv_cache: KvCachePrecision = KvCachePrecision.AUTO
    """How the engine stores the KV cache (its setting per container:
    ``catalog.containers.FP8_KV_CACHE_SETTINGS``)."""

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
class DecisionWarning:
    """An override the model predicts will hurt, naming the prop (an annotation at synth)."""

    prop: str
    message: str


@typed_props
@dataclass(frozen=True)
class ServiceDecision:
    """What an ``LlmService`` deploys and why: decided by ``decide``, rendered by the
    construct, recorded in the template as its ``DecisionRecord`` (what ``plan`` reads)."""

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
    """Price per hour of the layout at the instances expected at the peak; None when unpriced."""
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
    option: Option = field(compare=False, repr=False)
    """The recommendation's option served."""
    recommendation: Recommendation = field(compare=False, repr=False)
    """Every option and rejection the performance model produced."""
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

    def to_record(self) -> DecisionRecord:
        """What the template metadata records of this decision (``DecisionRecord``)."""
        return DecisionRecord(
            goal=self.goal,
            choices=self.choices,
            predicted=self.predicted,
            price_per_hour=self.price_per_hour,
            cost_per_million_tokens=self.cost_per_million_tokens,
            reasoning=self.reasoning,
            alternatives=self.alternatives,
            rejected=self.rejected,
            rejected_count=self.rejected_count,
            warnings=tuple(warning.message for warning in self.warnings),
            calibration_notes=self.calibration_notes,
            calibration_change=self.calibration_change,
            optimization=None
            if self.optimization is None
            else RecordedOptimization(
                self.optimization.name, self.optimization.describe(), self.job
            ),
        )

    def to_metadata(self) -> dict[str, Any]:
        """The JSON-ready record under ``template_metadata.SERVICE``
        (``DecisionRecord.to_metadata``)."""
        return self.to_record().to_metadata()
