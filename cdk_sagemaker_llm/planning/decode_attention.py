"""How an engine's decode attention kernel reads the KV cache of a grouped-query model.

With grouped-query attention (GQA) each KV head serves ``attention_heads / kv_heads`` query
heads. A kernel that loads a KV head once for its whole group reads the cache once per step
(TensorRT-LLM's XQA kernel, "optimization for MQA and GQA during generation phase ... reducing
data loading": TensorRT-LLM ``docs/source/blogs/XQA-kernel.md``). TensorRT-LLM's masked
multi-head attention kernel, which it runs where XQA does not apply, computes one query head
per thread block, so each query head of a group fetches the group's KV head again; the copies
its neighbours already brought into L2 come back from there, the others from memory
(``Efficiency.kv_reread_share``). Per step that reads the KV cache ``1 + (group - 1) x share``
times instead of once. The XQA blog measured what the difference is worth: Llama 2 70B (8 query
heads per KV head) in FP8 on one H200 at 128/2048 tokens served 1,227 output tokens/s per GPU
without XQA and 2,941 with it (2.4x).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.model_specs import ModelSpec

XQA_FIRST_RELEASE = (0, 8)
"""The first TensorRT-LLM release with the XQA kernel: the XQA blog (January 2024, measured on
"TensorRT-LLM v0.8a") says its improvements "will be included in the v0.8 releases"; 0.5-0.7
run every grouped-query model on the masked multi-head attention kernel."""
XQA_PRECOMPILED_LAST_RELEASE = (0, 11)
"""The last TensorRT-LLM release whose rows the model reads as XQA's precompiled kernel table:
the releases of 2024 shipped XQA as precompiled kernels, one per (KV cache type, head size,
query heads per KV head), and their table (``cpp/tensorrt_llm/kernels/
decoderMaskedMultiheadAttention/cubin/xqa_kernel_cubin.h``, NVIDIA/TensorRT-LLM at
2340c776201e4dba9aa625b8615e3e6ca9d7a7f6) holds single-token decode kernels for head size 128
and 8 query heads per KV head only ("LLAMA2 70B is one model that it supports",
``docs/source/gpt_attention.md`` of those releases); 0.10's release notes still name "the new
NVIDIA Hopper XQA kernels for LLaMA 2 70B". Later releases build XQA just in time for any head
size of 16-256 and up to 32 query heads per KV head (``decoderXQAImplJIT``,
``supportConfigHMMA``), which this module reads as shared for every grouped-query model."""
XQA_PRECOMPILED_GROUP = 8
"""Query heads per KV head of XQA's precompiled decode kernels."""
XQA_PRECOMPILED_HEAD_DIM = 128
"""Head dimension of XQA's precompiled decode kernels."""
SHARED_REASON = "the kernel reads each KV head once for its group"
"""Why a kernel whose read is not stated counts as shared (``DecodeAttention.shared``)."""


@dataclass(frozen=True)
class DecodeAttention:
    """Whether the decode attention kernel reads a KV head once for its group of query heads
    (``shared``) or once per query head (``per_query_head``), and why."""

    shares_kv_head: bool
    """True: one read per KV head per step; False: one per query head, partly from L2."""
    reason: str
    """The kernel and the release fact that decide it."""

    @staticmethod
    def shared(reason: str = SHARED_REASON) -> DecodeAttention:
        """A kernel that loads each KV head once for all its query heads (XQA, and the
        model's default for an engine whose kernel is not stated)."""
        return DecodeAttention(True, reason)

    @staticmethod
    def per_query_head(reason: str) -> DecodeAttention:
        """A kernel with one thread block per query head: each re-reads its group's KV head."""
        return DecodeAttention(False, reason)

    def kv_read_factor(self, spec: ModelSpec, reread_share: float) -> float:
        """Times one decode step reads the KV cache's bytes: 1 for a shared read or a model
        with one query head per KV head; else ``1 + (group - 1) x reread_share``, the group's
        other query heads re-reading the KV head at ``reread_share`` from memory."""
        group = spec.attention_heads // spec.kv_heads
        if self.shares_kv_head or group == 1:
            return 1.0
        return 1.0 + (group - 1) * reread_share


SHARED = DecodeAttention.shared()
"""The default: a kernel that reads each KV head once a step (the model's assumption for an
engine whose decode attention is not stated)."""


def trtllm_decode_attention(release: tuple[int, int], spec: ModelSpec) -> DecodeAttention:
    """The decode attention a TensorRT-LLM ``(major, minor)`` release runs ``spec`` on: masked
    multi-head attention (one query head per thread block) before XQA (``XQA_FIRST_RELEASE``)
    and, through ``XQA_PRECOMPILED_LAST_RELEASE``, for any grouped-query model XQA's
    precompiled kernels do not cover; XQA (shared) otherwise."""
    group = spec.attention_heads // spec.kv_heads
    version = f"TensorRT-LLM {release[0]}.{release[1]}"
    if group == 1:
        return DecodeAttention.shared(f"{version}: one query head per KV head")
    if release < XQA_FIRST_RELEASE:
        return DecodeAttention.per_query_head(
            f"{version} predates XQA: masked multi-head attention, one query head per block"
        )
    covered = group == XQA_PRECOMPILED_GROUP and spec.head_dim == XQA_PRECOMPILED_HEAD_DIM
    if release <= XQA_PRECOMPILED_LAST_RELEASE and not covered:
        return DecodeAttention.per_query_head(
            f"{version}: XQA's precompiled kernels cover {XQA_PRECOMPILED_GROUP} query heads "
            f"per KV head of dimension {XQA_PRECOMPILED_HEAD_DIM}, not {group} of "
            f"{spec.head_dim}: masked multi-head attention"
        )
    return DecodeAttention.shared(f"{version}: XQA reads each KV head once for its group")
