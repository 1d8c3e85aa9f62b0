"""Calibration: the performance model's efficiency factors as fitted to a benchmark's results
(``planning.calibration_fit.calibrate``), what was measured, and what they say elsewhere.

The calibration keeps the measured levels per copy (``Calibration.measured``,
``planning.measured_curve``): on the layout it measured, at a workload close to the measured
one, they size the deployment, and the fitted factors only transfer them
(``Calibration.measured_curve_for``).

A calibration is keyed by what was measured: the serving **engine** (container family and
version), the **hardware** (instance type and its accelerator), the **tensor-parallel degree**
and the **model**. It also records the weights' precision and the KV cache's
(``KvCachePrecision``: an FP8 KV cache holds twice the sequences and halves the KV reads of a
step): a prediction at another of either is extrapolated (``Calibration.coverage_notes``), its
band widened for the step away (``planning.calibrated_band``). ``cdk-sagemaker-llm
calibrate`` writes it as a calibration file (JSON, ``CALIBRATION_FORMAT`` version
``CALIBRATION_VERSION``; ``Calibration.to_dict``) that ``Calibration.from_file`` reads back.
``Calibration.applied_to`` decides what a calibration says about another target:

- another engine (another container family, or a version outside the measured one's
  compatible range, see ``EngineRelease.compatible_with``) is a ``ValidationError``: an engine's
  scheduler and kernels are what the factors measure;
- another model keeps only the engine- and hardware-level factors (the bandwidth and compute
  efficiencies the engine reaches on that accelerator, and its per-step overhead) and says so:
  the measured levels, knee and fit error describe the benchmarked model only;
- another accelerator keeps only the engine-level factor (the per-step overhead); the
  bandwidth and compute efficiencies fall back to the target engine's profile
  (``planning.engine_profiles``), and it says so.

The per-step overhead a calibration measures is one figure at the benchmarked model's layers
and TP degree; applied to another model or accelerator it scales the target engine profile's
overhead (which grows with layers and TP) to that figure, rather than carrying a flat cost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..catalog.containers import ContainerFamily, parse_container_release
from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import KvCachePrecision, ModelSpec, Precision
from ..errors import ValidationError
from ..prop_types import typed_props
from .calibration_grids import LABELS, PREFILL_HOLD_GRID, FitGrids
from .efficiency import Efficiency, efficiency_of
from .engine_profiles import EngineProfile, profile_for_image, resolve_profile
from .measured_curve import MeasuredCurve
from .performance import Layout, Workload
from .placement import KvCacheMemory

CALIBRATION_FORMAT = "cdk-sagemaker-llm/calibration"
"""The ``format`` field of a calibration file."""
CALIBRATION_VERSION = 3
"""The ``version`` field of the calibration files this release writes: 2 adds the measured
levels per copy (``measured``: ``planning.measured_curve``), 3 the benchmarked KV cache's
precision (``kv_cache_precision``), so that a release which does not know it refuses an FP8
calibration rather than reading it as the default."""
READABLE_VERSIONS = (1, 2, CALIBRATION_VERSION)
"""The versions this release reads: a version 1 file has no measured levels, so it sizes from
the fitted model only (``Calibration.measured_curve_for`` says so); a version 1 or 2 file
states no KV cache precision and reads as ``KvCachePrecision.AUTO`` (what every calibration
before version 3 fitted)."""
_VERSION = re.compile(r"^\d+(\.\d+)*")


@typed_props
@dataclass(frozen=True)
class EngineRelease:
    """The serving engine a benchmark measured: the container family (``ContainerFamily``
    value, e.g. ``tgi``, ``lmi``, ``lmi-tensorrt-llm``) and its release (``3.3.6``, ``0.31.0``;
    None when unknown)."""

    family: str
    """The container family's value (``tgi``, ``lmi``, ``lmi-tensorrt-llm``)."""
    version: str | None = None
    """The release (``3.3.6``); None when unknown."""
    kv_cache_memory: KvCacheMemory | None = field(default=None, compare=False)
    """The share of the memory the container is configured to allocate (its serving
    environment's setting: ``configured_by``); None: its engine profile's default. Not part of
    the release's identity: a calibration of the same release matches it."""

    def __post_init__(self) -> None:
        families = [f.value for f in ContainerFamily]
        if self.family not in families:
            raise ValidationError(
                "engine.family",
                self.family,
                "is not a container family the library knows",
                f"pass one of {', '.join(families)}",
            )
        if self.version is not None and not _VERSION.match(self.version):
            raise ValidationError(
                "engine.version",
                self.version,
                "is not a release number",
                "pass the container's release, e.g. 3.3.6 (TGI) or 0.31.0 (LMI), or omit it",
            )

    @staticmethod
    def parse(text: str) -> EngineRelease:
        """``tgi:3.3.6``, ``lmi@0.31.0`` or ``tgi`` (version unknown), the family in any
        case; a family the library does not know, an empty release or one the container
        catalog does not list is a ``ValidationError`` (``parse_container_release``)."""
        family, version = parse_container_release("engine", text)
        return EngineRelease(family.value, version)

    @property
    def generation(self) -> tuple[int, ...] | None:
        """The compatible range of the version: its components up to and including the first
        non-zero one (``3.3.6`` -> ``(3,)``, ``0.31.0`` -> ``(0, 31)``), as semantic
        versioning's caret ranges; None when the version is unknown."""
        if self.version is None:
            return None
        match = _VERSION.match(self.version)
        assert match is not None
        parts = tuple(int(part) for part in match.group(0).split("."))
        for index, part in enumerate(parts):
            if part != 0:
                return parts[: index + 1]
        return parts

    def compatible_with(self, other: EngineRelease) -> bool:
        """Same family and, where both versions are known, the same compatible range."""
        if self.family != other.family:
            return False
        return (
            self.generation is None
            or other.generation is None
            or (self.generation == other.generation)
        )

    def configured_by(self, environment: Mapping[str, Any]) -> EngineRelease:
        """This release as a serving ``environment`` configures it: with the memory share the
        environment sets (``KvCacheMemory.configured_by``: LMI's
        ``OPTION_GPU_MEMORY_UTILIZATION``, TGI's ``CUDA_MEMORY_FRACTION``), so that the
        decision sizes the KV cache the container will allocate; unchanged where it sets
        none. Raises ValidationError on a setting that is not a fraction."""
        default = profile_for_image(self.family, self.version).batching.kv_cache_memory
        share = default.configured_by(environment)
        return self if share.set_by is None else replace(self, kv_cache_memory=share)

    def describe(self) -> str:
        """E.g. ``tgi 3.3.6`` or ``lmi (version unknown)``."""
        return f"{self.family} {self.version or '(version unknown)'}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"family", "version"}``."""
        return {"family": self.family, "version": self.version}

    @staticmethod
    def from_dict(data: Any, where: str = "engine") -> EngineRelease:
        """Read ``{"family", "version"}`` (``release`` as in template metadata works too)."""
        where = where or "engine"  # the prop the errors name
        if not isinstance(data, Mapping) or not isinstance(data.get("family"), str):
            raise ValidationError(
                where,
                data,
                'must be {"family": ..., "version": ...}',
                'write the engine as {"family": "tgi", "version": "3.3.6"}',
            )
        version = data.get("version", data.get("release"))
        return EngineRelease(data["family"], None if version is None else str(version))


@typed_props
@dataclass(frozen=True)
class Calibration:
    """Efficiency factors fitted to one benchmark of one model on one layout."""

    efficiency: Efficiency
    """The fitted efficiency factors (memory bandwidth, compute, step overhead)."""
    model: str
    """The benchmarked model's name."""
    instance_type: str
    """The benchmarked instance type's name (``ml.g5.2xlarge``)."""
    tensor_parallel_degree: int
    """Accelerators each benchmarked copy was sharded over."""
    copies: int
    """Copies the benchmarked endpoint had (instances x copies per instance)."""
    precision: str
    """The benchmarked weights' precision (``fp16``)."""
    input_tokens: int
    """Prompt tokens of the benchmark's requests."""
    output_tokens: int
    """Generated tokens of the benchmark's requests."""
    concurrency_range: tuple[int, int]
    """Lowest and highest benchmarked concurrency, whole deployment."""
    levels: int
    """Benchmark levels the fit used."""
    rms_error: float
    """Root-mean-square relative error of the fitted ms/token over the levels, timed in closed
    form (as ``recommend`` and ``LlmService`` time a layout)."""
    source: str = "results.json"
    """Where the results came from (a path or an ``s3://`` URI)."""
    engine: EngineRelease | None = None
    """The serving engine measured; None for a fit made without it (``calibrate(...)``
    without ``engine=``), which ``applied_to`` cannot check."""
    accelerator: str | None = None
    """The accelerator of ``instance_type`` (e.g. ``NVIDIA A10G``): the hardware key."""
    layers: int | None = None
    """Layers of the calibrated model (for the record of what was measured)."""
    ttft_rms_error: float | None = None
    """Root-mean-square relative error of the fitted TTFT over the streamed levels; None when
    no level measured TTFT."""
    batch_limit: int | None = None
    """Sequences per copy the benchmarked server ran at once, where the levels show requests
    queueing for admission below the highest measured concurrency (``fit_notes`` says how to
    apply it); None: no level queued."""
    measured: MeasuredCurve | None = None
    """The measured levels per copy (``planning.measured_curve``): on the same layout they
    decide the capacity and the knee (``measured_curve_for``); None for a version 1 file."""
    kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO
    """How the benchmarked engine stored the KV cache (``KvCachePrecision``): the fit timed
    the copy with it (its KV capacity and the KV bytes a decode step reads). A prediction at
    another KV precision is extrapolated, as one at another weights precision is
    (``coverage_notes``). A file without the field (versions 1 and 2) reads as AUTO."""
    simulated_rms_error: float | None = None
    """Where the factors were refined through the engine's scheduler simulation
    (``calibration_simulated``, kept where it explains the levels better than the closed
    form): the root-mean-square relative error of the simulated ms/token over the levels.
    ``predict`` then times levels through the simulation by default, and its calibrated band
    reads this error. None: the closed-form fit was kept."""
    file: str | None = field(default=None, compare=False)
    """The calibration file it was read from (``from_file``), for error messages."""

    def describe(self) -> str:
        """Where the factors come from, in one line."""
        low, high = self.concurrency_range
        engine = f" with {self.engine.describe()}" if self.engine else ""
        if self.kv_cache_precision is not KvCachePrecision.AUTO:
            engine += f", {self.kv_cache_precision.value} KV cache"
        ttft = "" if self.ttft_rms_error is None else f", TTFT {self.ttft_rms_error:.0%} rms error"
        fit = f"{self.rms_error:.0%} rms error{ttft}"
        if self.simulated_rms_error is not None:
            fit = (
                f"fitted through the scheduler simulation, {self.simulated_rms_error:.0%} rms "
                f"error there; in closed form {fit}"
            )
        if self.batch_limit is not None:
            fit += f", queueing past {self.batch_limit} per copy"
        return (
            f"calibrated on {self.source}: {self.model}{engine} on {self.instance_type} "
            f"TP{self.tensor_parallel_degree} x {self.copies} copies, {self.input_tokens} in / "
            f"{self.output_tokens} out, concurrency {low}-{high} ({self.levels} levels, "
            f"{fit}): {self.efficiency.describe()}"
        )

    def fit_error(self, simulated: bool) -> float:
        """The rms error of the fit as a prediction times it: through the scheduler simulation
        (``simulated``) where the factors were refined there, in closed form otherwise."""
        if simulated and self.simulated_rms_error is not None:
            return self.simulated_rms_error
        return self.rms_error

    def coverage_notes(
        self,
        spec: ModelSpec,
        layout: Layout,
        workload: Workload,
        precision: Precision,
        concurrency: Sequence[int],
        kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO,
    ) -> list[str]:
        """Where a prediction leaves what this calibration measured (empty: it does not);
        ``kv_cache_precision``: how the predicted engine stores the KV cache."""
        notes = []
        if spec.name != self.model:
            notes.append(f"extrapolated: calibrated on {self.model}, predicting {spec.name}")
        if layout.instance_type.name != self.instance_type:
            notes.append(
                f"extrapolated: calibrated on {self.instance_type}, predicting "
                f"{layout.instance_type.name}"
            )
        if layout.tensor_parallel_degree != self.tensor_parallel_degree:
            notes.append(
                f"extrapolated: calibrated at TP{self.tensor_parallel_degree}, predicting "
                f"TP{layout.tensor_parallel_degree}"
            )
        if precision.value != self.precision:
            notes.append(
                f"extrapolated: calibrated in {self.precision}, predicting {precision.value}"
            )
        if kv_cache_precision is not self.kv_cache_precision:
            notes.append(
                f"extrapolated: calibrated with KV cache {self.kv_cache_precision.value}, "
                f"predicting KV cache {kv_cache_precision.value} (its bytes per token set the "
                "sequences that fit and the KV reads per step)"
            )
        for name, measured, wanted in (
            ("input", self.input_tokens, workload.input_tokens),
            ("output", self.output_tokens, workload.output_tokens),
        ):
            if not measured / 2 <= wanted <= measured * 2:
                notes.append(
                    f"extrapolated: {wanted} {name} tokens, calibrated at {measured} "
                    "(more than 2x away)"
                )
        low, high = self.concurrency_range
        per_copy_low = low / self.copies
        per_copy_high = high / self.copies
        outside = [c for c in concurrency if not per_copy_low <= c / layout.copies <= per_copy_high]
        if outside:
            notes.append(
                f"extrapolated: concurrency {', '.join(map(str, outside))} is outside the "
                f"calibrated {per_copy_low:g}-{per_copy_high:g} per copy"
            )
        return notes

    def measured_curve_for(
        self,
        spec: ModelSpec,
        layout: Layout,
        workload: Workload,
        precision: Precision,
        engine: EngineRelease | None,
        kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO,
    ) -> tuple[MeasuredCurve | None, str]:
        """The measured levels when they decide ``spec`` on ``layout`` at ``workload``: the
        same model, instance type, tensor-parallel degree, precision, KV cache precision and
        engine release, and a workload within ``measured_curve.WORKLOAD_TOLERANCE`` of the
        measured one (copies per instance aside: copies share no accelerator, so each is the
        measured copy). Else None and why, in words (empty when the calibration measured
        another layout)."""
        same = (
            spec.name == self.model
            and layout.instance_type.name == self.instance_type
            and layout.tensor_parallel_degree == self.tensor_parallel_degree
            and precision.value == self.precision
            and kv_cache_precision is self.kv_cache_precision
        )
        if not same:
            return None, ""
        if engine is not None and self.engine is not None and engine != self.engine:
            return None, (
                f"measured on {self.engine.describe()}, serving {engine.describe()}: the fitted "
                "model transfers the calibration"
            )
        if self.measured is None:
            return None, (
                f"the calibration file (version 1) keeps no measured levels: the fitted model "
                f"({self.rms_error:.0%} rms) sizes it; recreate the file with `cdk-sagemaker-llm "
                "calibrate` to size from the measurement"
            )
        far = self.measured.distance_from(workload)
        if far is not None:
            return None, (
                f"measured at another workload ({far}): the fitted model transfers the "
                "measurement, its band widened for the distance"
            )
        return self.measured, ""

    def fit_notes(self) -> list[str]:
        """Factors the fit left at an end of the range it searches: the levels do not pin
        them (e.g. decode never turns compute-bound), or the server lies outside what the
        model expresses there; predictions that lean on them are less certain. A highest value
        that is the accelerator's measured ceiling (``FitGrids.bounded_by``) says so."""
        accelerator = InstanceType.of(self.instance_type).accelerator
        grids = FitGrids.bounded_by(accelerator.achieved if accelerator else None)
        notes = []
        for name, grid in grids.searched():
            value = getattr(self.efficiency, name)
            if value not in (grid[0], grid[-1]):
                continue
            end = "lowest" if value == grid[0] else "highest"
            note = (
                f"{LABELS[name]} {value:g} is the {end} value the fit tries: these levels may "
                "not constrain it, or the server is outside the model's range there"
            )
            if value == grid[-1] and name in grids.ceilings:
                note += (
                    f" (the {accelerator.name if accelerator else 'accelerator'}'s measured "
                    "ceiling, catalog.instance_types.ACHIEVED_PEAKS: a fit that wants more means "
                    "the model charges a cost this server does not pay)"
                )
            notes.append(note)
        if self.batch_limit is not None:
            notes.append(
                f"the levels queue for admission past {self.batch_limit} in flight per copy: the "
                f"server ran at most {self.batch_limit} sequences at once (its batch limit, e.g. "
                "OPTION_MAX_ROLLING_BATCH_SIZE or MAX_BATCH_TOTAL_TOKENS); predictions use the "
                f"engine profile's limit unless told: pass --max-batch-size {self.batch_limit} "
                "to predict and recommend, or raise the server's limit"
            )
        hold = self.efficiency.prefill_hold_steps
        if hold == PREFILL_HOLD_GRID[-1]:
            notes.append(
                f"prefill hold {hold:g} decode steps is the highest value the fit tries: TTFT "
                "under load grows faster than a hold explains (requests may queue for admission "
                "below the measured concurrency: check the engine's batch limit)"
            )
        return notes

    # ----- the calibration file -------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The calibration file's JSON document (``CALIBRATION_FORMAT`` version
        ``CALIBRATION_VERSION``): ``format``, ``version``, the key (``engine``, ``hardware``,
        ``tensor_parallel_degree``, ``model``), what was measured (``precision``,
        ``kv_cache_precision``, ``copies``, ``workload``, ``concurrency_range``, ``levels``,
        ``rms_error``, ``ttft_rms_error``, ``simulated_rms_error``, ``source``) and the fitted
        ``efficiency``."""
        efficiency = self.efficiency
        return {
            "format": CALIBRATION_FORMAT,
            "version": CALIBRATION_VERSION,
            "engine": self.engine.to_dict() if self.engine else None,
            "hardware": {"instance_type": self.instance_type, "accelerator": self.accelerator},
            "tensor_parallel_degree": self.tensor_parallel_degree,
            "model": {"name": self.model, "layers": self.layers},
            "precision": self.precision,
            "kv_cache_precision": self.kv_cache_precision.value,
            "copies": self.copies,
            "workload": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "concurrency_range": list(self.concurrency_range),
            "levels": self.levels,
            "rms_error": round(self.rms_error, 6),
            "ttft_rms_error": None
            if self.ttft_rms_error is None
            else round(self.ttft_rms_error, 6),
            "batch_limit": self.batch_limit,
            "simulated_rms_error": None
            if self.simulated_rms_error is None
            else round(self.simulated_rms_error, 6),
            "source": self.source,
            "measured": None if self.measured is None else self.measured.to_dict(),
            "efficiency": {
                "memory_bandwidth": efficiency.memory_bandwidth,
                "decode_compute": efficiency.decode_compute,
                "prefill_compute": efficiency.prefill_compute,
                "step_overhead_ms": efficiency.step_overhead_ms,
                "prefill_hold_steps": efficiency.prefill_hold_steps,
            },
        }

    @staticmethod
    def from_dict(document: Any, *, where: str = "calibration") -> Calibration:
        """Read a calibration file's document (``to_dict``); a ValidationError naming the
        field otherwise. A document without ``kv_cache_precision`` (versions 1 and 2) reads
        as ``KvCachePrecision.AUTO``."""
        where = where or "calibration"  # the prop the errors name
        if not isinstance(document, Mapping) or document.get("format") != CALIBRATION_FORMAT:
            raise ValidationError(
                where,
                type(document).__name__
                if not isinstance(document, Mapping)
                else document.get("format"),
                f'is not a calibration file (its "format" is not "{CALIBRATION_FORMAT}")',
                "make one with `cdk-sagemaker-llm calibrate results.json --out calibration.json`",
            )
        if document.get("version") not in READABLE_VERSIONS:
            raise ValidationError(
                f"{where}.version",
                document.get("version"),
                "this release reads calibration files of version "
                + " or ".join(map(str, READABLE_VERSIONS)),
                "recreate the file with this release's `cdk-sagemaker-llm calibrate`",
            )
        kv_cache_precision = _kv_cache_precision_of(document, where)
        try:
            engine = document.get("engine")
            hardware = document["hardware"]
            model = document["model"]
            workload = document["workload"]
            low, high = document["concurrency_range"]
            factors = document["efficiency"]
            measured = document.get("measured")
            return Calibration(
                efficiency=Efficiency(
                    memory_bandwidth=float(factors["memory_bandwidth"]),
                    decode_compute=float(factors["decode_compute"]),
                    prefill_compute=float(factors["prefill_compute"]),
                    step_overhead_ms=float(factors["step_overhead_ms"]),
                    # Absent from files written before the hold was fitted: none.
                    prefill_hold_steps=float(factors.get("prefill_hold_steps", 0.0)),
                ),
                model=str(model["name"]),
                instance_type=str(hardware["instance_type"]),
                tensor_parallel_degree=int(document["tensor_parallel_degree"]),
                copies=int(document["copies"]),
                precision=str(document["precision"]),
                input_tokens=int(workload["input_tokens"]),
                output_tokens=int(workload["output_tokens"]),
                concurrency_range=(int(low), int(high)),
                levels=int(document["levels"]),
                rms_error=float(document["rms_error"]),
                source=str(document.get("source") or where),
                engine=None
                if engine is None
                else EngineRelease.from_dict(engine, f"{where}.engine"),
                accelerator=hardware.get("accelerator"),
                layers=model.get("layers"),
                ttft_rms_error=None
                if document.get("ttft_rms_error") is None
                else float(document["ttft_rms_error"]),
                batch_limit=None
                if document.get("batch_limit") is None
                else int(document["batch_limit"]),
                measured=None if measured is None else MeasuredCurve.from_dict(measured),
                kv_cache_precision=kv_cache_precision,
                # Absent from files written before the simulated fit was recorded: closed form.
                simulated_rms_error=None
                if document.get("simulated_rms_error") is None
                else float(document["simulated_rms_error"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValidationError(
                where,
                f"{type(error).__name__}: {error}",
                "is missing a field or has a field of the wrong type",
                "recreate the file with `cdk-sagemaker-llm calibrate`",
            ) from error

    @staticmethod
    def from_file(path: str | Path) -> Calibration:
        """Read a calibration file written by ``cdk-sagemaker-llm calibrate`` (or ``to_file``)
        from a local path: the API ``LlmService(calibration=...)`` and the commands use."""
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ValidationError(
                "calibration",
                str(path),
                f"cannot be read: {error}",
                "pass the file `cdk-sagemaker-llm calibrate --out` wrote",
            ) from error
        return replace(Calibration.from_dict(document, where=str(path)), file=str(path))

    def to_file(self, path: str | Path) -> None:
        """Write the calibration file (``to_dict``, indented, keys in a stable order)."""
        try:
            Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            raise ValidationError(
                "path", str(path), f"cannot be written: {error}", "pass a writable file path"
            ) from error

    # ----- applying it to a target ------------------------------------------------------------

    def check_profile(self, profile: EngineProfile) -> None:
        """A target named by its engine profile (``--engine tgi-1``) against the calibrated
        engine: another profile is another engine (generation), a ValidationError naming this
        calibration, both and the fix."""
        if self.engine is None:
            return
        measured = profile_for_image(self.engine.family, self.engine.version)
        if measured.name == profile.name:
            return
        raise ValidationError(
            "calibration",
            self.file or self.source,
            f"measures {self.engine.describe()} (engine profile {measured.name}), but the "
            f"target's engine profile is {profile.name}: a calibration holds only for the "
            "engine it measured",
            f"name the calibrated engine ({self.engine.family}:{self.engine.version or 'VERSION'}"
            f" or {measured.name}), or benchmark an engine of profile {profile.name} and "
            "calibrate on its results, or drop the calibration",
        )

    def engine_notes(self, engine: EngineRelease | None) -> list[str]:
        """Check the target's ``engine`` against the calibrated one: a ValidationError naming
        this calibration's source, both engines and the fix when it is another engine; else
        the notes to show (an assumed or differing release)."""
        if (
            engine is not None
            and self.engine is not None
            and not engine.compatible_with(self.engine)
        ):
            raise ValidationError(
                "calibration",
                self.file or self.source,
                f"measures {self.engine.describe()}, but the target runs {engine.describe()}: "
                "a calibration holds only for the engine it measured",
                f"benchmark the deployment on {engine.describe()} and run `cdk-sagemaker-llm "
                "calibrate` on its results, or drop the calibration",
            )
        if engine is None and self.engine is not None:
            return [
                f"engine assumed to be the calibrated {self.engine.describe()} (state the "
                "target's engine to have it checked)"
            ]
        if engine is not None and self.engine is None:
            return [
                "the calibration does not say which engine it measured; assumed "
                f"{engine.describe()}"
            ]
        if engine is not None and engine != self.engine:
            assert self.engine is not None
            if engine.version is None:
                return [
                    f"the target's {engine.family} release is unknown; assumed within the "
                    f"calibrated {self.engine.describe()}'s compatible range"
                ]
            return [
                f"calibrated on {self.engine.describe()}, applied to {engine.describe()} "
                "(same compatible release range)"
            ]
        return []

    def applied_to(
        self,
        spec: ModelSpec,
        instance_type: InstanceType,
        *,
        engine: EngineRelease | None = None,
        base: Efficiency | None = None,
    ) -> AppliedCalibration:
        """What this calibration says about ``spec`` on ``instance_type`` served by ``engine``
        (see the module docstring): the factors that transfer, on top of ``base`` for the rest,
        and a note for each factor that does not.

        :param engine: the target's engine; None assumes the calibrated one and says so.
        :param base: the uncalibrated factors; default the engine profile of the target's
            engine (``engine``, else the calibrated one: ``engine_profiles.resolve_profile``).
        :raises ValidationError: when ``engine`` is another engine than the calibrated one.
        """
        notes = self.engine_notes(engine)
        if self.batch_limit is not None:
            notes.append(
                f"the calibrated server queued requests past {self.batch_limit} in flight per "
                "copy (its batch limit); the prediction uses the engine profile's limit unless "
                f"max_batch_size says otherwise (--max-batch-size {self.batch_limit})"
            )
        if base is None:
            target = engine if engine is not None else self.engine
            base = efficiency_of(resolve_profile(target, instance_type.is_neuron))
        accelerator = instance_type.accelerator
        same_hardware = instance_type.name == self.instance_type or (
            accelerator is not None
            and self.accelerator is not None
            and accelerator.name == self.accelerator
        )
        fitted = self.efficiency
        same_model = spec.name == self.model
        if same_hardware and same_model:
            efficiency = fitted
        elif same_hardware:
            efficiency = replace(
                self._overhead_over(base),
                memory_bandwidth=fitted.memory_bandwidth,
                decode_compute=fitted.decode_compute,
                prefill_compute=fitted.prefill_compute,
            )
        else:
            efficiency = self._overhead_over(base)
            notes.append(
                f"calibrated on {self.accelerator or self.instance_type}, applied to "
                f"{accelerator.name if accelerator else instance_type.name}: only the "
                f"engine-level per-step overhead ({fitted.step_overhead_ms:g} ms) and prefill "
                f"hold ({fitted.prefill_hold_steps:g} decode steps) transfer; bandwidth and "
                "compute efficiencies are the engine profile's"
            )
        if not same_model:
            notes.append(
                f"calibrated on {self.model}, applied to {spec.name}: only the engine- and "
                "hardware-level factors transfer (bandwidth and compute efficiencies, per-step "
                f"overhead); the measured levels, knee and {self.rms_error:.0%} fit error "
                f"describe {self.model} only: benchmark {spec.name} and calibrate to confirm"
            )
        return AppliedCalibration(self, efficiency, tuple(notes))

    def _overhead_over(self, base: Efficiency) -> Efficiency:
        """``base`` (an engine profile's factors) with its per-step overhead scaled so that at
        the calibrated layers and TP degree it equals the measured one: the measurement sets the
        level, the profile how it grows with layers and TP (a calibration fits one flat
        overhead, which would otherwise carry one model's layers and TP to another). The
        measured prefill hold, counted in the engine's own decode steps, carries over as is."""
        fitted = self.efficiency
        base = replace(base, prefill_hold_steps=fitted.prefill_hold_steps)
        layers = self.layers or 0
        measured = fitted.step_overhead_s(layers, self.tensor_parallel_degree)
        profile = base.step_overhead_s(layers, self.tensor_parallel_degree)
        if self.layers is None or profile <= 0:
            return replace(
                base,
                step_overhead_ms=fitted.step_overhead_ms,
                per_layer_ms=0.0,
                per_layer_per_extra_rank_ms=0.0,
                per_extra_rank_ms=0.0,
            )
        scale = measured / profile
        return replace(
            base,
            step_overhead_ms=base.step_overhead_ms * scale,
            per_layer_ms=base.per_layer_ms * scale,
            per_layer_per_extra_rank_ms=base.per_layer_per_extra_rank_ms * scale,
            per_extra_rank_ms=base.per_extra_rank_ms * scale,
        )


@dataclass(frozen=True)
class AppliedCalibration:
    """A calibration as it applies to one target (``Calibration.applied_to``): the factors
    that transfer and what did not. It is a ``planning.performance.MeasuredEfficiency``, so
    ``predict(calibration=...)`` takes it."""

    calibration: Calibration
    efficiency: Efficiency
    transfer_notes: tuple[str, ...] = field(default=())
    """One line per factor that did not transfer, or assumption made (empty: all applied)."""

    @property
    def warnings(self) -> list[str]:
        """The notes a user must see (the same as ``transfer_notes``)."""
        return list(self.transfer_notes)

    def describe(self) -> str:
        """Where the factors come from, and what did not transfer."""
        return self.calibration.describe()

    def coverage_notes(
        self,
        spec: ModelSpec,
        layout: Layout,
        workload: Workload,
        precision: Precision,
        concurrency: Sequence[int],
        kv_cache_precision: KvCachePrecision = KvCachePrecision.AUTO,
    ) -> list[str]:
        """The transfer notes, then where the prediction leaves what was measured."""
        return [
            *self.transfer_notes,
            *self.calibration.coverage_notes(
                spec, layout, workload, precision, concurrency, kv_cache_precision
            ),
        ]


def _kv_cache_precision_of(document: Mapping[str, Any], where: str) -> KvCachePrecision:
    """A calibration file's ``kv_cache_precision``: AUTO where absent (versions 1 and 2 fitted
    every calibration with the activation precision's KV cache)."""
    value = document.get("kv_cache_precision")
    if value is None:
        return KvCachePrecision.AUTO
    try:
        return KvCachePrecision.of(str(value))
    except ValidationError as error:
        raise ValidationError(
            f"{where}.kv_cache_precision",
            value,
            error.problem,
            "recreate the file with `cdk-sagemaker-llm calibrate --kv-cache-precision auto|fp8`",
        ) from error
