"""Optimizations the decision weighs against buying more accelerators: quantized weights (AWQ
INT4, FP8) and speculative decoding, each with the SageMaker optimization job it needs and
that job's time and cost.

What each changes in the performance model:

- ``Optimization.awq()`` / ``Optimization.fp8()``: the weights' precision (bytes read per
  decode step and memory for the KV cache), at the engine's measured kernel speed for that
  precision (the engine profile's quantized-kernel factors, ``planning.engine_profiles``).
- ``Optimization.speculative_decoding(...)``: tokens per decode step and the draft's cost
  (``planning.speculation``).

The job (SageMaker developer guide, "Create an inference optimization job", section "Instance
pricing for inference optimization jobs"): "When you create a inference optimization job that
applies quantization or compilation, SageMaker AI chooses which instance type to use to run the
job. You are charged based on the instance used ... You incur no additional costs for jobs that
apply speculative decoding." That sentence predates the jobs that train an EAGLE head: the
AWS Machine Learning Blog post that introduced them ("Amazon SageMaker AI introduces EAGLE based
adaptive speculative decoding to accelerate generative AI inference", November 2025, "Pricing
considerations") says "Optimization jobs run on SageMaker AI training instances, you will be
billed depending on the instance type and job duration", and publishes neither: an EAGLE job's
time and cost are therefore unknown, not zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..catalog.containers import ContainerFamily, draft_serving_problem
from ..catalog.model_specs import ModelSpec, Precision
from ..errors import ValidationError
from ..prop_types import typed_factory, typed_props
from .engine_profiles import engine_profile
from .speculation import Speculation

JOB_START_HOURS = 0.25
"""Fixed part of a quantization job's time: provisioning, downloading the weights and uploading
the result (an assumption: SageMaker publishes no figure)."""
QUANTIZATION_GPU_HOURS_PER_BILLION = 4.0 / 175
"""Quantization time per billion parameters: GPTQ quantizes the 175-billion-parameter OPT and
BLOOM models "in approximately four GPU hours" on one A100 (Frantar et al., "GPTQ: Accurate
Post-Training Quantization for Generative Pre-trained Transformers", ICLR 2023, abstract).
AWQ needs no reconstruction and is faster (Lin et al., "AWQ", MLSys 2024), and FP8 only
calibrates scales, so this is an upper bound for both."""

EAGLE_JOB_BASIS = (
    "trains an EAGLE head on SageMaker training instances, billed by instance type and "
    "duration, neither published (AWS ML Blog, EAGLE speculative decoding, Nov 2025)"
)
"""Why an EAGLE job's time and cost are unknown (module documentation)."""


class OptimizationKind(Enum):
    """What an optimization changes."""

    AWQ = "awq"
    """INT4 weights by activation-aware weight quantization (``OPTION_QUANTIZE=awq``)."""
    FP8 = "fp8"
    """FP8 weights (``OPTION_QUANTIZE=fp8``; native on Ada and Hopper GPUs)."""
    SPECULATIVE_DECODING = "speculative-decoding"
    """Draft tokens verified by the model (an EAGLE head the job trains)."""


@dataclass(frozen=True)
class JobEstimate:
    """What the optimization job an option needs is expected to take and cost."""

    technique: str
    """The job's ``OptimizationConfig`` and its setting (what ``OptimizationJob`` renders)."""
    hours: float | None
    """Expected wall-clock hours; None where nothing published supports a figure."""
    cost: float | None
    """Expected cost in the price list's currency; None when the price is unknown."""
    basis: str
    """Where the figures come from, in words."""

    def describe(self) -> str:
        """E.g. ``ModelQuantizationConfig (awq): about 0.4 h, $2.10 (...)``."""
        hours = "time not published" if self.hours is None else f"about {self.hours:.1f} h"
        cost = "cost unknown" if self.cost is None else f"${self.cost:,.2f}"
        return f"{self.technique}: {hours}, {cost} ({self.basis})"

    def to_dict(self) -> dict[str, object]:
        """The JSON form."""
        return {
            "technique": self.technique,
            "hours": None if self.hours is None else round(self.hours, 2),
            "cost": None if self.cost is None else round(self.cost, 2),
            "basis": self.basis,
        }


@typed_props
@dataclass(frozen=True)
class Optimization:
    """One optimization the decision may apply; build it with the static factories."""

    kind: OptimizationKind
    """What it changes."""
    speculation: Speculation | None = None
    """The speculative decoding it models, for ``SPECULATIVE_DECODING``."""

    @staticmethod
    def awq() -> Optimization:
        """INT4 (AWQ) weights: a quarter of FP16's bytes, at the engine's INT4 kernel speed."""
        return Optimization(OptimizationKind.AWQ)

    @staticmethod
    def fp8() -> Optimization:
        """FP8 weights: half of FP16's bytes, at the engine's FP8 kernel speed."""
        return Optimization(OptimizationKind.FP8)

    @staticmethod
    @typed_factory
    def speculative_decoding(speculation: Speculation | None = None) -> Optimization:
        """Speculative decoding; default an EAGLE head (``Speculation.eagle()``), which
        SageMaker's optimization job trains."""
        return Optimization(
            OptimizationKind.SPECULATIVE_DECODING, speculation or Speculation.eagle()
        )

    @staticmethod
    def of(name: str) -> Optimization:
        """An optimization by name, with its defaults: ``awq``, ``fp8`` or
        ``speculative-decoding`` (an EAGLE head)."""
        factories = {
            OptimizationKind.AWQ.value: Optimization.awq,
            OptimizationKind.FP8.value: Optimization.fp8,
            OptimizationKind.SPECULATIVE_DECODING.value: Optimization.speculative_decoding,
        }
        factory = factories.get(str(name).strip().lower())
        if factory is None:
            raise ValidationError(
                "optimization",
                name,
                "not an optimization the performance model knows",
                f"use one of {', '.join(factories)}",
            )
        return factory()

    @property
    def name(self) -> str:
        """Short name: ``awq``, ``fp8``, ``speculative-decoding``."""
        return self.kind.value

    def precision(self, base: Precision) -> Precision:
        """The weights' precision with this optimization applied to ``base``."""
        if self.kind is OptimizationKind.AWQ:
            return Precision.INT4_AWQ
        if self.kind is OptimizationKind.FP8:
            return Precision.FP8
        return base

    def job(self, spec: ModelSpec, price_per_hour: float | None) -> JobEstimate:
        """The optimization job this needs, priced at ``price_per_hour`` (the deployment's
        instance type: SageMaker chooses the job's instance and does not publish which)."""
        if self.kind is OptimizationKind.SPECULATIVE_DECODING:
            return JobEstimate(
                "ModelSpeculativeDecodingConfig (EAGLE)",
                None,
                None,
                EAGLE_JOB_BASIS,
            )
        hours = JOB_START_HOURS + QUANTIZATION_GPU_HOURS_PER_BILLION * spec.parameters / 1e9
        return JobEstimate(
            f"ModelQuantizationConfig (OPTION_QUANTIZE={self.kind.value})",
            hours,
            None if price_per_hour is None else hours * price_per_hour,
            "GPTQ's 4 GPU-hours per 175B parameters plus 15 min to start, at the deployment "
            "instance's price",
        )

    def engine_problem(self, engine: object, profile_name: str) -> str | None:
        """Why the serving engine cannot apply this optimization, or None: speculative
        decoding needs LMI 0.27.0 or later with vLLM / LMI-Dist
        (``catalog.containers.draft_serving_problem``). ``engine`` is a container release
        (``EngineRelease``: its family and version decide) or anything else, when the
        resolved profile's family decides (an unknown release is trusted)."""
        if self.speculation is None:
            return None
        family_value = getattr(engine, "family", None)
        if isinstance(family_value, str):
            version = getattr(engine, "version", None)
            return draft_serving_problem(ContainerFamily(family_value), version)
        family = engine_profile(profile_name).family
        return None if family is None else draft_serving_problem(family, None)

    def check_engine(self, engine: object, profile_name: str) -> None:
        """Raise ValidationError naming ``engine`` when it cannot apply this optimization
        (``engine_problem``) rather than predict a speed-up nothing would serve."""
        problem = self.engine_problem(engine, profile_name)
        if problem is None:
            return
        family_value = getattr(engine, "family", None)
        name = (
            f"{family_value} {getattr(engine, 'version', None) or ''}".strip()
            if isinstance(family_value, str)
            else profile_name
        )
        raise ValidationError(
            "engine",
            name,
            f"cannot serve the {self.name} optimization: {problem}",
            "serve with LMI 0.27.0 or later (vLLM / LMI-Dist backends; e.g. lmi:0.31.0 or the "
            f"lmi-vllm-v1 profile), or drop the {self.name} optimization",
        )

    def describe(self) -> str:
        """The optimization in words."""
        if self.speculation is not None:
            return self.speculation.describe()
        return {
            OptimizationKind.AWQ: "INT4 (AWQ) weights",
            OptimizationKind.FP8: "FP8 weights",
        }[self.kind]
