"""Typed serving options per container family, rendered as the container's environment."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from aws_cdk import Duration

from ..catalog.containers import (
    FP8_KV_CACHE_SETTINGS,
    VLLM_VARIABLE_PREFIX,
    fp8_kv_cache_problem,
    max_input_tokens_variable,
    vllm_variable,
)
from ..catalog.model_specs import KvCachePrecision
from ..prop_types import typed_props
from .images import ContainerFamily, ContainerImage
from .validation import ValidationError, check_range


class LmiBackend(Enum):
    """The LMI inference backend, rendered as ``OPTION_ROLLING_BATCH``."""

    VLLM = "vllm"
    LMI_DIST = "lmi-dist"
    TENSORRT_LLM = "trtllm"
    NEURONX = "auto"

    @property
    def image_family(self) -> ContainerFamily:
        """The LMI image variant this backend runs in."""
        return {
            LmiBackend.VLLM: ContainerFamily.LMI,
            LmiBackend.LMI_DIST: ContainerFamily.LMI,
            LmiBackend.TENSORRT_LLM: ContainerFamily.LMI_TENSORRT_LLM,
            LmiBackend.NEURONX: ContainerFamily.LMI_NEURONX,
        }[self]


class DataType(Enum):
    """Weights and activations precision (``OPTION_DTYPE`` / TGI ``DTYPE``)."""

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"


class Quantization(Enum):
    """Quantization applied by the serving container at load time."""

    AWQ = "awq"
    GPTQ = "gptq"
    FP8 = "fp8"
    BITSANDBYTES = "bitsandbytes"


def _positive(prop: str, value: int | None) -> None:
    check_range(prop, value, minimum=1, fix=f"set {prop} to a positive integer or leave it unset")


def _check_memory_fraction(fraction: float | None) -> None:
    """vLLM's ``gpu_memory_utilization``: a fraction of each GPU's memory."""
    if fraction is not None and not 0 < fraction <= 1:
        raise ValidationError(
            "serving.gpu_memory_utilization",
            fraction,
            "vLLM takes a fraction of GPU memory above 0 and at most 1",
            "pass a fraction such as 0.9 (vLLM's default)",
        )


def _check_kv_cache(kv_cache: KvCachePrecision | None, image: ContainerImage) -> None:
    """An FP8 KV cache on an image that documents no setting for it (or a release before the
    first that does: ``catalog.containers.fp8_kv_cache_problem``) is refused, never dropped; a
    custom image is trusted."""
    if kv_cache is not KvCachePrecision.FP8 or image.family is ContainerFamily.CUSTOM:
        return
    problem = fp8_kv_cache_problem(image.family, image.release)
    if problem is not None:
        raise ValidationError(
            "serving.kv_cache_precision",
            kv_cache.value,
            problem,
            "leave kv_cache_precision unset (the activation precision), or serve on an image "
            "that documents one (LMI >= 0.32.0 with vLLM, TGI >= 2.4.0, SageMaker's vLLM images)",
        )


def _kv_cache_environment(
    kv_cache: KvCachePrecision | None, family: ContainerFamily
) -> dict[str, str]:
    """The ``family`` options' FP8 KV-cache variable when ``kv_cache`` is FP8 (its documented
    setting, ``catalog.containers.FP8_KV_CACHE_SETTINGS``), else nothing."""
    if kv_cache is not KvCachePrecision.FP8:
        return {}
    return FP8_KV_CACHE_SETTINGS[family].environment()


MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The ``max_lora_rank`` values vLLM accepts (``vllm/config/lora.py``, ``MaxLoRARanks``)."""
LMI_DEFAULT_MAX_LORAS = 4
"""LMI's default ``OPTION_MAX_LORAS`` (djl-serving docs, "Adapters")."""
LMI_DEFAULT_MAX_LORA_RANK = 16
"""LMI's default ``OPTION_MAX_LORA_RANK`` (djl-serving docs, "Adapters")."""
LMI_VLLM_ASYNC_ENTRYPOINT = "djl_python.lmi_vllm.vllm_async_service"
"""The handler LMI's vLLM async mode runs (djl-serving docs, "Stateful Sessions Support")."""


@typed_props
@dataclass(frozen=True, kw_only=True)
class LmiLora:
    """LMI's multi-LoRA settings: ``OPTION_ENABLE_LORA=true`` plus the two bounds below
    (djl-serving docs, "Adapters": vLLM is the only LMI backend that hosts LoRA adapters).

    A component's own LMI container gets these set from the adapter components attached to it
    (``ComponentModel.lora_adapter(...)``) when you leave them out; give them to fix the bounds
    yourself (room for adapters added later) or on a ``Model``, which may be shared and is never
    changed.
    """

    max_adapters: int | None = None
    """Most distinct adapters in one batch (``OPTION_MAX_LORAS``); every attached adapter must
    fit. Default: the number of adapter components attached (a component's own container), or
    LMI's 4."""
    max_rank: int | None = None
    """Largest adapter rank served (``OPTION_MAX_LORA_RANK``), one of vLLM's 1, 8, 16, 32, 64,
    128, 256, 320, 512; a larger bound reserves more GPU memory. Default: the smallest of those
    covering every attached adapter's rank (a component's own container), or LMI's 16."""

    def validate(self) -> None:
        """Raise ValidationError on a bound vLLM refuses."""
        _positive("serving.lora.max_adapters", self.max_adapters)
        if self.max_rank is not None and self.max_rank not in MAX_LORA_RANKS:
            raise ValidationError(
                "serving.lora.max_rank",
                self.max_rank,
                f"vLLM accepts only {list(MAX_LORA_RANKS)}",
                "pick the smallest of those at least as large as your adapters' ranks",
            )

    def environment(self) -> dict[str, str]:
        """The ``OPTION_*`` LoRA variables."""
        env = {"OPTION_ENABLE_LORA": "true"}
        if self.max_adapters is not None:
            env["OPTION_MAX_LORAS"] = str(self.max_adapters)
        if self.max_rank is not None:
            env["OPTION_MAX_LORA_RANK"] = str(self.max_rank)
        return env


@typed_props
@dataclass(frozen=True, kw_only=True)
class LmiOptions:
    """Serving options of an LMI (DJL Serving) container, rendered as ``OPTION_*`` variables.

    Every option defaults to None: the container's own default applies.
    """

    backend: LmiBackend | None = None
    """Inference backend; must match the image (TensorRT-LLM and NeuronX have their own)."""
    continuous_batching: bool = True
    """Continuous (rolling) batching; False renders ``OPTION_ROLLING_BATCH=disable``."""
    max_rolling_batch_size: int | None = None
    """Most sequences decoded together (``OPTION_MAX_ROLLING_BATCH_SIZE``)."""
    max_rolling_batch_prefill_tokens: int | None = None
    """Most tokens prefilled in one step (``OPTION_MAX_ROLLING_BATCH_PREFILL_TOKENS``)."""
    tensor_parallel_degree: int | None = None
    """Accelerators one copy of the model is sharded over (``OPTION_TENSOR_PARALLEL_DEGREE``)."""
    dtype: DataType | None = None
    """Precision (``OPTION_DTYPE``)."""
    quantization: Quantization | None = None
    """Load-time quantization (``OPTION_QUANTIZE``). Refused on an LMI NeuronX image, whose only
    quantization is ``static_int8`` (pass ``OPTION_QUANTIZE`` through ``environment``)."""
    enforce_eager: bool | None = None
    """Disable CUDA graphs (``OPTION_ENFORCE_EAGER``): less memory, slower decode."""
    rope_scaling: dict[str, Any] | None = None
    """RoPE scaling for longer contexts, e.g. ``{"type": "dynamic", "factor": 2.0}``."""
    max_model_len: int | None = None
    """Longest sequence (input + output tokens) served (``OPTION_MAX_MODEL_LEN``)."""
    model_loading_timeout: Duration | None = None
    """How long the container may take to load the model (``OPTION_MODEL_LOADING_TIMEOUT``)."""
    async_mode: bool = False
    """Serve through vLLM's async engine (``OPTION_ASYNC_MODE=true`` with
    ``OPTION_ROLLING_BATCH=disable`` and LMI's ``vllm_async_service`` entry point; djl-serving
    docs, "vLLM Engine User Guide": async mode and rolling batch are mutually exclusive, and
    from LMI 17 async is vLLM's default). Default False: rolling batch."""
    lora: LmiLora | None = None
    """Host LoRA adapters (``OPTION_ENABLE_LORA`` and its bounds). Default: off, unless adapter
    components are attached to a component running this container, which sets it."""
    kv_cache_precision: KvCachePrecision | None = None
    """How the engine stores the KV cache: ``FP8`` renders ``OPTION_KV_CACHE_DTYPE=fp8``
    (vLLM's engine argument passed through, LMI >= 0.32.0; the TensorRT-LLM image documents no
    such setting and is refused). Default: the activation precision."""
    gpu_memory_utilization: float | None = None
    """Fraction of each GPU's memory the vLLM engine takes for weights, activations and KV
    cache, above 0 and at most 1 (``OPTION_GPU_MEMORY_UTILIZATION``, passed to vLLM's
    ``--gpu-memory-utilization``; djl-serving docs, "vLLM Engine User Guide", advanced
    configurations: LMI >= 0.27.0). vLLM only; default vLLM's 0.9. The synth-time fit check
    sizes the KV cache within it."""

    @property
    def accelerators_per_copy(self) -> int | None:
        """Accelerators one model copy needs, when stated."""
        return self.tensor_parallel_degree

    @property
    def max_total_tokens(self) -> int | None:
        """Longest sequence per request, when stated."""
        return self.max_model_len

    @property
    def max_concurrent_requests(self) -> int | None:
        """Most requests decoded together, when stated."""
        return self.max_rolling_batch_size

    def validate(self, image: ContainerImage) -> None:
        """Raise ValidationError on options that contradict each other or the image."""
        if not image.family.is_lmi and image.family is not ContainerFamily.CUSTOM:
            raise ValidationError(
                "serving",
                "LmiOptions",
                f"LMI options do not apply to a {image.family.value} image",
                "use TgiOptions for TGI images, VllmOptions for vLLM images, or pass "
                "environment variables directly",
            )
        if (
            self.backend is not None
            and image.family is not ContainerFamily.CUSTOM
            and self.backend.image_family is not image.family
        ):
            raise ValidationError(
                "serving.backend",
                self.backend.name,
                f"the {self.backend.name} backend does not run in a {image.family.value} image",
                f"use ContainerImage.{self.backend.image_family.name.lower()}(...) or pick a "
                f"backend of the {image.family.value} image",
            )
        for prop in (
            "max_rolling_batch_size",
            "max_rolling_batch_prefill_tokens",
            "tensor_parallel_degree",
            "max_model_len",
        ):
            _positive(f"serving.{prop}", getattr(self, prop))
        if self.quantization is not None and image.family is ContainerFamily.LMI_NEURONX:
            # djl-serving's Transformers-NeuronX user guide, "Quantization": only
            # option.quantize=static_int8 (int8 weights) is allowed; AWQ, GPTQ, FP8 and
            # bitsandbytes are CUDA kernels.
            raise ValidationError(
                "serving.quantization",
                self.quantization.name,
                "LMI on Neuron (Transformers-NeuronX) loads no GPU quantization kernels (AWQ, "
                "GPTQ, FP8, bitsandbytes); its only load-time quantization is static_int8",
                "drop quantization and pass environment={'OPTION_QUANTIZE': 'static_int8'} for "
                "int8 weights on Inferentia/Trainium, or serve the quantized model on a GPU "
                "image (ContainerImage.lmi(...))",
            )
        if not self.continuous_batching and (
            self.max_rolling_batch_size is not None
            or self.max_rolling_batch_prefill_tokens is not None
        ):
            raise ValidationError(
                "serving.continuous_batching",
                False,
                "rolling-batch sizes only apply with continuous batching",
                "enable continuous_batching or drop max_rolling_batch_size / "
                "max_rolling_batch_prefill_tokens",
            )
        if (
            self.max_rolling_batch_prefill_tokens is not None
            and self.max_model_len is not None
            and self.max_rolling_batch_prefill_tokens < self.max_model_len
        ):
            raise ValidationError(
                "serving.max_rolling_batch_prefill_tokens",
                self.max_rolling_batch_prefill_tokens,
                f"is below max_model_len ({self.max_model_len}): a full-length prompt could "
                "never be prefilled",
                "raise max_rolling_batch_prefill_tokens to at least max_model_len",
            )
        if self.model_loading_timeout is not None:
            check_range(
                "serving.model_loading_timeout (seconds)",
                self.model_loading_timeout.to_seconds(),
                minimum=1,
                maximum=3600,
                fix="keep it within the container start-up health-check limit of 3600 s",
            )
        _check_memory_fraction(self.gpu_memory_utilization)
        for prop, wanted in (
            ("async_mode", self.async_mode),
            ("lora", self.lora is not None),
            ("gpu_memory_utilization", self.gpu_memory_utilization is not None),
        ):
            if wanted:
                self._require_vllm(prop, image)
        if self.lora is not None:
            self.lora.validate()
        _check_kv_cache(self.kv_cache_precision, image)

    def _require_vllm(self, prop: str, image: ContainerImage) -> None:
        """Async mode, LoRA adapters and the GPU memory share are LMI's vLLM engine's only."""
        if self.backend not in (None, LmiBackend.VLLM) or image.family in (
            ContainerFamily.LMI_TENSORRT_LLM,
            ContainerFamily.LMI_NEURONX,
        ):
            engine = self.backend.name if self.backend else image.family.value
            raise ValidationError(
                f"serving.{prop}",
                engine,
                f"{prop} runs on LMI's vLLM engine only",
                "use ContainerImage.lmi(...) with backend=LmiBackend.VLLM (or no backend), or "
                f"drop {prop}",
            )
        if not self.continuous_batching:
            raise ValidationError(
                f"serving.{prop}",
                "continuous_batching=False",
                f"{prop} needs vLLM's continuous batching (rolling batch or async mode)",
                "leave continuous_batching on",
            )

    def environment(self, image: ContainerImage | None = None) -> dict[str, str]:
        """The ``OPTION_*`` variables these options render to (the same on every LMI image)."""
        env: dict[str, str] = {}
        if self.async_mode:
            env["OPTION_ASYNC_MODE"] = "true"
            env["OPTION_ROLLING_BATCH"] = "disable"
            env["OPTION_ENTRYPOINT"] = LMI_VLLM_ASYNC_ENTRYPOINT
        elif not self.continuous_batching:
            env["OPTION_ROLLING_BATCH"] = "disable"
        elif self.backend is not None:
            env["OPTION_ROLLING_BATCH"] = self.backend.value
        else:
            env["OPTION_ROLLING_BATCH"] = "auto"
        optional = {
            "OPTION_MAX_ROLLING_BATCH_SIZE": self.max_rolling_batch_size,
            "OPTION_MAX_ROLLING_BATCH_PREFILL_TOKENS": self.max_rolling_batch_prefill_tokens,
            "OPTION_TENSOR_PARALLEL_DEGREE": self.tensor_parallel_degree,
            "OPTION_DTYPE": self.dtype.value if self.dtype else None,
            "OPTION_QUANTIZE": self.quantization.value if self.quantization else None,
            "OPTION_ENFORCE_EAGER": _bool(self.enforce_eager),
            "OPTION_ROPE_SCALING": json.dumps(self.rope_scaling, sort_keys=True)
            if self.rope_scaling
            else None,
            "OPTION_MAX_MODEL_LEN": self.max_model_len,
            "OPTION_GPU_MEMORY_UTILIZATION": self.gpu_memory_utilization,
            "OPTION_MODEL_LOADING_TIMEOUT": int(self.model_loading_timeout.to_seconds())
            if self.model_loading_timeout
            else None,
        }
        env.update({name: str(value) for name, value in optional.items() if value is not None})
        if self.lora is not None:
            env.update(self.lora.environment())
        env.update(_kv_cache_environment(self.kv_cache_precision, ContainerFamily.LMI))
        return env


@typed_props
@dataclass(frozen=True, kw_only=True)
class TgiOptions:
    """Serving options of a Hugging Face TGI container, rendered as TGI's variables.

    Set the token limits first: ``max_concurrent_requests`` depends on them. Every option
    defaults to None: TGI's own default applies (e.g. 128 concurrent requests).
    """

    num_gpus: int | None = None
    """Tensor-parallel degree (``SM_NUM_GPUS``). Refused on a TGI-NeuronX image, which reads
    ``HF_NUM_CORES`` instead (pass it through ``environment``)."""
    max_input_tokens: int | None = None
    """Longest prompt (``MAX_INPUT_TOKENS``; ``MAX_INPUT_LENGTH`` on TGI before 2.0.0, which
    knew only that name)."""
    max_total_tokens: int | None = None
    """Longest prompt + generated tokens per request (``MAX_TOTAL_TOKENS``)."""
    max_batch_prefill_tokens: int | None = None
    """Most tokens prefilled in one step (``MAX_BATCH_PREFILL_TOKENS``)."""
    max_batch_total_tokens: int | None = None
    """Most tokens in a batch, bounding KV-cache use (``MAX_BATCH_TOTAL_TOKENS``)."""
    max_concurrent_requests: int | None = None
    """Requests beyond this get an immediate overload error (``MAX_CONCURRENT_REQUESTS``)."""
    quantization: Quantization | None = None
    """Load-time quantization (``QUANTIZE``)."""
    dtype: DataType | None = None
    """Precision (``DTYPE``; TGI accepts float16 and bfloat16). Refused on a TGI-NeuronX image,
    which reads ``HF_AUTO_CAST_TYPE`` instead (pass it through ``environment``)."""
    kv_cache_precision: KvCachePrecision | None = None
    """How the engine stores the KV cache: ``FP8`` renders ``KV_CACHE_DTYPE=fp8_e4m3fn`` (TGI
    >= 2.4.0). Default: the model's dtype."""

    @property
    def accelerators_per_copy(self) -> int | None:
        """Accelerators one model copy needs, when stated."""
        return self.num_gpus

    def validate(self, image: ContainerImage) -> None:
        """Raise ValidationError on options that contradict each other or the image."""
        if not image.family.is_tgi and image.family is not ContainerFamily.CUSTOM:
            raise ValidationError(
                "serving",
                "TgiOptions",
                f"TGI options do not apply to a {image.family.value} image",
                "use LmiOptions for LMI images, VllmOptions for vLLM images, or pass "
                "environment variables directly",
            )
        for prop in (
            "num_gpus",
            "max_input_tokens",
            "max_total_tokens",
            "max_batch_prefill_tokens",
            "max_batch_total_tokens",
            "max_concurrent_requests",
        ):
            _positive(f"serving.{prop}", getattr(self, prop))
        if self.dtype is DataType.FP32:
            raise ValidationError(
                "serving.dtype", "FP32", "TGI serves float16 or bfloat16 only", "use FP16 or BF16"
            )
        if self.quantization is not None and image.family is ContainerFamily.TGI_NEURONX:
            raise ValidationError(
                "serving.quantization",
                self.quantization.name,
                "TGI on Neuron (Optimum Neuron) loads no GPU quantization kernels (AWQ, GPTQ, "
                "bitsandbytes, EETQ are CUDA kernels)",
                "serve the model unquantized on Inferentia/Trainium, or quantize on a GPU image",
            )
        if image.family is ContainerFamily.TGI_NEURONX:
            self._refuse_gpu_only_options()
        pairs = (
            ("max_input_tokens", "max_total_tokens", False),
            ("max_input_tokens", "max_batch_prefill_tokens", True),
            ("max_total_tokens", "max_batch_total_tokens", True),
        )
        for smaller, larger, equal_ok in pairs:
            low, high = getattr(self, smaller), getattr(self, larger)
            if low is None or high is None:
                continue
            if low > high or (low == high and not equal_ok):
                relation = "at most" if equal_ok else "below"
                raise ValidationError(
                    f"serving.{smaller}",
                    low,
                    f"must be {relation} {larger} ({high})",
                    f"lower {smaller} or raise {larger}",
                )
        _check_kv_cache(self.kv_cache_precision, image)

    def _refuse_gpu_only_options(self) -> None:
        """On a TGI-NeuronX image, ``num_gpus`` (``SM_NUM_GPUS``) and ``dtype`` (``DTYPE``)
        render variables optimum-neuron's TGI entrypoint ignores or refuses: it takes the
        NeuronCores from ``HF_NUM_CORES`` and the precision from ``HF_AUTO_CAST_TYPE``
        (optimum-neuron ``text-generation-inference/tgi_env.py``; Hugging Face's "Optimum
        Neuron TGI" docs: ``HF_NUM_CORES``, ``HF_AUTO_CAST_TYPE``, ``MAX_BATCH_SIZE``,
        ``MAX_INPUT_LENGTH``, ``MAX_TOTAL_TOKENS``), and ``--dtype`` is not an option of the
        Neuron shard's ``serve()``."""
        if self.num_gpus is not None:
            raise ValidationError(
                "serving.num_gpus",
                self.num_gpus,
                "TGI on Neuron (optimum-neuron) does not read SM_NUM_GPUS: it shards over the "
                "NeuronCores HF_NUM_CORES names",
                f"drop num_gpus and pass environment={{'HF_NUM_CORES': '{self.num_gpus}'}} "
                "(NeuronCores, two per Inferentia2/Trainium chip)",
            )
        if self.dtype is not None:
            cast = {DataType.FP16: "fp16", DataType.BF16: "bf16"}.get(self.dtype, "bf16")
            raise ValidationError(
                "serving.dtype",
                self.dtype.name,
                "TGI on Neuron (optimum-neuron) takes no --dtype: the precision is the "
                "compiled model's HF_AUTO_CAST_TYPE",
                f"drop dtype and pass environment={{'HF_AUTO_CAST_TYPE': '{cast}'}}",
            )

    def environment(self, image: ContainerImage | None = None) -> dict[str, str]:
        """The TGI variables these options render to on ``image`` (default: TGI's current
        names): the longest prompt is ``MAX_INPUT_LENGTH`` on TGI before 2.0.0, whose launcher
        does not read ``MAX_INPUT_TOKENS`` (``catalog.containers.max_input_tokens_variable``)."""
        dtype = {DataType.FP16: "float16", DataType.BF16: "bfloat16"}.get(self.dtype)  # type: ignore[arg-type]
        input_variable = (
            max_input_tokens_variable(image.family, image.release)
            if image is not None
            else max_input_tokens_variable(ContainerFamily.TGI, None)
        )
        optional = {
            "SM_NUM_GPUS": self.num_gpus,
            input_variable: self.max_input_tokens,
            "MAX_TOTAL_TOKENS": self.max_total_tokens,
            "MAX_BATCH_PREFILL_TOKENS": self.max_batch_prefill_tokens,
            "MAX_BATCH_TOTAL_TOKENS": self.max_batch_total_tokens,
            "MAX_CONCURRENT_REQUESTS": self.max_concurrent_requests,
            "QUANTIZE": self.quantization.value if self.quantization else None,
            "DTYPE": dtype,
        }
        env = {name: str(value) for name, value in optional.items() if value is not None}
        return env | _kv_cache_environment(self.kv_cache_precision, ContainerFamily.TGI)


VLLM_DTYPES = {DataType.FP32: "float32", DataType.FP16: "float16", DataType.BF16: "bfloat16"}
"""vLLM's ``--dtype`` names (vLLM docs, "Engine Arguments")."""


@typed_props
@dataclass(frozen=True, kw_only=True)
class VllmOptions:
    """Serving options of SageMaker's vLLM containers (``ContainerImage.vllm``,
    ``vllm_server``, ``huggingface_vllm``), rendered as ``SM_VLLM_*`` variables that the
    container passes to ``vllm serve`` as engine arguments (AWS Deep Learning Containers docs,
    "vLLM Inference / Configuration"; vLLM docs, "Engine Arguments").

    Every option defaults to None: vLLM's own default applies.
    """

    tensor_parallel_size: int | None = None
    """Accelerators one copy of the model is sharded over (``--tensor-parallel-size``)."""
    max_model_len: int | None = None
    """Longest sequence (input + output tokens) served (``--max-model-len``)."""
    max_num_seqs: int | None = None
    """Most sequences decoded together (``--max-num-seqs``)."""
    max_num_batched_tokens: int | None = None
    """Most tokens scheduled in one step (``--max-num-batched-tokens``)."""
    gpu_memory_utilization: float | None = None
    """Fraction of each GPU's memory vLLM may use, above 0 and at most 1
    (``--gpu-memory-utilization``; vLLM's default 0.9)."""
    dtype: DataType | None = None
    """Precision (``--dtype``)."""
    quantization: Quantization | None = None
    """Load-time quantization method (``--quantization``)."""
    enforce_eager: bool | None = None
    """Disable CUDA graphs (``--enforce-eager``): less memory, slower decode."""
    enable_prefix_caching: bool | None = None
    """Reuse the KV cache of shared prompt prefixes (``--enable-prefix-caching``, or
    ``--no-enable-prefix-caching`` when False)."""
    kv_cache_precision: KvCachePrecision | None = None
    """How the engine stores the KV cache: ``FP8`` renders ``--kv-cache-dtype fp8``. Default:
    vLLM's ``auto`` (the model's dtype)."""

    @property
    def accelerators_per_copy(self) -> int | None:
        """Accelerators one model copy needs, when stated."""
        return self.tensor_parallel_size

    @property
    def max_total_tokens(self) -> int | None:
        """Longest sequence per request, when stated."""
        return self.max_model_len

    @property
    def max_concurrent_requests(self) -> int | None:
        """Most requests decoded together, when stated."""
        return self.max_num_seqs

    def validate(self, image: ContainerImage) -> None:
        """Raise ValidationError on options that contradict each other or the image."""
        if not image.family.is_vllm and image.family is not ContainerFamily.CUSTOM:
            raise ValidationError(
                "serving",
                "VllmOptions",
                f"vLLM options ({VLLM_VARIABLE_PREFIX}* variables) do not apply to a "
                f"{image.family.value} image",
                "use LmiOptions for LMI images, TgiOptions for TGI images, or pass environment "
                "variables directly",
            )
        for prop in (
            "tensor_parallel_size",
            "max_model_len",
            "max_num_seqs",
            "max_num_batched_tokens",
        ):
            _positive(f"serving.{prop}", getattr(self, prop))
        _check_memory_fraction(self.gpu_memory_utilization)
        if (
            self.max_num_batched_tokens is not None
            and self.max_model_len is not None
            and self.max_num_batched_tokens < self.max_model_len
        ):
            raise ValidationError(
                "serving.max_num_batched_tokens",
                self.max_num_batched_tokens,
                f"is below max_model_len ({self.max_model_len}): vLLM refuses to start unless "
                "chunked prefill splits longer prompts",
                "raise max_num_batched_tokens to at least max_model_len",
            )
        _check_kv_cache(self.kv_cache_precision, image)

    def environment(self, image: ContainerImage | None = None) -> dict[str, str]:
        """The ``SM_VLLM_*`` variables these options render to (the same on every vLLM
        image)."""
        optional: dict[str, object] = {
            "tensor-parallel-size": self.tensor_parallel_size,
            "max-model-len": self.max_model_len,
            "max-num-seqs": self.max_num_seqs,
            "max-num-batched-tokens": self.max_num_batched_tokens,
            "gpu-memory-utilization": self.gpu_memory_utilization,
            "dtype": VLLM_DTYPES[self.dtype] if self.dtype else None,
            "quantization": self.quantization.value if self.quantization else None,
            "enforce-eager": "true" if self.enforce_eager else None,
        }
        if self.enable_prefix_caching is not None:
            flag = "enable-prefix-caching"
            optional[flag if self.enable_prefix_caching else f"no-{flag}"] = "true"
        env = {
            vllm_variable(argument): str(value)
            for argument, value in optional.items()
            if value is not None
        }
        return env | _kv_cache_environment(self.kv_cache_precision, ContainerFamily.VLLM)


ServingOptions = LmiOptions | TgiOptions | VllmOptions
"""Typed serving options of any container family."""


def _bool(value: bool | None) -> str | None:
    return None if value is None else str(value).lower()
