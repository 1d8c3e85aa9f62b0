"""Model architecture facts that sizing needs: parameters, layers, heads, context, precision."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from ..errors import ValidationError
from ..prop_types import trusted, typed_props
from .containers import vllm_variable


@typed_props
class Precision(Enum):
    """How the weights are stored on the accelerator; decides bytes per parameter.

    The KV cache stays in the activation precision (fp16/bf16, fp32 only for FP32 weights):
    weight-only quantization (INT8, INT4 AWQ) and FP8 weights do not shrink it; an FP8 KV
    cache is its own setting (``KvCachePrecision``).
    """

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4_AWQ = "int4"

    @property
    def bytes_per_parameter(self) -> float:
        """Bytes one weight takes: fp32 4, fp16/bf16 2, fp8/int8 1, int4 0.5."""
        return _BYTES_PER_PARAMETER[self]

    @property
    def kv_bytes_per_element(self) -> int:
        """Bytes one KV-cache element takes: 4 for FP32 models, else 2 (fp16/bf16)."""
        return 4 if self is Precision.FP32 else 2

    @staticmethod
    def of(name: str) -> Precision:
        """A precision by name: ``fp32``, ``fp16``, ``bf16``, ``fp8``, ``int8``, ``int4``/``awq``
        (also the container spellings ``float16``, ``bfloat16``, ``float32``)."""
        key = str(name).strip().lower()
        found = _ALIASES.get(key)
        if found is None:
            raise ValidationError(
                "dtype",
                name,
                "not a precision the sizing knows",
                "use one of fp32, fp16, bf16, fp8, int8, int4 (AWQ)",
            )
        return found

    @staticmethod
    def from_environment(environment: dict[str, Any]) -> Precision:
        """The precision a serving container's environment implies (LMI ``OPTION_DTYPE`` /
        ``OPTION_QUANTIZE``, TGI ``DTYPE`` / ``QUANTIZE``, SageMaker vLLM ``SM_VLLM_DTYPE`` /
        ``SM_VLLM_QUANTIZATION``); default FP16."""
        quantize = str(
            environment.get("OPTION_QUANTIZE")
            or environment.get("QUANTIZE")
            or environment.get(vllm_variable("quantization"))
            or ""
        ).lower()
        if quantize in ("awq", "gptq"):
            return Precision.INT4_AWQ
        if quantize == "fp8":
            return Precision.FP8
        if quantize in ("bitsandbytes", "bitsandbytes8", "eetq", "int8"):
            return Precision.INT8
        dtype = (
            environment.get("OPTION_DTYPE")
            or environment.get("DTYPE")
            or environment.get(vllm_variable("dtype"))
        )
        if isinstance(dtype, str) and dtype.strip().lower() in _ALIASES:
            return _ALIASES[dtype.strip().lower()]
        return Precision.FP16


@typed_props
class KvCachePrecision(Enum):
    """How the serving engine stores the KV cache, apart from the weights' precision.

    ``AUTO`` (the default): the activation precision (``Precision.kv_bytes_per_element``), the
    engines' own default (vLLM ``--kv-cache-dtype auto``; TensorRT-LLM ``KvCacheConfig`` dtype
    ``auto``, which follows the checkpoint). ``FP8``: one byte per element, half the KV bytes
    of FP16 per token, so about twice the sequences fit and a decode step reads half the KV
    bytes: vLLM ``--kv-cache-dtype fp8`` (docs.vllm.ai, "Quantized KV Cache"), TensorRT-LLM's
    FP8 KV cache (nvidia.github.io/TensorRT-LLM, "Quantization", "FP8 KV Cache"), on by default
    in NVIDIA ModelOpt FP8 checkpoints (``hf_quant_config.json`` ``kv_cache_quant_algo: FP8``;
    ModelOpt ``hf_ptq.py`` exports ``--kv_cache_qformat fp8`` unless told otherwise). It needs
    FP8 support in the accelerator (``Accelerator.fp8``;
    ``performance.kv_cache_precision_problem``).
    """

    AUTO = "auto"
    FP8 = "fp8"

    def bytes_per_element(self, weights: Precision) -> int:
        """Bytes one KV-cache element takes beside ``weights``: 1 for FP8, else the activation
        precision's (``Precision.kv_bytes_per_element``)."""
        return 1 if self is KvCachePrecision.FP8 else weights.kv_bytes_per_element

    def describe(self, weights: Precision) -> str:
        """E.g. ``fp8 (1 byte per element)`` or ``auto (the activation precision beside fp16
        weights: 2 bytes per element)``."""
        size = self.bytes_per_element(weights)
        unit = "byte" if size == 1 else "bytes"
        if self is KvCachePrecision.FP8:
            return f"fp8 ({size} {unit} per element)"
        return (
            f"auto (the activation precision beside {weights.value} weights: {size} {unit} per "
            "element)"
        )

    @staticmethod
    def of(name: str) -> KvCachePrecision:
        """A KV-cache precision by name: ``auto`` (the activation precision) or ``fp8`` (also
        ``fp8_e4m3``)."""
        key = str(name).strip().lower()
        found = _KV_ALIASES.get(key)
        if found is None:
            raise ValidationError(
                "kv_cache_precision",
                name,
                "not a KV-cache precision the sizing knows",
                "use auto (the activation precision: fp16/bf16) or fp8",
            )
        return found


_KV_ALIASES = {
    "auto": KvCachePrecision.AUTO,
    "fp8": KvCachePrecision.FP8,
    "fp8_e4m3": KvCachePrecision.FP8,
}
_BYTES_PER_PARAMETER = {
    Precision.FP32: 4.0,
    Precision.FP16: 2.0,
    Precision.BF16: 2.0,
    Precision.FP8: 1.0,
    Precision.INT8: 1.0,
    Precision.INT4_AWQ: 0.5,
}
_ALIASES = {
    "fp32": Precision.FP32,
    "float32": Precision.FP32,
    "fp16": Precision.FP16,
    "float16": Precision.FP16,
    "bf16": Precision.BF16,
    "bfloat16": Precision.BF16,
    "fp8": Precision.FP8,
    "int8": Precision.INT8,
    "int4": Precision.INT4_AWQ,
    "awq": Precision.INT4_AWQ,
    "int4-awq": Precision.INT4_AWQ,
}


@typed_props
@dataclass(frozen=True)
class ModelSpec:
    """The architecture facts sizing needs about one model.

    Use a preset (``ModelSpec.LLAMA_3_8B``, ``ModelSpec.preset("mistral-7b")``), infer one
    from a Hugging Face id (``ModelSpec.from_hugging_face_id(...)``), or describe any other
    model with ``ModelSpec.custom(...)``.
    """

    __synth_decision__ = "The model's architecture decides what fits (sizing)"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    name: str
    """A short name, e.g. ``llama-3-8b``."""
    parameters: float
    """Total parameters (all experts for a mixture of experts), e.g. ``8.03e9``."""
    layers: int
    """Transformer layers."""
    attention_heads: int
    """Query attention heads per layer."""
    kv_heads: int
    """Key/value heads per layer (grouped-query attention: fewer than ``attention_heads``)."""
    head_dim: int
    """Dimension of one attention head."""
    max_context: int
    """Longest sequence (prompt + output tokens) the model supports."""
    hugging_face_ids: tuple[str, ...] = ()
    """Hugging Face ids this spec describes (matched case-insensitively, any suffix after
    these prefixes such as ``-Instruct`` or ``-hf`` included)."""
    experts: int = 1
    """Experts per MoE layer (1: a dense model)."""
    experts_per_token: int = 1
    """Experts each token is routed to (mixture of experts only)."""
    active_parameters_per_token: float | None = None
    """Parameters one token uses (mixture of experts: shared weights + its experts); default
    ``parameters`` (a dense model)."""

    LLAMA_2_7B: ClassVar[ModelSpec]
    LLAMA_2_13B: ClassVar[ModelSpec]
    LLAMA_2_70B: ClassVar[ModelSpec]
    LLAMA_3_8B: ClassVar[ModelSpec]
    LLAMA_3_70B: ClassVar[ModelSpec]
    LLAMA_3_1_8B: ClassVar[ModelSpec]
    LLAMA_3_1_70B: ClassVar[ModelSpec]
    MISTRAL_7B: ClassVar[ModelSpec]
    MIXTRAL_8X7B: ClassVar[ModelSpec]
    FALCON_7B: ClassVar[ModelSpec]
    FALCON_40B: ClassVar[ModelSpec]
    FALCON_180B: ClassVar[ModelSpec]

    def __post_init__(self) -> None:
        for prop in ("layers", "attention_heads", "kv_heads", "head_dim", "max_context"):
            value = getattr(self, prop)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(
                    f"spec.{prop}", value, "must be a positive integer", f"set {prop} to a count"
                )
        if (
            not isinstance(self.parameters, int | float)
            or isinstance(self.parameters, bool)
            or not 0 < self.parameters < math.inf
        ):
            raise ValidationError(
                "spec.parameters",
                self.parameters,
                "must be a positive, finite number of parameters",
                "pass the total parameter count, e.g. 7.24e9",
            )
        if not 1 <= self.experts_per_token <= self.experts or (
            self.experts > 1 and self.experts_per_token == self.experts
        ):
            raise ValidationError(
                "spec.experts_per_token",
                self.experts_per_token,
                f"must be between 1 and experts ({self.experts}), fewer than experts for a "
                "mixture of experts",
                "check the model's config.json (num_experts_per_tok, num_local_experts)",
            )
        active = self.active_parameters_per_token
        if active is None and self.experts > 1:
            raise ValidationError(
                "spec.active_parameters_per_token",
                None,
                f"a mixture of experts ({self.experts} experts) needs the parameters one token "
                "uses: without them it would be sized as a dense model",
                "pass the parameters one token uses: the shared weights plus experts_per_token "
                "experts (e.g. 12.9e9 for Mixtral 8x7B)",
            )
        if active is not None and not 0 < active <= self.parameters:
            raise ValidationError(
                "spec.active_parameters_per_token",
                active,
                f"must be positive and at most parameters ({self.parameters:g})",
                "pass the parameters one token uses (e.g. 12.9e9 for Mixtral 8x7B)",
            )
        least = self.least_attention_parameters
        if self.parameters < least:
            raise ValidationError(
                "spec.parameters",
                self.parameters,
                f"fewer than the {least:.3g} parameters the attention projections alone hold "
                f"({self.layers} layers of {self.attention_heads} query and {self.kv_heads} KV "
                f"heads of {self.head_dim} dimensions, at a hidden size of at least one head): "
                "a count in billions or millions",
                f"pass the total parameter count, e.g. {self.parameters:g}e9 for "
                f"{self.parameters:g} billion",
            )
        if self.attention_heads % self.kv_heads != 0:
            raise ValidationError(
                "spec.kv_heads",
                self.kv_heads,
                f"must divide attention_heads ({self.attention_heads}): each KV head serves "
                "a whole group of query heads",
                "check the model's config.json (num_key_value_heads)",
            )

    @property
    def least_attention_parameters(self) -> int:
        """A floor under any model with this attention: each layer's query, key, value and
        output projections map the hidden size to and from the heads, 2 x hidden x head
        dimension x (query heads + KV heads) weights, and the hidden size is at least one
        head's dimension."""
        heads = self.attention_heads + self.kv_heads
        return self.layers * 2 * self.head_dim * self.head_dim * heads

    @staticmethod
    def custom(
        name: str,
        *,
        parameters: float,
        layers: int,
        attention_heads: int,
        kv_heads: int | None = None,
        head_dim: int | None = None,
        hidden_size: int | None = None,
        max_context: int,
    ) -> ModelSpec:
        """Any model, from its ``config.json`` facts.

        :param kv_heads: default ``attention_heads`` (multi-head attention).
        :param head_dim: default ``hidden_size / attention_heads``; one of the two is required.
        """
        if head_dim is None:
            if hidden_size is None:
                raise ValidationError(
                    "head_dim",
                    None,
                    "the head dimension is needed for the KV-cache size",
                    "pass head_dim, or hidden_size (head_dim = hidden_size / attention_heads)",
                )
            head_dim = hidden_size // attention_heads
        return ModelSpec(
            name=name,
            parameters=parameters,
            layers=layers,
            attention_heads=attention_heads,
            kv_heads=kv_heads if kv_heads is not None else attention_heads,
            head_dim=head_dim,
            max_context=max_context,
        )

    @staticmethod
    def preset(name: str) -> ModelSpec:
        """A preset by name (``llama-2-7b``, ``llama-3.1-70b``, ``mixtral-8x7b`` ...)."""
        found = PRESETS.get(str(name).strip().lower())
        if found is None:
            raise ValidationError(
                "model",
                name,
                "no preset of that name",
                f"use one of {', '.join(sorted(PRESETS))}, or ModelSpec.custom(...)",
            )
        return found

    @staticmethod
    def from_hugging_face_id(model_id: str | None) -> ModelSpec | None:
        """The preset for a well-known Hugging Face id, or None when the id is not known."""
        if not isinstance(model_id, str):
            return None
        wanted = model_id.strip().lower()
        best: tuple[int, ModelSpec] | None = None
        for spec in PRESETS.values():
            for known in spec.hugging_face_ids:
                prefix = known.lower()
                matches = wanted == prefix or wanted.startswith(prefix + "-")
                if matches and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), spec)
        return best[1] if best else None

    @property
    def active_parameters(self) -> float:
        """Parameters one token uses: all of a dense model's, the active ones of a MoE."""
        if self.active_parameters_per_token is None:
            return self.parameters
        return self.active_parameters_per_token

    @property
    def grouped_query_factor(self) -> float:
        """How much grouped-query attention shrinks the KV cache: ``attention_heads / kv_heads``."""
        return self.attention_heads / self.kv_heads

    def to_metadata(self) -> dict[str, Any]:
        """A small, deterministic description for template metadata (read by ``plan``)."""
        return {
            "name": self.name,
            "parameters": self.parameters,
            "layers": self.layers,
            "attentionHeads": self.attention_heads,
            "kvHeads": self.kv_heads,
            "headDim": self.head_dim,
            "maxContext": self.max_context,
            **(
                {
                    "experts": self.experts,
                    "expertsPerToken": self.experts_per_token,
                    "activeParameters": self.active_parameters,
                }
                if self.experts > 1
                else {}
            ),
        }

    @staticmethod
    def from_metadata(data: dict[str, Any]) -> ModelSpec:
        """The inverse of ``to_metadata``; ValidationError for anything else."""
        try:
            return ModelSpec(
                name=str(data["name"]),
                parameters=float(data["parameters"]),
                layers=int(data["layers"]),
                attention_heads=int(data["attentionHeads"]),
                kv_heads=int(data["kvHeads"]),
                head_dim=int(data["headDim"]),
                max_context=int(data["maxContext"]),
                experts=int(data.get("experts", 1)),
                experts_per_token=int(data.get("expertsPerToken", 1)),
                active_parameters_per_token=float(data["activeParameters"])
                if "activeParameters" in data
                else None,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValidationError(
                "ModelSpec.from_metadata(data)",
                data,
                f"is not a model spec's metadata ({type(error).__name__}: {error})",
                "pass what ModelSpec.to_metadata() returned",
            ) from error


def _presets() -> dict[str, ModelSpec]:
    spec = trusted(ModelSpec)  # published facts: no run-time type check of each
    # Published architecture facts (the models' config.json files and papers).
    specs = [
        spec("llama-2-7b", 6.74e9, 32, 32, 32, 128, 4_096, ("meta-llama/Llama-2-7b",)),
        spec("llama-2-13b", 13.0e9, 40, 40, 40, 128, 4_096, ("meta-llama/Llama-2-13b",)),
        spec("llama-2-70b", 69.0e9, 80, 64, 8, 128, 4_096, ("meta-llama/Llama-2-70b",)),
        spec("llama-3-8b", 8.03e9, 32, 32, 8, 128, 8_192, ("meta-llama/Meta-Llama-3-8B",)),
        spec("llama-3-70b", 70.6e9, 80, 64, 8, 128, 8_192, ("meta-llama/Meta-Llama-3-70B",)),
        spec(
            "llama-3.1-8b",
            8.03e9,
            32,
            32,
            8,
            128,
            131_072,
            ("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
        ),
        spec(
            "llama-3.1-70b",
            70.6e9,
            80,
            64,
            8,
            128,
            131_072,
            ("meta-llama/Meta-Llama-3.1-70B", "meta-llama/Llama-3.1-70B"),
        ),
        spec("mistral-7b", 7.24e9, 32, 32, 8, 128, 32_768, ("mistralai/Mistral-7B",)),
        # Mixtral: 8 experts, 2 per token, 12.9B of 46.7B parameters active (Mistral AI,
        # "Mixtral of experts", 2023).
        spec(
            "mixtral-8x7b",
            46.7e9,
            32,
            32,
            8,
            128,
            32_768,
            ("mistralai/Mixtral-8x7B",),
            experts=8,
            experts_per_token=2,
            active_parameters_per_token=12.9e9,
        ),
        spec("falcon-7b", 7.2e9, 32, 71, 1, 64, 2_048, ("tiiuae/falcon-7b",)),
        spec("falcon-40b", 41.8e9, 60, 128, 8, 64, 2_048, ("tiiuae/falcon-40b",)),
        spec("falcon-180b", 179.5e9, 80, 232, 8, 64, 2_048, ("tiiuae/falcon-180B",)),
    ]
    return {spec.name: spec for spec in specs}


PRESETS: dict[str, ModelSpec] = _presets()
"""The preset model specs, by name."""

for _name, _spec in PRESETS.items():
    setattr(ModelSpec, _name.upper().replace("-", "_").replace(".", "_"), _spec)
