"""Deep Learning Container lines: repositories, known tags, container caching, regions.

Pure facts (no aws_cdk): ``ContainerImage`` (constructs/images.py) binds them to a stack, and
``plan`` reads them to describe images in synthesized templates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from .registries import DLC_REGISTRY_ACCOUNTS


class ContainerFamily(Enum):
    """The serving stack inside an image; decides which serving options apply."""

    LMI = "lmi"
    """LMI (DJL Serving) with the vLLM / LMI-Dist backends."""
    LMI_TENSORRT_LLM = "lmi-tensorrt-llm"
    """LMI with the TensorRT-LLM backend."""
    LMI_NEURONX = "lmi-neuronx"
    """LMI with the Transformers-NeuronX backend (Inferentia2 / Trainium)."""
    TGI = "tgi"
    """Hugging Face Text Generation Inference on GPUs."""
    TGI_NEURONX = "tgi-neuronx"
    """Hugging Face TGI with Optimum Neuron (Inferentia2 / Trainium)."""
    PYTORCH_GPU = "pytorch-gpu"
    """PyTorch inference (TorchServe) on GPUs."""
    PYTORCH_CPU = "pytorch-cpu"
    """PyTorch inference (TorchServe) on CPUs."""
    TRITON = "triton"
    """NVIDIA Triton Inference Server."""
    CUSTOM = "custom"
    """An image the library does not know."""

    @property
    def is_lmi(self) -> bool:
        """True for the LMI (DJL Serving) families."""
        return self in (
            ContainerFamily.LMI,
            ContainerFamily.LMI_TENSORRT_LLM,
            ContainerFamily.LMI_NEURONX,
        )

    @property
    def is_tgi(self) -> bool:
        """True for the TGI families."""
        return self in (ContainerFamily.TGI, ContainerFamily.TGI_NEURONX)

    @property
    def needs_neuron(self) -> bool:
        """True for images built for AWS Inferentia / Trainium."""
        return self in (ContainerFamily.LMI_NEURONX, ContainerFamily.TGI_NEURONX)

    @property
    def needs_gpu(self) -> bool:
        """True for images built for NVIDIA GPUs."""
        return self in (
            ContainerFamily.LMI,
            ContainerFamily.LMI_TENSORRT_LLM,
            ContainerFamily.TGI,
            ContainerFamily.PYTORCH_GPU,
        )


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.31.0"`` as ``(0, 31, 0)``, for ordering releases."""
    return tuple(int(part) for part in version.split("."))


SHORT_VERSION = re.compile(r"^\d+(\.\d+)+$")

_LMI_NEURONX_REGIONS = frozenset(
    [
        "ap-northeast-1",
        "ap-south-1",
        "ap-southeast-1",
        "ap-southeast-2",
        "eu-central-1",
        "eu-west-1",
        "eu-west-3",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-2",
        "ca-west-1",
    ]
)
_TGI_NEURONX_REGIONS = frozenset(
    [
        "ap-northeast-1",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-7",
        "cn-north-1",
        "cn-northwest-1",
        "eu-central-1",
        "eu-central-2",
        "eu-south-2",
        "eu-west-1",
        "eu-west-3",
        "il-central-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-gov-east-1",
        "us-gov-west-1",
        "us-west-2",
        "ca-west-1",
    ]
)
_ALL_REGIONS = frozenset(DLC_REGISTRY_ACCOUNTS)
_TRITON_REGIONS = frozenset(r for r in _ALL_REGIONS if not r.startswith("us-gov-"))


@dataclass(frozen=True)
class DlcLine:
    """One line of Deep Learning Containers: repository, known tags, caching, regions."""

    family: ContainerFamily
    repository: str
    tags: dict[str, str]
    """Short version -> full tag, for the releases the library knows."""
    tag_pattern: re.Pattern[str]
    """Recognizes this line's tags; group ``release`` is the version compared for caching."""
    first_cached_release: str
    """The first release SageMaker container caching covers (domain.md)."""
    regions: frozenset[str]

    def release_of(self, tag: str) -> str | None:
        """The release in ``tag`` compared for caching, or None when the tag is not this line's."""
        match = self.tag_pattern.search(tag)
        return match.group("release") if match else None

    def is_cached(self, tag: str) -> bool:
        """True when SageMaker container caching covers ``tag`` (release >= the first cached)."""
        release = self.release_of(tag)
        return release is not None and version_tuple(release) >= version_tuple(
            self.first_cached_release
        )


DLC_LINES: dict[ContainerFamily, DlcLine] = {
    line.family: line
    for line in (
        DlcLine(
            ContainerFamily.LMI,
            "djl-inference",
            {
                "0.28.0": "0.28.0-lmi10.0.0-cu124",
                "0.29.0": "0.29.0-lmi11.0.0-cu124",
                "0.30.0": "0.30.0-lmi12.0.0-cu124",
                "0.31.0": "0.31.0-lmi13.0.0-cu124",
                "0.32.0": "0.32.0-lmi14.0.0-cu126",
                "0.33.0": "0.33.0-lmi15.0.0-cu128",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-lmi"),
            "0.29.0",
            _ALL_REGIONS,
        ),
        DlcLine(
            ContainerFamily.LMI_TENSORRT_LLM,
            "djl-inference",
            {
                "0.28.0": "0.28.0-tensorrtllm0.9.0-cu122",
                "0.29.0": "0.29.0-tensorrtllm0.11.0-cu124",
                "0.30.0": "0.30.0-tensorrtllm0.12.0-cu125",
                "0.32.0": "0.32.0-tensorrtllm0.12.0-cu125",
                "0.33.0": "0.33.0-tensorrtllm0.21.0-cu128",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-tensorrtllm"),
            "0.29.0",
            _ALL_REGIONS,
        ),
        DlcLine(
            ContainerFamily.LMI_NEURONX,
            "djl-inference",
            {
                "0.27.0": "0.27.0-neuronx-sdk2.18.1",
                "0.28.0": "0.28.0-neuronx-sdk2.18.2",
                "0.29.0": "0.29.0-neuronx-sdk2.19.1",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-neuronx"),
            "0.29.0",
            _LMI_NEURONX_REGIONS,
        ),
        DlcLine(
            ContainerFamily.TGI,
            "huggingface-pytorch-tgi-inference",
            {
                "2.0.2": "2.3.0-tgi2.0.2-gpu-py310-cu121-ubuntu22.04",
                "2.2.0": "2.3.0-tgi2.2.0-gpu-py310-cu121-ubuntu22.04-v2.0",
                "2.3.1": "2.4.0-tgi2.3.1-gpu-py311-cu124-ubuntu22.04",
                "2.4.0": "2.4.0-tgi2.4.0-gpu-py311-cu124-ubuntu22.04-v2.0",
                "3.0.1": "2.4.0-tgi3.0.1-gpu-py311-cu124-ubuntu22.04-v2.1",
                "3.3.4": "2.7.0-tgi3.3.4-gpu-py311-cu124-ubuntu22.04",
                "3.3.6": "2.7.0-tgi3.3.6-gpu-py311-cu124-ubuntu22.04",
            },
            # The TGI release (not the PyTorch version leading the tag) decides caching.
            re.compile(r"-tgi(?P<release>\d+\.\d+\.\d+)-gpu"),
            "2.4.0",
            _ALL_REGIONS,
        ),
        DlcLine(
            ContainerFamily.TGI_NEURONX,
            "huggingface-pytorch-tgi-inference",
            {
                "0.0.24": "2.1.2-optimum0.0.24-neuronx-py310-ubuntu22.04",
                "0.0.25": "2.1.2-optimum0.0.25-neuronx-py310-ubuntu22.04-v1.0",
                "0.0.27": "2.1.2-optimum0.0.27-neuronx-py310-ubuntu22.04",
            },
            # Caching is published against the PyTorch version leading the tag (2.1.2).
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-optimum[\d.]+-neuronx"),
            "2.1.2",
            _TGI_NEURONX_REGIONS,
        ),
        DlcLine(
            ContainerFamily.PYTORCH_GPU,
            "pytorch-inference",
            {
                "2.3.0": "2.3.0-gpu-py311-cu121-ubuntu20.04-sagemaker",
                "2.4.0": "2.4.0-gpu-py311-cu124-ubuntu22.04-sagemaker",
                "2.5.1": "2.5.1-gpu-py311-cu124-ubuntu22.04-sagemaker",
                "2.6.0": "2.6.0-gpu-py312-cu124-ubuntu22.04-sagemaker",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-gpu-"),
            "2.5.1",
            _ALL_REGIONS,
        ),
        DlcLine(
            ContainerFamily.PYTORCH_CPU,
            "pytorch-inference",
            {
                "2.3.0": "2.3.0-cpu-py311-ubuntu20.04-sagemaker",
                "2.4.0": "2.4.0-cpu-py311-ubuntu22.04-sagemaker",
                "2.5.1": "2.5.1-cpu-py311-ubuntu22.04-sagemaker",
                "2.6.0": "2.6.0-cpu-py312-ubuntu22.04-sagemaker",
            },
            re.compile(r"^(?P<release>\d+\.\d+\.\d+)-cpu-"),
            "2.5.1",
            _ALL_REGIONS,
        ),
        DlcLine(
            ContainerFamily.TRITON,
            "sagemaker-tritonserver",
            {
                "23.12": "23.12-py3",
                "24.01": "24.01-py3",
                "24.03": "24.03-py3",
                "24.05": "24.05-py3",
                "24.09": "24.09-py3",
            },
            re.compile(r"^(?P<release>\d+\.\d+)-py3"),
            "24.09",
            _TRITON_REGIONS,
        ),
    )
}

ECR_URI = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.(?P<domain>amazonaws\.com(\.cn)?)"
    r"/(?P<repository>[a-z0-9._/-]+)(:(?P<tag>[\w.-]+)|@(?P<digest>sha256:[0-9a-f]{64}))?$"
)


def recognize_dlc_uri(uri: str) -> tuple[ContainerFamily, DlcLine | None, str, str] | None:
    """``(family, line, repository, tag)`` of an ECR image URI, or None when ``uri`` is not an
    ECR URI. ``line`` is the Deep Learning Container line when the URI is in AWS's DLC registry
    for its region and its tag belongs to a known line; otherwise the family is CUSTOM."""
    match = ECR_URI.match(uri)
    if match is None:
        return None
    repository = match.group("repository")
    tag = match.group("tag") or match.group("digest") or ""
    if DLC_REGISTRY_ACCOUNTS.get(match.group("region")) == match.group("account"):
        for line in DLC_LINES.values():
            if line.repository == repository and line.release_of(tag):
                return line.family, line, repository, tag
    return ContainerFamily.CUSTOM, None, repository, tag
