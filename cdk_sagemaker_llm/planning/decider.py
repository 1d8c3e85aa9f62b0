"""Deciding: ``decide`` turns a ``ServiceRequest`` and the user's ``Overrides`` into a
``ServiceDecision`` (the layout, the serving options the engine needs to behave as the
performance model assumed, the scaling bounds and target, the reasoning, the alternatives,
and the predictions with their figures and sources). ``recommend`` supplies the ranked options;
``choose`` keeps the cheapest that meets the layout overrides, and an error names the prop at
fault with the rejections in words. No aws_cdk here.

Overrides are checked where they are applied, and an error names the override that caused
it: a tensor-parallel degree whose heads do not divide, more copies per instance than its
accelerators hold, a batch above the KV cache. A layout no candidate can hold in memory is
blamed on the candidates, not on the SLO.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..catalog.instance_types import InstanceType
from ..catalog.model_specs import KvCachePrecision, Precision
from ..errors import ValidationError, check_range
from .calibration import AppliedCalibration, EngineRelease
from .decision_record import Choice, ChoiceSource, Prediction
from .efficiency import Efficiency, efficiency_of
from .engine_profiles import EngineProfile, profile_origin, resolve_profile
from .optimizations import Optimization
from .performance import (
    INVOCATION_TIMEOUT_S,
    CopyModel,
    Layout,
    predict,
    profile_limits,
    profile_model,
)
from .placement import head_divisibility_problem
from .quantized_coverage import MEASUREMENTS
from .ranking import RejectionKind
from .recommend import recommend
from .recommendation import Option, Recommendation, Rejection
from .service_decision import DecisionWarning, ScalingBounds, ServiceDecision, ServingSettings
from .service_options import unit_price
from .service_request import Overrides, ServiceRequest
from .workload import check_context, check_workload_context

HOST_MEMORY_SHARE = 0.5
"""Of a copy's share of host memory (its accelerators' share of the instance), the part its
``min_memory`` reserves by default: the rest stays free for SageMaker's agents, the OS and the
page cache that loading weights goes through."""
MAX_REJECTIONS_RECORDED = 8
MAX_ALTERNATIVES_RECORDED = 3


def decide(
    request: ServiceRequest,
    overrides: Overrides | None = None,
    *,
    recommendation: Recommendation | None = None,
) -> ServiceDecision:
    """The service decision for ``request`` under ``overrides`` (see the module docstring).

    :param recommendation: ``recommend``'s answer to the same request, when the caller has it
        (the ``recommend`` command); default computed here.

    Raises ``ValidationError`` naming the prop at fault when no layout can serve (the SLO,
    the candidates, the instance count) or an override cannot hold (its value and the fix).
    """
    overrides = overrides or Overrides()
    check_workload_context(request.spec, request.workload)
    if overrides.layout.max_model_len is not None:
        check_context(request.spec, overrides.layout.max_model_len, "max_model_len")
    decider = _Decider(request, overrides)
    option = decider.layout(recommendation)
    serving, choices = decider.serving(option)
    scaling, scaling_chosen = decider.scaling(option, serving)
    choices.update(scaling_chosen)
    choices.update(decider.layout_choices(option))
    memory = decider.memory(option.layout)
    choices["min_memory_per_copy_mib"] = memory
    choices.update(decider.optimization_choices())
    decision = ServiceDecision(
        goal=decider.goal(),
        layout=option.layout,
        serving=serving,
        scaling=scaling,
        min_memory_per_copy_mib=int(memory.value),
        choices=choices,
        predicted=decider.prediction(option),
        price_per_hour=option.price_per_hour,
        cost_per_million_tokens=option.cost_per_million_tokens,
        reasoning=(
            decider.engine_reasoning(option.layout.instance_type),
            *decider.optimization_reasoning(option),
            *option.reasoning,
        ),
        alternatives=tuple(summary(o) for o in decider.recommendation.options if o is not option)[
            :MAX_ALTERNATIVES_RECORDED
        ],
        rejected=tuple(
            describe_rejection(r.instance_type, r.tensor_parallel_degree, r.reason)
            for r in decider.recommendation.rejected[:MAX_REJECTIONS_RECORDED]
        ),
        rejected_count=len(decider.recommendation.rejected),
        warnings=tuple(decider.warnings),
        optimization=option.optimization,
        job=option.job,
        option=option,
        recommendation=decider.recommendation,
    )
    if request.sizing.calibration is None:
        return decision
    applied = decider.measured(decision.layout.instance_type)
    return replace(
        decision,
        calibration_notes=tuple(applied.warnings if applied is not None else ()),
        calibration_change=decider.calibration_change(decision),
    )


class _Decider:
    """The steps of ``decide``, each a method over the request and the overrides."""

    def __init__(self, request: ServiceRequest, overrides: Overrides) -> None:
        self.request = request
        self.overrides = overrides
        self.warnings: list[DecisionWarning] = []
        self._applied: dict[str, AppliedCalibration] = {}
        self.recommendation = Recommendation([], [])
        self.optimization: Optimization | None = None
        """The optimization of the option served (None: the model as given)."""
        self.precision = request.precision
        """The weights' precision served: the request's, or the optimization's."""

    def warn(self, prop: str, message: str) -> None:
        self.warnings.append(DecisionWarning(prop, message))

    # ----- calibration and engine --------------------------------------------------------

    @property
    def release(self) -> EngineRelease | None:
        """The container release that serves, when the request states one."""
        engine = self.request.engine
        return engine if isinstance(engine, EngineRelease) else None

    def measured(self, instance_type: InstanceType) -> AppliedCalibration | None:
        """The calibration as it applies to the model on ``instance_type`` under the request's
        engine (``Calibration.applied_to``: only what transfers); None when uncalibrated.
        Another engine than the calibrated one is a ValidationError naming ``calibration``."""
        request = self.request
        if request.sizing.calibration is None:
            return None
        found = self._applied.get(instance_type.name)
        if found is None:
            found = request.sizing.calibration.applied_to(
                request.spec, instance_type, engine=self.release
            )
            self._applied[instance_type.name] = found
        return found

    def efficiency_on(self, instance_type: InstanceType) -> Efficiency | None:
        """The measured efficiency factors the predictions use on ``instance_type`` (None:
        the engine profile's)."""
        applied = self.measured(instance_type)
        return applied.efficiency if applied is not None else None

    def profile(self, instance_type: InstanceType) -> EngineProfile:
        """The engine profile of the request's engine on ``instance_type``."""
        return resolve_profile(self.request.engine, instance_type.is_neuron)

    def engine_reasoning(self, instance_type: InstanceType) -> str:
        """The serving engine the decision assumed, its profile on ``instance_type``, and what
        is not checked without a container release."""
        engine = self.request.engine
        found = self.profile(instance_type)
        share = found.batching.kv_cache_memory
        configured = f" taking {share.describe()} as {share.set_by} sets" if share.set_by else ""
        profile = f"engine profile {found.name}{configured}"
        if isinstance(engine, EngineProfile):
            return (
                f"serving engine: {profile} (named; no container release: a calibration's "
                "engine is assumed, not checked)"
            )
        if engine is None:
            return (
                f"serving engine: not stated, the default {profile}; a calibration's engine is "
                "assumed, not checked"
            )
        if self.request.sizing.engine is None:
            return (
                f"serving engine: not stated, the calibrated {engine.describe()} assumed "
                f"(not checked), {profile}"
            )
        if engine.version is None:
            return (
                f"serving engine: {engine.family}, release unknown (an image given by URI), "
                f"{profile}: a calibration of another family is refused, its release range is "
                "not checked"
            )
        return (
            f"serving engine: {engine.describe()} (the image's container family and release), "
            f"{profile}"
        )

    def calibration_change(self, decision: ServiceDecision) -> str:
        """The uncalibrated decision of the same request beside ``decision``, in one line."""
        after = _outline(decision)
        try:
            request = self.request
            uncalibrated = decide(
                replace(request, sizing=replace(request.sizing, calibration=None)), self.overrides
            )
        except ValidationError as error:
            return (
                f"changed the decision: uncalibrated, no layout ({error.problem}); calibrated "
                f"{after}"
            )
        before = _outline(uncalibrated)
        if _shape(uncalibrated) == _shape(decision):
            return f"kept the layout: uncalibrated {before}; calibrated {after}"
        return f"changed the decision: uncalibrated {before}; calibrated {after}"

    # ----- layout ------------------------------------------------------------------------

    def layout(self, recommendation: Recommendation | None) -> Option:
        """The cheapest recommended option that meets the layout overrides, repacked at the
        copies-per-instance override."""
        request, overrides = self.request, self.overrides
        self._check_degree()
        self.recommendation = recommendation or recommend(
            request.spec,
            request.workload,
            request.slo,
            request.traffic.peak,
            search=replace(
                request.search,
                instance_types=list(request.candidates),
                max_instance_count=request.max_instance_count,
                precision=request.precision,
            ),
            pricing=request.pricing,
            sizing=replace(request.sizing, engine=request.engine),
            top=len(request.candidates) * 64,
        )
        option = choose(
            self.recommendation,
            instance_type=overrides.layout.instance_type,
            tensor_parallel_degree=overrides.layout.tensor_parallel_degree,
            max_instance_count=request.max_instance_count,
            precision=request.precision,
            engine=request.engine,
        )
        self.optimization = option.optimization
        if option.optimization is not None:
            self.precision = option.optimization.precision(request.precision)
        if overrides.layout.copies_per_instance is not None:
            option = self._repack(option, overrides.layout.copies_per_instance)
        return option

    def _check_degree(self) -> None:
        """A tensor-parallel override that cannot shard the model: heads that do not divide,
        or more accelerators than every candidate has."""
        degree = self.overrides.layout.tensor_parallel_degree
        if degree is None:
            return
        check_range("tensor_parallel_degree", degree, minimum=1)
        problem = head_divisibility_problem(self.request.spec, degree)
        if problem:
            raise ValidationError(
                "tensor_parallel_degree",
                degree,
                f"{self.request.spec.name} cannot be sharded {degree} ways: {problem}",
                "use a degree that divides the attention and KV heads (1, 2, 4 or 8 for most "
                "models), or drop the override",
            )
        types = [self.overrides.layout.instance_type] if self.overrides.layout.instance_type else []
        hosts = types or list(self.request.candidates)
        if not any(t.accelerator_devices % degree == 0 for t in hosts):
            raise ValidationError(
                "tensor_parallel_degree",
                degree,
                "no candidate instance type splits its accelerators into copies of "
                f"{degree} ({', '.join(f'{t.name}: {t.accelerator_devices}' for t in hosts)})",
                "use a degree that divides an instance's accelerators, or add an instance type "
                "with a multiple of it, or drop the override",
            )

    def _repack(self, option: Option, copies_per_instance: int) -> Option:
        """The option with its copies spread at ``copies_per_instance`` per instance (leaving
        accelerators free for other components): the same copies, on more instances."""
        request = self.request
        check_range("copies_per_instance", copies_per_instance, minimum=1)
        layout = option.layout
        fit = layout.copies_per_instance
        if copies_per_instance > fit:
            raise ValidationError(
                "copies_per_instance",
                copies_per_instance,
                f"a {layout.instance_type.name} holds {fit} copies of tensor-parallel degree "
                f"{layout.tensor_parallel_degree} ({layout.instance_type.accelerator_devices} "
                "accelerators)",
                f"use at most {fit} copies per instance, or drop the override",
            )
        copies = layout.copies
        count = math.ceil(copies / copies_per_instance)
        ceiling_copies = option.ceiling * fit
        ceiling = max(count, math.ceil(ceiling_copies / copies_per_instance))
        if ceiling > request.max_instance_count:
            raise ValidationError(
                "copies_per_instance",
                copies_per_instance,
                f"the peak needs up to {ceiling_copies} copies (the ceiling); at "
                f"{copies_per_instance} per {layout.instance_type.name} they need {ceiling} "
                f"instances, above max_instance_count ({request.max_instance_count})",
                f"raise copies_per_instance (up to {fit}) or max_instance_count",
            )
        spread = Layout(
            layout.instance_type, layout.tensor_parallel_degree, copies_per_instance, count
        )
        # Each copy serves as it did: spreading copies over more instances changes what runs
        # where and what it costs, not what a copy predicts (the option's figures, sized at its
        # risk and its traffic, stay; a fresh closed-loop prediction would not be at either).
        level = option.predicted
        price = unit_price(layout.instance_type, self.request.pricing.prices, request.pricing.basis)
        hourly = None if price is None else price * count
        return replace(
            option,
            layout=spread,
            max_instance_count=ceiling,
            price_per_hour=hourly,
            cost_per_million_tokens=None
            if hourly is None or level.tokens_per_s <= 0
            else hourly / (level.tokens_per_s * 3600 / 1e6),
            reasoning=[
                *option.reasoning,
                f"copies_per_instance override: {copies_per_instance} of the "
                f"{fit} copies that fit per {layout.instance_type.name}, so "
                f"{copies} copies take {count} instances",
            ],
        )

    def layout_choices(self, option: Option) -> dict[str, Choice]:
        layout, overrides = option.layout, self.overrides
        return {
            "instance_type": Choice(
                layout.instance_type.name, _source(overrides.layout.instance_type)
            ),
            "tensor_parallel_degree": Choice(
                layout.tensor_parallel_degree, _source(overrides.layout.tensor_parallel_degree)
            ),
            "copies_per_instance": Choice(
                layout.copies_per_instance, _source(overrides.layout.copies_per_instance)
            ),
        }

    def optimization_choices(self) -> dict[str, Choice]:
        """The optimization and the precision it serves at, when an optimized option won
        (nothing otherwise: a decision without one records what it always did)."""
        if self.optimization is None:
            return {}
        return {
            "optimization": Choice(self.optimization.name, ChoiceSource.RECOMMENDED),
            "precision": Choice(self.precision.value, ChoiceSource.DERIVED),
        }

    def optimization_reasoning(self, option: Option) -> list[str]:
        """Why an optimized option was chosen, and the job it needs with its time and cost."""
        optimization = option.optimization
        if optimization is None:
            return []
        job = option.job.describe() if option.job is not None else "a job"
        plain = next((o for o in self.recommendation.options if o.optimization is None), None)
        given = (
            f"the model as given would take {summary(plain)}"
            if plain is not None
            else "the model as given meets the SLO and memory on no candidate"
        )
        served = (
            "served as the weights given with the EAGLE head the optimization job trains as "
            "its draft (the job's recommended image; LlmService creates the job before the model)"
            if optimization.speculation is not None
            else "served from the optimization job's output, which LlmService creates before "
            "the model"
        )
        return [
            f"optimization chosen: {optimization.describe()} ({optimization.name}), {served}: "
            f"{job}; {given}"
        ]

    # ----- serving -----------------------------------------------------------------------

    def serving(self, option: Option) -> tuple[ServingSettings, dict[str, Choice]]:
        """The batch limit (checked against the KV cache) and the longest sequence."""
        request, overrides = self.request, self.overrides
        batch = _override(overrides.layout.max_batch_size, option.max_batch_size)
        self._check_batch(option.layout, batch.value)
        workload = request.workload
        # the longest request, not the mean: vLLM rejects a prompt + max_tokens above
        # max_model_len, TGI one above max_total_tokens / max_input_tokens
        longest = min(workload.longest_tokens, request.spec.max_context)
        model_len = _override(overrides.layout.max_model_len, longest, ChoiceSource.DERIVED)
        longest_input = min(workload.longest_input_tokens, model_len.value - 1)
        serving = ServingSettings(
            tgi=request.tgi,
            tensor_parallel_degree=option.layout.tensor_parallel_degree,
            max_batch_size=batch.value,
            max_model_len=model_len.value,
            max_input_tokens=max(workload.input_tokens, longest_input),
            precision=self.precision,
            mean_tokens=workload.total_tokens if overrides.layout.max_model_len is None else None,
            kv_cache=request.kv_cache_precision,
        )
        return serving, {"max_batch_size": batch, "max_model_len": model_len}

    def _copy_model(self, layout: Layout) -> CopyModel:
        request = self.request
        return profile_model(
            request.spec,
            layout,
            self.precision,
            request.workload,
            self.profile(layout.instance_type),
            self.efficiency_on(layout.instance_type),
            speculation=self.optimization.speculation if self.optimization else None,
            kv_cache=request.kv_cache_precision,
        )

    def _check_batch(self, layout: Layout, batch: int) -> None:
        """A batch limit above the sequences one copy's KV cache holds is an error."""
        check_range("max_batch_size", batch, minimum=1)
        profile = self.profile(layout.instance_type)
        limits, _ = profile_limits(self._copy_model(layout), profile, batch)
        workload = self.request.workload
        if batch > limits.kv_sequences:
            raise ValidationError(
                "max_batch_size",
                batch,
                f"one copy (tensor-parallel degree {layout.tensor_parallel_degree} on "
                f"{layout.instance_type.name}) holds at most {limits.kv_sequences} sequences of "
                f"{workload.input_tokens} + {workload.output_tokens} tokens in its KV cache",
                f"lower max_batch_size to at most {limits.kv_sequences}, or shard each copy wider",
            )

    # ----- scaling -----------------------------------------------------------------------

    def scaling(
        self, option: Option, serving: ServingSettings
    ) -> tuple[ScalingBounds, dict[str, Choice]]:
        """Min/max copies from the minimum/peak traffic at the target per copy, and the
        instances they take."""
        overrides = self.overrides
        knee = self._target(option, serving.max_batch_size)
        most = self._max_copies(option, knee.value)
        fewest = self._min_copies(option, knee.value, most.value)
        per_instance = option.layout.copies_per_instance
        max_instances = math.ceil(most.value / per_instance)
        limit = self.request.max_instance_count
        if max_instances > limit:
            raise ValidationError(
                "max_copies",
                most.value,
                f"{most.value} copies at {per_instance} per {option.layout.instance_type.name} "
                f"need {max_instances} instances, above max_instance_count ({limit})",
                f"lower max_copies to at most {limit * per_instance}, or raise max_instance_count",
            )
        model_len = serving.max_model_len
        workload = self.request.workload
        check_range(
            "max_model_len",
            model_len,
            minimum=workload.total_tokens,
            fix="serve at least input_tokens + output_tokens per request",
        )
        if overrides.benchmark and overrides.scaling.target_concurrency_per_copy is None:
            knee = Choice(knee.value, ChoiceSource.BENCHMARK)
        bounds = ScalingBounds(
            min_copies=fewest.value,
            max_copies=most.value,
            min_instances=math.ceil(fewest.value / per_instance),
            max_instances=max_instances,
            target_concurrency_per_copy=knee.value,
            benchmark=knee.source is ChoiceSource.BENCHMARK,
        )
        return bounds, {
            "min_copies": fewest,
            "max_copies": most,
            "min_instances": Choice(bounds.min_instances, ChoiceSource.DERIVED),
            "max_instances": Choice(max_instances, ChoiceSource.DERIVED),
            "target_concurrency_per_copy": knee,
        }

    def _target(self, option: Option, batch: int) -> Choice:
        target = self.overrides.scaling.target_concurrency_per_copy
        knee = _override(target, option.scaling_target)
        if target is not None:
            check_range("target_concurrency_per_copy", target, minimum=0.001)
            self._check_target(option.layout, target, batch)
        if knee.value > batch:
            self.warn(
                "target_concurrency_per_copy",
                f"target_concurrency_per_copy={knee.value:g} is above the batch limit per copy "
                f"({batch}): requests beyond the batch queue in the server",
            )
        return knee

    def _check_target(self, layout: Layout, target: float, batch: int) -> None:
        """A target above what one copy serves within the SLO is a warning."""
        request = self.request
        one_copy = Layout(layout.instance_type, layout.tensor_parallel_degree, 1, 1)
        level = max(1, math.ceil(target))
        predicted = predict(
            request.spec,
            one_copy,
            request.workload,
            [level],
            precision=request.precision,
            calibration=self.measured(layout.instance_type),
            max_batch_size=batch,
            engine=request.engine,
            optimization=self.optimization,
            kv_cache_precision=request.kv_cache_precision,
        ).levels[0]
        slo = request.slo
        broken = []
        if predicted.ms_per_token > slo.max_ms_per_token:
            broken.append(f"{predicted.ms_per_token:.1f} ms/token > {slo.max_ms_per_token:g}")
        if slo.max_ttft_ms is not None and predicted.ttft_ms > slo.max_ttft_ms:
            broken.append(f"TTFT {predicted.ttft_ms:.0f} ms > {slo.max_ttft_ms:g}")
        if broken:
            self.warn(
                "target_concurrency_per_copy",
                f"target_concurrency_per_copy={target:g}: at {level} requests per copy the model "
                f"predicts {', '.join(broken)} (the SLO)",
            )

    def _max_copies(self, option: Option, knee: float) -> Choice:
        given = self.overrides.scaling.max_copies
        layout = option.layout
        peak = option.predicted.concurrency
        # The copies the option runs at the peak (a rate's mean in flight is what those copies
        # carry: one copy at the same rate would carry more), or the in-flight peak at the
        # target, the more.
        needed = max(1, math.ceil(peak / knee), layout.copies)
        fits = self.request.max_instance_count * layout.copies_per_instance
        # the autoscaling ceiling: the instances the peak needs at the band's pessimistic edge
        derived = max(needed, option.ceiling * layout.copies_per_instance)
        if given is None and derived > fits:
            # The option serves the peak within the SLO on its instances; the knee asks for
            # more copies than max_instance_count holds: cap there, and say so.
            self.warn(
                "max_instance_count",
                f"the peak ({peak} in flight) would take {needed} copies at the knee "
                f"({knee:g} per copy), more than max_instance_count holds ({fits}): max_copies "
                f"is capped at {fits}, where the model predicts the SLO still holds",
            )
            derived = fits
        most = _override(given, derived, ChoiceSource.DERIVED)
        if given is not None:
            check_range("max_copies", given, minimum=1)
            if given < needed:
                self.warn(
                    "max_copies",
                    f"max_copies={given} is below the {needed} copies the peak "
                    f"({peak} in flight) needs at {knee:g} per copy: the peak "
                    "would exceed the SLO",
                )
        return most

    def _min_copies(self, option: Option, knee: float, most: int) -> Choice:
        traffic = self.request.traffic
        given = self.overrides.scaling.min_copies
        needed = traffic.fewest_copies(knee, option.rate_per_copy_at(knee), most)
        fewest = _override(given, needed, ChoiceSource.DERIVED)
        check_range("min_copies", fewest.value, minimum=0, maximum=most)
        if given is not None and given < needed and traffic.minimum > 0:
            self.warn(
                "min_copies",
                f"min_copies={given} is below the {needed} copies the stated minimum traffic "
                f"needs ({traffic.describe()}): that traffic waits for a scale-out"
                + (" from zero, and its first requests fail" if given == 0 else ""),
            )
        return fewest

    # ----- memory, goal and prediction ---------------------------------------------------

    def memory(self, layout: Layout) -> Choice:
        """Host memory each copy reserves: half its accelerators' share of the instance."""
        if self.overrides.min_memory_per_copy_mib is not None:
            return Choice(self.overrides.min_memory_per_copy_mib, ChoiceSource.OVERRIDE)
        instance = layout.instance_type
        assert instance.memory_mib is not None and instance.accelerator_count
        share = instance.memory_mib * layout.tensor_parallel_degree / instance.accelerator_count
        return Choice(max(1, int(share * HOST_MEMORY_SHARE // 1024)) * 1024, ChoiceSource.DERIVED)

    def goal(self) -> dict[str, Any]:
        request = self.request
        workload = request.workload
        prices = self.request.pricing.prices
        kv_cache = request.kv_cache_precision
        return {
            "model": request.spec.name,
            "precision": request.precision.value,
            # recorded where it is not the default, so that an AUTO decision's record is as before
            **({} if kv_cache is KvCachePrecision.AUTO else {"kv_cache_precision": kv_cache.value}),
            "workload": f"{workload.input_tokens} in / {workload.output_tokens} out tokens",
            "slo": request.slo.describe(),
            "traffic": request.traffic.describe(),
            "candidates": [t.name for t in request.candidates],
            "prices": f"{request.pricing.basis.value}; {prices.describe()}",
            "calibration": request.sizing.calibration.describe()
            if request.sizing.calibration is not None
            else "uncalibrated",
        }

    def prediction(self, option: Option) -> Prediction:
        predicted = option.predicted
        return Prediction(
            concurrency=predicted.concurrency,
            concurrency_per_copy=option.concurrency_per_copy,
            knee_concurrency_per_copy=option.knee_concurrency_per_copy,
            ms_per_token=predicted.ms_per_token,
            ttft_ms=predicted.ttft_ms,
            tokens_per_s=predicted.tokens_per_s,
            requests_per_s=predicted.requests_per_s,
            sources=tuple(prediction_sources(self.request, option.layout)),
            ms_per_token_p10_p90=None
            if option.p10_p90 is None
            else option.p10_p90.ms_range(predicted.ms_per_token),
        )


def prediction_sources(request: ServiceRequest, layout: Layout) -> list[str]:
    """Where the figures come from: the accelerator's published figures, the model's
    architecture, the efficiency constants (or the calibration), and the prices."""
    instance = layout.instance_type
    accelerator = instance.accelerator
    spec = request.spec
    lines = []
    if accelerator is not None:
        lines.append(
            f"accelerator: {accelerator.name}, {accelerator.memory_mib:,} MiB, "
            f"{accelerator.memory_bandwidth_gbps or '?'} GB/s, "
            f"{accelerator.fp16_tflops or '?'} dense FP16 TFLOPS (instance catalog, from the "
            "vendor's datasheet)"
        )
    origin = (
        "model catalog, from its Hugging Face config"
        if spec.hugging_face_ids
        else "given with ModelSpec.custom"
    )
    lines.append(
        f"model: {spec.name}, {spec.layers} layers, {spec.attention_heads} attention / "
        f"{spec.kv_heads} KV heads ({origin})"
    )
    profile = resolve_profile(request.engine, instance.is_neuron)
    lines.append(f"engine: {profile.describe()}")
    if request.sizing.calibration is not None:
        calibration = request.sizing.calibration
        release = request.engine if isinstance(request.engine, EngineRelease) else None
        applied = calibration.applied_to(spec, instance, engine=release)
        engine = f" with {calibration.engine.describe()}" if calibration.engine else ""
        lines.append(
            f"efficiency: {applied.efficiency.describe()} (calibrated on {calibration.source}: "
            f"{calibration.model}{engine} on {calibration.instance_type} "
            f"TP{calibration.tensor_parallel_degree}; "
            + (
                "every factor applies here)"
                if not applied.warnings
                else "as it applies here, see the calibration notes)"
            )
        )
    else:
        lines.append(
            f"efficiency: {efficiency_of(profile).describe()} ({profile_origin(profile)}; "
            "calibrate with a deploy-time benchmark)"
        )
    lines.append(f"price: {request.pricing.basis.value}; {request.pricing.prices.describe()}")
    return lines


def choose(
    recommendation: Recommendation,
    *,
    instance_type: InstanceType | None,
    tensor_parallel_degree: int | None,
    max_instance_count: int,
    precision: Precision,
    engine: EngineRelease | EngineProfile | None = None,
) -> Option:
    """The cheapest option that meets every layout override; an error naming the prop at
    fault (the SLO, the candidates, the instance count, or the override no option meets),
    with the performance model's reasons and advice that follows their kinds.

    :param precision: the weights' precision the search asked (the advice for a model that
        does not fit offers a lower one only below it).
    :param engine: the engine the search sized (``no_option_error``)."""
    options = list(recommendation.options)
    if not options:
        raise no_option_error(recommendation, max_instance_count, precision, engine)
    overrides = {
        "instance_type": instance_type.name if instance_type is not None else None,
        "tensor_parallel_degree": tensor_parallel_degree,
    }
    for prop, value in overrides.items():
        if value is None:
            continue
        kept = [o for o in options if _attribute(o, prop) == value]
        if not kept:
            reasons = rejections(
                recommendation,
                instance_type.name if instance_type is not None else None,
                tensor_parallel_degree,
            )
            available = sorted({str(_attribute(o, prop)) for o in options})
            raise ValidationError(
                prop,
                value,
                f"no layout with it serves the peak traffic on at most {max_instance_count} "
                "instances" + (f" ({'; '.join(reasons)})" if reasons else ""),
                f"drop the override or use one of {', '.join(available)}",
            )
        options = kept
    return options[0]


def no_option_error(
    recommendation: Recommendation,
    max_instance_count: int,
    precision: Precision,
    engine: EngineRelease | EngineProfile | str | None = None,
) -> ValidationError:
    """No option at all: blame what the rejections' kinds point at (the candidates, for
    memory, precision, engine and the like; max_instance_count, when the instance count is the
    only other kind), else the SLO. The fix gives each kind's advice (``_advice``) and nothing a
    listed reason contradicts: no lower precision beside a precision refusal, no more memory
    where memory is not a reason, no looser SLO where the SLO is not one. Where the ``engine``
    sized was given its memory share by a setting, the memory advice names it."""
    rejected = recommendation.rejected
    kinds = [kind for kind in RejectionKind if any(r.kind is kind for r in rejected)]
    shown = _each_kind_shown(rejected)
    reasons = "; ".join(
        describe_rejection(r.instance_type, r.tensor_parallel_degree, r.reason) for r in shown
    )
    if len(shown) < len(rejected):  # say the list is cut, and where the rest is
        reasons += f" (and {len(rejected) - len(shown)} more: recommend lists every rejection)"
    setting = None if engine is None else resolve_profile(engine).batching.kv_cache_memory.set_by
    fix = "; ".join(_advice(kind, kinds, precision, setting) for kind in kinds)
    if kinds == [RejectionKind.MEMORY]:
        problem = f"the model does not fit on any candidate: {reasons}"
    elif kinds == [RejectionKind.INSTANCE_COUNT]:
        problem = f"every layout needs more instances for the peak traffic: {reasons}"
    else:
        named = ", ".join(kind.value for kind in kinds) or "nothing searched"
        problem = f"no candidate layout serves the model ({named}): {reasons}"
    if kinds and set(kinds) <= _CANDIDATE_KINDS:
        memory = (
            ""
            if RejectionKind.MEMORY in kinds
            else "more accelerator memory is not what is missing; "
        )
        return ValidationError(
            "instance_types",
            sorted({r.instance_type for r in rejected}),
            problem,
            f"{fix}; {memory}the SLO is not the cause",
        )
    if RejectionKind.INSTANCE_COUNT in kinds and set(kinds) <= _COUNT_KINDS:
        return ValidationError(
            "max_instance_count", max_instance_count, problem, f"{fix}; the SLO is not the cause"
        )
    return ValidationError("slo", "unmet", problem, fix or "add candidate instance types")


def _each_kind_shown(rejected: list[Rejection]) -> list[Rejection]:
    """The rejections an error lists: the first of each kind (so each piece of advice has its
    reason shown), topped up in order to four."""
    firsts = [r for i, r in enumerate(rejected) if all(o.kind is not r.kind for o in rejected[:i])]
    rest = [r for r in rejected if all(r is not f for f in firsts)]
    chosen = {id(r) for r in (firsts + rest)[: max(4, len(firsts))]}
    return [r for r in rejected if id(r) in chosen]


def _advice(
    kind: RejectionKind,
    kinds: list[RejectionKind],
    precision: Precision,
    memory_setting: str | None = None,
) -> str:
    """What a user changes to answer rejections of ``kind``, among ``kinds`` (all the kinds of
    the rejections) under the searched ``precision`` (an optimization's layouts are refused at
    its own precision, so a precision refusal's advice does not name the searched one) and the
    ``memory_setting`` that chose the engine's share of the memory (``KvCacheMemory.set_by``)."""
    if kind is RejectionKind.MEMORY:
        fixes = ["add instance types with more accelerator memory (or more accelerators)"]
        if memory_setting is not None:
            fixes.append(f"give the engine a larger share of the memory than {memory_setting}")
        lowest = min(Precision, key=lambda p: p.bytes_per_parameter)
        if RejectionKind.PRECISION not in kinds and precision is not lowest:
            fixes.append(f"lower the precision (e.g. Precision.{lowest.name})")
        return ", or ".join(fixes)
    if kind is RejectionKind.PRECISION:
        offered = ", ".join(
            f"{m.accelerator} TP{m.tensor_parallel_degree}" for m in MEASUREMENTS if m.faster
        )
        return (
            "serve a precision the candidates offer (each precision reason names the one "
            "refused: FP16 serves on every GPU, BF16 on Ampere and later, FP8 needs FP8 tensor "
            f"cores, int4 AWQ is offered only where a measurement covers the layout: {offered}), "
            "or add instance types that offer the precision refused"
        )
    return _KIND_ADVICE[kind]


_KIND_ADVICE = {
    RejectionKind.HEAD_DIVISIBILITY: (
        "add instance types whose accelerator count the model's attention and KV heads divide over"
    ),
    RejectionKind.TIMEOUT: (
        "ask fewer output tokens per request, or add faster instance types (a request must "
        f"finish within the {INVOCATION_TIMEOUT_S:g} s invocation timeout)"
    ),
    RejectionKind.SLO: "relax the SLO (max_ms_per_token, max_ttft_ms) or add faster instance types",
    RejectionKind.INSTANCE_COUNT: (
        "raise max_instance_count, add larger instance types, or lower the peak traffic"
    ),
    RejectionKind.UNPREDICTABLE: (
        "add instance types whose accelerators' performance figures are published (the "
        "catalog's GPU and Neuron types), or benchmark the type and serve it with a pinned layout"
    ),
    RejectionKind.ENGINE: (
        "serve with an engine that runs there (and serves the optimization), or add instance "
        "types the engine runs on"
    ),
    RejectionKind.NO_LAYOUT: "add instance types whose accelerators split into copies",
    RejectionKind.KV_CACHE_PRECISION: (
        "keep the KV cache at KvCachePrecision.AUTO, or add instance types with FP8 (g6, g6e, "
        "p5: Ada, Hopper or Blackwell) for an FP8 KV cache"
    ),
}
"""Advice per rejection kind, where it does not depend on the other kinds (``_advice``)."""


_CANDIDATE_KINDS = frozenset(
    {
        RejectionKind.MEMORY,
        RejectionKind.HEAD_DIVISIBILITY,
        RejectionKind.UNPREDICTABLE,
        RejectionKind.ENGINE,
        RejectionKind.NO_LAYOUT,
        RejectionKind.PRECISION,
        RejectionKind.KV_CACHE_PRECISION,
        RejectionKind.TIMEOUT,
    }
)
"""Rejection kinds the candidate instance types answer for (a different candidate, not a
looser SLO or more instances, gives an option)."""
_COUNT_KINDS = _CANDIDATE_KINDS | {RejectionKind.INSTANCE_COUNT}
"""Rejection kinds that, with the instance count among them, blame max_instance_count."""


def rejections(
    recommendation: Recommendation, instance_type: str | None, degree: int | None
) -> list[str]:
    """Up to four rejections of ``instance_type`` at ``degree`` (None: any), in words."""
    found = [
        describe_rejection(r.instance_type, r.tensor_parallel_degree, r.reason)
        for r in recommendation.rejected
        if (instance_type is None or r.instance_type == instance_type)
        and (degree is None or r.tensor_parallel_degree in (None, degree))
    ]
    return found[:4]


def describe_rejection(instance_type: str, degree: int | None, reason: str) -> str:
    """``ml.g5.2xlarge TP1: memory: ...``."""
    return f"{instance_type}" + (f" TP{degree}" if degree else "") + f": {reason}"


def summary(option: Option) -> str:
    """One line per alternative: layout, price and predicted ms/token."""
    layout = option.layout
    price = f"${option.price_per_hour:,.2f}/h" if option.price_per_hour is not None else "no price"
    return (
        f"{layout.instance_count} x {layout.instance_type.name}, TP{layout.tensor_parallel_degree}"
        f" x {layout.copies_per_instance} copies: {price}, "
        f"{option.predicted.ms_per_token:.1f} ms/token"
    )


def _shape(decision: ServiceDecision) -> tuple[Any, ...]:
    """What a decision deploys: the layout at the peak and the scaling bounds."""
    layout, scaling = decision.layout, decision.scaling
    return (
        layout.instance_type.name,
        layout.tensor_parallel_degree,
        layout.copies_per_instance,
        layout.instance_count,
        scaling.min_instances,
        scaling.max_instances,
    )


def _outline(decision: ServiceDecision) -> str:
    """``3 x ml.g5.2xlarge TP1 x 1 copies at the peak (1-3 instances), $4.23/h, 41.2
    ms/token``: a decision in one line, to compare with another."""
    layout, scaling = decision.layout, decision.scaling
    price = decision.price_per_hour
    return (
        f"{layout.instance_count} x {layout.instance_type.name} TP{layout.tensor_parallel_degree}"
        f" x {layout.copies_per_instance} copies at the peak ({scaling.min_instances}-"
        f"{scaling.max_instances} instances), "
        + ("no price" if price is None else f"${price:,.2f}/h")
        + f", {decision.predicted.ms_per_token:.1f} ms/token predicted"
    )


def _attribute(option: Option, prop: str) -> Any:
    layout = option.layout
    if prop == "instance_type":
        return layout.instance_type.name
    return getattr(layout, prop)


def _override(given: Any, default: Any, source: ChoiceSource = ChoiceSource.RECOMMENDED) -> Choice:
    if given is not None:
        return Choice(given, ChoiceSource.OVERRIDE)
    return Choice(default, source)


def _source(given: Any) -> ChoiceSource:
    return ChoiceSource.OVERRIDE if given is not None else ChoiceSource.RECOMMENDED
