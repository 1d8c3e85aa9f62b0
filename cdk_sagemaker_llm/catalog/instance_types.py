"""SageMaker hosting instance types and the accelerators they carry.

Figures are public specifications. Accelerators: NVIDIA's datasheets (T4, A10G via the EC2 G5
page, L4, L40S, A100, H100, H200, HGX B200, HGX B300, GB200 NVL72, RTX PRO Server Edition) and
AWS Neuron's architecture pages (Inferentia2, Trainium, Trainium2); TFLOPS are dense (no
structured sparsity) tensor-core FP16/BF16. A figure the vendor does not publish is None and
the accelerator's ``unpublished`` says which: the planner then says it cannot predict latency on
that accelerator instead of guessing.
Instances: the EC2 instance-type pages (https://aws.amazon.com/ec2/instance-types/g4/, /g5/,
/g6/, /g6e/, /g7/, /g7e/, /p4/, /p5/, /p6/, /inf2/, /trn1/, /trn2/) for vCPUs, host memory,
accelerator count, local NVMe and interconnect; for g7, g7e and p6-b300 EC2's own
DescribeInstanceTypes figures (as AWS's Karpenter provider publishes them in
``website/content/en/preview/reference/instance-types.md``), for p6e-gb200 the SageMaker
HyperPod CLI's instance table (``aws/sagemaker-hyperpod-cli``,
``src/sagemaker/hyperpod/training/constants.py``). Which ``ml.*`` types SageMaker hosts comes
from botocore's ``ProductionVariantInstanceType`` enum.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import Enum
from typing import ClassVar

from ..errors import ValidationError
from ..prop_types import trusted, typed_props


class CpuArchitecture(Enum):
    """The instruction set of a host's CPUs, which a container image must be built for."""

    X86_64 = "x86_64"
    """Intel and AMD CPUs (every GPU and Neuron type but the Grace ones)."""
    ARM64 = "arm64"
    """Arm CPUs: AWS Graviton, NVIDIA Grace (``ml.p6e-gb200.36xlarge``)."""


_GRAVITON_NAME = re.compile(r"^ml\.[a-z]+\d+g[a-z]*\.")
"""EC2's naming: a ``g`` right after the generation marks a Graviton (Arm) family (c7g, m6gd)."""


def architecture_of_name(name: str) -> CpuArchitecture | None:
    """The CPU architecture a type's name states (Graviton families are Arm), or None."""
    return CpuArchitecture.ARM64 if _GRAVITON_NAME.match(name) else None


class AcceleratorKind(Enum):
    """What kind of accelerator an instance carries."""

    NVIDIA_GPU = "nvidia-gpu"
    AWS_NEURON = "aws-neuron"


@typed_props
@dataclass(frozen=True)
class AchievedPeak:
    """What a kernel was measured to reach of an accelerator's spec-sheet figures: the physical
    ceiling of a serving engine's efficiencies on it (``benchmarks/profile_fitting.py`` fits no
    engine profile past it)."""

    memory_bandwidth: float
    """Fraction of ``Accelerator.memory_bandwidth_gbps`` the best load-dominated streaming
    kernel (read, scale or triad at its best occupancy) reached: decode reads weights and KV as
    streams, so no engine's decode exceeds it."""
    source: str
    """Where ``memory_bandwidth`` comes from: the benchmark, the measured part and the
    arithmetic."""
    measured: bool = True
    """False when no bandwidth measurement of this part was found and ``memory_bandwidth`` is
    carried over from the closest measured part (``source`` says which and why)."""
    compute: float | None = None
    """Fraction of dense FP16 TFLOPS a large GEMM was measured to reach; None: no measurement
    of this part was found, and compute efficiencies stay bounded by their fitting grid."""
    compute_source: str | None = None
    """Where ``compute`` comes from: the benchmark, the measured part and the arithmetic
    (required with ``compute``)."""

    def __post_init__(self) -> None:
        for prop in ("memory_bandwidth", "compute"):
            value = getattr(self, prop)
            if value is not None and not 0 < value <= 1:
                raise ValidationError(
                    f"achieved.{prop}", value, "must be in (0, 1]", "pass a fraction of peak"
                )
        if self.compute is not None and not self.compute_source:
            raise ValidationError(
                "achieved.compute_source",
                self.compute_source,
                "must say where the compute ceiling was measured",
                "pass compute_source='<benchmark, part, arithmetic>'",
            )

    def source_of(self, figure: str) -> str:
        """The source of ``figure`` (``memory_bandwidth`` or ``compute``)."""
        return (self.compute_source or "") if figure == "compute" else self.source


@typed_props
@dataclass(frozen=True)
class Accelerator:
    """One accelerator device: usable memory, memory bandwidth and dense FP16/BF16 compute.

    Usable memory is what the driver reports (EC2 reports A10G/L4 as 22,888 MiB and L40S as
    45,776 MiB), which is what sizing must use. Bandwidth and FLOPS are None when the vendor
    does not publish them (``unpublished`` says which): memory checks still run, latency
    predictions do not.
    """

    __synth_decision__ = "The accelerator's figures decide what fits (sizing)"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    name: str
    """The device's name, e.g. ``A10G``, ``H100``, ``Inferentia2``."""
    kind: AcceleratorKind
    """An NVIDIA GPU or an AWS Neuron device (Inferentia, Trainium)."""
    memory_mib: int
    """Usable device memory in MiB."""
    memory_bandwidth_gbps: float | None
    """Device memory bandwidth in GB/s; None when not published."""
    fp16_tflops: float | None
    """Dense FP16 tensor TFLOPS; None when not published."""
    bf16_tflops: float | None = None
    """Dense BF16 tensor TFLOPS; None when the device has no BF16 (T4) or it is not published."""
    unpublished: str | None = None
    """Which figures the vendor does not publish, and where that was checked; None when every
    figure is published."""
    min_nvidia_driver: int | None = None
    """The oldest NVIDIA driver branch that runs the GPU (``BLACKWELL_MIN_DRIVER`` for
    Blackwell); None when any driver SageMaker's inference AMIs carry does."""
    fp8: bool = False
    """True when the device has FP8 tensor cores, so an engine serves FP8 weights and
    activations natively: NVIDIA Ada (L4, L40S), Hopper (H100, H200) and Blackwell (NVIDIA
    architecture whitepapers: FP8 in the 4th- and 5th-generation Tensor Cores; vLLM's FP8 W8A8
    "requires compute capability > 8.9"), not Turing or Ampere (T4, A10G, A100). False on
    Neuron devices: FP8 serving there is not modelled."""
    achieved: AchievedPeak | None = None
    """The measured ceiling of memory-bandwidth (and compute) efficiency on this device, with
    its source; None when no measurement of it or of a like part was found."""
    bf16: bool = True
    """False when the device has no BF16 arithmetic: NVIDIA GPUs below compute capability 8.0
    (T4, Turing). vLLM refuses BF16 there ("Bfloat16 is only supported on GPUs with compute
    capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5", vllm-project/vllm
    issue 1153, on an EC2 g4dn.xlarge)."""

    # Named devices are attached below the class body.
    neuron_cores: int | None = None
    """Physical NeuronCores of one Neuron device (None on a GPU): the unit the Neuron serving
    libraries' tensor-parallel degree counts (LMI Transformers-NeuronX / NxD
    ``option.tensor_parallel_degree``, TGI-NeuronX ``HF_NUM_CORES``), not chips. Inferentia2 and
    Trainium: two NeuronCore-v2 per chip (AWS Neuron docs, "Inferentia2 Architecture" and
    "Trainium Architecture"); djl-serving's TransformersNeuronX tuning guide
    (``serving/docs/lmi/tuning_guides/tnx_tuning_guide.md``) serves Llama 2 7B at
    ``tensor_parallel_degree=2`` on the one chip of an inf2.xlarge. Trainium2: eight
    NeuronCore-v3 per chip (AWS Neuron docs, "Trainium2 Architecture"); its default Logical
    NeuronCore Configuration (LNC=2) groups them in pairs, so eight is the most ranks a chip
    holds, not always what the runtime exposes."""

    T4: ClassVar[Accelerator]
    A10G: ClassVar[Accelerator]
    L4: ClassVar[Accelerator]
    L40S: ClassVar[Accelerator]
    A100_40GB: ClassVar[Accelerator]
    A100_80GB: ClassVar[Accelerator]
    H100: ClassVar[Accelerator]
    H200: ClassVar[Accelerator]
    B200: ClassVar[Accelerator]
    B300: ClassVar[Accelerator]
    GB200: ClassVar[Accelerator]
    RTX_PRO_4500_SERVER: ClassVar[Accelerator]
    RTX_PRO_6000_SERVER: ClassVar[Accelerator]
    INFERENTIA2: ClassVar[Accelerator]
    TRAINIUM: ClassVar[Accelerator]
    TRAINIUM2: ClassVar[Accelerator]

    @property
    def performance_known(self) -> bool:
        """True when memory bandwidth and dense FP16 TFLOPS are both published, so the
        performance model can predict latency and throughput on this accelerator."""
        return self.memory_bandwidth_gbps is not None and self.fp16_tflops is not None

    def require_performance(self, prop: str, instance_type: str) -> tuple[float, float]:
        """(memory bandwidth GB/s, dense FP16 TFLOPS); raises ValidationError naming the figure
        the vendor does not publish when one is unknown."""
        if self.memory_bandwidth_gbps is None or self.fp16_tflops is None:
            raise ValidationError(
                prop,
                instance_type,
                f"latency and throughput cannot be predicted on {self.name}: "
                f"{self.unpublished or 'its bandwidth or FLOPS are unknown'}",
                "pick an instance type whose accelerator figures are published, or measure "
                "this one with a benchmark (EndpointBenchmark, cdk-sagemaker-llm benchmark)",
            )
        return self.memory_bandwidth_gbps, self.fp16_tflops

    @property
    def tensor_parallel_ranks(self) -> int:
        """Tensor-parallel ranks one device holds: its NeuronCores on a Neuron device
        (``neuron_cores``), 1 on a GPU (one rank per GPU)."""
        return self.neuron_cores or 1


_accelerator = trusted(Accelerator)
"""The constants below, built without the run-time type checks (``prop_types.trusted``)."""
_GPU = AcceleratorKind.NVIDIA_GPU
_NEURON = AcceleratorKind.AWS_NEURON
# T4: 16 GB GDDR6 (15,360 MiB usable), 320 GB/s, 65 TFLOPS mixed-precision FP16, no BF16.
T4 = _accelerator("NVIDIA T4", _GPU, 15_360, 320, 65, bf16=False)
A10G = _accelerator("NVIDIA A10G", _GPU, 22_888, 600, 70, 70)
L4 = _accelerator("NVIDIA L4", _GPU, 22_888, 300, 121, 121, fp8=True)
L40S = _accelerator("NVIDIA L40S", _GPU, 45_776, 864, 362, 362, fp8=True)
A100_40GB = _accelerator("NVIDIA A100 40GB", _GPU, 40_960, 1_555, 312, 312)
A100_80GB = _accelerator("NVIDIA A100 80GB", _GPU, 81_920, 2_039, 312, 312)
H100 = _accelerator("NVIDIA H100", _GPU, 81_920, 3_350, 989, 989, fp8=True)
# H200: 141 GB HBM3e at 4.8 TB/s, the H100's compute.
H200 = _accelerator("NVIDIA H200", _GPU, 144_384, 4_800, 989, 989, fp8=True)
# B200 (HGX B200): 180 GB HBM3e at 8 TB/s; 36 PFLOPS FP16/BF16 per 8 GPUs with sparsity,
# 2.25 PFLOPS dense per GPU.
B200 = _accelerator("NVIDIA B200", _GPU, 184_320, 8_000, 2_250, 2_250, fp8=True)
# B300 (Blackwell Ultra, HGX B300): EC2 reports 275,040 MiB per GPU on p6-b300.48xlarge; 8 TB/s
# HBM3e; NVIDIA's HGX table gives FP16/BF16 36 PFLOPS with sparsity per 8 GPUs, the same as
# HGX B200: 2.25 PFLOPS dense per GPU.
B300 = _accelerator("NVIDIA B300", _GPU, 275_040, 8_000, 2_250, 2_250, fp8=True)
# GB200 (GB200 NVL72, the GPUs of p6e-gb200): 186 GB HBM3e per GPU (13.4 TB per 72 GPUs; the
# HyperPod CLI's full-GPU MIG profile is mig-7g.186gb); 576 TB/s per 72 GPUs = 8 TB/s each;
# FP16/BF16 360 PFLOPS with sparsity per 72 GPUs = 2.5 PFLOPS dense each. EC2's usable MiB for
# this type is not published in the sources read: 186 GB (decimal) = 177,383 MiB, a lower bound.
GB200 = _accelerator("NVIDIA GB200", _GPU, 177_383, 8_000, 2_500, 2_500, fp8=True)
# RTX PRO 4500 Blackwell Server Edition (g7): EC2 reports 32,768 MiB (32 GB GDDR7). Neither
# AWS's G7 announcement nor an NVIDIA page we could read states its memory bandwidth (a reseller
# lists 800 GB/s; the Workstation Edition's 896 GB/s is another SKU) or a dense FP16 tensor
# TFLOPS figure: both unknown.
RTX_PRO_4500_SERVER = _accelerator(
    "NVIDIA RTX PRO 4500 Blackwell Server Edition",
    _GPU,
    32_768,
    None,
    None,
    unpublished="its memory bandwidth and dense FP16/BF16 tensor TFLOPS are not published in "
    "the AWS and NVIDIA sources checked",
    fp8=True,
)
# RTX PRO 6000 Blackwell Server Edition (g7e): EC2 reports 98,304 MiB (96 GB GDDR7); 1,597 GB/s
# (NVIDIA's datasheet and AWS's G7e announcement). NVIDIA's datasheet omits FP16/BF16; its web
# page advertises "1 PFLOP" FP16/BF16 without saying dense or sparse: unknown.
RTX_PRO_6000_SERVER = _accelerator(
    "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    _GPU,
    98_304,
    1_597,
    None,
    unpublished="its dense FP16/BF16 tensor TFLOPS are not published (NVIDIA's datasheet omits "
    'them; its web page\'s "1 PFLOP" FP16/BF16 does not say dense or sparse)',
    fp8=True,
)
# Inferentia2 and Trainium: 32 GiB HBM at 820 GB/s, 190 TFLOPS FP16/BF16 per chip; two
# NeuronCore-v2 per chip (AWS Neuron docs, "Inferentia2 Architecture", "Trainium Architecture").
INFERENTIA2 = _accelerator("AWS Inferentia2", _NEURON, 32_768, 820, 190, 190, neuron_cores=2)
TRAINIUM = _accelerator("AWS Trainium", _NEURON, 32_768, 820, 190, 190, neuron_cores=2)
# Trainium2: 96 GiB HBM at 2.9 TB/s, 667 TFLOPS dense FP16/BF16 per chip; eight NeuronCore-v3
# per chip (AWS Neuron docs, "Trainium2 Architecture": "Every Trainium2 chip contains eight
# NeuronCore-V3 cores").
TRAINIUM2 = _accelerator("AWS Trainium2", _NEURON, 98_304, 2_900, 667, 667, neuron_cores=8)

_achieved = trusted(AchievedPeak)
_GPU_STREAM = (
    "RRZE-HPC/gpu-benches gpu-stream (github.com/RRZE-HPC/gpu-benches, gpu-stream/*.txt at "
    "1038c5d0d0f48cfe9912930d34eb2d8a31b72b9b, 2025-02): streaming kernels over occupancy 1-100 %"
)
_ECC_GDDR6 = (
    "IST-DASLab/marlin README (github.com/IST-DASLab/marlin): with ECC enabled, as on an A10, "
    '"the maximum achievable memory bandwidth will be 10-15% lower than in the official spec '
    'sheet"'
)
_TORCH_GEMM = (
    "zzc0721/torch-performance-test-data (github.com/zzc0721/torch-performance-test-data, "
    "database.md at 078586871da31ad6aaaf6fa43bc4ec3f284b151d): torch.matmul over square "
    "FP16 and BF16 matrices of 1,024-10,240, the best size's TFLOPS per device"
)
# Each bandwidth ceiling: the best of the read, scale and triad kernels (load-dominated, as
# decode is), divided by the spec figure above; each compute ceiling: the best FP16 or BF16
# GEMM over the dense FP16 TFLOPS above. A bound takes the top of a measured range, so that it
# never cuts an efficiency the hardware reaches.
ACHIEVED_PEAKS: dict[str, AchievedPeak] = {
    "A10G": _achieved(
        0.85,
        f"{_ECC_GDDR6}; EC2's A10G (GA102, GDDR6) runs with ECC on: 0.85-0.90 of its 600 GB/s "
        "is left, of which the best streaming kernel on a GDDR6 part without ECC reaches 0.98 "
        f"(the L40 below; {_GPU_STREAM}): 0.875 x 0.98 = 0.86, 0.85 on the fitting grid",
        measured=False,
        compute=0.99,
        compute_source=(
            "zzc0721/torch-performance-test-data issue 126 (NVIDIA A10G, PyTorch 2.7, January "
            "2026; the same torch.matmul sweep as its database.md): FP16 and BF16 69.47 TFLOPS "
            "at 10,240 of the 70 above = 0.99"
        ),
    ),
    "L4": _achieved(
        0.85,
        "no measurement of the L4 found; carried over from the A10G: GDDR6 with ECC on "
        f"({_ECC_GDDR6})",
        measured=False,
        compute=0.59,
        compute_source=(
            "zzc0721/torch-performance-test-data issue 120 (NVIDIA L4, PyTorch 2.9, January "
            "2026; the same torch.matmul sweep as its database.md): BF16 70.89 TFLOPS at 2,048 "
            "of 121 = 0.59 (FP16 68.83); 52.5-59.4 at 4,096-10,240, where the L4's 72 W power "
            "cap lowers its clocks under a sustained GEMM"
        ),
    ),
    "L40S": _achieved(
        0.98,
        f"{_GPU_STREAM}: the L40 (the L40S's AD102 die and 864 GB/s GDDR6) reads at 845 GB/s "
        "(read kernel), 845 / 864 = 0.98; no L40S measurement found",
        measured=False,
        compute=0.74,
        compute_source=f"{_TORCH_GEMM}: L40S BF16 269.15 of 362 = 0.74 (FP16 264.02)",
    ),
    "A100_40GB": _achieved(
        0.96,
        f"{_GPU_STREAM}: A100 40GB read kernel 1,500 GB/s of 1,555 = 0.96",
        compute=0.79,
        compute_source=f"{_TORCH_GEMM}: A100 40GB FP16 247.63 of 312 = 0.79 (BF16 246.33)",
    ),
    "A100_80GB": _achieved(
        0.88,
        f"{_GPU_STREAM}: A100 80GB triad 1,794 GB/s (read 1,776) of 2,039 = 0.88",
        compute=0.85,
        compute_source=(
            f"{_TORCH_GEMM}: A100 SXM4 80GB BF16 264.53 of 312 = 0.85 (FP16 258.74; the A800 "
            "SXM4 80GB, the same part at a lower interconnect rate, 266.48)"
        ),
    ),
    "H100": _achieved(
        0.95,
        f"{_GPU_STREAM}: GH200 (a Hopper GPU with HBM3, as the H100 SXM) triad 3,783 GB/s of "
        "4,000 = 0.95; the H100 PCIe (HBM2e) reads 1,942 of 2,000 = 0.97. No H100 SXM run in "
        "the repository",
        measured=False,
        compute=0.80,
        compute_source=(
            f"{_TORCH_GEMM}: H100 80GB HBM3 BF16 789.24 of 989 = 0.80 (FP16 761.84; a second "
            "H100 80GB HBM3 BF16 783.66)"
        ),
    ),
    "H200": _achieved(
        0.95,
        "no H200 measurement found; carried over from the GH200 (Hopper with HBM3, "
        f"0.95 of spec in the triad kernel; {_GPU_STREAM})",
        measured=False,
        compute=0.80,
        compute_source=f"{_TORCH_GEMM}: H200 BF16 790.29 of 989 = 0.80 (FP16 759.40)",
    ),
}
"""Measured ceilings of each accelerator's memory-bandwidth efficiency and, where a dense GEMM
was measured, its compute efficiency, by the device's name in ``Accelerator``'s named constants
(``Accelerator.achieved`` reads them). Devices absent here (or a figure left None) have no
measurement: their efficiencies are bounded by the fitting grid only."""

T4, A10G, L4, L40S, A100_40GB, A100_80GB, H100, H200 = (
    dataclasses.replace(device, achieved=ACHIEVED_PEAKS.get(name))
    for name, device in (
        ("T4", T4),
        ("A10G", A10G),
        ("L4", L4),
        ("L40S", L40S),
        ("A100_40GB", A100_40GB),
        ("A100_80GB", A100_80GB),
        ("H100", H100),
        ("H200", H200),
    )
)

BLACKWELL_MIN_DRIVER = 570
"""Blackwell GPUs need NVIDIA driver branch 570 or later (NVIDIA GPU Operator platform support:
"HGX B200 requires a driver container version of 570.133.20 or later"; the R570 branch is the
first to support Blackwell)."""
B200, B300, GB200, RTX_PRO_4500_SERVER, RTX_PRO_6000_SERVER = (
    dataclasses.replace(device, min_nvidia_driver=BLACKWELL_MIN_DRIVER)
    for device in (B200, B300, GB200, RTX_PRO_4500_SERVER, RTX_PRO_6000_SERVER)
)

for _device_name, _device in {
    "T4": T4,
    "A10G": A10G,
    "L4": L4,
    "L40S": L40S,
    "A100_40GB": A100_40GB,
    "A100_80GB": A100_80GB,
    "H100": H100,
    "H200": H200,
    "B200": B200,
    "B300": B300,
    "GB200": GB200,
    "RTX_PRO_4500_SERVER": RTX_PRO_4500_SERVER,
    "RTX_PRO_6000_SERVER": RTX_PRO_6000_SERVER,
    "INFERENTIA2": INFERENTIA2,
    "TRAINIUM": TRAINIUM,
    "TRAINIUM2": TRAINIUM2,
}.items():
    setattr(Accelerator, _device_name, _device)


@typed_props
@dataclass(frozen=True)
class InstanceType:
    """A SageMaker hosting instance type (``ml.*``).

    Use the named constants (``InstanceType.G5_12XLARGE``) for the GPU and Neuron families the
    library knows, or ``InstanceType.of("ml.c7i.4xlarge")`` for any other. A type the catalog
    does not know has unknown accelerators (``accelerator_count`` is None): checks that need
    them say they cannot check, until you state them with ``InstanceType.of(name,
    accelerator=Accelerator.H100, accelerator_count=8)`` or ``.with_accelerators(...)``.
    """

    __synth_decision__ = "The instance type's figures decide what fits (sizing)"
    """Numbers given here decide at synth: a deploy-time token is refused (``typed_props``)."""

    name: str
    """The SageMaker name, e.g. ``ml.g5.12xlarge``."""
    vcpus: int | None = None
    """vCPUs of one instance; None when unknown."""
    memory_mib: int | None = None
    """Host memory of one instance in MiB; None when unknown."""
    accelerator: Accelerator | None = None
    """The accelerator model, or None for CPU-only or unknown types."""
    accelerator_count: int | None = None
    """Accelerator devices per instance (GPUs, or Inferentia/Trainium chips); 0 for a CPU-only
    type, None when unknown (a type the catalog does not know, unless you state them)."""
    has_local_nvme_storage: bool = False
    """True when the instance has local NVMe storage: SageMaker then rejects a KMS key and a
    volume size for the ML storage volume (the instance store is encrypted by hardware)."""
    local_nvme_gb: int | None = None
    """Local NVMe instance storage of one instance in GB (0 for none); None when unknown."""
    interconnect: str | None = None
    """How the accelerators talk to each other (``NVLink``, ``PCIe Gen4``); None for a single
    accelerator or unknown."""
    interconnect_gbps: float | None = None
    """Peer bandwidth of one accelerator over ``interconnect`` in GB/s (both directions, as
    vendors publish it); None when unknown or single-accelerator."""
    cpu_architecture: CpuArchitecture | None = None
    """The host CPUs' architecture, which the serving image must be built for; None when
    unknown (a type the catalog does not know, unless its name is a Graviton family)."""

    # Named constants are attached below the class body.
    G4DN_XLARGE: ClassVar[InstanceType]
    G4DN_2XLARGE: ClassVar[InstanceType]
    G4DN_4XLARGE: ClassVar[InstanceType]
    G4DN_8XLARGE: ClassVar[InstanceType]
    G4DN_12XLARGE: ClassVar[InstanceType]
    G4DN_16XLARGE: ClassVar[InstanceType]
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
    P5_4XLARGE: ClassVar[InstanceType]
    P5_48XLARGE: ClassVar[InstanceType]
    P5E_48XLARGE: ClassVar[InstanceType]
    P5EN_48XLARGE: ClassVar[InstanceType]
    P6_B200_48XLARGE: ClassVar[InstanceType]
    P6_B300_48XLARGE: ClassVar[InstanceType]
    P6E_GB200_36XLARGE: ClassVar[InstanceType]
    G7_2XLARGE: ClassVar[InstanceType]
    G7_4XLARGE: ClassVar[InstanceType]
    G7_8XLARGE: ClassVar[InstanceType]
    G7_12XLARGE: ClassVar[InstanceType]
    G7_24XLARGE: ClassVar[InstanceType]
    G7_48XLARGE: ClassVar[InstanceType]
    G7E_2XLARGE: ClassVar[InstanceType]
    G7E_4XLARGE: ClassVar[InstanceType]
    G7E_8XLARGE: ClassVar[InstanceType]
    G7E_12XLARGE: ClassVar[InstanceType]
    G7E_24XLARGE: ClassVar[InstanceType]
    G7E_48XLARGE: ClassVar[InstanceType]
    INF2_XLARGE: ClassVar[InstanceType]
    INF2_8XLARGE: ClassVar[InstanceType]
    INF2_24XLARGE: ClassVar[InstanceType]
    INF2_48XLARGE: ClassVar[InstanceType]
    TRN1_2XLARGE: ClassVar[InstanceType]
    TRN1_32XLARGE: ClassVar[InstanceType]
    TRN1N_32XLARGE: ClassVar[InstanceType]
    TRN2_48XLARGE: ClassVar[InstanceType]

    def __post_init__(self) -> None:
        """``InstanceType("ml.g5.2xlarge")`` built directly with its name alone is the
        catalog's entry (equal to ``InstanceType.G5_2XLARGE``, local NVMe storage and all), as
        ``InstanceType.of`` gives, not a blank type that passes checks it should fail."""
        catalog = globals().get("CATALOG")  # None while the catalog itself is being built
        known = catalog.get(self.name) if catalog and isinstance(self.name, str) else None
        if known is None or any(
            getattr(self, field.name) != field.default for field in fields(self)[1:]
        ):
            return
        for field in fields(self)[1:]:
            object.__setattr__(self, field.name, getattr(known, field.name))

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
    def accelerators_known(self) -> bool:
        """True when the accelerators are known: from the catalog, or stated by you."""
        return self.accelerator_count is not None

    @property
    def accelerator_devices(self) -> int:
        """Accelerator devices of one instance, for arithmetic that needs them: raises
        ValidationError when the type has no accelerators or they are unknown."""
        if self.accelerator is None or self.accelerator_count is None:
            raise ValidationError(
                "instance_type",
                self.name,
                "this needs an accelerated instance type whose accelerators are known",
                "use a GPU or Neuron type of the catalog, or state them with "
                "InstanceType.of(name, accelerator=..., accelerator_count=...)",
            )
        return self.accelerator_count

    def accelerator_figures(self, prop: str) -> tuple[float, float]:
        """(memory bandwidth GB/s, dense FP16 TFLOPS) of one accelerator, for the performance
        model; raises ValidationError when the type has no known accelerator or its vendor
        does not publish these figures."""
        if self.accelerator is None:
            raise ValidationError(
                prop,
                self.name,
                "predictions need an accelerated instance type whose accelerators are known",
                "use a GPU or Neuron type of the catalog, or state them with "
                "InstanceType.of(name, accelerator=..., accelerator_count=...)",
            )
        return self.accelerator.require_performance(prop, self.name)

    @property
    def tensor_parallel_ranks_per_device(self) -> int:
        """Tensor-parallel ranks one accelerator of this type holds: NeuronCores per chip on a
        Neuron type (``Accelerator.neuron_cores``), 1 on a GPU or an unknown type."""
        return self.accelerator.tensor_parallel_ranks if self.accelerator is not None else 1

    def devices_for_degree(self, degree: int) -> int:
        """Accelerator devices a copy sharded ``degree`` ways occupies: ``degree`` GPUs, or the
        Neuron chips whose NeuronCores hold ``degree`` ranks (24 ranks on 12 Inferentia2
        chips)."""
        ranks = self.tensor_parallel_ranks_per_device
        return -(-degree // ranks)

    @property
    def accelerator_memory_mib(self) -> int:
        """Usable accelerator memory of the whole instance in MiB (0 without known accelerators)."""
        if self.accelerator is None or self.accelerator_count is None:
            return 0
        return self.accelerator.memory_mib * self.accelerator_count

    @property
    def is_known(self) -> bool:
        """True when the catalog knows this type's hardware."""
        return self.vcpus is not None

    @staticmethod
    def of(
        name: str,
        *,
        accelerator: Accelerator | None = None,
        accelerator_count: int | None = None,
    ) -> InstanceType:
        """An instance type by its SageMaker name; the catalog's entry when it has one.

        :param accelerator: for a type the catalog does not know, its accelerator device
            (e.g. ``Accelerator.H100``); default unknown.
        :param accelerator_count: for a type the catalog does not know, its devices per
            instance (0 states a CPU-only type); default unknown.
        """
        if not isinstance(name, str) or not name.startswith("ml.") or name.count(".") != 2:
            raise ValidationError(
                "instance_type",
                name,
                "a SageMaker instance type is named ml.<family>.<size>",
                'use a name such as "ml.g5.12xlarge" or a constant such as '
                "InstanceType.G5_12XLARGE",
            )
        known = CATALOG.get(name)
        if known is None:
            bare = InstanceType(name, cpu_architecture=architecture_of_name(name))
            if accelerator is None and accelerator_count is None:
                return bare
            return bare.with_accelerators(accelerator, accelerator_count)
        if (accelerator is not None and accelerator != known.accelerator) or (
            accelerator_count is not None and accelerator_count != known.accelerator_count
        ):
            raise ValidationError(
                "accelerator_count" if accelerator_count is not None else "accelerator",
                accelerator_count if accelerator_count is not None else accelerator,
                f"the catalog knows {name}: {known.accelerator_count} x "
                f"{known.accelerator.name if known.accelerator else 'no accelerator'}",
                f"leave the accelerators out for {name}",
            )
        return known

    def with_accelerators(
        self, accelerator: Accelerator | None, accelerator_count: int | None
    ) -> InstanceType:
        """This type with its accelerators stated: ``accelerator_count`` devices of
        ``accelerator``, or ``(None, 0)`` for a CPU-only type. Sizing and fit checks then use
        them. Raises ValidationError for an inconsistent pair."""
        if accelerator_count == 0 and accelerator is None:
            return dataclasses.replace(self, accelerator=None, accelerator_count=0)
        if accelerator is None or not isinstance(accelerator, Accelerator):
            raise ValidationError(
                f"{self.name} accelerator",
                accelerator,
                "sizing needs the accelerator device to go with a device count",
                "pass e.g. accelerator=Accelerator.H100 (or accelerator_count=0 for a CPU-only "
                "type)",
            )
        if (
            isinstance(accelerator_count, bool)
            or not isinstance(accelerator_count, int)
            or accelerator_count < 1
        ):
            raise ValidationError(
                f"{self.name} accelerator_count",
                accelerator_count,
                "an accelerated instance has a whole number of devices, at least 1",
                "pass the devices of one instance, e.g. accelerator_count=8",
            )
        return dataclasses.replace(
            self, accelerator=accelerator, accelerator_count=accelerator_count
        )

    def __str__(self) -> str:
        return self.name


_PCIE_GEN3 = ("PCIe Gen3", 32.0)
_PCIE_GEN4 = ("PCIe Gen4", 64.0)
_NVLINK_A100 = ("NVLink", 600.0)
_NVLINK_H100 = ("NVLink", 900.0)
_NVLINK_B200 = ("NVLink", 1_800.0)
_PCIE_GEN5 = ("PCIe Gen5", 128.0)

# size: (vCPUs, accelerators, local NVMe GB) of the G families (EC2 instance-type pages).
_SIZES_G4DN = {
    "xlarge": (4, 1, 125),
    "2xlarge": (8, 1, 225),
    "4xlarge": (16, 1, 225),
    "8xlarge": (32, 1, 900),
    "12xlarge": (48, 4, 900),
    "16xlarge": (64, 1, 900),
}
_SIZES_G5_G6E = {
    "xlarge": (4, 1, 250),
    "2xlarge": (8, 1, 450),
    "4xlarge": (16, 1, 600),
    "8xlarge": (32, 1, 900),
    "12xlarge": (48, 4, 3_800),
    "16xlarge": (64, 1, 1_900),
    "24xlarge": (96, 4, 3_800),
    "48xlarge": (192, 8, 7_600),
}
_SIZES_G6 = {
    "xlarge": (4, 1, 250),
    "2xlarge": (8, 1, 450),
    "4xlarge": (16, 1, 600),
    "8xlarge": (32, 1, 900),
    "12xlarge": (48, 4, 3_760),
    "16xlarge": (64, 1, 1_880),
    "24xlarge": (96, 4, 3_760),
    "48xlarge": (192, 8, 7_520),
}

# size: (vCPUs, host memory GiB, accelerators, local NVMe GB) of g7 and g7e, as EC2's
# DescribeInstanceTypes reports them (g7e matches AWS's G7e announcement table).
_SIZES_G7 = {
    "2xlarge": (8, 32, 1, 440),
    "4xlarge": (16, 64, 1, 875),
    "8xlarge": (32, 128, 1, 930),
    "12xlarge": (48, 192, 2, 1_900),
    "24xlarge": (96, 384, 4, 3_800),
    "48xlarge": (192, 768, 8, 7_600),
}
_SIZES_G7E = {
    "2xlarge": (8, 64, 1, 1_900),
    "4xlarge": (16, 128, 1, 1_900),
    "8xlarge": (32, 256, 1, 1_900),
    "12xlarge": (48, 512, 2, 3_800),
    "24xlarge": (96, 1_024, 4, 7_600),
    "48xlarge": (192, 2_048, 8, 15_200),
}


_instance_type = trusted(InstanceType)
"""The catalog's entries, built without the run-time type checks (``prop_types.trusted``)."""


def _accelerated(
    name: str,
    vcpus: int,
    memory_gib: int,
    accelerator: Accelerator,
    count: int,
    nvme_gb: int,
    interconnect: tuple[str, float],
) -> InstanceType:
    link, gbps = interconnect if count > 1 else (None, None)
    return _instance_type(
        name,
        vcpus,
        memory_gib * 1024,
        accelerator,
        count,
        has_local_nvme_storage=nvme_gb > 0,
        local_nvme_gb=nvme_gb,
        interconnect=link,
        interconnect_gbps=gbps,
    )


def _catalog() -> dict[str, InstanceType]:
    types: list[InstanceType] = []
    for family, accelerator, memory_per_vcpu_gib, sizes, link in (
        ("g4dn", T4, 4, _SIZES_G4DN, _PCIE_GEN3),
        ("g5", A10G, 4, _SIZES_G5_G6E, _PCIE_GEN4),
        ("g6", L4, 4, _SIZES_G6, _PCIE_GEN4),
        ("g6e", L40S, 8, _SIZES_G5_G6E, _PCIE_GEN4),
    ):
        for size, (vcpus, count, nvme_gb) in sizes.items():
            types.append(
                _accelerated(
                    f"ml.{family}.{size}",
                    vcpus,
                    vcpus * memory_per_vcpu_gib,
                    accelerator,
                    count,
                    nvme_gb,
                    link,
                )
            )
    # g7/g7e GPUs talk over PCIe Gen5 x16 (GPUDirect P2P; no NVLink on the RTX PRO Server
    # Editions).
    for family, accelerator, blackwell_sizes in (
        ("g7", RTX_PRO_4500_SERVER, _SIZES_G7),
        ("g7e", RTX_PRO_6000_SERVER, _SIZES_G7E),
    ):
        for size, (vcpus, memory_gib, count, nvme_gb) in blackwell_sizes.items():
            types.append(
                _accelerated(
                    f"ml.{family}.{size}",
                    vcpus,
                    memory_gib,
                    accelerator,
                    count,
                    nvme_gb,
                    _PCIE_GEN5,
                )
            )
    types += [
        _accelerated("ml.p4d.24xlarge", 96, 1_152, A100_40GB, 8, 8_000, _NVLINK_A100),
        _accelerated("ml.p4de.24xlarge", 96, 1_152, A100_80GB, 8, 8_000, _NVLINK_A100),
        _accelerated("ml.p5.4xlarge", 16, 256, H100, 1, 3_840, _NVLINK_H100),
        _accelerated("ml.p5.48xlarge", 192, 2_048, H100, 8, 30_720, _NVLINK_H100),
        _accelerated("ml.p5e.48xlarge", 192, 2_048, H200, 8, 30_720, _NVLINK_H100),
        _accelerated("ml.p5en.48xlarge", 192, 2_048, H200, 8, 30_720, _NVLINK_H100),
        _accelerated("ml.p6-b200.48xlarge", 192, 2_048, B200, 8, 30_720, _NVLINK_B200),
        # EC2 DescribeInstanceTypes: 192 vCPUs, 4 TiB, 8 x B300, 30,400 GB NVMe; NVLink 5.
        _accelerated("ml.p6-b300.48xlarge", 192, 4_096, B300, 8, 30_400, _NVLINK_B200),
        # One compute tray of a GB200 NVL72 UltraServer: 144 Arm (Grace) vCPUs, 960 GiB and
        # 4 GPUs (HyperPod CLI); 405 TB of NVMe per 18-instance UltraServer (AWS) = 22,500 GB.
        # Its CPUs are Arm: serving images must be built for arm64 (ARM_HOSTS).
        _accelerated("ml.p6e-gb200.36xlarge", 144, 960, GB200, 4, 22_500, _NVLINK_B200),
        # Inferentia2 chips of inf2.24xlarge/48xlarge form a NeuronLink ring; AWS publishes no
        # per-chip bandwidth for it, so the interconnect is left unknown.
        _instance_type("ml.inf2.xlarge", 4, 16 * 1024, INFERENTIA2, 1, local_nvme_gb=0),
        _instance_type("ml.inf2.8xlarge", 32, 128 * 1024, INFERENTIA2, 1, local_nvme_gb=0),
        _instance_type("ml.inf2.24xlarge", 96, 384 * 1024, INFERENTIA2, 6, local_nvme_gb=0),
        _instance_type("ml.inf2.48xlarge", 192, 768 * 1024, INFERENTIA2, 12, local_nvme_gb=0),
        _instance_type("ml.trn1.2xlarge", 8, 32 * 1024, TRAINIUM, 1, True, 474),
        _instance_type("ml.trn1.32xlarge", 128, 512 * 1024, TRAINIUM, 16, True, 7_600),
        _instance_type("ml.trn1n.32xlarge", 128, 512 * 1024, TRAINIUM, 16, True, 7_600),
        _instance_type("ml.trn2.48xlarge", 192, 2_048 * 1024, TRAINIUM2, 16, True, 7_600),
    ]
    return {
        t.name: dataclasses.replace(
            t,
            cpu_architecture=CpuArchitecture.ARM64
            if t.name in ARM_HOSTS
            else CpuArchitecture.X86_64,
        )
        for t in types
    }


ARM_HOSTS = frozenset({"ml.p6e-gb200.36xlarge"})
"""The catalog's types with Arm CPUs: p6e-gb200's Grace CPUs (EC2 P6e-GB200 UltraServers,
"NVIDIA Grace CPUs"); every other catalog type has Intel or AMD (x86_64) CPUs."""

CATALOG: dict[str, InstanceType] = _catalog()
"""Every instance type whose hardware the library knows, by name."""


def closest_instance_types(name: str, also: Iterable[str] = ()) -> list[str]:
    """Up to three catalog names (and ``also``'s) closest to ``name``, closest first: what
    every "did you mean" about an instance type suggests (``ml.g5.2xlrge``, ``ml.p4d.24xl``)."""
    return difflib.get_close_matches(name, sorted(set(CATALOG) | set(also)), n=3, cutoff=0.85)


for _name, _type in CATALOG.items():
    setattr(InstanceType, _name[3:].replace(".", "_").replace("-", "_").upper(), _type)
