"""SageMaker hosting instance types and the accelerators they carry."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from ..errors import ValidationError


class AcceleratorKind(Enum):
    """What kind of accelerator an instance carries."""

    NVIDIA_GPU = "nvidia-gpu"
    AWS_NEURON = "aws-neuron"


@dataclass(frozen=True)
class Accelerator:
    """One accelerator device: usable memory, memory bandwidth and dense FP16 compute.

    Usable memory is what the driver reports (EC2 reports A10G/L4 as 22,888 MiB and L40S as
    45,776 MiB), which is what sizing must use.
    """

    name: str
    kind: AcceleratorKind
    memory_mib: int
    memory_bandwidth_gbps: float
    fp16_tflops: float


A10G = Accelerator("NVIDIA A10G", AcceleratorKind.NVIDIA_GPU, 22_888, 600, 70)
L4 = Accelerator("NVIDIA L4", AcceleratorKind.NVIDIA_GPU, 22_888, 300, 121)
L40S = Accelerator("NVIDIA L40S", AcceleratorKind.NVIDIA_GPU, 45_776, 864, 362)
A100_40GB = Accelerator("NVIDIA A100 40GB", AcceleratorKind.NVIDIA_GPU, 40_960, 1_555, 312)
A100_80GB = Accelerator("NVIDIA A100 80GB", AcceleratorKind.NVIDIA_GPU, 81_920, 2_039, 312)
H100 = Accelerator("NVIDIA H100", AcceleratorKind.NVIDIA_GPU, 81_920, 3_350, 989)
INFERENTIA2 = Accelerator("AWS Inferentia2", AcceleratorKind.AWS_NEURON, 32_768, 820, 190)
TRAINIUM = Accelerator("AWS Trainium", AcceleratorKind.AWS_NEURON, 32_768, 820, 190)


@dataclass(frozen=True)
class InstanceType:
    """A SageMaker hosting instance type (``ml.*``).

    Use the named constants (``InstanceType.G5_12XLARGE``) for the GPU and Neuron families the
    library knows, or ``InstanceType.of("ml.c7i.4xlarge")`` for any other; an unknown type
    carries no accelerator facts, so fit checks that need them are skipped.
    """

    name: str
    """The SageMaker name, e.g. ``ml.g5.12xlarge``."""
    vcpus: int | None = None
    """vCPUs of one instance; None when unknown."""
    memory_mib: int | None = None
    """Host memory of one instance in MiB; None when unknown."""
    accelerator: Accelerator | None = None
    """The accelerator model, or None for CPU-only or unknown types."""
    accelerator_count: int = 0
    """Accelerator devices per instance (GPUs, or Inferentia/Trainium chips)."""
    has_local_nvme_storage: bool = False
    """True when the instance has local NVMe storage: SageMaker then rejects a KMS key and a
    volume size for the ML storage volume (the instance store is encrypted by hardware)."""

    # Named constants are attached below the class body.
    G5_XLARGE: ClassVar[InstanceType]
    G5_2XLARGE: ClassVar[InstanceType]
    G5_4XLARGE: ClassVar[InstanceType]
    G5_8XLARGE: ClassVar[InstanceType]
    G5_12XLARGE: ClassVar[InstanceType]
    G5_16XLARGE: ClassVar[InstanceType]
    G5_24XLARGE: ClassVar[InstanceType]
    G5_48XLARGE: ClassVar[InstanceType]
    G6_XLARGE: ClassVar[InstanceType]
    G6_2XLARGE: ClassVar[InstanceType]
    G6_4XLARGE: ClassVar[InstanceType]
    G6_8XLARGE: ClassVar[InstanceType]
    G6_12XLARGE: ClassVar[InstanceType]
    G6_16XLARGE: ClassVar[InstanceType]
    G6_24XLARGE: ClassVar[InstanceType]
    G6_48XLARGE: ClassVar[InstanceType]
    G6E_XLARGE: ClassVar[InstanceType]
    G6E_2XLARGE: ClassVar[InstanceType]
    G6E_4XLARGE: ClassVar[InstanceType]
    G6E_8XLARGE: ClassVar[InstanceType]
    G6E_12XLARGE: ClassVar[InstanceType]
    G6E_16XLARGE: ClassVar[InstanceType]
    G6E_24XLARGE: ClassVar[InstanceType]
    G6E_48XLARGE: ClassVar[InstanceType]
    P4D_24XLARGE: ClassVar[InstanceType]
    P4DE_24XLARGE: ClassVar[InstanceType]
    P5_48XLARGE: ClassVar[InstanceType]
    INF2_XLARGE: ClassVar[InstanceType]
    INF2_8XLARGE: ClassVar[InstanceType]
    INF2_24XLARGE: ClassVar[InstanceType]
    INF2_48XLARGE: ClassVar[InstanceType]
    TRN1_2XLARGE: ClassVar[InstanceType]
    TRN1_32XLARGE: ClassVar[InstanceType]

    @property
    def family(self) -> str:
        """The family part of the name, e.g. ``g5`` for ``ml.g5.12xlarge``."""
        return self.name.split(".")[1] if self.name.count(".") == 2 else self.name

    @property
    def is_gpu(self) -> bool:
        """True for NVIDIA GPU instances."""
        return self.accelerator is not None and self.accelerator.kind is AcceleratorKind.NVIDIA_GPU

    @property
    def is_neuron(self) -> bool:
        """True for AWS Inferentia and Trainium instances."""
        return self.accelerator is not None and self.accelerator.kind is AcceleratorKind.AWS_NEURON

    @property
    def accelerator_memory_mib(self) -> int:
        """Usable accelerator memory of the whole instance in MiB (0 without accelerators)."""
        return self.accelerator.memory_mib * self.accelerator_count if self.accelerator else 0

    @property
    def is_known(self) -> bool:
        """True when the catalog knows this type's hardware."""
        return self.vcpus is not None

    @staticmethod
    def of(name: str) -> InstanceType:
        """An instance type by its SageMaker name; the catalog's entry when it has one."""
        if not isinstance(name, str) or not name.startswith("ml.") or name.count(".") != 2:
            raise ValidationError(
                "instance_type",
                name,
                "a SageMaker instance type is named ml.<family>.<size>",
                'use a name such as "ml.g5.12xlarge" or a constant such as '
                "InstanceType.G5_12XLARGE",
            )
        return CATALOG.get(name, InstanceType(name))

    def __str__(self) -> str:
        return self.name


_SIZES_G = {  # size: (vCPUs, accelerators)
    "xlarge": (4, 1),
    "2xlarge": (8, 1),
    "4xlarge": (16, 1),
    "8xlarge": (32, 1),
    "12xlarge": (48, 4),
    "16xlarge": (64, 1),
    "24xlarge": (96, 4),
    "48xlarge": (192, 8),
}


def _catalog() -> dict[str, InstanceType]:
    types: list[InstanceType] = []
    for family, accelerator, memory_per_vcpu_gib in (
        ("g5", A10G, 4),
        ("g6", L4, 4),
        ("g6e", L40S, 8),
    ):
        for size, (vcpus, accelerators) in _SIZES_G.items():
            types.append(
                InstanceType(
                    f"ml.{family}.{size}",
                    vcpus,
                    vcpus * memory_per_vcpu_gib * 1024,
                    accelerator,
                    accelerators,
                    has_local_nvme_storage=True,
                )
            )
    types += [
        InstanceType("ml.p4d.24xlarge", 96, 1_152 * 1024, A100_40GB, 8, True),
        InstanceType("ml.p4de.24xlarge", 96, 1_152 * 1024, A100_80GB, 8, True),
        InstanceType("ml.p5.48xlarge", 192, 2_048 * 1024, H100, 8, True),
        InstanceType("ml.inf2.xlarge", 4, 16 * 1024, INFERENTIA2, 1),
        InstanceType("ml.inf2.8xlarge", 32, 128 * 1024, INFERENTIA2, 1),
        InstanceType("ml.inf2.24xlarge", 96, 384 * 1024, INFERENTIA2, 6),
        InstanceType("ml.inf2.48xlarge", 192, 768 * 1024, INFERENTIA2, 12),
        InstanceType("ml.trn1.2xlarge", 8, 32 * 1024, TRAINIUM, 1, True),
        InstanceType("ml.trn1.32xlarge", 128, 512 * 1024, TRAINIUM, 16, True),
    ]
    return {t.name: t for t in types}


CATALOG: dict[str, InstanceType] = _catalog()
"""Every instance type whose hardware the library knows, by name."""

for _name, _type in CATALOG.items():
    setattr(InstanceType, _name[3:].replace(".", "_").upper(), _type)
